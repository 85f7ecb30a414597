"""The pass manager's reports (IR dumps, timing, statistics), reproducers, pipeline text and the
failing test pass, each checked to the character: users read these reports and replay reproducers."""

from __future__ import annotations

import dataclasses
import gc
import io
import itertools
from collections import Counter
from pathlib import Path

import pytest

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.module import Module
from mgxir.ir.program import Program
from mgxir.passes import manager as manager_module
from mgxir.passes import registry
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.manager import Instrumentation, PassManager, disabled_passes, read_reproducer
from mgxir.passes.registry import PASSES, PIPELINES, format_pipeline, list_passes, parse_pipeline
from mgxir.passes.testing import TestFail as FailingPass
from mgxir.text.parser import parse_program
from mgxir.text.printer import PrintOptions, print_program
from mgxir.verifier import verify

PARAM = "x = @param:x -> float_type, {2}, {1}\n"
SOURCE = (
    'module: "main"\n'
    + PARAM
    + "@1 = neg(x) -> float_type, {2}, {1}\n"
    + "@2 = tanh(x) -> float_type, {2}, {1}\n"
    + "@3 = @return(@1)\n"
)
AFTER_DCE_SOURCE = 'module: "main"\n' + PARAM + "@1 = neg(x) -> float_type, {2}, {1}\n@2 = @return(@1)\n"
RULE = "===-------------------------------------------------------------------------==="


def _read(text: str = SOURCE) -> Program:
    program = parse_program(text, "t.mgx")
    verify(program)
    return program


def _printed(text: str) -> str:
    return print_program(_read(text), PrintOptions(lossless=True))


PRINTED = _printed(SOURCE)
AFTER_DCE = _printed(AFTER_DCE_SOURCE)


def _run(pipeline: str, **options: object) -> str:
    stream = io.StringIO()
    PassManager(parse_pipeline(pipeline), Instrumentation(stream=stream, **options)).run(_read())  # type: ignore[arg-type]
    return stream.getvalue()


def test_dumps_before_and_after_the_named_passes_only() -> None:
    out = _run(
        "dce,cse", print_before=frozenset({"dead_code_elimination"}), print_after=frozenset({"dead_code_elimination"})
    )
    assert out == (
        "// -----// IR Dump Before dead_code_elimination //----- //\n"
        + PRINTED
        + "// -----// IR Dump After dead_code_elimination //----- //\n"
        + AFTER_DCE
    )


def test_dump_after_change_skips_the_passes_that_changed_nothing() -> None:
    assert _run("cse,dce,cse", print_after_change=True) == (
        "// -----// IR Dump After dead_code_elimination //----- //\n" + AFTER_DCE
    )


def test_dumps_are_lossless() -> None:
    text = 'module: "main"\n@0 = @literal{1.2345678} -> float_type, {1}, {0}\n@1 = @return(@0)\n'
    stream = io.StringIO()
    PassManager(parse_pipeline("cse"), Instrumentation(stream=stream, print_after_all=True)).run(_read(text))
    dump = stream.getvalue()
    assert dump == "// -----// IR Dump After eliminate_common_subexpression //----- //\n" + _printed(text)
    assert "{1.2345678}" in dump


def test_tree_dir_holds_the_ir_after_each_pass(tmp_path: Path) -> None:
    _run("dce,cse", tree_dir=str(tmp_path / "tree"))
    files = sorted((tmp_path / "tree").iterdir())
    assert [f.name for f in files] == ["000_dead_code_elimination.mgx", "001_eliminate_common_subexpression.mgx"]
    assert files[0].read_text() == files[1].read_text() == AFTER_DCE


