"""Numbers of the Scan, RotaryEmbedding, GroupQueryAttention and ATen imports: onnxruntime is the
peer where it runs the model; where MIGraphX's program computes something else than onnxruntime
(GroupQueryAttention's local window) the test says so and checks MIGraphX's meaning."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from mgxir.diagnostics import DiagnosticSink, MgxError  # noqa: E402
from mgxir.interp import Interpreter  # noqa: E402
from mgxir.translate.onnx import import_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[4]
MODELS = ROOT.parent / "shared" / "onnx-models"
sys.path.insert(0, str(ROOT / "bench"))


def _run(tmp_path: Path, model: onnx.ModelProto) -> tuple[list[np.ndarray], list[np.ndarray], dict]:
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    program = import_model(str(path))
    rng = np.random.default_rng(1)
    feeds = {
        p.param_name: rng.uniform(-1, 1, p.shape.lens).astype(p.shape.dtype.numpy) for p in program.main.parameters()
    }
    ours = [np.asarray(o) for o in Interpreter(program, DiagnosticSink()).run(feeds)]
    theirs = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    return ours, theirs, feeds


def _contrib_model(node: onnx.NodeProto, inputs: list, outputs: list, initializers: list) -> onnx.ModelProto:
    graph = helper.make_graph([node], "g", inputs, outputs, initializers)
    opsets = [helper.make_opsetid("", 19), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets)


def _caches(rows: int, half: int) -> tuple[np.ndarray, np.ndarray]:
    angles = np.outer(np.arange(rows), 1.0 / (10000 ** (np.arange(half) / half)))
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


# -- GroupQueryAttention --------------------------------------------------------------------------


def _gqa(batch=1, seq=4, heads=2, kv=2, head=16, rows=8, past=0, rotary=1, interleaved=0, window=-1, packed=True):
    cos, sin = _caches(rows, head // 2)
    initializers = [
        numpy_helper.from_array(np.full((batch, 1), past + seq - 1, np.int32), "seqlens_k"),
        numpy_helper.from_array(np.array(past + seq, np.int32), "total_sequence_length"),
        numpy_helper.from_array(cos, "cos_cache"),
        numpy_helper.from_array(sin, "sin_cache"),
    ]

    def value(name: str, dims) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)

    if packed:
        inputs, names = [value("qkv", [batch, seq, (heads + 2 * kv) * head])], ["qkv", "", ""]
    else:
        inputs = [value("q", [batch, seq, heads * head]), value("k", [batch, seq, kv * head])]
        inputs.append(value("v", [batch, seq, kv * head]))
        names = ["q", "k", "v"]
    inputs += [value("past_key", [batch, kv, rows, head]), value("past_value", [batch, kv, rows, head])]
    node = helper.make_node(
        "GroupQueryAttention",
        [*names, "past_key", "past_value", "seqlens_k", "total_sequence_length", "cos_cache", "sin_cache"],
        ["out", "present_key", "present_value"],
        domain="com.microsoft",
        num_heads=heads,
        kv_num_heads=kv,
        do_rotary=rotary,
        rotary_interleaved=interleaved,
        local_window_size=window,
    )
    outputs = [value("out", [batch, seq, heads * head]), value("present_key", None), value("present_value", None)]
    return _contrib_model(node, inputs, outputs, initializers)


GQA_MATCHING = {
    "prefill": {},
    "decode_grouped_batch2": {"batch": 2, "seq": 1, "heads": 4, "past": 3},
    "prefill_interleaved_grouped": {"seq": 5, "kv": 1, "interleaved": 1},
    "decode_no_rotary_wide_window": {"seq": 1, "past": 5, "rotary": 0, "window": 6},
    "separate_qkv": {"seq": 3, "packed": False},
}


@pytest.mark.parametrize("case", sorted(GQA_MATCHING))
def test_group_query_attention_matches_onnxruntime(tmp_path: Path, case: str) -> None:
    kw = GQA_MATCHING[case]
    ours, theirs, _ = _run(tmp_path, _gqa(**kw))
    total = kw.get("past", 0) + kw.get("seq", 4)
    np.testing.assert_allclose(ours[0], theirs[0], atol=1e-5)
    # the cache rows past the total length are the past buffer's in MIGraphX, unset in onnxruntime
    for got, want in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(got[:, :, :total], want[:, :, :total], atol=1e-6)


def _attention_with_window(feeds: dict, heads: int, head: int, first_key_offset: int) -> np.ndarray:
    qkv = feeds["qkv"].astype(np.float64)
    batch, seq, _ = qkv.shape
    x = qkv.reshape(batch, seq, heads + 2, head).transpose(0, 2, 1, 3)
    q, k, v = x[:, :heads], np.repeat(x[:, heads : heads + 1], heads, 1), np.repeat(x[:, heads + 1 :], heads, 1)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head)
    query, key = np.arange(seq)[:, None], np.arange(seq)[None, :]
    scores = np.where((key > query) | (key < query + first_key_offset), -np.inf, scores)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return ((p / p.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3).reshape(batch, seq, heads * head)


def test_group_query_attention_local_window_is_migraphx_s(tmp_path: Path) -> None:
    """MIGraphX differs from onnxruntime: a prompt's query q sees keys q - window .. q (window + 1
    keys; a decoded token one more), onnxruntime's q - window + 1 .. q."""
    ours, theirs, feeds = _run(tmp_path, _gqa(seq=5, kv=1, rotary=0, window=2))
    np.testing.assert_allclose(ours[0], _attention_with_window(feeds, 2, 16, -2), atol=1e-5)
    np.testing.assert_allclose(theirs[0], _attention_with_window(feeds, 2, 16, -1), atol=1e-5)
    assert np.abs(ours[0] - theirs[0]).max() > 0.1


