"""The ONNX importer's own corners: option texts and their conflicts, dynamic broadcasting (MIGraphX's
compute_common_dyn_dims), tensors stored in typed fields, external data entries, and subgraphs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from mgxir.diagnostics import MgxError  # noqa: E402
from mgxir.ir.dtype import DType  # noqa: E402
from mgxir.ir.shape import DynamicDimension  # noqa: E402
from mgxir.translate.onnx import ImportOptions, import_model, options_from_text  # noqa: E402
from mgxir.translate.onnx.importer import (  # noqa: E402
    common_type,
    parse_dynamic_dimension,
    parse_dynamic_dimensions,
)

DYN = DynamicDimension


def _save(tmp_path: Path, nodes, inputs, outputs, initializers=(), opset: int = 13) -> str:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return str(path)


def _float(name: str, dims) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def _error(path: str, options: ImportOptions | None = None) -> str:
    with pytest.raises(MgxError) as caught:
        import_model(path, options)
    message = caught.value.render()
    assert "\n" not in message.strip() and "Traceback" not in message
    return message


# -- option texts ---------------------------------------------------------------------------------


def test_dimension_texts() -> None:
    assert parse_dynamic_dimension("4") == DYN(4, 4)
    assert parse_dynamic_dimension({"min": 1, "max": 3}) == DYN(1, 3)
    assert parse_dynamic_dimensions("[{min:1, max:4}, 3]") == [DYN(1, 4), DYN(3, 3)]
    options = options_from_text(dyn_input_dims=["@x [{min:1, max:4}, 3]"], default_dim_value=2)
    assert options.dyn_input_dims == {"x": [DYN(1, 4), DYN(3, 3)]} and options.default_dim_value == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-2", "dimension -2 is negative"),
        ("[1, 2]", "expected a dimension (N or {min:N, max:M, optimals:[...]}), got '[1, 2]'"),
        ("{min:1", "cannot read '{min:1' as a dimension"),
    ],
)
def test_bad_dimension_texts(text: str, message: str) -> None:
    with pytest.raises(MgxError) as caught:
        parse_dynamic_dimension(text)
    assert caught.value.message == message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dyn_input_dims": ["@x 3"]}, "expected a list of dimensions, got '3'"),
        ({"dyn_input_dims": ["x [3]"]}, "--dyn-input-dim 'x [3]': expected @name [dims]"),
        ({"input_dims": ["@x 2 -1"]}, "--input-dim '@x 2 -1': dimensions must not be negative"),
        ({"default_dim_value": -1}, "default dimension -1 is negative"),
    ],
)
def test_bad_option_texts(kwargs: dict, message: str) -> None:
    with pytest.raises(MgxError) as caught:
        options_from_text(**kwargs)
    assert caught.value.message == message


def test_conflicting_options_are_migraphx_errors(tmp_path: Path) -> None:
    path = _save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])], [_float("x", [2])], [_float("y", [2])])
    both_defaults = ImportOptions(default_dim_value=2, default_dyn_dim_value=DYN(1, 4))
    assert "both default_dim_value and default_dyn_dim_value set to non-default value" in _error(path, both_defaults)
    both_maps = ImportOptions(input_dims={"x": [2]}, dyn_input_dims={"x": [DYN(1, 2)]})
    assert "both map_input_dims and map_dyn_input_dims non-empty, only one should be used" in _error(path, both_maps)


# -- dynamic broadcasting -------------------------------------------------------------------------


def _add_model(tmp_path: Path) -> str:
    nodes = [helper.make_node("Add", ["a", "b"], ["y"])]
    return _save(tmp_path, nodes, [_float("a", [2, 3]), _float("b", [3])], [_float("y", None)])


@pytest.mark.parametrize(
    ("a", "b", "result"),
    [
        # equal, a 1 on either side, and overlapping ranges narrowed to their intersection
        ([DYN(1, 4), DYN(3, 3)], [DYN(3, 3)], (DYN(1, 4), DYN(3, 3))),
        ([DYN(1, 4), DYN(1, 1)], [DYN(2, 6)], (DYN(1, 4), DYN(2, 6))),
        ([DYN(2, 6), DYN(5, 5)], [DYN(1, 1)], (DYN(2, 6), DYN(5, 5))),
        ([DYN(2, 6)], [DYN(4, 8)], (DYN(4, 6),)),
    ],
)
def test_dynamic_inputs_broadcast_as_migraphx(tmp_path: Path, a: list, b: list, result: tuple) -> None:
    options = ImportOptions(dyn_input_dims={"a": a, "b": b})
    main = import_model(_add_model(tmp_path), options).main
    (output,) = main.output_shapes()
    assert output.dyn_dims == result
    assert [i.op.name for i in main if i.op.name == "multibroadcast"] == ["multibroadcast"] * 2


def test_dynamic_ranges_that_cannot_meet_are_refused(tmp_path: Path) -> None:
    options = ImportOptions(dyn_input_dims={"a": [DYN(1, 2)], "b": [DYN(3, 4)]})
    assert "COMPUTE_BROADCASTED_DYN_DIMS: dynamic shapes mismatch!" in _error(_add_model(tmp_path), options)


def test_dynamic_inputs_of_two_types_are_converted(tmp_path: Path) -> None:
    nodes = [helper.make_node("Sum", ["a", "b"], ["y"])]
    inputs = [_float("a", [2]), helper.make_tensor_value_info("b", TensorProto.DOUBLE, [2])]
    path = _save(tmp_path, nodes, inputs, [_float("y", None)])
    options = ImportOptions(dyn_input_dims={"a": [DYN(1, 4)], "b": [DYN(1, 4)]})
    main = import_model(path, options).main
    assert main.output_shapes()[0].dtype is DType.double
    assert any(i.op.name == "convert" for i in main)


def test_conv_bias_on_a_dynamic_batch_broadcasts_to_the_result(tmp_path: Path) -> None:
    w = numpy_helper.from_array(np.ones((2, 1, 1, 1), np.float32), "w")
    bias = numpy_helper.from_array(np.ones(2, np.float32), "bias")
    nodes = [helper.make_node("Conv", ["x", "w", "bias"], ["y"])]
    path = _save(tmp_path, nodes, [_float("x", [1, 1, 3, 3])], [_float("y", None)], [w, bias])
    options = ImportOptions(dyn_input_dims={"x": [DYN(1, 4), DYN(1, 1), DYN(3, 3), DYN(3, 3)]})
    main = import_model(path, options).main
    assert main.output_shapes()[0].dyn_dims == (DYN(1, 4), DYN(2, 2), DYN(3, 3), DYN(3, 3))
    broadcast = next(i for i in main if i.op.name == "broadcast")
    assert len(broadcast.args) == 2  # the bias and the convolution it takes its dims from


# -- tensors --------------------------------------------------------------------------------------


def _constant_model(tmp_path: Path, tensor: onnx.TensorProto) -> str:
    nodes = [helper.make_node("Identity", [tensor.name], ["y"])]
    return _save(tmp_path, nodes, [], [_float("y", None)], [tensor])


def _literal_of(path: str) -> np.ndarray:
    main = import_model(path).main
    (literal,) = [i for i in main if i.op.name == "@literal"]
    return literal.op.values[0].data


def test_bfloat16_in_int32_data_is_read_as_bit_patterns(tmp_path: Path) -> None:
    tensor = helper.make_tensor("t", TensorProto.BFLOAT16, [2], [1.0, 2.0])
    assert list(tensor.int32_data) == [0x3F80, 0x4000]
    data = _literal_of(_constant_model(tmp_path, tensor))
    assert data.astype(np.float32).tolist() == [1.0, 2.0]


def test_typed_data_shorter_than_the_dims_is_refused(tmp_path: Path) -> None:
    tensor = TensorProto(name="t", data_type=TensorProto.INT64, dims=[3], int64_data=[1, 2])
    assert "tensor 't' holds 2 values for 3 elements" in _error(_constant_model(tmp_path, tensor))


def test_odd_packed_int4_tensors_are_refused(tmp_path: Path) -> None:
    tensor = helper.make_tensor("t", TensorProto.INT4, [3], [1, 2, 3])
    assert "Int4: currently supports only even-sized packed tensors" in _error(_constant_model(tmp_path, tensor))


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"location": "d.bin", "offset": "x"}, "tensor 't': bad external data offset or length"),
        ({"location": "/abs/d.bin"}, "tensor 't': external data location '/abs/d.bin' is not a relative path"),
    ],
)
def test_bad_external_data_entries(tmp_path: Path, entries: dict, message: str) -> None:
    tensor = helper.make_tensor("t", TensorProto.FLOAT, [2], [1.0, 2.0])
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in entries.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    assert message in _error(_constant_model(tmp_path, tensor))


# -- graphs ---------------------------------------------------------------------------------------


def test_a_subgraph_input_named_as_a_parent_value_is_refused(tmp_path: Path) -> None:
    branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["t"])], "then", [_float("x", [2])], [_float("t", [2])]
    )
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [], [_float("e", [2])])
    cond = numpy_helper.from_array(np.array(True), "c")
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=other)]
    path = _save(tmp_path, nodes, [_float("x", [2])], [_float("y", None)], [cond])
    assert 'has parameter name "x" existing in parent graph!' in _error(path)


# -- dynamic inputs run on the reference interpreter as onnxruntime runs them ---------------------


def _run_both(path: str, options: ImportOptions, inputs: dict[str, np.ndarray]) -> tuple[list, list]:
    ort = pytest.importorskip("onnxruntime")
    from mgxir.diagnostics import DiagnosticSink
    from mgxir.interp import Interpreter

    program = import_model(path, options)
    ours = [np.asarray(o) for o in Interpreter(program, DiagnosticSink()).run(inputs)]
    theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, inputs)
    return ours, theirs


def test_split_of_a_dynamic_axis_into_equal_parts(tmp_path: Path) -> None:
    nodes = [helper.make_node("Split", ["x"], ["a", "b"], axis=0)]
    path = _save(tmp_path, nodes, [_float("x", [6, 2])], [_float("a", None), _float("b", None)])
    options = ImportOptions(dyn_input_dims={"x": [DYN(2, 8), DYN(2, 2)]})
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    ours, theirs = _run_both(path, options, {"x": x})
    assert [o.tolist() for o in ours] == [t.tolist() for t in theirs]


def test_split_sizes_on_a_dynamic_axis_are_refused(tmp_path: Path) -> None:
    split = numpy_helper.from_array(np.array([2, 4], np.int64), "s")
    nodes = [helper.make_node("Split", ["x", "s"], ["a", "b"], axis=0)]
    path = _save(tmp_path, nodes, [_float("x", [6, 2])], [_float("a", None), _float("b", None)], [split])
    options = ImportOptions(dyn_input_dims={"x": [DYN(2, 8), DYN(2, 2)]})
    message = "PARSE_SPLIT: dynamic input and non-fixed split axis and `split` attribute not supported"
    assert message in _error(path, options)


def _reduce_with_axes_input(tmp_path: Path) -> str:
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=1)]
    inputs = [_float("x", [2, 3]), helper.make_tensor_value_info("axes", TensorProto.INT64, ["n"])]
    return _save(tmp_path, nodes, inputs, [_float("y", None)])


def test_reduce_over_axes_given_at_run_time(tmp_path: Path) -> None:
    options = ImportOptions(dyn_input_dims={"axes": [DYN(0, 2)]})
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ours, theirs = _run_both(_reduce_with_axes_input(tmp_path), options, {"x": x, "axes": np.array([1], np.int64)})
    assert ours[0].tolist() == theirs[0].tolist() == [[3.0], [12.0]]


@pytest.mark.parametrize(
    ("types", "common"),
    [
        # C++'s usual arithmetic conversions (std::common_type), as MIGraphX's compute_common_types
        ((DType.int8, DType.uint8), DType.int32),
        ((DType.int16, DType.bool), DType.int32),
        ((DType.int32, DType.uint32), DType.uint32),
        ((DType.int64, DType.uint64), DType.uint64),
        ((DType.int64, DType.uint32), DType.int64),
        ((DType.half, DType.int64), DType.half),
        ((DType.float, DType.double, DType.half), DType.double),
    ],
)
def test_common_type_is_cpp_common_type(types: tuple[DType, ...], common: DType) -> None:
    assert common_type(types) is common