def test_timing_report(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = itertools.count()
    # dce takes 0.25 s and cse 0.5 s: the clock is read once before and once after each pass
    seconds = iter([0.0, 0.25, 1.0, 1.5])
    monkeypatch.setattr(manager_module.time, "perf_counter", lambda: next(seconds, float(next(ticks))))
    assert _run("dce,cse", timing=True).splitlines() == [
        RULE,
        "                         ... Execution time report ...",
        RULE,
        "  Total Execution Time: 0.7500 seconds",
        "",
        "  ----Wall Time----  ----Name----",
        "    0.2500 ( 33.3%)  dead_code_elimination",
        "    0.5000 ( 66.7%)  eliminate_common_subexpression",
        "    0.7500 (100.0%)  Total",
    ]


def test_statistics_report_counts_instructions_and_the_pass_counters() -> None:
    assert _run("dce,cse", statistics=True).splitlines() == [
        RULE,
        "                         ... Pass statistics report ...",
        RULE,
        "dead_code_elimination",
        "  (S) 4 instructions before, 3 after",
        "  (S) 1 instructions removed",
        "eliminate_common_subexpression",
        "  (S) 3 instructions before, 3 after",
    ]


def test_no_reports_unless_asked() -> None:
    assert _run("dce,cse") == ""


def test_a_disabled_pass_is_left_out_of_the_run_and_the_replay(tmp_path: Path) -> None:
    repro = tmp_path / "r.mgx"
    passes = [*parse_pipeline("dce"), FailingPass()]
    options = Instrumentation(reproducer=str(repro), disabled=frozenset({"dead_code_elimination"}), main_only=True)
    with pytest.raises(MgxError, match="pass 'test_fail' failed"):
        PassManager(passes, options).run(_read(), replay=_read)
    assert repro.read_text() == "// mgx-opt -p 'test_fail' -O-scope=main\n" + PRINTED
    assert read_reproducer(repro.read_text()) == ("test_fail", True)


def test_replayed_reproducer_holds_the_ir_the_earlier_passes_made(tmp_path: Path) -> None:
    repro = tmp_path / "r.mgx"
    passes = [*parse_pipeline("dce"), FailingPass(), *parse_pipeline("cse")]
    with pytest.raises(MgxError):
        PassManager(passes, Instrumentation(reproducer=str(repro))).run(_read(), replay=_read)
    assert repro.read_text() == "// mgx-opt -p 'test_fail,eliminate_common_subexpression'\n" + AFTER_DCE
    assert read_reproducer(repro.read_text()) == ("test_fail,eliminate_common_subexpression", False)


@pytest.mark.parametrize(
    "first_line",
    ["// mgx-opt -p dce", "// mgx-opt -p 'dce", "mgx-opt -p 'dce'", "", "// mgx-opt -P 'dce'"],
)
def test_a_reproducer_needs_its_quoted_pipeline_line(first_line: str) -> None:
    with pytest.raises(MgxError, match=r"^error: not a reproducer: the first line must be // mgx-opt -p '<pipeline>'$"):
        read_reproducer(first_line + "\n" + SOURCE)


def test_reproducer_scope_is_read_from_the_first_line_only() -> None:
    assert read_reproducer("// mgx-opt -p 'a,b{x=1}'\n// -O-scope=main\n") == ("a,b{x=1}", False)
    assert read_reproducer("// mgx-opt -p 'dce' -O-scope=main") == ("dce", True)


def test_the_test_pass_fails_on_purpose_or_leaves_invalid_ir() -> None:
    with pytest.raises(
        MgxError, match=r"^error: pass 'test_fail' failed: test_fail: failing on purpose in module 'main'$"
    ):
        PassManager([FailingPass()]).run(_read())
    with pytest.raises(MgxError, match=r"^error: pass 'test_fail' left invalid IR: ") as invalid:
        PassManager([FailingPass(invalid=True)]).run(_read())
    assert "neg" in str(invalid.value)
    program = _read()
    FailingPass(invalid=True).apply(program, manager_module.PassContext())
    assert [i.op.name for i in program.main][:2] == ["neg", "@param"]
    assert program.main.first is not None and program.main.first.args[0].op.name == "neg"


def test_the_invalid_test_pass_leaves_a_first_instruction_without_users_alone() -> None:
    text = 'module: "main"\n' + PARAM + "@1 = @literal{1} -> float_type, {1}, {0}\n@2 = @return(@1)\n"
    program = _read(text)
    PassManager([FailingPass(invalid=True)]).run(program)
    assert len(program.main) == 3


def test_pipeline_text_names_only_options_off_their_defaults() -> None:
    passes = [
        *parse_pipeline("fuse_pointwise{max_rounds=8 enable_rewrite_reshapes=false}"),
        FailingPass(invalid=True),
        FailingPass(),
        *parse_pipeline("dce"),
    ]
    assert format_pipeline(passes) == (
        "fuse_pointwise{enable_rewrite_reshapes=false},test_fail{invalid=true},test_fail,dead_code_elimination"
    )
    pipeline = "fuse_pointwise{max_rounds=3},fuse_reduce{rounds=2 enable_rewrite_reshapes=1}"
    assert format_pipeline(parse_pipeline(pipeline)) == "fuse_pointwise{max_rounds=3},fuse_reduce{rounds=2}"
    pipeline = "fuse_reduce{rounds=2 enable_rewrite_reshapes=0}"
    assert format_pipeline(parse_pipeline(pipeline)) == "fuse_reduce{rounds=2 enable_rewrite_reshapes=false}"
    assert format_pipeline([]) == ""


def test_a_pass_table_keeps_its_own_places_and_refiling_drops_the_loaded_class() -> None:
    places = {"dce": "mgxir.passes.dead_code_elimination:DeadCodeElimination"}
    table = registry.PassTable(places)
    places.clear()
    assert table["dce"].name == "dead_code_elimination"
    table.file("dce", "mgxir.passes.testing:TestFail")
    assert table["dce"] is FailingPass
    table.register(PASSES["eliminate_common_subexpression"])
    assert dict(table._places) == {
        "dce": "mgxir.passes.testing:TestFail",
        "eliminate_common_subexpression": ("mgxir.passes.eliminate_common_subexpression:EliminateCommonSubexpression"),
    }


def test_list_passes_shows_options_aliases_and_pipelines() -> None:
    lines = list_passes().split("\n")
    assert lines[-1] == ""
    at = lines.index("  fuse_pointwise: " + PASSES["fuse_pointwise"].description)
    assert lines[at + 1 : at + 3] == ["      max_rounds: int = 8", "      enable_rewrite_reshapes: bool = True"]
    aliases = lines.index("aliases:")
    assert lines[aliases + 1 : aliases + 3] == [
        "  dce = dead_code_elimination",
        "  cse = eliminate_common_subexpression",
    ]
    assert lines[aliases + 3] == "pipelines:"
    assert "  fuse = fuse_pointwise,fuse_reduce,dead_code_elimination" in lines


def test_named_pipelines_run_each_pass_then_the_follower() -> None:
    assert registry._after_each(["a", "b{x=1}"], "dce") == "a,dce,b{x=1},dce"
    assert PIPELINES["O"].startswith("eliminate_identity,dead_code_elimination,simplify_algebra,dead_code_elimination,")


def test_registered_passes_and_pipelines_are_looked_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "PASSES", registry.PassTable(dict(PASSES._places)))
    monkeypatch.setitem(PIPELINES, "fail_then_dce", "")
    registry.register_pass(FailingPass)
    registry.register_pipeline("fail_then_dce", "test_fail{invalid=true},dce")
    assert registry.PASSES["test_fail"] is FailingPass
    assert [p.pipeline_text() for p in parse_pipeline("fail_then_dce")] == [
        "test_fail{invalid=true}",
        "dead_code_elimination",
    ]


