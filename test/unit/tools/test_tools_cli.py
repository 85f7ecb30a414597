"""The tools read a plain command line without typer (mgxir.tools.cli): the values must be exactly
those typer would pass, and anything else must be left to typer."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mgxir.tools import cli, mgx_opt, mgx_run, mgx_translate

CASES = [
    (mgx_opt, "opt_main", []),
    (mgx_opt, "opt_main", ["a.mgx"]),
    (mgx_opt, "opt_main", ["-", "-o", "x.mgx", "--lossless", "--sidecar=s.npz"]),
    (mgx_opt, "opt_main", ["-p", "dce,cse", "--pass", "fuse_pointwise", "--pass=dce", "a.mgx"]),
    (mgx_opt, "opt_main", ["--no-verify-each", "-O", "a.mgx", "--timing", "--pass-statistics"]),
    (mgx_opt, "opt_main", ["--verify-each", "--print-ir-after", "dce", "--print-ir-after=cse", "--split-input-file"]),
    (mgx_opt, "opt_main", ["--from-log", "--log-pass", "dce", "x.log", "--disable-passes=a,b"]),
    (mgx_run, "run_main", ["p.mgx", "--input=x=2x3xf32=1", "--input", "y=@y.npy", "--seed", "3", "--rms-tol", "0.5"]),
    (mgx_run, "run_main", ["-q", "--fill=zeros", "--verify", "--atol", "1e-2", "--print-max-elements", "4", "p"]),
    (mgx_run, "run_main", ["--quiet", "--target", "ref", "--input=x=-1", "--expected-output=@r.npz"]),
    (mgx_translate, "translate_main", ["--to", "mgx-lossless", "a.mgx"]),
    (mgx_translate, "translate_main", ["--from-log", "a.log", "-o", "o.mgx", "--from=mgx"]),
    (mgx_translate, "translate_main", ["--input-dim", "@x 1 2", "--batch=3", "--allow-undefined", "a.onnx"]),
    (mgx_run, "run_main", ["--output=@a.npy", "--output", "-", "--fill", "ones", "--batch", "2", "m.onnx"]),
    (mgx_opt, "opt_main", ["-q", "--no-verify-each", "--quiet", "a.mgx"]),
]


def _record(monkeypatch: pytest.MonkeyPatch, module: Any, driver: str) -> list[Any]:
    seen: list[Any] = []
    monkeypatch.setattr(module, driver, lambda options: seen.append(options) or 0)
    return seen


def _command(module: Any) -> Any:
    return getattr(module, module.__name__.rsplit(".", 1)[1])


@pytest.mark.parametrize(("module", "driver", "argv"), CASES)
def test_plain_command_lines_read_as_typer_reads_them(
    monkeypatch: pytest.MonkeyPatch, module: Any, driver: str, argv: list[str]
) -> None:
    seen = _record(monkeypatch, module, driver)
    command = _command(module)
    arguments = cli.plain_arguments(command, argv)
    assert arguments is not None, "a plain command line went to typer"
    with pytest.raises(SystemExit):
        command(**arguments)
    with pytest.raises(SystemExit):
        cli.typer_app(command)(args=argv, prog_name="tool")
    assert len(seen) == 2
    assert seen[0] == seen[1]


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        (mgx_opt, ["--help"]),
        (mgx_opt, ["-h"]),
        (mgx_opt, ["--bogus", "a.mgx"]),
        (mgx_opt, ["a.mgx", "b.mgx"]),
        (mgx_opt, ["a.mgx", "-o"]),
        (mgx_opt, ["-o", "--lossless"]),
        (mgx_opt, ["--lossless=1"]),
        (mgx_opt, ["--", "a.mgx"]),
        (mgx_run, ["--seed", "x"]),
        (mgx_run, ["--rms-tol=abc"]),
        (mgx_run, ["--no-quiet"]),
    ],
)
def test_other_command_lines_go_to_typer(module: Any, argv: list[str]) -> None:
    assert cli.plain_arguments(_command(module), argv) is None


def test_a_bad_value_gets_typers_message(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.run_command(mgx_run.mgx_run, ["--seed", "x", "p.mgx"], prog_name="mgx-run")
    assert exit_info.value.code == 2
    assert "Invalid value for '--seed'" in capsys.readouterr().err


@pytest.mark.parametrize("module", [mgx_opt, mgx_run, mgx_translate])
def test_typer_reads_the_declarations(module: Any) -> None:
    """The typer command has exactly the declared options (and --version, --help), with their help."""
    import typer.core
    import typer.main

    command = _command(module)
    click_command = typer.main.get_command(cli.typer_app(command))
    options = [parameter for parameter in click_command.params if isinstance(parameter, typer.core.TyperOption)]
    flags = {flag for parameter in options for flag in (*parameter.opts, *parameter.secondary_opts)}
    declared = {flag for option in command.options.DECLARED for flag in option.flags}
    negations = {option.negation for option in command.options.DECLARED if option.negation}
    assert flags == declared | negations | {"--version"}
    helps = {parameter.name: parameter.help for parameter in click_command.params}
    assert all(helps[option.name] == option.help for option in command.options.DECLARED)


@pytest.mark.parametrize(
    ("module", "argv", "canonical"),
    [
        (mgx_opt, ["-pass-pipeline=fuse", "a.mgx"], ["--pass-pipeline=fuse", "a.mgx"]),
        (mgx_opt, ["-print-ir-after-all", "-o", "-x.mgx"], ["--print-ir-after-all", "-o", "-x.mgx"]),
        (mgx_opt, ["--mlir-timing", "--mlir-print-ir-after-all"], ["--timing", "--print-ir-after-all"]),
        (mgx_opt, ["-p", "-lossless", "-O", "--", "-lossless"], ["-p", "-lossless", "-O", "--", "-lossless"]),
        (mgx_run, ["--expected_output=@r.npz", "-seed", "-1"], ["--expected-output=@r.npz", "--seed", "-1"]),
        (mgx_run, ["-unknown-flag", "-q"], ["-unknown-flag", "-q"]),
        (mgx_translate, ["-help", "-version"], ["--help", "--version"]),
    ],
)
def test_llvm_and_mlir_spellings(module: Any, argv: list[str], canonical: list[str]) -> None:
    assert cli.canonical_argv(_command(module), argv) == canonical


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.run_command(mgx_opt.mgx_opt, ["a.mgx", "--version"], prog_name="mgx-opt")
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("mgx-opt (mgxir) ")


def test_options_are_declared_once() -> None:
    """The options classes take their fields from the declarations: defaults, order, no others."""
    from mgxir.drivers.opt import OptOptions

    options = OptOptions("a.mgx", pipeline="dce")
    assert (options.input, options.pipeline, options.verify_each, options.passes) == ("a.mgx", "dce", True, None)
    assert [o.name for o in OptOptions.DECLARED][:3] == ["input", "output", "lossless"]
    with pytest.raises(TypeError, match="has no option 'pipline'"):
        OptOptions(pipline="dce")


def test_mlir_pipeline_spelling() -> None:
    from mgxir.drivers.opt import mlir_pipeline

    assert mlir_pipeline("builtin.module(dce,cse)") == "dce,cse"
    assert mlir_pipeline("dce,fuse_pointwise{max_rounds=2}") == "dce,fuse_pointwise{max_rounds=2}"


@st.composite
def _command_lines(draw: st.DrawFn, module: Any) -> tuple[list[str], list[str]]:
    """A command line of declared long options with values, written with two dashes and with LLVM's one."""
    options = [o for o in _command(module).options.DECLARED if any(f.startswith("--") for f in o.flags)]
    chosen = draw(st.lists(st.sampled_from(options), max_size=6))
    value = st.text(alphabet="abc-=@. 01", min_size=1, max_size=6)
    double: list[str] = []
    single: list[str] = []
    for option in chosen:
        words = [] if option.kind is bool else [draw(value) if option.kind is str else "1"]
        double += [option.long_flag, *words]
        single += [option.long_flag[1:], *words]
    return double, single


@given(st.data())
@settings(max_examples=60, deadline=None)
def test_one_dash_reads_as_two(data: st.DataObject) -> None:
    for module in (mgx_opt, mgx_run, mgx_translate):
        double, single = data.draw(_command_lines(module))
        command = _command(module)
        assert cli.canonical_argv(command, single) == cli.canonical_argv(command, double) == double
