"""onnxruntime as the peer of `mgx-verify --against=onnxruntime`: the .onnx model run on
onnxruntime's CPU provider with the inputs the task gave the program.

MIGraphX's test models use some spellings onnxruntime refuses although their meaning is plain;
`repaired_for_ort` rewrites those (bench/onnx_oracle.py uses the same repairs). Integer inputs are
indices, divisors or sequence lengths: where onnxruntime refuses the generated values, the ranges
of INTEGER_RANGES are tried in turn and the program is given the same values.
"""

from __future__ import annotations

import numpy as np

from mgxir.diagnostics import MgxError
from mgxir.ir.dtype import DType
from mgxir.ir.program import Program

# integer inputs are often indices, divisors or sequence lengths: ranges tried in this order until
# onnxruntime accepts the inputs
INTEGER_RANGES = ((1, 3), (0, 3), (0, 1))


class PeerRefused(MgxError):
    """onnxruntime cannot run the model or its inputs: the task is `refused`, not mgxir's error."""


def with_integers(program: Program, params: dict[str, np.ndarray], seed: int, integers: tuple[int, int]) -> dict:
    """`params` with the integer (not bool) parameters drawn again from `integers`."""
    rng = np.random.default_rng(seed)
    out = dict(params)
    for p in program.main.parameters():
        dtype = p.shape.dtype
        if dtype.is_integral and dtype is not DType.bool and not p.shape.is_dynamic:
            out[p.param_name] = rng.integers(*integers, size=p.shape.lens).astype(dtype.numpy)
    return out


def run_onnxruntime(
    path: str, program: Program, params: dict[str, np.ndarray], seed: int = 0
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(onnxruntime's outputs as out0, out1, ...; the inputs it was given, to run the program on).
    A model or inputs onnxruntime refuses is PeerRefused."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(path, load_external_data=False)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 4
    try:
        repaired = repaired_for_ort(model)
        session = ort.InferenceSession(repaired or path, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime's own refusals come as many exception types
        raise PeerRefused(f"onnxruntime refuses the model: {_first_line(e)}") from None
    types = {v.name: v.type.tensor_type.elem_type for v in model.graph.input}
    failure = ""
    for integers in (None, *INTEGER_RANGES):
        inputs = params if integers is None else with_integers(program, params, seed, integers)
        try:
            feeds = {}
            for i in session.get_inputs():
                if i.name not in inputs:
                    raise MgxError(f"onnxruntime's input '{i.name}' is not a parameter of the imported program")
                value = inputs[i.name]
                shape = [d if isinstance(d, int) else value.shape[k] for k, d in enumerate(i.shape)]
                feeds[i.name] = ort_input(value, types.get(i.name, 1)).reshape(shape if shape else ())
            expected = session.run(None, feeds)
        except MgxError:
            raise
        except Exception as e:
            failure = _first_line(e)
            continue
        return {f"out{k}": np.asarray(v) for k, v in enumerate(expected)}, inputs
    raise PeerRefused(f"onnxruntime refuses the inputs: {failure}")


def _first_line(e: Exception) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0][:300]


def ort_input(value: np.ndarray, elem_type: int) -> np.ndarray:
    import onnx

    want = onnx.helper.tensor_dtype_to_np_dtype(elem_type)
    return value.astype(want)


CONTRIB_DOMAIN = "com.microsoft"


def contrib_operators() -> frozenset[str]:
    """The operators onnxruntime has in its contrib domain."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    schemas = getattr(state, "get_all_operator_schema", lambda: [])()
    return frozenset(s.name for s in schemas if s.domain == CONTRIB_DOMAIN)


def repaired_for_ort(model: object) -> bytes:
    """The model as onnxruntime accepts it where MIGraphX's test models use a spelling onnxruntime
    refuses but whose meaning is plain: `clip=0` on recurrent ops (MIGraphX: no clipping);
    onnxruntime's contrib operators (QLinearAdd, MatMulBnb4, RotaryEmbedding, ...) written in the
    default domain (MIGraphX's parsers ignore the domain), and RotaryEmbedding's int32 position ids
    (onnxruntime reads int64); ReduceSum's axes as an attribute at opset 13 and later, in Scan bodies
    (an input there)."""
    import onnx

    changed = False
    contrib = contrib_operators()
    int64_inputs: set[str] = set()
    for graph in _graphs(model.graph):  # type: ignore[attr-defined]
        for node in list(graph.node):
            if node.op_type in ("RNN", "GRU", "LSTM"):
                for attr in list(node.attribute):
                    if attr.name == "clip" and (attr.f if attr.type == 1 else attr.i) <= 0:
                        node.attribute.remove(attr)
                        changed = True
            # RotaryEmbedding joined the default domain at opset 23; MIGraphX's models mean the contrib op
            default_domain = node.domain in ("", "ai.onnx")
            plain = not onnx.defs.has(node.op_type) or node.op_type == "RotaryEmbedding"
            if default_domain and plain and node.op_type in contrib:
                node.domain = CONTRIB_DOMAIN
                changed = True
            if node.op_type == "RotaryEmbedding" and node.domain == CONTRIB_DOMAIN:
                int64_inputs.add(node.input[1])
            axes = next((a for a in node.attribute if a.name == "axes"), None)
            if node.op_type == "ReduceSum" and axes is not None and _opset(model) >= 13:
                name = f"{node.output[0]}_axes"
                graph.initializer.append(onnx.numpy_helper.from_array(np.array(axes.ints, np.int64), name))
                node.attribute.remove(axes)
                node.input.append(name)
                changed = True
    if any(n.domain == CONTRIB_DOMAIN for g in _graphs(model.graph) for n in g.node):  # type: ignore[attr-defined]
        if all(o.domain != CONTRIB_DOMAIN for o in model.opset_import):  # type: ignore[attr-defined]
            model.opset_import.append(onnx.helper.make_opsetid(CONTRIB_DOMAIN, 1))  # type: ignore[attr-defined]
            changed = True
    for value in model.graph.input:  # type: ignore[attr-defined]
        if value.name in int64_inputs and value.type.tensor_type.elem_type == onnx.TensorProto.INT32:
            value.type.tensor_type.elem_type = onnx.TensorProto.INT64
            changed = True
    return model.SerializeToString() if changed else b""  # type: ignore[attr-defined]


def _graphs(graph: object) -> list[object]:
    found = [graph]
    for node in graph.node:  # type: ignore[attr-defined]
        for attr in node.attribute:
            if attr.HasField("g"):
                found += _graphs(attr.g)
    return found


def _opset(model: object) -> int:
    return max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=1)  # type: ignore[attr-defined]