def test_disabled_passes_from_the_flag_and_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MIGRAPHX_DISABLE_PASSES", raising=False)
    assert disabled_passes(" dce ,fuse_reduce,") == frozenset({"dead_code_elimination", "fuse_reduce"})
    assert disabled_passes(None) == frozenset()
    monkeypatch.setenv("MIGRAPHX_DISABLE_PASSES", "cse,split_reduce")
    assert disabled_passes(None) == frozenset({"eliminate_common_subexpression", "split_reduce"})
    assert disabled_passes("dce") == frozenset(
        {"dead_code_elimination", "eliminate_common_subexpression", "split_reduce"}
    )


def test_reproducer_without_replay_holds_the_snapshot_before_the_pass(tmp_path: Path) -> None:
    repro = tmp_path / "r.mgx"
    passes = [*parse_pipeline("dce"), FailingPass()]
    with pytest.raises(MgxError):
        PassManager(passes, Instrumentation(reproducer=str(repro))).run(_read())
    assert repro.read_text() == "// mgx-opt -p 'test_fail'\n" + AFTER_DCE


def test_without_verify_each_invalid_ir_passes_through() -> None:
    program = _read()
    PassManager([FailingPass(invalid=True)], Instrumentation(verify_each=False)).run(program)
    assert program.main.first is not None and program.main.first.op.name == "neg"


