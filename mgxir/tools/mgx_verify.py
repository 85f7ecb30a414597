"""mgx-verify: every input (files, or folders walked) on every target, compared with a reference and
timed, through a pool of processes or a Ray cluster, with a JSON report, a table and an HTML page.
The driver is `mgxir.drivers.verify.driver`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from mgxir.drivers.verify.driver import VerifyOptions, verify_main
from mgxir.tools.cli import typer_app

if TYPE_CHECKING:
    import typer


def mgx_verify(
    paths: Annotated[
        list[str] | None, typer.Argument(metavar="PATHS...", help="Programs or models, or folders to walk.")
    ] = None,
    targets: Annotated[
        str, typer.Option("--targets", help="Comma-separated: ref, cpu (IREE local-task), iree, vulkan, gpu.")
    ] = "ref",
    against: Annotated[
        str,
        typer.Option(
            "--against", help="reference (the reference interpreter), onnxruntime (.onnx inputs) or FILE.npz."
        ),
    ] = "reference",
    pipeline: Annotated[
        str | None,
        typer.Option("-p", "--pass-pipeline", help="Passes run on the program before the target (not the reference)."),
    ] = None,
    tune: Annotated[bool, typer.Option("--tune", help="gpu: exhaustive tuning of kernels and library calls.")] = False,
    perf: Annotated[bool, typer.Option("--perf", help="Time 10 runs after a warm-up run (the median).")] = False,
    device: Annotated[str | None, typer.Option("--device", help="iree: its device; gpu: N, cuda:N or hip:N.")] = None,
    executor: Annotated[str, typer.Option("--executor", help="process (a pool), inline or ray.")] = "process",
    ray_address: Annotated[
        str | None, typer.Option("--ray-address", help="With --executor=ray: a running cluster (default: a local one).")
    ] = None,
    workers: Annotated[int, typer.Option("--workers", help="process: the pool's size (default: one per core).")] = 0,
    gpus: Annotated[
        str | None,
        typer.Option("--gpus", help="process: GPU numbers (0,1): worker k sees only the k-th (CUDA_VISIBLE_DEVICES)."),
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds a task may run.")] = 600.0,
    memory_limit: Annotated[
        float, typer.Option("--memory-limit", help="GiB of address space a task may use (0: no limit; not on gpu).")
    ] = 8.0,
    retries: Annotated[int, typer.Option("--retries", help="More tries for a task whose worker died.")] = 2,
    report: Annotated[str | None, typer.Option("--report", help="Write the JSON report here.")] = None,
    html: Annotated[str | None, typer.Option("--html", help="Write the HTML page here.")] = None,
    baseline: Annotated[
        str | None, typer.Option("--baseline", help="An earlier report: regressions against it come first.")
    ] = None,
    cache_dir: Annotated[
        str | None, typer.Option("--cache-dir", help="The caches' folder (default: $MGXIR_VERIFY_CACHE).")
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the result cache.")] = False,
    rms_tol: Annotated[float, typer.Option("--rms-tol", help="MIGraphX's rms tolerance.")] = 1e-3,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the generated inputs.")] = 0,
    all_rows: Annotated[bool, typer.Option("--all", help="Print every record, not only changes and failures.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Verify programs on targets: import, compile, run, compare with the rms rule, time."""
    raise SystemExit(verify_main(VerifyOptions(**locals())))


def main() -> None:
    # typer reads the command line: the plain reader of cli.py takes one positional argument, and
    # mgx-verify takes many (its start-up cost is small beside a run's)
    typer_app(mgx_verify)()


if __name__ == "__main__":
    main()
