"""mgxir as an ONNX backend (`onnx.backend.base.Backend`): `prepare(model).run(inputs)` imports the
model as MIGraphX's parser does and runs it on the reference interpreter.

ONNX's shapes hold at the boundary, where MIGraphX's differ (mgxir's additions, beyond MIGraphX):
- the program is imported for the shapes of the inputs given (as `--input-dim` does), so a model
  whose inputs are 0-d scalars or empty tensors, or whose dimensions are symbolic, runs on them;
  each distinct set of input shapes is imported once;
- a result MIGraphX gives as the scalar {1} where the model declares a 0-d output comes back 0-d.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mgxir.diagnostics import DiagnosticSink
from mgxir.interp import Interpreter
from mgxir.ir.dtype import DType
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.translate.onnx import ImportOptions, import_model_proto


class OnnxBackendRep:
    """A prepared model: `run(inputs)` returns the outputs in the graph's order."""

    def __init__(self, model: Any, path: str = "<model>") -> None:
        self.model = model
        self.path = path
        initializers = {i.name for i in model.graph.initializer}
        self.input_names = [v.name for v in model.graph.input if v.name not in initializers]
        self.output_ranks = [_declared_rank(v) for v in model.graph.output]
        self.programs: dict[tuple, Program] = {}
        self.program_for(None)  # refuse at prepare time what cannot be imported at all

    def program_for(self, shapes: tuple[tuple[int, ...], ...] | None) -> Program:
        program = self.programs.get(shapes)  # type: ignore[arg-type]
        if program is None:
            options = ImportOptions()
            if shapes is not None:
                options.input_dims = {n: list(s) for n, s in zip(self.input_names, shapes)}
            program = import_model_proto(self.model, self.path, options, DiagnosticSink())
            self.programs[shapes] = program  # type: ignore[index]
        return program

    def run(self, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray], **kwargs: Any) -> tuple[np.ndarray, ...]:
        if isinstance(inputs, Mapping):
            feeds = {name: np.asarray(value) for name, value in inputs.items()}
        else:
            feeds = {name: np.asarray(value) for name, value in zip(self.input_names, inputs)}
        shapes = tuple(feeds[n].shape if n in feeds else () for n in self.input_names)
        program = self.program_for(shapes)
        params = {p.param_name: p.shape for p in program.main.parameters()}
        values = {n: _as_parameter(v, params.get(n)) for n, v in feeds.items()}
        outputs = [np.asarray(o) for o in Interpreter(program, DiagnosticSink()).run(values)]
        return tuple(
            o.reshape(()) if rank == 0 and o.size == 1 else o
            for o, rank in zip(outputs, [*self.output_ranks, *[None] * len(outputs)])
        )


def _as_parameter(value: np.ndarray, shape: Shape | None) -> np.ndarray:
    """A value as the parameter takes it: a 0-d value as MIGraphX's scalar {1}, and an integer type
    MIGraphX lacks (int4, uint4: its parser reads them as int8, uint8) in the parameter's type."""
    if shape is None:
        return value
    if value.ndim == 0:
        value = value.reshape(shape.lens)
    try:
        DType.from_numpy(value.dtype)
    except KeyError:
        if shape.dtype.is_integral:  # fp4 values stay as they are: the interpreter packs them
            value = value.astype(shape.dtype.numpy)
    return value


def _declared_rank(value_info: Any) -> int | None:
    tensor = value_info.type.tensor_type
    return len(tensor.shape.dim) if tensor.HasField("shape") else None


def prepare(model: Any, device: str = "CPU", **kwargs: Any) -> OnnxBackendRep:
    """ONNX's backend entry: the model prepared for `run` (MgxError where mgxir refuses it)."""
    if device.upper() != "CPU":
        from mgxir.diagnostics import MgxError

        raise MgxError(f"the ONNX backend runs on the reference interpreter (device CPU), not {device}")
    return OnnxBackendRep(model)


def supports_device(device: str) -> bool:
    return device.upper() == "CPU"


def run_model(model: Any, inputs: Sequence[np.ndarray], device: str = "CPU", **kwargs: Any) -> tuple[np.ndarray, ...]:
    return prepare(model, device).run(inputs)


# -- ONNX's node conformance suite ------------------------------------------------------------


def node_test_cases() -> list[Any]:
    """ONNX's backend node tests, generated from the installed onnx's own cases (as
    `python -m onnx.backend.test.cmd_tools generate-data` makes them): model, inputs, outputs, tolerances."""
    import warnings

    from onnx.backend.test.case import node

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return list(node.collect_testcases(None))


def check_node_case(case: Any, prepare_model: Any = prepare) -> tuple[str, str]:
    """ONNX's rule on one case (`Runner.assert_similar_outputs`: shape, dtype, rtol/atol): ("pass", ""),
    ("fail", why), ("refused", the one-line error) or ("error", an exception no user error explains)."""
    from onnx import TensorProto, numpy_helper
    from onnx.backend.test.runner import Runner

    from mgxir.diagnostics import MgxError

    def arrays(values: Sequence[Any]) -> list[Any]:  # a case keeps some values as TensorProto
        return [numpy_helper.to_array(v) if isinstance(v, TensorProto) else v for v in values]

    try:
        rep = prepare_model(case.model)
        for inputs, outputs in case.data_sets:
            got = rep.run(arrays(inputs))
            Runner.assert_similar_outputs(arrays(outputs), got, rtol=case.rtol, atol=case.atol)
    except MgxError as e:
        return "refused", " ".join(str(e).split())
    except AssertionError as e:
        return "fail", " ".join(str(e).split())[:300]
    except Exception as e:  # the peer's own errors, or a bug of mgxir's: counted apart
        return "error", f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
    return "pass", ""