@dataclasses.dataclass
class Raises(ModulePass):
    name = "raises"
    error: str = "value"

    def apply_module(self, module: Module, context: PassContext) -> None:
        if self.error == "value":
            raise ValueError("bad value")
        raise MgxError("")


def test_a_failing_pass_is_named_with_the_first_line_of_its_error() -> None:
    with pytest.raises(MgxError, match=r"^error: pass 'raises' failed: ValueError: bad value$"):
        PassManager([Raises()]).run(_read())
    with pytest.raises(MgxError) as empty:
        PassManager([Raises(error="empty")]).run(_read())
    assert empty.value.message == "pass 'raises' failed: "


def test_tree_dir_is_made_with_its_parents(tmp_path: Path) -> None:
    _run("dce", tree_dir=str(tmp_path / "a" / "b"))
    assert (tmp_path / "a" / "b" / "000_dead_code_elimination.mgx").read_text() == AFTER_DCE


def test_the_cycle_collector_is_back_on_after_a_run() -> None:
    gc.enable()  # a tool's run_guarded, called by an earlier test, leaves it off as the tools do
    _run("dce")
    assert gc.isenabled()


def test_a_quote_after_the_pipeline_does_not_end_it() -> None:
    assert read_reproducer("// mgx-opt -p 'dce' -O-scope=main // 'note'\n") == ("dce", True)


def test_counts_add_up() -> None:
    context = PassContext()
    context.count("a")
    context.count("a")
    context.count("b", 3)
    assert dict(context.statistics) == {"a": 2, "b": 3}


@dataclasses.dataclass
class CountModules(ModulePass):
    name = "count_modules"

    def apply_module(self, module: Module, context: PassContext) -> None:
        context.count(module.name)


def test_a_module_pass_runs_once_on_each_module_and_never_on_bypass_ones() -> None:
    source = (
        'module: "main"\nx = @param:x -> float_type, {2}, {1}\nc = @param:c -> bool_type, {1}, {0}\n'
        "@2 = if(c), [then, else] -> [float_type, {2}, {1}]\n"
        "@3 = if(c), [then, else] -> [float_type, {2}, {1}]\n"
        "@4 = get_tuple_elem[index=0](@2) -> float_type, {2}, {1}\n@5 = @return(@4)\n\n"
        'module: "then"\nthen:@0 = neg(x) -> float_type, {2}, {1}\nthen:@1 = @return(then:@0)\n\n'
        'module: "else"\nelse:@0 = abs(x) -> float_type, {2}, {1}\nelse:@1 = @return(else:@0)\n'
    )
    program = parse_program(source)
    program.modules["else"].bypass = True
    context = PassContext()
    CountModules().apply(program, context)
    assert dict(context.statistics) == {"then": 1, "main": 1}