def test_group_query_attention_one_dimensional_seqlens_with_batch_is_refused(tmp_path: Path) -> None:
    """MIGraphX broadcasts seqlens_k to {batch, num_heads}: a {batch} tensor fits only where batch
    is 1 or equals num_heads."""
    model = _gqa(batch=2, seq=1, heads=4, past=2)
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.full(2, 2, np.int32), "seqlens_k"))
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(MgxError, match=r"multibroadcast: input shape \{2\} cannot be broadcast to \{2, 4\}"):
        import_model(str(path))


# -- RotaryEmbedding ------------------------------------------------------------------------------


def _rotary(lens, rows=8, interleaved=0, num_heads=0, rotary_dim=0, positions=None):
    head = rotary_dim or (lens[-1] if len(lens) == 4 else lens[2] // num_heads if num_heads else 8)
    cos, sin = _caches(rows, head // 2)
    positions = np.array([1], np.int64) if positions is None else positions
    initializers = [numpy_helper.from_array(x, n) for x, n in ((positions, "pos"), (cos, "cos"), (sin, "sin"))]
    attrs = {"interleaved": interleaved}
    if num_heads:
        attrs.update(num_heads=num_heads, rotary_embedding_dim=rotary_dim)
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain="com.microsoft", **attrs)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(lens))]
    return _contrib_model(node, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)


ROTARY_CASES = {
    "bsh": {"lens": (1, 3, 16)},
    "bsh_interleaved_batch2_one_start": {"lens": (2, 3, 16), "interleaved": 1},
    "bnsh": {"lens": (1, 2, 3, 8)},
    "partial_rotary_dim": {"lens": (1, 3, 24), "num_heads": 2, "rotary_dim": 8},
    "positions_per_token": {"lens": (2, 3, 16), "positions": np.array([[0, 2, 4], [1, 3, 5]], np.int64)},
}


@pytest.mark.parametrize("case", sorted(ROTARY_CASES))
def test_rotary_embedding_matches_onnxruntime(tmp_path: Path, case: str) -> None:
    ours, theirs, _ = _run(tmp_path, _rotary(**ROTARY_CASES[case]))
    np.testing.assert_allclose(ours[0], theirs[0], atol=1e-5)


# -- Scan, RotaryEmbedding and ATen in MIGraphX's own test models --------------------------------

ORACLE_MATCHING = [
    *(f"scan_test{i}" for i in range(1, 8)),
    "rotary_embedding_test",
    "rotary_embedding_interleaved_test",
    "rotary_embedding_interleaved_large_test",
    "rotary_embedding_dim_test",
    "rotary_embedding_float_test",
]


@pytest.mark.skipif(not MODELS.is_dir(), reason="needs ../shared/onnx-models")
@pytest.mark.parametrize("name", ORACLE_MATCHING)
def test_models_match_onnxruntime(name: str) -> None:
    from onnx_oracle import check_model

    result = check_model(str(MODELS / f"{name}.onnx"))
    assert result.status == "match", result.message


