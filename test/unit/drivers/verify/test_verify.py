"""mgx-verify's library: the result cache, the report and its baseline comparison, the per-task
timeout and memory limit, a killed worker's task retried, and the Ray executor on a real local
cluster giving the verdicts the inline executor gives."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import numpy as np
import pytest

from mgxir.diagnostics import MgxError
from mgxir.drivers.verify import report
from mgxir.drivers.verify.cache import ResultCache
from mgxir.drivers.verify.executors import InlineExecutor, Limits, ProcessExecutor, executor, run_limited
from mgxir.drivers.verify.onnxruntime_peer import PeerRefused
from mgxir.drivers.verify.tasks import Task, TaskOptions, run_task

RELU = "x = @param:x -> float_type, {2, 3}, {3, 1}\n@1 = relu(x) -> float_type, {2, 3}, {3, 1}\n@2 = @return(@1)\n"
TANH = "x = @param:x -> float_type, {2, 3}, {3, 1}\n@1 = tanh(x) -> float_type, {2, 3}, {3, 1}\n@2 = @return(@1)\n"
SHARED_MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "shared", "onnx-models")
# a product of two 1500x1500 matrices: long enough (a second or more, twice: the target and the
# reference) for a test to kill the worker that runs it
SLOW = (
    "x = @param:x -> float_type, {1500, 1500}, {1500, 1}\n"
    "y = @param:y -> float_type, {1500, 1500}, {1500, 1}\n"
    "@2 = dot(x,y) -> float_type, {1500, 1500}, {1500, 1}\n"
    "@3 = dot(@2,y) -> float_type, {1500, 1500}, {1500, 1}\n"
    "@4 = @return(@3)\n"
)
# a broadcast to 4000x4000 float32 values (64 MB) added to itself: about 400 MB at the peak of a
# task (the target's and the reference's results, compared in float64)
HUGE = (
    "x = @param:x -> float_type, {1}, {1}\n"
    "@1 = multibroadcast[out_lens={4000, 4000}](x) -> float_type, {4000, 4000}, {0, 0}\n"
    "@2 = add(@1,@1) -> float_type, {4000, 4000}, {4000, 1}\n"
    "@3 = @return(@2)\n"
)


def _program(folder, name: str, text: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def _task(path: str, target: str = "ref", **options) -> Task:
    return Task(path, target, TaskOptions(**options))


# -- tasks -------------------------------------------------------------------------------------


def test_a_task_is_ok_against_the_reference_and_mismatches_given_wrong_outputs(tmp_path):
    path = _program(tmp_path, "relu.mgx", RELU)
    done = run_task(_task(path))
    assert done["status"] == "ok" and done["rms"] == 0.0 and done["fingerprint"]
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.savez(tmp_path / "right.npz", x=x, out0=np.maximum(x, 0))
    np.savez(tmp_path / "wrong.npz", x=x, out0=np.abs(x))
    assert run_task(_task(path, against=str(tmp_path / "right.npz")))["status"] == "ok"
    wrong = run_task(_task(path, against=str(tmp_path / "wrong.npz")))
    assert wrong["status"] == "mismatch" and "out0: rms error" in wrong["message"]


def test_a_program_that_does_not_read_is_refused_with_its_position(tmp_path):
    path = _program(tmp_path, "bad.mgx", "@0 = relu(nothing)\n")
    done = run_task(_task(path))
    assert done["status"] == "refused" and done["message"].startswith(f"{path}:1:")
    assert done["reads"] == [str(path)]  # the cache keeps an import that failed, by the input's content
    cache = ResultCache(str(tmp_path / "cache"))
    cache.store(_task(path), done)
    assert cache.lookup(_task(path))["status"] == "refused"


def test_an_onnx_op_mgxir_lacks_is_refused_at_import_not_an_error(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"])], "g", [x], [y])
    path = str(tmp_path / "lacks.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    done = run_task(_task(path))
    assert done["status"] == "refused" and "Unknown operator: NoSuchOp" in done["message"]


# how a task's work ends -> (its status, whether the cache keeps it): mgxir's own clean refusal of
# the input is `refused` and kept; a refusal that says nothing about the input (onnxruntime's, a
# package missing here) is `refused` and not kept; a bug or a limit is `error`
ENDINGS = [
    (MgxError("p.mgx:1:2: error: an op MIGraphX lacks"), "refused", True),
    (PeerRefused("onnxruntime refuses the model: no"), "refused", False),
    (ModuleNotFoundError("no onnxruntime", name="onnxruntime"), "refused", False),
    (ModuleNotFoundError("no helper", name="mgxir_helper"), "error", True),
    (ValueError("a bug"), "error", True),
    (MemoryError(), "error", True),
    (RecursionError(), "error", True),
]


@pytest.mark.parametrize(("raised", "status", "kept"), ENDINGS, ids=[type(e[0]).__name__ for e in ENDINGS])
def test_each_way_a_task_ends_has_its_status_and_the_cache_keeps_what_depends_on_the_input(
    tmp_path, monkeypatch, raised, status, kept
):
    from mgxir.drivers.verify import tasks

    def fails(task, known):
        known["reads"].append(task.input)  # the import read the input before the failure
        raise raised

    monkeypatch.setattr(tasks, "_run_task", fails)
    task = _task(_program(tmp_path, "relu.mgx", RELU))
    done = run_task(task)
    assert done["status"] == status and done["message"] and "\n" not in done["message"]
    cache = ResultCache(str(tmp_path / "cache"))
    cache.store(task, done)
    assert (cache.lookup(task) is not None) == kept


def test_against_onnxruntime_a_model_it_refuses_is_refused_not_an_error():
    pytest.importorskip("onnxruntime")
    models = SHARED_MODELS
    if not os.path.isdir(models):
        pytest.skip("../shared/onnx-models is not here")
    ok = run_task(_task(os.path.join(models, "acos_test.onnx"), against="onnxruntime"))
    assert ok["status"] == "ok" and ok["rms"] < 1e-6
    refused = run_task(_task(os.path.join(models, "add_bcast_test.onnx"), against="onnxruntime"))
    assert refused["status"] == "refused" and refused["message"].startswith("onnxruntime refuses the model")


# -- the cache ---------------------------------------------------------------------------------


def test_the_cache_gives_back_a_result_until_the_input_or_an_option_changes(tmp_path):
    cache = ResultCache(str(tmp_path / "cache"))
    path = _program(tmp_path, "relu.mgx", RELU)
    task = _task(path)
    assert cache.lookup(task) is None
    cache.store(task, run_task(task))
    found = cache.lookup(task)
    assert found is not None and found["status"] == "ok" and found["cached"]
    kept = sorted((tmp_path / "cache").rglob("*.json"))
    stamps = [p.stat().st_mtime_ns for p in kept]
    cache.store(task, found)  # a result from the cache is not written again (a second run only reads)
    assert [p.stat().st_mtime_ns for p in kept] == stamps
    assert cache.lookup(_task(path, seed=1)) is None  # another option
    assert cache.lookup(_task(path, target="cpu")) is None  # another target
    _program(tmp_path, "relu.mgx", TANH)
    assert cache.lookup(task) is None  # the input changed
    _program(tmp_path, "relu.mgx", RELU)
    assert cache.lookup(task) is not None


def test_the_cache_checks_the_files_an_import_read_beside_the_input(tmp_path):
    """A lossless program names its literal data in a sidecar .npz: a changed sidecar is a miss."""
    np.save(tmp_path / "data.npy", np.ones(3, np.float32))
    text = "@0 = @literal{1, 2, 3} -> float_type, {3}, {1}\n@1 = relu(@0) -> float_type, {3}, {1}\n@2 = @return(@1)\n"
    path = _program(tmp_path, "lit.mgx", text)
    cache = ResultCache(str(tmp_path / "cache"))
    task = _task(path)
    done = {**run_task(task), "reads": [path, str(tmp_path / "data.npy")]}  # as if the import read it
    cache.store(task, done)
    assert cache.lookup(task) is not None
    np.save(tmp_path / "data.npy", np.zeros(3, np.float32))
    assert cache.lookup(task) is None


def test_the_files_an_onnx_import_reads_beside_the_model_are_recorded():
    model = os.path.join(SHARED_MODELS, "external_data_test.onnx")
    if not os.path.isfile(model):
        pytest.skip("../shared/onnx-models is not here")
    done = run_task(_task(model))
    assert done["reads"] == [os.path.abspath(model), os.path.abspath(os.path.join(SHARED_MODELS, "conv.weight"))]


def test_two_copies_of_an_input_beside_different_sidecars_are_kept_apart(tmp_path):
    cache = ResultCache(str(tmp_path / "cache"))
    tasks = []
    for folder, value in (("a", 1.0), ("b", 2.0)):
        (tmp_path / folder).mkdir()
        np.save(tmp_path / folder / "data.npy", np.full(3, value, np.float32))
        path = _program(tmp_path / folder, "relu.mgx", RELU)
        tasks.append(_task(path))
        cache.store(tasks[-1], {**run_task(tasks[-1]), "reads": [path, str(tmp_path / folder / "data.npy")]})
    assert all(cache.lookup(task) is not None for task in tasks)


def test_a_timeout_is_cached_under_its_timeout_and_a_dead_worker_is_not(tmp_path):
    path = _program(tmp_path, "relu.mgx", RELU)
    task = _task(path)
    stopped = run_limited(task, Limits(timeout_s=0.5), lambda: time.sleep(30))
    ResultCache(str(tmp_path / "cache"), {"timeout": "0.5"}).store(task, stopped)
    assert ResultCache(str(tmp_path / "cache"), {"timeout": "0.5"}).lookup(task)["message"] == "timed out after 0.5 s"
    assert ResultCache(str(tmp_path / "cache"), {"timeout": "60"}).lookup(task) is None
    died = run_limited(task, Limits(), lambda: os.kill(os.getpid(), signal.SIGKILL))
    assert died["message"].startswith("the task's process died (SIGKILL")
    cache = ResultCache(str(tmp_path / "other"))
    cache.store(task, died)
    assert cache.lookup(task) is None


def test_a_task_past_its_memory_limit_is_cached_under_that_limit(tmp_path, monkeypatch):
    """A second run with nothing changed does not run again what the memory limit stopped (two of
    the shared models took the whole of such a run's 38 s); another limit runs it again."""
    from mgxir.drivers.verify import tasks

    path = _program(tmp_path, "relu.mgx", RELU)
    task = _task(path)

    def exhausted(task, known):
        raise MemoryError

    monkeypatch.setattr(tasks, "_run_task", exhausted)
    stopped = run_task(task)
    assert stopped["message"] == "out of memory (the task's memory limit)"
    ResultCache(str(tmp_path / "cache"), {"memory_limit": "1024"}).store(task, stopped)
    assert ResultCache(str(tmp_path / "cache"), {"memory_limit": "1024"}).lookup(task)["message"] == stopped["message"]
    assert ResultCache(str(tmp_path / "cache"), {"memory_limit": "2048"}).lookup(task) is None


# -- limits and workers ----------------------------------------------------------------------


def test_a_probe_that_kills_its_process_or_hits_a_bug_is_its_targets_error(monkeypatch):
    """Not the run's internal error (a KeyError once) and not a refusal: every task of the target
    is `error` with the line, and the other targets run."""
    from mgxir.drivers.verify import executors, tasks

    options = TaskOptions()
    assert tasks.probe_target("ref", options) is None
    assert tasks.probe_target("gpux", options)[1].startswith("unknown target 'gpux'; did you mean 'gpu'?")
    monkeypatch.setattr(executors, "probe_target", lambda target, options: os.kill(os.getpid(), signal.SIGKILL))
    status, message = executors._probe_in_child("ref", options, Limits())
    assert status == "error" and message.startswith("the target's probe failed: the task's process died (SIGKILL")
    monkeypatch.undo()

    def bug(*arguments):
        raise ValueError("a bug")

    monkeypatch.setattr(tasks, "run_on_target", bug)
    failed = ("error", "internal error in the target's probe: ValueError: a bug")
    assert tasks.probe_target("ref", options) == failed
    assert executors._probe_in_child("ref", options, Limits()) == failed


def test_a_task_that_hangs_is_stopped_at_its_timeout(tmp_path):
    task = _task(_program(tmp_path, "relu.mgx", RELU))
    start = time.monotonic()
    done = run_limited(task, Limits(timeout_s=1.0), lambda: time.sleep(60))
    assert done["status"] == "error" and done["message"] == "timed out after 1 s"
    assert time.monotonic() - start < 10


def test_in_a_batch_the_timeout_and_a_death_fall_on_their_own_task_and_the_rest_run(tmp_path):
    from mgxir.drivers.verify.executors import run_limited_batch

    tasks = [_task(_program(tmp_path, f"p{k}.mgx", RELU)) for k in range(5)]
    works = [
        lambda: {"k": 0},
        lambda: time.sleep(60),
        lambda: {"k": 2},
        lambda: os.kill(os.getpid(), signal.SIGKILL),
        lambda: {"k": 4},
    ]
    found = run_limited_batch(tasks, Limits(timeout_s=1.0), works)
    assert [f.get("k", f.get("message")) for f in found] == [
        0,
        "timed out after 1 s",
        2,
        "the task's process died (SIGKILL; past the memory limit?)",
        4,
    ]
    assert found[1]["input"] == tasks[1].input and found[3]["input"] == tasks[3].input


def test_a_task_past_its_memory_limit_is_an_error_and_its_worker_goes_on(tmp_path):
    huge = _task(_program(tmp_path, "huge.mgx", HUGE))
    limit = Limits(memory_bytes=640 << 20)  # the task thread's stack takes 512 MiB of it
    done = run_limited(huge, limit)
    assert done["status"] == "error" and "memory" in done["message"]
    assert run_limited(_task(_program(tmp_path, "relu.mgx", RELU)), limit)["status"] == "ok"
    assert run_limited(huge, Limits(memory_bytes=None))["status"] == "ok"  # the limit stopped it, nothing else


def test_inline_tasks_meet_the_limits_the_pool_sets_and_give_its_verdicts(tmp_path):
    """Two shared attention models (about 9 GB at their peak in the interpreter) were `ok` inline
    and `error` (the 8 GiB memory limit) on the pool and on Ray: the inline executor had no limits."""
    import resource

    from mgxir.drivers.verify.executors import run_inline

    huge = _task(_program(tmp_path, "huge.mgx", HUGE))
    limit = Limits(memory_bytes=640 << 20)
    before = resource.getrlimit(resource.RLIMIT_AS)
    inline = _verdicts(InlineExecutor(limit), [huge])
    assert inline[0][0] == "error" and "memory" in inline[0][1]
    with executor("process", Limits(workers=1, memory_bytes=640 << 20)) as pool:
        assert _verdicts(pool, [huge]) == inline
    assert resource.getrlimit(resource.RLIMIT_AS) == before  # lifted again: the command goes on
    assert run_inline(huge, Limits(memory_bytes=None))["status"] == "ok"
    relu = _task(_program(tmp_path, "relu.mgx", RELU))
    assert run_inline(relu, Limits(timeout_s=1e-6))["message"] == "timed out after 1e-06 s"
    assert run_inline(relu, Limits())["status"] == "ok"


def test_the_pool_starts_every_worker_before_the_probe_ends(tmp_path):
    """Not one at a time as tasks find no idle worker: the second worker's start-up (spawn, imports,
    warm-up) came after the probe, while the first ran tasks."""
    pool = ProcessExecutor(Limits(workers=2))
    try:
        assert pool.probe("ref", TaskOptions()) is None
        assert len(pool.pool._processes) == 2
    finally:
        pool.close()


def test_batches_are_of_one_target_and_shrink_towards_the_end():
    from mgxir.drivers.verify.executors import BATCH_MOST, batches

    sizes = [len(b) for b in batches(list(range(96)), ["gpu"] * 96, 2)]
    assert sizes == sorted(sizes, reverse=True) and len(sizes) == 8 and sum(sizes) == 96
    assert sizes[0] <= BATCH_MOST and 2 * sizes[-1] < sizes[0]  # the last worker's tail is a small batch
    many = batches(list(range(1142)), ["ref"] * 1142, 2)
    assert max(map(len, many)) <= BATCH_MOST and sorted(i for b in many for i in b) == list(range(1142))
    # an input's targets come one after another in a run: batched as they came, each batch was one task
    targets = ["ref", "cpu"] * 48
    mixed = batches(list(range(96)), targets, 2)
    assert all(len({targets[i] for i in batch}) == 1 for batch in mixed) and len(mixed) <= 9


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _kill_workers_running_a_task(pool_owner: ProcessExecutor, times: int, stop: threading.Event) -> None:
    """Kills a pool worker as soon as it has forked a task's child, `times` times."""
    while times and not stop.is_set():
        pool = pool_owner.pool
        processes = list((getattr(pool, "_processes", None) or {}).values()) if pool else []
        for process in processes:
            if process.pid and _children(process.pid):
                os.kill(process.pid, signal.SIGKILL)
                times -= 1
                time.sleep(0.5)  # the pool notices and is replaced
                break
        time.sleep(0.02)


@pytest.mark.parametrize(("kills", "status", "tries"), [(1, "ok", 2), (2, "error", 2)])
def test_a_task_whose_worker_is_killed_is_retried_then_an_error(tmp_path, kills, status, tries):
    task = _task(_program(tmp_path, "slow.mgx", SLOW))
    pool = ProcessExecutor(Limits(workers=1, retries=1))
    found: dict[int, dict] = {}
    stop = threading.Event()
    killer = threading.Thread(target=_kill_workers_running_a_task, args=(pool, kills, stop))
    try:
        pool._new_pool()
        killer.start()
        pool.run([task], found.__setitem__)
    finally:
        stop.set()
        killer.join()
        pool.close()
    assert found[0]["status"] == status and found[0]["tries"] == tries
    if status == "error":
        assert found[0]["message"] == "its worker died (2 tries)"


def test_process_workers_are_pinned_to_the_gpus_in_turn(monkeypatch):
    import multiprocessing

    from mgxir.drivers.verify.executors import _worker_started

    monkeypatch.setattr(signal, "signal", lambda *a: None)  # the pool's workers ignore Ctrl-C; this test may not
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    started = multiprocessing.get_context("spawn").Value("i", 0)
    seen = []
    for _ in range(3):
        _worker_started(started, ("0", "1"), [])
        seen.append(os.environ["CUDA_VISIBLE_DEVICES"])
    assert seen == ["0", "1", "0"]


def test_two_workers_tuning_into_one_problem_cache_keep_both_winners(tmp_path):
    from mgxir.targets.gpu.tune import ProblemCache

    first, second = ProblemCache(tmp_path / "problems.json"), ProblemCache(tmp_path / "problems.json")
    first.put("gemm 64x64", 3)
    second.put("conv 3x3", 7)  # opened before the first wrote
    assert ProblemCache(tmp_path / "problems.json").entries == {"gemm 64x64": 3, "conv 3x3": 7}


# -- executors agree -------------------------------------------------------------------------


def _verdicts(chosen, tasks: list[Task]) -> list[tuple[str, str]]:
    found: dict[int, dict] = {}
    chosen.run(tasks, found.__setitem__)
    return [(found[i]["status"], found[i]["message"]) for i in range(len(tasks))]


def _mixed_tasks(folder) -> list[Task]:
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.savez(folder / "wrong.npz", x=x, out0=np.abs(x))
    relu = _program(folder, "relu.mgx", RELU)
    return [
        _task(relu),
        _task(_program(folder, "tanh.mgx", TANH)),
        _task(_program(folder, "bad.mgx", "@0 = relu(nothing)\n")),
        _task(relu, against=str(folder / "wrong.npz")),
    ]


def test_the_process_executor_gives_the_inline_verdicts(tmp_path):
    tasks = _mixed_tasks(tmp_path)
    inline = _verdicts(InlineExecutor(), tasks)
    assert [v[0] for v in inline] == ["ok", "ok", "refused", "mismatch"]
    with executor("process", Limits(workers=2)) as pool:
        assert _verdicts(pool, tasks) == inline


def test_the_ray_executor_on_a_local_cluster_gives_the_inline_verdicts(tmp_path):
    pytest.importorskip("ray")
    tasks = _mixed_tasks(tmp_path)
    inline = _verdicts(InlineExecutor(), tasks)
    slow = [_task(_program(tmp_path, f"slow{k}.mgx", SLOW)) for k in range(2)]
    killed: list[int] = []
    with executor("ray", Limits(retries=1)) as cluster:
        assert cluster.probe("ref", tasks[0].options) is None
        assert cluster.probe("gpu", tasks[0].options) is not None  # no GPU in this cluster: refused
        assert _verdicts(cluster, tasks) == inline
        # a Ray worker killed while it runs a task: Ray runs the task again on a worker, nothing is lost
        stop = threading.Event()
        killer = threading.Thread(target=_kill_a_ray_worker, args=(killed, stop))
        killer.start()
        try:
            assert [status for status, _ in _verdicts(cluster, slow)] == ["ok", "ok"]
        finally:
            stop.set()
            killer.join()
    assert len(killed) == 1


def _kill_a_ray_worker(killed: list[int], stop: threading.Event) -> None:
    """Kills the first Ray worker seen running a task (Ray names its process after the function)."""
    while not killed and not stop.is_set():
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    running_a_task = f.read().startswith(b"ray::_on_ray_worker")
            except OSError:
                continue
            if running_a_task:
                os.kill(int(pid), signal.SIGKILL)
                killed.append(int(pid))
                break
        time.sleep(0.05)


# -- the report ------------------------------------------------------------------------------


def _record(name: str, status: str, ms: float | None = 1.0, target: str = "ref") -> dict:
    return {"input": name, "target": target, "status": status, "rms": 0.0, "ms": ms, "message": ""}


def test_the_table_puts_regressions_against_the_baseline_first(tmp_path):
    old = [_record("a", "ok"), _record("b", "mismatch"), _record("c", "ok"), _record("d", "ok", 10.0)]
    path = str(tmp_path / "old.json")
    report.write_json(path, {}, old)
    baseline = report.read_baseline(path)
    new = [_record("a", "ok"), _record("b", "ok"), _record("c", "error"), _record("d", "ok", 30.0), _record("e", "ok")]
    changes = {r["input"]: report.change(r, baseline) for r in new}
    assert changes == {"a": "same", "b": "fixed", "c": "regression", "d": "slower", "e": "new"}
    assert [r["input"] for _, r in report.ordered(new, baseline)] == ["c", "d", "e", "b", "a"]
    assert report.regressions(new, baseline) == 1
    lines = report.table(new, baseline).splitlines()
    assert lines[1].split()[:3] == ["regression", "error", "ref"]
    assert "against the baseline: 1 regression, 1 slower, 1 new, 1 fixed, 0 faster, 1 same" in lines


def test_a_model_that_was_ok_and_is_now_refused_is_a_regression():
    """An importer that stops accepting a model regressed, however cleanly it says so; a model it
    now accepts is fixed."""
    baseline = {("a", "ref"): _record("a", "ok"), ("b", "ref"): _record("b", "refused")}
    assert report.change(_record("a", "refused"), baseline) == "regression"
    assert report.change(_record("b", "ok"), baseline) == "fixed"
    assert report.change(_record("b", "error"), baseline) == "same"


def test_a_baseline_that_is_not_a_report_is_one_line(tmp_path):
    (tmp_path / "x.json").write_text('{"records": 3}')
    with pytest.raises(Exception, match="is not a report mgx-verify wrote"):
        report.read_baseline(str(tmp_path / "x.json"))


def test_the_html_page_is_self_contained_and_escapes_what_it_shows():
    records = [_record("<a>.mgx", "ok", 2.0), _record("b.mgx", "error", None), _record("c", "ok", 50.0, "cpu")]
    page = report.html_page({"mgxir": "x"}, records, None)
    assert page.count("<svg") == 2 and "&lt;a&gt;.mgx" in page and "<a>.mgx" not in page
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing fetched
    assert json.loads(json.dumps(report.report_records(records)))[0]["cached"] is False


VOID_ELEMENTS = {"meta", "br", "hr", "img", "input", "link"}


class _Nesting:
    """Checks that every element of a page is closed in order (html.parser reports, it does not check)."""

    def __init__(self, page: str):
        from html.parser import HTMLParser

        self.open: list[str] = []
        self.problems: list[str] = []
        parser = HTMLParser()
        parser.handle_starttag = lambda tag, attrs: tag in VOID_ELEMENTS or self.open.append(tag)
        parser.handle_startendtag = lambda tag, attrs: None
        parser.handle_endtag = self._closed
        parser.feed(page)
        parser.close()

    def _closed(self, tag: str) -> None:
        if not self.open or self.open.pop() != tag:
            self.problems.append(tag)


def test_the_html_page_is_well_formed_and_shows_regressions_before_the_plots():
    baseline = {("a.mgx", "ref"): _record("a.mgx", "ok"), ("b.mgx", "ref"): _record("b.mgx", "ok")}
    records = [_record("a.mgx", "ok", 2.0), _record("b.mgx", "refused", None), _record("c.mgx", "ok", 50.0, "cpu")]
    page = report.html_page({"mgxir": "x"}, records, baseline)
    nesting = _Nesting(page)
    assert nesting.problems == [] and nesting.open == []
    regression = page.index("<tr class='regression'>")
    assert regression < page.index("<svg") and page.count("<tr class='regression'>") == 2  # and in every record
    assert "<title>c.mgx on cpu: 50.000 ms</title>" in page  # each model's point names it