def test_a_pass_class_defined_in_a_function_is_kept_when_registered() -> None:
    @dataclasses.dataclass
    class Local(ModulePass):
        name = "local"

        def apply_module(self, module: Module, context: PassContext) -> None: ...

    table = registry.PassTable({})
    table.register(Local)
    assert table["local"] is Local


def test_a_replay_on_main_only_leaves_the_branches_as_they_were(tmp_path: Path) -> None:
    source = (
        'module: "main"\nx = @param:x -> float_type, {2}, {1}\nc = @param:c -> bool_type, {1}, {0}\n'
        "@2 = if(c), [then, else] -> [float_type, {2}, {1}]\n"
        "@3 = get_tuple_elem[index=0](@2) -> float_type, {2}, {1}\n@4 = @return(@3)\n\n"
        'module: "then"\nthen:@0 = neg(x) -> float_type, {2}, {1}\nthen:@1 = tanh(x) -> float_type, {2}, {1}\n'
        "then:@2 = @return(then:@0)\n\n"
        'module: "else"\nelse:@0 = abs(x) -> float_type, {2}, {1}\nelse:@1 = @return(else:@0)\n'
    )
    repro = tmp_path / "r.mgx"
    options = Instrumentation(reproducer=str(repro), main_only=True)
    with pytest.raises(MgxError):
        PassManager([*parse_pipeline("dce"), FailingPass()], options).run(_read(source), replay=lambda: _read(source))
    assert "then:@1 = tanh(x)" in repro.read_text()


# -- verifier warnings, default stream, print-before-all, the context's counter ---------------------

QMARK_DEAD = (
    'module: "main"\n' + PARAM + "@1 = add(x,?) -> float_type, {2}, {1}\n"
    "@2 = tanh(x) -> float_type, {2}, {1}\n@3 = @return(@1)\n"
)


def test_verifying_after_a_pass_warns_into_the_callers_sink() -> None:
    program = parse_program(QMARK_DEAD, "t.mgx", sink=DiagnosticSink())
    sink = DiagnosticSink()
    PassManager(parse_pipeline("dce")).run(program, sink)
    assert [w.message for w in sink.warnings] == ["an argument printed as '?' has no definition; its shape is unknown"]


def test_dumps_go_to_stderr_unless_a_stream_is_given(capsys: pytest.CaptureFixture[str]) -> None:
    PassManager(parse_pipeline("dce"), Instrumentation(print_before_all=True)).run(_read())
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "// -----// IR Dump Before dead_code_elimination //----- //\n" + _printed(SOURCE)


def test_a_context_counts_into_the_counter_it_is_given() -> None:
    counter: Counter[str] = Counter({"earlier": 1})
    PassContext(counter).count("rewrites", 2)
    assert counter == {"earlier": 1, "rewrites": 2}


# -- pipeline text errors, named pipelines ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("dce,{x}", "pass pipeline: cannot read '{x}' (expected a pass name)"),
        ("dce;cse", "pass pipeline: expected ',' after 'dce', got ';cse'"),
        ("fuse{x=1}", "pass pipeline: the pipeline 'fuse' takes no options"),
        ("dce,not_a_pass", "unknown pass 'not_a_pass' (mgx-opt --list-passes lists them)"),
    ],
)
def test_pipeline_text_errors(text: str, message: str) -> None:
    with pytest.raises(MgxError) as raised:
        parse_pipeline(text)
    assert raised.value.message == message


def test_unknown_passes_can_be_skipped_and_named_pipelines_skip_them(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [p.name for p in parse_pipeline("dce,not_a_pass,cse", skip_unknown=True)] == [
        "dead_code_elimination",
        "eliminate_common_subexpression",
    ]
    # a named pipeline may name passes not written yet (as `ref` names rewrite_rnn did)
    monkeypatch.setitem(PIPELINES, "with_a_future_pass", "dce,a_future_pass")
    assert [p.name for p in parse_pipeline("with_a_future_pass")] == ["dead_code_elimination"]