@pytest.mark.skipif(not MODELS.is_dir(), reason="needs ../shared/onnx-models")
def test_embedding_bag_reduces_the_gathered_rows() -> None:
    """onnxruntime has no ATen operator: torch's embedding_bag with one bag is the reference."""
    program = import_model(str(MODELS / "embedding_bag_test.onnx"))
    weight = np.arange(8, dtype=np.float32).reshape(4, 2) * np.float32(1.5) - 3
    total, mean, largest = (np.asarray(o) for o in Interpreter(program, DiagnosticSink()).run({"weight": weight}))
    rows = weight[[1, 0, 2]]
    np.testing.assert_allclose(total, rows.sum(0, keepdims=True))
    np.testing.assert_allclose(mean, rows.mean(0, keepdims=True))
    np.testing.assert_allclose(largest, rows.max(0, keepdims=True))


# -- hostile models -------------------------------------------------------------------------------


def _float(name: str, dims) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def _scan_body(nodes=None) -> onnx.GraphProto:
    nodes = nodes or [helper.make_node("Add", ["s", "x"], ["s2"]), helper.make_node("Identity", ["s2"], ["y"])]
    return helper.make_graph(nodes, "body", [_float("s", [2]), _float("x", [2])], [_float("s2", [2]), _float("y", [2])])


def _scan(body: onnx.GraphProto, num_scan_inputs: int = 1, scan_dims=(3, 2)) -> onnx.ModelProto:
    node = helper.make_node("Scan", ["s0", "xs"], ["sf", "ys"], body=body, num_scan_inputs=num_scan_inputs)
    graph = helper.make_graph(
        [node], "g", [_float("s0", [2]), _float("xs", list(scan_dims))], [_float("sf", [2]), _float("ys", None)]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def _refusal(tmp_path: Path, model: onnx.ModelProto) -> str:
    path = tmp_path / "hostile.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(MgxError) as caught:
        import_model(str(path))
    message = caught.value.render()
    assert "\n" not in message and "Traceback" not in message
    return message


HOSTILE = {
    "scan_inputs_count_past_the_inputs": (
        lambda: _scan(_scan_body(), num_scan_inputs=5),
        "Scan: num_scan_inputs {5} must be between 1 and the number of inputs {2}",
    ),
    "scan_more_iterations_than_the_limit": (
        lambda: _scan(_scan_body(), scan_dims=(100000, 2)),
        "Scan: Number of required iterations {100000} would exceed the maximum iteration limit {10}",
    ),
    "scan_body_with_a_cycle": (
        lambda: _scan(
            _scan_body([helper.make_node("Add", ["s", "y"], ["s2"]), helper.make_node("Identity", ["s2"], ["y"])])
        ),
        "unordered nodes",
    ),
    "mixed_input_types": (
        lambda: helper.make_model(
            helper.make_graph(
                [helper.make_node("MatMul", ["x", "z"], ["y"])],
                "g",
                [_float("x", [2, 3]), helper.make_tensor_value_info("z", TensorProto.INT64, [3, 2])],
                [_float("y", None)],
            )
        ),
        "dot: input 1 has type int64_type, input 0 has float_type",
    ),
    "gqa_without_kv_heads": (
        lambda: _with_attrs(_gqa(), kv_num_heads=0),
        "GroupQueryAttention: num_heads and kv_num_heads must be positive",
    ),
    "rotary_one_dimensional_cache": (
        lambda: _with_cache_dims(_rotary((1, 3, 16)), [8]),
        "RotaryEmbedding: cos_cache and sin_cache must be 2-D",
    ),
}


def _with_attrs(model: onnx.ModelProto, **attrs) -> onnx.ModelProto:
    node = model.graph.node[0]
    for attr in node.attribute:
        if attr.name in attrs:
            attr.i = attrs[attr.name]
    return model


def _with_cache_dims(model: onnx.ModelProto, dims: list[int]) -> onnx.ModelProto:
    for init in model.graph.initializer:
        if init.name in ("cos", "sin"):
            init.CopyFrom(numpy_helper.from_array(np.zeros(dims, np.float32), init.name))
    return model


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_models_are_refused_in_one_line(tmp_path: Path, case: str) -> None:
    make, expected = HOSTILE[case]
    assert expected in _refusal(tmp_path, make())


@pytest.mark.parametrize("index", [-1, 4])
def test_scan_slice_refuses_an_index_out_of_range(index: int) -> None:
    """MIGraphX's scan_slice throws where the loop's iteration runs past the scan axis."""
    from test_ops_compute import run

    from mgxir.ir.operation import ComputeError

    x = np.zeros((3, 4, 2), np.float32)
    with pytest.raises(ComputeError, match=rf"ScanSlice: index \{{{index}\}} out of range \[0, 3\]"):
        run("scan_slice", [x, np.array([index], np.int64)], axis=1, direction=0)
