"""mgx-run: run a program's `main` on the reference interpreter (or a target) and print its outputs.

Inputs follow iree-run-module's conventions: `--input=x=@x.npy`, `--input=@inputs.npz`,
`--input="x=2x3xf32=1 2 3 4 5 6"`; parameters left over are filled per `--fill`. The driver is
`mgxir.drivers.run`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from mgxir.drivers.run import RunOptions, run_main
from mgxir.tools.cli import run_command

if TYPE_CHECKING:
    import typer


def mgx_run(
    input_file: Annotated[str, typer.Argument(metavar="PROGRAM", help="Program text ('-' for standard input).")] = "-",
    inputs: Annotated[
        list[str] | None,
        typer.Option("--input", help="NAME=@x.npy, @inputs.npz, or NAME=2x3xf32=1 2 3 4 5 6 (repeatable)."),
    ] = None,
    fill: Annotated[str, typer.Option(help="Values for parameters not given: random, zeros, ones or none.")] = "random",
    seed: Annotated[int, typer.Option(help="Seed for --fill=random.")] = 0,
    output: Annotated[str | None, typer.Option("--output", help="@out.npz: write outputs as out0, out1, ...")] = None,
    expected: Annotated[
        str | None, typer.Option("--expected-output", help="@ref.npz: compare outputs; exit 1 on a mismatch.")
    ] = None,
    rms_tol: Annotated[float, typer.Option("--rms-tol", help="MIGraphX's rms tolerance.")] = 1e-3,
    atol: Annotated[float | None, typer.Option("--atol", help="Also require allclose with this atol.")] = None,
    rtol: Annotated[float | None, typer.Option("--rtol", help="Also require allclose with this rtol.")] = None,
    target: Annotated[
        str,
        typer.Option(help="Where to run: ref (the numpy reference interpreter), iree (see --device), vulkan, gpu."),
    ] = "ref",
    device: Annotated[
        str | None,
        typer.Option(
            help="iree: local-task (default), local-sync, cuda, hip or vulkan; gpu: N (CUDA's GPU N), cuda:N or hip:N."
        ),
    ] = None,
    perf: Annotated[bool, typer.Option("--perf", help="With --target=gpu: time each instruction.")] = False,
    exhaustive_tune: Annotated[
        bool,
        typer.Option(
            "--exhaustive-tune",
            help="With --target=gpu: time kernel launch configurations and library algorithms; keep the fastest.",
        ),
    ] = False,
    fp32_math: Annotated[
        str,
        typer.Option(
            "--fp32-math",
            help="With --target=gpu: float32 gemms and convolutions multiply in float32 (ieee, as MIGraphX) "
            "or in TF32 on tensor cores (tf32, as PyTorch's cuDNN convolutions by default).",
        ),
    ] = "ieee",
    cache_dir: Annotated[
        str | None,
        typer.Option("--cache-dir", help="With --target=iree: compiled modules' cache (or $MGXIR_CACHE_DIR)."),
    ] = None,
    timing: Annotated[
        bool, typer.Option("--timing", help="iree: compile/load/run times; vulkan: where each instruction ran.")
    ] = False,
    verify_against_ref: Annotated[
        bool, typer.Option("--verify", help="Run on the target and on ref, compare with the rms rule.")
    ] = False,
    print_max: Annotated[int, typer.Option("--print-max-elements", help="Elide printed values past this many.")] = 64,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the outputs.")] = False,
    from_log: Annotated[bool, typer.Option("--from-log", help="The input is MIGraphX log output.")] = False,
    log_pass: Annotated[
        str | None, typer.Option("--log-pass", help="With --from-log: the program after this pass.")
    ] = None,
) -> None:
    """Run a MIGraphX program's main module and print its outputs."""
    raise SystemExit(run_main(RunOptions(**locals())))


def main() -> None:
    run_command(mgx_run)


if __name__ == "__main__":
    main()
