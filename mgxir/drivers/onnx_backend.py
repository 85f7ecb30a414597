"""mgxir as an ONNX backend (`onnx.backend.base.Backend`): `prepare(model).run(inputs)` imports the
model as MIGraphX's parser does and runs it on the reference interpreter.

ONNX's shapes hold at the boundary, where MIGraphX's differ (mgxir's additions, beyond MIGraphX):
- the program is imported for the shapes of the inputs given (as `--input-dim` does), so a model
  whose inputs are 0-d scalars or empty tensors, or whose dimensions are symbolic, runs on them;
  each distinct set of input shapes is imported once;
- a result MIGraphX gives as the scalar {1} where the model declares a 0-d output comes back 0-d;
- where MIGraphX's parser refuses a model because an input it needs constant is a graph input
  (Pad's pads, TopK's k, Trilu's k, Unsqueeze's axes, Split's split, Slice's steps, Tile's repeats,
  CumSum's axis, a Reduce's axes with keepdims, Pad's value, Compress's condition), the small
  integer and bool inputs and the single values are imported as constants of the values given,
  once per distinct set of values: the model as a user who knows those values would write it,
  which MIGraphX's parser takes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.interp import Interpreter
from mgxir.ir.dtype import DType
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.translate.onnx import ImportOptions, import_model_proto

# an integer or bool input of at most this many elements may be an operator's constant operand
# (axes, pads, k, split sizes, repeats, Compress's condition), as may a single value (Pad's value):
# where MIGraphX's parser wants it constant, it is imported as one
CONSTANT_OPERAND_ELEMENTS = 64
_INTEGER_ELEMENT_TYPES = frozenset({2, 3, 4, 5, 6, 7, 9, 12, 13})  # TensorProto's (u)int8/16/32/64, bool


class OnnxBackendRep:
    """A prepared model: `run(inputs)` returns the outputs in the graph's order."""

    def __init__(self, model: Any, path: str = "<model>") -> None:
        self.model = model
        self.path = path
        initializers = {i.name for i in model.graph.initializer}
        inputs = [v for v in model.graph.input if v.name not in initializers]
        self.input_names = [v.name for v in inputs]
        foldable = [v for v in inputs if v.type.tensor_type.elem_type in _INTEGER_ELEMENT_TYPES or _one_value(v)]
        self.output_ranks = [_declared_rank(v) for v in model.graph.output]
        self.programs: dict[tuple, Program] = {}
        try:
            self.program_for(None)  # refuse at prepare time what cannot be imported at all
        except MgxError:
            if not foldable:
                raise

    def program_for(
        self, shapes: tuple[tuple[int, ...], ...] | None, constants: Mapping[str, np.ndarray] | None = None
    ) -> Program:
        key = (shapes, tuple((n, v.dtype.str, v.shape, v.tobytes()) for n, v in (constants or {}).items()))
        program = self.programs.get(key)
        if program is None:
            options = ImportOptions()
            if shapes is not None:
                options.input_dims = {
                    n: list(s) for n, s in zip(self.input_names, shapes) if n not in (constants or {})
                }
            model = _with_constant_inputs(self.model, constants) if constants else self.model
            program = import_model_proto(model, self.path, options, DiagnosticSink())
            self.programs[key] = program
        return program

    def _program_for_feeds(self, feeds: dict[str, np.ndarray]) -> Program:
        shapes = tuple(feeds[n].shape if n in feeds else () for n in self.input_names)
        try:
            return self.program_for(shapes)
        except MgxError:
            constants = {
                n: v
                for n, v in feeds.items()
                if n in self.input_names
                and (v.size == 1 or (v.dtype.kind in "iub" and v.size <= CONSTANT_OPERAND_ELEMENTS))
            }
            if not constants:
                raise
            return self.program_for(shapes, constants)

    def run(self, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray], **kwargs: Any) -> tuple[np.ndarray, ...]:
        named = inputs.items() if isinstance(inputs, Mapping) else zip(self.input_names, inputs)
        feeds = {name: _tensor(name, value) for name, value in named}
        program = self._program_for_feeds(feeds)
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


def _tensor(name: str, value: Any) -> np.ndarray:
    if isinstance(value, (list, tuple, dict)) or value is None:
        raise MgxError(f"input '{name}': a sequence, map or optional value; mgxir's backend takes tensors")
    return np.asarray(value)


def _with_constant_inputs(model: Any, constants: Mapping[str, np.ndarray]) -> Any:
    """A copy of the model whose inputs named in `constants` are initializers of those values."""
    from onnx import numpy_helper

    copy = type(model).FromString(model.SerializeToString())
    kept = [v for v in copy.graph.input if v.name not in constants]
    del copy.graph.input[:]
    copy.graph.input.extend(kept)
    copy.graph.initializer.extend(numpy_helper.from_array(v, n) for n, v in constants.items())
    return copy


def _one_value(value_info: Any) -> bool:
    dims = value_info.type.tensor_type.shape.dim
    return all(d.HasField("dim_value") and d.dim_value == 1 for d in dims)


def _declared_rank(value_info: Any) -> int | None:
    tensor = value_info.type.tensor_type
    return len(tensor.shape.dim) if tensor.HasField("shape") else None


def prepare(model: Any, device: str = "CPU", **kwargs: Any) -> OnnxBackendRep:
    """ONNX's backend entry: the model prepared for `run` (MgxError where mgxir refuses it)."""
    if device.upper() != "CPU":
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
