"""The ops lowered by the scatter, movement, vision and recurrent families run through IREE on the
CPU (local-task) and give what the reference interpreter gives, by MIGraphX's rms rule, on random
inputs of several shapes, and come back from MLIR (--from-mlir) computing the same. Several ops
share one program so that each shape costs one IREE compile."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("iree.compiler")
pytest.importorskip("iree.runtime")

from mgxir import DiagnosticSink, parse_program, verify
from mgxir.drivers.run import flatten_outputs, rms_error
from mgxir.interp import Interpreter
from mgxir.targets.iree import IreeOptions, run_on_iree
from mgxir.translate.mlir.api import mlir_text, program_from_mlir

Inputs = dict[str, np.ndarray]


def _check(tmp_path: Path, text: str, inputs: Inputs) -> None:
    program = parse_program(text, "ops.mgx")
    verify(program)
    with np.errstate(all="ignore"):
        expected = flatten_outputs(Interpreter(program).run(inputs))
    got = flatten_outputs(
        run_on_iree(program, inputs, DiagnosticSink(), IreeOptions(device="local-task", cache_dir=tmp_path))
    )
    # and the program comes back from its MLIR computing the same on the reference interpreter
    back = program_from_mlir(mlir_text(program, DiagnosticSink()).encode(), "ops.mlir")
    verify(back)
    with np.errstate(all="ignore"):
        again = flatten_outputs(Interpreter(back).run(inputs))
    ret = program.main.return_instruction
    assert ret is not None
    for (key, want), ins in zip(expected.items(), ret.args):
        assert np.array_equal(again[key], want, equal_nan=True), f"{key} ({ins.op.text}) differs after --from-mlir"
        error = rms_error(got[key], want)
        assert got[key].shape == want.shape, f"{key} ({ins.op.text}): shape {got[key].shape} vs {want.shape}"
        assert error < 1e-3, f"{key} ({ins.op.text}): rms error {error:g}"


def _param(name: str, t: str, lens: tuple[int, ...]) -> str:
    strides = [int(np.prod(lens[i + 1 :])) for i in range(len(lens))]
    return f"{name} = @param:{name} -> {t}, {{{', '.join(map(str, lens))}}}, {{{', '.join(map(str, strides))}}}"


def _program(params: list[str], body: list[str], before: tuple[str, ...] = (), modules: str = "") -> str:
    """`body`'s instructions are the outputs; `before`'s are not; `modules` follow main."""
    outputs = ",".join(line.split(" = ")[0] for line in body)
    main = "\n".join(['module: "main"', *params, *before, *body, f"@ret = @return({outputs})"]) + "\n"
    return main + modules


SHAPES = [(4, 5), (6, 3)]


@pytest.mark.parametrize("rows,cols", SHAPES)
def test_indexing_ops_run_on_iree(tmp_path: Path, rows: int, cols: int) -> None:
    rng = np.random.default_rng(rows * 10 + cols)
    k = 2
    inputs = {
        "data": rng.standard_normal((rows, cols)).astype(np.float32),
        "ints": rng.integers(-9, 9, (rows, cols)).astype(np.int32),
        "idx": rng.integers(-rows, rows, (k, cols)).astype(np.int64),
        "upd": rng.standard_normal((k, cols)).astype(np.float32),
        "iupd": rng.integers(-9, 9, (k, cols)).astype(np.int32),
        "nd": rng.integers(0, rows, (3, 1)).astype(np.int32),
        "ndupd": rng.standard_normal((3, cols)).astype(np.float32),
        "tuples": np.stack([rng.integers(-rows, rows, 4), rng.integers(-cols, cols, 4)], axis=1).astype(np.int64),
        "hot": rng.integers(-3, 3, (rows,)).astype(np.int64),
        "onoff": np.array([0.5, 2.0], np.float32),
    }
    params = [
        _param("data", "float_type", (rows, cols)),
        _param("ints", "int32_type", (rows, cols)),
        _param("idx", "int64_type", (k, cols)),
        _param("upd", "float_type", (k, cols)),
        _param("iupd", "int32_type", (k, cols)),
        _param("nd", "int32_type", (3, 1)),
        _param("ndupd", "float_type", (3, cols)),
        _param("tuples", "int64_type", (4, 2)),
        _param("hot", "int64_type", (rows,)),
        _param("onoff", "float_type", (2,)),
    ]
    body = [f"@s{r} = scatter_{r}[axis=0](data,idx,upd)" for r in ("none", "add", "mul", "min", "max")]
    body += [f"@n{r} = scatternd_{r}(data,nd,ndupd)" for r in ("none", "add", "mul", "min", "max")]
    body += [
        "@si = scatter_add[axis=0](ints,idx,iupd)",
        "@g = gathernd(data,tuples)",
        "@o = onehot[axis=0,depth=3](hot,onoff)",
        "@z = nonzero(ints)",
        "@p = prefix_scan_sum[axis=1,exclusive=0,reverse=0](data)",
        "@q = prefix_scan_sum[axis=0,exclusive=1,reverse=1](ints)",
    ]
    _check(tmp_path, _program(params, body), inputs)


@pytest.mark.parametrize("rows,cols", SHAPES)
def test_movement_ops_run_on_iree(tmp_path: Path, rows: int, cols: int) -> None:
    rng = np.random.default_rng(rows + cols)
    batch, kv_heads, heads, seq, head, cache_rows = 2, 1, 2, rows - 2, 4, 8
    inputs = {
        "x": rng.standard_normal((rows, cols)).astype(np.float32),
        "v": np.array([1.5], np.float32),
        "i": np.array([rows // 2], np.int32),
        "q": rng.integers(-128, 128, (rows, 2 * cols)).astype(np.int8),
        "u": rng.integers(0, 256, (rows, 2 * cols)).astype(np.uint8),
        "new": rng.standard_normal((batch, kv_heads, seq, head)).astype(np.float32),
        "one": rng.standard_normal((batch, kv_heads, 1, head)).astype(np.float32),
        "lens": np.array([2, 5], np.int32),
        "cache": rng.standard_normal((batch, kv_heads, cache_rows, head)).astype(np.float32),
        "qkv": rng.standard_normal((batch, heads + 2 * kv_heads, seq, head)).astype(np.float32),
        "cos": rng.standard_normal((cache_rows, head // 2)).astype(np.float32),
        "sin": rng.standard_normal((cache_rows, head // 2)).astype(np.float32),
        "cdf": np.cumsum(rng.random((2, cols)), axis=1).astype(np.float32),
        "draws": rng.random((1, 7)).astype(np.float32),
        "f": (rng.standard_normal((rows, 2 * cols)) * 4).astype(np.float32),
    }
    params = [
        _param("x", "float_type", (rows, cols)),
        _param("v", "float_type", (1,)),
        _param("i", "int32_type", (1,)),
        _param("q", "int8_type", (rows, 2 * cols)),
        _param("u", "uint8_type", (rows, 2 * cols)),
        _param("new", "float_type", (batch, kv_heads, seq, head)),
        _param("one", "float_type", (batch, kv_heads, 1, head)),
        _param("lens", "int32_type", (batch,)),
        _param("cache", "float_type", (batch, kv_heads, cache_rows, head)),
        _param("qkv", "float_type", (batch, heads + 2 * kv_heads, seq, head)),
        _param("cos", "float_type", (cache_rows, head // 2)),
        _param("sin", "float_type", (cache_rows, head // 2)),
        _param("cdf", "float_type", (2, cols)),
        _param("draws", "float_type", (1, 7)),
        _param("f", "float_type", (rows, 2 * cols)),
    ]
    body = [
        "@fill = fill(v,x)",
        "@scalar = scalar[scalar_bcst_dims={3, 2}](v)",
        "@step = step[axes={0, 1},steps={2, 3}](x)",
        f"@as = as_shape[shape=float_type, {{{cols}, {rows}}}, {{1, {cols}}}](x)",
        "@scan = scan_slice[axis=0,direction=1](x,i)",
        "@pack = pack_int4[axis=1](q)",
        "@unpack = unpack_int4[axis=1](@pack)",
        "@unpacku = unpack_int4[axis=0](u)",
        f"@x3 = reshape[dims={{1, {rows}, {cols}}}](x)",
        f"@o3 = multibroadcast[out_lens={{3, {cols}, 2}}](v)",
        f"@bfd = broadcast_for_dot(@x3,@o3) -> float_type, {{3, {rows}, {cols}}}, {{0, {cols}, 1}}",
        f"@fixed = fixed_pad(x) -> float_type, {{{rows}, {cols}}}, {{{cols}, 1}}",
        "@prompt = concat_past_present[kv_num_heads=1](new,lens,cache)",
        "@token = concat_past_present[kv_num_heads=1](one,lens,cache)",
        "@rope = gqa_rotary_embedding[num_heads=2,kv_num_heads=1,interleaved=0](qkv,lens,cos,sin)",
        "@ropei = gqa_rotary_embedding[num_heads=2,kv_num_heads=1,interleaved=1](qkv,lens,cos,sin)",
        "@draw = multinomial[dtype=int64_type](cdf,draws)",
        "@fp4 = pack_fp4[axis=1](f)",
        "@unfp4 = unpack_fp4[axis=1](@fp4)",
        f"@group = group[tag=attention](x), [g] -> float_type, {{{rows}, {cols}}}, {{{cols}, 1}}",
    ]
    called = f"""
