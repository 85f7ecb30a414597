"""Where an op of the scatter, movement, vision, recurrent or detection families cannot lower for the
inputs at hand, translation stops with one error naming the op, the instruction, its line and why."""

from __future__ import annotations

import pytest

pytest.importorskip("iree.compiler")

from mgxir import DiagnosticSink, MgxError, parse_program, verify
from mgxir.translate.mlir.api import mlir_text

CASES = {
    "unknown": (
        ["x = @param:x -> float_type, {4}, {1}", "@1 = unknown:Foo(x) -> float_type, {4}, {1}"],
        "an ONNX operator MIGraphX's parser did not support",
    ),
    "scatter ranks": (
        [
            "d = @param:d -> float_type, {4, 5}, {5, 1}",
            "i = @param:i -> int64_type, {5}, {1}",
            "u = @param:u -> float_type, {5}, {1}",
            "@3 = scatter_none[axis=0](d,i,u)",
        ],
        "data, indices and updates must have the same rank",
    ),
    "float indices": (
        [
            "d = @param:d -> float_type, {4}, {1}",
            "i = @param:i -> float_type, {2, 1}, {1, 1}",
            "@2 = gathernd(d,i)",
        ],
        "indices of float_type have no lowering (integer types only)",
    ),
    "as_shape width": (
        ["x = @param:x -> float_type, {4}, {1}", "@1 = as_shape[shape=half_type, {4}, {1}](x)"],
        "reinterpreting float_type as half_type has no lowering",
    ),
    "lrn ints": (
        ["x = @param:x -> int32_type, {1, 3, 2}, {6, 2, 1}", "@1 = lrn[size=3](x)"],
        "lrn of int32_type has no lowering",
    ),
    "prefix sum of bools": (
        ["x = @param:x -> bool_type, {3}, {1}", "@1 = prefix_scan_sum[axis=0](x)"],
        "prefix_scan_sum of bool_type has no lowering",
    ),
    "rotary inputs": (
        [
            "q = @param:q -> float_type, {1, 3, 2, 4}, {24, 8, 4, 1}",
            "n = @param:n -> int32_type, {1}, {1}",
            "@2 = gqa_rotary_embedding[num_heads=1,kv_num_heads=1](q,n)",
        ],
        "needs qkv, seqlens_k, cos and sin caches, got 2 inputs",
    ),
    "last state of a parameter": (
        ["h = @param:h -> float_type, {2, 1, 3, 4}, {12, 12, 4, 1}", "@1 = rnn_last_hs_output(h)"],
        "its argument must be an rnn, gru or lstm instruction of the same module",
    ),
    "transposed convolution padding mode": (
        [
            "x = @param:x -> float_type, {1, 2, 3, 3}, {18, 9, 3, 1}",
            "w = @param:w -> float_type, {2, 2, 2, 2}, {8, 4, 2, 1}",
            "@2 = convolution_backwards[padding={0, 0},stride={1, 1},dilation={1, 1},group=1,padding_mode=1](x,w)",
        ],
        "padding_mode other than default has no lowering",
    ),
    "integer roialign": (
        [
            "x = @param:x -> int32_type, {1, 1, 4, 4}, {16, 16, 4, 1}",
            "r = @param:r -> int32_type, {1, 4}, {4, 1}",
            "b = @param:b -> int64_type, {1}, {1}",
            "@3 = roialign(x,r,b)",
        ],
        "roialign of int32_type has no lowering",
    ),
    "integer fp4 packing": (
        ["x = @param:x -> int32_type, {4}, {1}", "@1 = pack_fp4[axis=0](x)"],
        "pack_fp4 of int32_type has no lowering",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_op_that_cannot_lower_says_why(name: str) -> None:
    lines, why = CASES[name]
    text = "\n".join(['module: "main"', *lines, f"@{len(lines)} = @return(@{len(lines) - 1})"]) + "\n"
    program = parse_program(text, "refused.mgx")
    verify(program)
    op_name = lines[-1].split(" = ")[1].split("[")[0].split("(")[0].removesuffix("Foo")
    with pytest.raises(MgxError) as caught:
        mlir_text(program, DiagnosticSink())
    message = str(caught.value)
    assert f"refused.mgx:{len(lines) + 1}:1: error: cannot lower '{op_name}'" in message
    assert why in message
