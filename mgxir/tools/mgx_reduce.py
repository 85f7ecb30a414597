"""mgx-reduce: cut a program down to the smallest one on which a test still shows the bug, and
write it as a self-contained reproducer (the driver: `mgxir.drivers.reduce`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from mgxir.drivers.reduce.driver import DEFAULT_TIMEOUT, ReduceOptions, reduce_main
from mgxir.drivers.reduce.interesting import DEFAULT_RMS_TOLERANCE
from mgxir.tools.cli import run_command

if TYPE_CHECKING:
    import typer


def mgx_reduce(
    input: Annotated[
        str, typer.Argument(help="The program: .mgx text, .onnx, .mxr, .json, a --py reproducer, a log.")
    ] = "-",
    output: Annotated[
        str | None, typer.Option("-o", "--output", help="The reproducer to write (inputs in OUT.inputs.npz).")
    ] = None,
    crash: Annotated[
        str | None,
        typer.Option("--crash", help="Interesting: this pipeline fails with the input's kind of error."),
    ] = None,
    mismatch: Annotated[
        str | None,
        typer.Option("--mismatch", help="Interesting: this target (ref, gpu, vulkan, iree, cpu) differs from ref."),
    ] = None,
    miscompile: Annotated[
        str | None,
        typer.Option("--miscompile", help="Interesting: this pipeline changes the outputs on ref."),
    ] = None,
    interesting: Annotated[
        str | None,
        typer.Option("--interesting", help="Interesting: this shell command exits 0 ({} is the candidate file)."),
    ] = None,
    jobs: Annotated[int, typer.Option("-j", "--jobs", help="Worker processes (default: one per core).")] = 0,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds one test may run on one candidate.")
    ] = DEFAULT_TIMEOUT,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No progress line.")] = False,
    from_log: Annotated[
        bool, typer.Option("--from-log", help="The input is MIGraphX log output: the program printed in it.")
    ] = False,
    log_pass: Annotated[
        str | None, typer.Option("--log-pass", help="With --from-log: the program printed after this pass.")
    ] = None,
    from_py: Annotated[
        bool, typer.Option("--from-py", help="The input is a MIGraphX --py reproducer (any file name).")
    ] = False,
    inputs: Annotated[
        list[str] | None,
        typer.Option("--input", help="Values of main's parameters, as mgx-run takes them (others random)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random inputs.")] = 0,
    rms_tol: Annotated[
        float, typer.Option("--rms-tol", help="--mismatch/--miscompile: outputs differ past this rms error.")
    ] = DEFAULT_RMS_TOLERANCE,
) -> None:
    """Reduce a program to a small reproducer of a crash, a mismatch, a miscompile or any test."""
    raise SystemExit(reduce_main(ReduceOptions(**locals())))


def main() -> None:
    run_command(mgx_reduce)


if __name__ == "__main__":
    main()