module: "g"
g:x = @param:x -> float_type, {{{rows}, {cols}}}, {{{cols}, 1}}
g:@1 = exp(g:x)
g:@2 = @return(g:@1)
"""
    _check(tmp_path, _program(params, body, modules=called), inputs)


@pytest.mark.parametrize(
    "size,scales,group",
    [((5, 6), (2.0, 1.5), 1), ((4, 4), (0.5, 1.75), 2)],
)
def test_vision_ops_run_on_iree(tmp_path: Path, size: tuple[int, int], scales: tuple[float, float], group: int) -> None:
    rng = np.random.default_rng(size[0])
    h, w = size
    inputs = {
        "x": rng.standard_normal((1, 4, h, w)).astype(np.float32),
        "k": rng.standard_normal((2, 4, 2, 2)).astype(np.float32),
        "kt": rng.standard_normal((4, 3, 3, 2)).astype(np.float32),
        "rois": (rng.random((3, 4)) * [w, h, w, h] * 1.5 - 1).astype(np.float32),
        "bi": np.array([0, 0, 0], np.int64),
    }
    params = [
        _param("x", "float_type", (1, 4, h, w)),
        _param("k", "float_type", (2, 4, 2, 2)),
        _param("kt", "float_type", (4, 3, 3, 2)),
        _param("rois", "float_type", (3, 4)),
        _param("bi", "int64_type", (3,)),
    ]
    sy, sx = scales
    resize = "resize[scales={{1, 1, {}, {}}},mode={},coordinate_transformation_mode={},nearest_mode={}]"
    body = [
        "@near = " + resize.format(sy, sx, "nearest", "asymmetric", "round_prefer_ceil") + "(x)",
        "@lin = " + resize.format(sy, sx, "linear", "half_pixel", "floor") + "(x)",
        "@cub = " + resize.format(sy, sx, "cubic", "align_corners", "floor") + "(x)",
        "@lrn = lrn[alpha=0.01,beta=0.75,bias=1,size=3](x)",
        "@col = im2col[padding={1, 0},stride={2, 1},dilation={1, 2}](x,k)",
        f"@deconv = convolution_backwards[padding={{1, 0}},stride={{2, 3}},dilation={{1, 2}},group={group}](x,kt)",
    ]
    roialign = "roialign[coordinate_transformation_mode={},mode={},output_height=2,output_width=3,sampling_ratio={}]"
    body.append("@roi = " + roialign.format("half_pixel", "average", 0) + "(x,rois,bi)")
    body.append("@roimax = " + roialign.format("output_half_pixel", "max", 2) + "(x,rois,bi)")
    # average pooling divides by the window with its padding (count_include_pad) but never by what
    # ceil_mode adds past the padding
    pooling = (
        "pooling[mode=average,padding={{1, 1, 1, 1}},padding_mode=0,stride={{2, 2}},lengths={{3, 3}},"
        "dilations={{1, 1}},ceil_mode={},lp_order=2,dyn_global=0,count_include_pad={}](x)"
    )
    body += [f"@avg{ceil}{pad} = " + pooling.format(ceil, pad) for ceil in (0, 1) for pad in (0, 1)]
    if group == 1:
        body.append("@deconv1 = convolution_backwards[padding={1},stride={2},dilation={1},group=1](@sq,@kt1)")
        body.insert(0, "@kt1 = reshape[dims={4, 3, 6}](kt)")
        body.insert(0, f"@sq = reshape[dims={{1, 4, {h * w}}}](x)")
    _check(tmp_path, _program(params, body), inputs)


def test_recurrent_ops_run_on_iree(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    seq, batch, width, hidden = 3, 2, 3, 4

    def weights(gates: int, dirs: int) -> Inputs:
        return {
            f"w{gates}": rng.standard_normal((dirs, gates * hidden, width)).astype(np.float32) * 0.5,
            f"r{gates}": rng.standard_normal((dirs, gates * hidden, hidden)).astype(np.float32) * 0.5,
            f"b{gates}": rng.standard_normal((dirs, 2 * gates * hidden)).astype(np.float32) * 0.5,
        }

    inputs: Inputs = {
        "x": rng.standard_normal((seq, batch, width)).astype(np.float32),
        "sl": np.array([3, 2], np.int32),
        "h0": rng.standard_normal((2, batch, hidden)).astype(np.float32),
        "p": rng.standard_normal((1, 3 * hidden)).astype(np.float32),
        **weights(1, 1),
        **weights(3, 2),
        **weights(4, 1),
    }
    params = [_param(name, "int32_type" if name == "sl" else "float_type", a.shape) for name, a in inputs.items()]
    body = [
        "@rnn = rnn[hidden_size=4,actv_func={relu},direction=reverse,clip=0](x,w1,r1,b1,sl,@u)",
        "@gru = gru[hidden_size=4,actv_func={sigmoid, tanh},direction=bidirectional,clip=0,"
        "linear_before_reset=0](x,w3,r3,b3,sl,h0)",
        "@gru1 = gru[hidden_size=4,actv_func={sigmoid, tanh},direction=bidirectional,clip=3,"
        "linear_before_reset=1](x,w3,r3,b3,@u,h0)",
        "@lstm = lstm[hidden_size=4,direction=forward,clip=0,input_forget=1](x,w4,r4,b4,sl,@u,@u,p)",
        "@lstmclip = lstm[hidden_size=4,direction=forward,clip=0.5,input_forget=0](x,w4,r4,b4,@u,@u,@u,p)",
        "@last = rnn_last_hs_output(@gru)",
        "@cell = rnn_last_cell_output(@lstm)",
        "@vlast = rnn_var_sl_last_output[direction=bidirectional](@gru,sl)",
        "@shift = rnn_var_sl_shift_output[output_name=hidden_states,direction=bidirectional](@gru,sl)",
        "@seq = rnn_var_sl_shift_sequence(x,sl)",
    ]
    _check(tmp_path, _program(params, body, before=("@u = undefined",)), inputs)


def test_narrow_float_convolutions_run_on_iree(tmp_path: Path) -> None:
    """Half and bf16 convolutions lower as im2col and a product accumulating in f32: windows with
    padding (asymmetric), strides and dilations, 1x1 windows taken as they are, 1-d and 3-d, and the
    grouped form (linalg's named op) beside them."""
    import ml_dtypes

    rng = np.random.default_rng(3)
    shapes = {
        "x": (2, 4, 9, 8),
        "w": (6, 4, 3, 2),
        "v": (5, 4, 1, 1),
        "g": (6, 2, 3, 3),
        "y": (2, 4, 7),
        "u": (3, 4, 3),
        "z": (1, 2, 5, 4, 6),
        "k": (3, 2, 2, 3, 2),
    }
    inputs: Inputs = {name: rng.standard_normal(lens).astype(np.float16) for name, lens in shapes.items()}
    inputs["xb"] = inputs["x"].astype(ml_dtypes.bfloat16)
    inputs["wb"] = inputs["w"].astype(ml_dtypes.bfloat16)
    params = [_param(name, "half_type", a.shape) for name, a in inputs.items() if a.dtype == np.float16]
    params += [_param("xb", "bf16_type", shapes["x"]), _param("wb", "bf16_type", shapes["w"])]
    conv = "convolution[padding={{{}}},stride={{{}}},dilation={{{}}},group={}]"
    body = [
        "@window = " + conv.format("1, 0, 2, 1", "2, 1", "1, 2", 1) + "(x,w)",
        "@pointwise = " + conv.format("0, 0", "1, 1", "1, 1", 1) + "(x,v)",
        "@strided1x1 = " + conv.format("0, 0", "2, 3", "1, 1", 1) + "(x,v)",
        "@grouped = " + conv.format("1, 1", "1, 1", "1, 1", 2) + "(x,g)",
        "@line = " + conv.format("1", "2", "1", 1) + "(y,u)",
        "@volume = " + conv.format("1, 0, 1", "1, 2, 1", "1, 1, 2", 1) + "(z,k)",
        "@bf16 = " + conv.format("1, 1", "1, 1", "1, 1", 1) + "(xb,wb)",
    ]
    _check(tmp_path, _program(params, body), inputs)


@pytest.mark.parametrize("batches,classes,boxes", [(2, 3, 7)])
def test_nonmaxsuppression_runs_on_iree(tmp_path: Path, batches: int, classes: int, boxes: int) -> None:
    rng = np.random.default_rng(boxes)
    corners = rng.random((batches, boxes, 2)) * 4
    sizes = rng.random((batches, boxes, 2)) * 3 + 0.5
    inputs = {
        "boxes": np.concatenate([corners, corners + sizes], axis=2).astype(np.float32),
        "centers": np.concatenate([corners, sizes], axis=2).astype(np.float32),
        "scores": rng.random((batches, classes, boxes)).astype(np.float32),
        "limit": np.array([3], np.int64),
    }
    params = [
        _param("boxes", "float_type", (batches, boxes, 4)),
        _param("centers", "float_type", (batches, boxes, 4)),
        _param("scores", "float_type", (batches, classes, boxes)),
        _param("limit", "int64_type", (1,)),
    ]
    before = ("@iou = @literal{0.3} -> float_type, {1}, {1}", "@floor = @literal{0.2} -> float_type, {1}, {1}")
    body = [
        "@corner = nonmaxsuppression[center_point_box=0,use_dyn_output=0](boxes,scores,limit,@iou,@floor)",
        "@center = nonmaxsuppression[center_point_box=1,use_dyn_output=0](centers,scores,limit,@iou)",
    ]
    _check(tmp_path, _program(params, body, before), inputs)
