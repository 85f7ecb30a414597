"""MIGraphX's own test cases for shape_transform_descriptor (test/shape_transform_descriptor.cpp),
case for case under the same names; optimize cases also check, on numbers, that the optimized ops
compute what the original ops do and that optimizing again changes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mgxir.analysis.shape_transform_descriptor import (
    Dimension,
    ShapeTransformDescriptor,
    Sub,
    optimize_shape_transforms,
)
from mgxir.ir.operation import Operation
from mgxir.ir.registry import make_op


def mk(name: str, attributes: Sequence[Sequence[Any]] = ()) -> Operation:
    return make_op(name, **{key: value for key, value in attributes})


def get_all_lens(desc: ShapeTransformDescriptor) -> list[list[int]]:
    return [[s.len for s in d.subdimensions] for d in desc.dimensions]


def get_final_lens(desc: ShapeTransformDescriptor) -> list[int]:
    return desc.lens()


def get_all_axes(desc: ShapeTransformDescriptor) -> list[list[list[int]]]:
    return [[s.axis for s in d.subdimensions] for d in desc.dimensions]


def run_shape_transforms(dims: Sequence[int], ops: Sequence[Operation]) -> list[int]:
    data = np.arange(int(np.prod(dims)), dtype=np.int64).reshape(dims)
    for op in ops:
        data = op.defn.compute(op, [data], [], None)  # type: ignore[arg-type]
    return np.ascontiguousarray(data).reshape(-1).tolist()


def check_optimize_shape_transforms(dims: Sequence[int], ops: Sequence[Operation]) -> list[Operation]:
    result = optimize_shape_transforms(dims, ops)
    assert run_shape_transforms(dims, ops) == run_shape_transforms(dims, result)
    assert result == optimize_shape_transforms(dims, result)
    return result


def make_descriptor(dims: Sequence[int], *ops: Operation) -> ShapeTransformDescriptor:
    desc = ShapeTransformDescriptor(dims)
    assert desc.apply(ops)
    return desc


def make_simple_descriptor(dims: Sequence[int], *ops: Operation) -> ShapeTransformDescriptor:
    desc = make_descriptor(dims, *ops)
    desc.simplify()
    return desc


def test_dimension_len() -> None:
    dim = Dimension()
    dim.subdimensions = [Sub(4, [1]), Sub(5, [2])]
    assert dim.len() == 20


def test_record_reshape() -> None:
    desc = make_descriptor([256, 3, 16, 16], mk("reshape", [["dims", [16, 16, 48, 16]]]))
    assert get_final_lens(desc) == [16, 16, 48, 16]
    assert get_all_lens(desc) == [[16], [16], [3, 16], [16]]
    assert get_all_axes(desc) == [[[0, 0]], [[0, 1]], [[1], [2]], [[3]]]


def test_record_reshape_1s() -> None:
    desc = make_descriptor([3, 4, 4], mk("reshape", [["dims", [3, 1, 4, 1, 4]]]))
    assert get_final_lens(desc) == [3, 1, 4, 1, 4]
    assert get_all_lens(desc) == [[3], [1], [4], [1], [4]]
    assert get_all_axes(desc) == [[[0]], [[1, 0]], [[1, 1]], [[2, 0]], [[2, 1]]]


def test_record_reshape_trailing_1s() -> None:
    desc = make_descriptor([3, 4, 4], mk("reshape", [["dims", [3, 4, 4, 1, 1]]]))
    assert get_final_lens(desc) == [3, 4, 4, 1, 1]
    assert get_all_lens(desc) == [[3], [4], [4], [1], [1]]
    assert get_all_axes(desc) == [[[0]], [[1]], [[2, 0]], [[2, 1]], [[2, 2]]]


def test_record_reshape_merge() -> None:
    desc = make_descriptor([3, 4, 5], mk("reshape", [["dims", [3, 20]]]))
    assert get_final_lens(desc) == [3, 20]
    assert get_all_lens(desc) == [[3], [4, 5]]
    assert get_all_axes(desc) == [[[0]], [[1], [2]]]


def test_record_reshape_split() -> None:
    desc = make_descriptor([3, 20], mk("reshape", [["dims", [3, 4, 5]]]))
    assert get_final_lens(desc) == [3, 4, 5]
    assert get_all_lens(desc) == [[3], [4], [5]]
    assert get_all_axes(desc) == [[[0]], [[1, 0]], [[1, 1]]]


def test_record_reshape_merge_split() -> None:
    desc = make_descriptor([3, 10, 16], mk("reshape", [["dims", [3, 40, 2, 2]]]))
    assert get_final_lens(desc) == [3, 40, 2, 2]
    assert get_all_lens(desc) == [[3], [10, 4], [2], [2]]
    assert get_all_axes(desc) == [[[0]], [[1], [2, 0]], [[2, 1]], [[2, 2]]]


def test_record_squeeze_trailing_1s() -> None:
    desc = make_descriptor([3, 4, 4, 1, 1], mk("reshape", [["dims", [3, 4, 4]]]))
    assert get_final_lens(desc) == [3, 4, 4]
    assert get_all_lens(desc) == [[3], [4], [4]]
    assert get_all_axes(desc) == [[[0]], [[1]], [[2]]]


def test_record_reshape_squeeze_trailing_1s() -> None:
    desc = make_descriptor([3, 4, 4], mk("reshape", [["dims", [3, 4, 4, 1, 1]]]), mk("reshape", [["dims", [3, 4, 4]]]))
    assert get_final_lens(desc) == [3, 4, 4]
    assert get_all_lens(desc) == [[3], [4], [4]]
    assert get_all_axes(desc) == [[[0]], [[1]], [[2, 0]]]


def test_record_reshape_non_divisible_fail() -> None:
    desc = ShapeTransformDescriptor([2, 3, 5])
    assert not desc.apply([mk("reshape", [["dims", [10, 3]]])])


def test_record_transpose() -> None:
    desc = make_descriptor([256, 3, 16, 16], mk("transpose", [["permutation", [0, 2, 3, 1]]]))
    assert get_final_lens(desc) == [256, 16, 16, 3]
    assert get_all_lens(desc) == [[256], [16], [16], [3]]
    assert get_all_axes(desc) == [[[0]], [[2]], [[3]], [[1]]]


def test_record_multibroadcast() -> None:
    desc = make_descriptor([1, 3, 1, 1], mk("multibroadcast", [["out_lens", [256, 3, 16, 16]]]))
    assert get_final_lens(desc) == [256, 3, 16, 16]
    assert get_all_lens(desc) == [[256], [3], [16], [16]]
    assert get_all_axes(desc) == [[[]], [[1]], [[]], [[]]]


def test_record_broadcast1() -> None:
    desc = make_descriptor([3], mk("broadcast", [["axis", 1], ["out_lens", [256, 3, 16, 16]]]))
    assert get_final_lens(desc) == [256, 3, 16, 16]
    assert get_all_lens(desc) == [[256], [3], [16], [16]]
    assert get_all_axes(desc) == [[[]], [[0]], [[]], [[]]]


def test_record_broadcast2() -> None:
    desc = make_descriptor([32, 10], mk("broadcast", [["axis", 1], ["out_lens", [256, 32, 10, 16, 16]]]))
    assert get_final_lens(desc) == [256, 32, 10, 16, 16]
    assert get_all_lens(desc) == [[256], [32], [10], [16], [16]]
    assert get_all_axes(desc) == [[[]], [[0]], [[1]], [[]], [[]]]


def test_simplify_dimension_merge_adjacent() -> None:
    d = Dimension([Sub(2, [0, 0]), Sub(3, [0, 1])])
    d.simplify()
    assert d == Dimension([Sub(6, [0, 1])])


def test_simplify_dimension_no_merge_adjacent1() -> None:
    d = Dimension([Sub(2, [0, 1]), Sub(3, [0, 0])])
    d.simplify()
    assert d == Dimension([Sub(2, [0, 1]), Sub(3, [0, 0])])


def test_simplify_dimension_no_merge_adjacent2() -> None:
    d = Dimension([Sub(2, [0, 0, 0]), Sub(3, [0, 1, 1])])
    d.simplify()
    assert d == Dimension([Sub(2, [0, 0, 0]), Sub(3, [0, 1, 1])])


def test_simplify_dimension_remove_1_dim() -> None:
    d = Dimension([Sub(2, [0, 1]), Sub(1, [1]), Sub(3, [0, 0])])
    d.simplify()
    assert d == Dimension([Sub(2, [0, 1]), Sub(3, [0, 0])])


def test_optimize_transpose_transpose() -> None:
    assert check_optimize_shape_transforms(
        [3, 5, 2],
        [
            mk("transpose", [["permutation", [0, 2, 1]]]),
            mk("transpose", [["permutation", [1, 0, 2]]]),
        ],
    ) == [
        mk("transpose", [["permutation", [2, 0, 1]]]),
    ]


def test_optimize_reshape_reshape1() -> None:
    assert check_optimize_shape_transforms(
        [3, 5, 2],
        [
            mk("reshape", [["dims", [30]]]),
            mk("reshape", [["dims", [3, 10]]]),
        ],
    ) == [
        mk("reshape", [["dims", [3, 10]]]),
    ]


def test_optimize_reshape_reshape2() -> None:
    assert check_optimize_shape_transforms(
        [15, 4],
        [
            mk("reshape", [["dims", [3, 5, 2, 2]]]),
            mk("reshape", [["dims", [15, 2, 2]]]),
        ],
    ) == [
        mk("reshape", [["dims", [15, 2, 2]]]),
    ]


def test_optimize_reshape_transpose_reshape_to_none() -> None:
    assert (
        check_optimize_shape_transforms(
            [6, 5, 2],
            [
                mk("reshape", [["dims", [6, 5, 2, 1, 1]]]),
                mk("transpose", [["permutation", [0, 1, 2, 4, 3]]]),
                mk("reshape", [["dims", [6, 5, 2]]]),
            ],
        )
        == []
    )


def test_optimize_reshape_transpose_reshape_to_same() -> None:
    assert check_optimize_shape_transforms(
        [1, 112, 7, 7],
        [
            mk("reshape", [["dims", [1, 4, 28, 7, 7]]]),
            mk("transpose", [["permutation", [0, 2, 1, 3, 4]]]),
            mk("reshape", [["dims", [1, 112, 7, 7]]]),
        ],
    ) == [
        mk("reshape", [["dims", [1, 4, 28, 7, 7]]]),
        mk("transpose", [["permutation", [0, 2, 1, 3, 4]]]),
        mk("reshape", [["dims", [1, 112, 7, 7]]]),
    ]


def test_optimize_reshape_transpose_reshape_to_transpose() -> None:
    assert check_optimize_shape_transforms(
        [6, 5, 2],
        [
            mk("reshape", [["dims", [2, 3, 5, 2]]]),
            mk("transpose", [["permutation", [0, 1, 3, 2]]]),
            mk("reshape", [["dims", [6, 2, 5]]]),
        ],
    ) == [
        mk("transpose", [["permutation", [0, 2, 1]]]),
    ]


def test_optimize_reshape_transpose_reshape_to_reshape() -> None:
    assert check_optimize_shape_transforms(
        [6, 5, 2],
        [
            mk("reshape", [["dims", [6, 5, 2, 1]]]),
            mk("transpose", [["permutation", [0, 1, 3, 2]]]),
            mk("reshape", [["dims", [6, 10]]]),
        ],
    ) == [
        mk("reshape", [["dims", [6, 10]]]),
    ]


def test_optimize_multibroadcast_transpose_reshape() -> None:
    assert check_optimize_shape_transforms(
        [1, 5, 2],
        [
            mk("multibroadcast", [["out_lens", [20, 5, 2]]]),
            mk("transpose", [["permutation", [0, 2, 1]]]),
            mk("reshape", [["dims", [20, 10]]]),
        ],
    ) == [
        mk("transpose", [["permutation", [0, 2, 1]]]),
        mk("reshape", [["dims", [1, 10]]]),
        mk("multibroadcast", [["out_lens", [20, 10]]]),
    ]


def test_optimize_resize1() -> None:
    assert check_optimize_shape_transforms(
        [3, 4, 4],
        [
            mk("reshape", [["dims", [3, 1, 4, 1, 4]]]),
            mk("multibroadcast", [["out_lens", [3, 2, 4, 2, 4]]]),
            mk("reshape", [["dims", [3, 8, 8]]]),
        ],
    ) == [
        mk("unsqueeze", [["axes", [1, 3]]]),
        mk("multibroadcast", [["out_lens", [3, 2, 4, 2, 4]]]),
        mk("reshape", [["dims", [3, 8, 8]]]),
    ]


def test_optimize_resize2() -> None:
    assert check_optimize_shape_transforms(
        [1, 1, 2, 2],
        [
            mk("reshape", [["dims", [1, 1, 2, 1, 2, 1]]]),
            mk("multibroadcast", [["out_lens", [1, 2, 2, 2, 2, 3]]]),
            mk("reshape", [["dims", [1, 2, 4, 6]]]),
        ],
    ) == [
        mk("unsqueeze", [["axes", [3, 5]]]),
        mk("multibroadcast", [["out_lens", [1, 1, 2, 2, 2, 3]]]),
        mk("reshape", [["dims", [1, 1, 4, 6]]]),
        mk("multibroadcast", [["out_lens", [1, 2, 4, 6]]]),
    ]


def test_optimize_reshape_2_squeeze() -> None:
    assert check_optimize_shape_transforms(
        [3, 1, 5, 1, 2, 1, 1],
        [
            mk("reshape", [["dims", [3, 5, 2]]]),
        ],
    ) == [
        mk("squeeze", [["axes", [1, 3, 5, 6]]]),
    ]


def test_optimize_reshape_2_unsqueeze() -> None:
    assert check_optimize_shape_transforms(
        [3, 5, 2],
        [
            mk("reshape", [["dims", [3, 1, 5, 1, 2, 1, 1]]]),
        ],
    ) == [
        mk("unsqueeze", [["axes", [1, 3, 5, 6]]]),
    ]


def test_optimize_unsqueeze_multibroadcast() -> None:
    assert check_optimize_shape_transforms(
        [32, 10],
        [
            mk("unsqueeze", [["axes", [0, 3, 4]]]),
            mk("multibroadcast", [["out_lens", [4, 32, 10, 16, 16]]]),
        ],
    ) == [
        mk("broadcast", [["axis", 1], ["out_lens", [4, 32, 10, 16, 16]]]),
    ]


def test_optimize_multibroadcast_reshape() -> None:
    assert check_optimize_shape_transforms(
        [1, 4, 1],
        [
            mk("multibroadcast", [["out_lens", [2, 4, 6]]]),
            mk("reshape", [["dims", [2, 2, 2, 6]]]),
        ],
    ) == [
        mk("reshape", [["dims", [1, 2, 2, 1]]]),
        mk("multibroadcast", [["out_lens", [2, 2, 2, 6]]]),
    ]


def test_optimize_squeeze_broadcast1() -> None:
    assert check_optimize_shape_transforms(
        [256, 1, 1],
        [
            mk("squeeze"),
            mk("broadcast", [["axis", 0], ["out_lens", [256, 64, 1, 1]]]),
        ],
    ) == [
        mk("unsqueeze", [["axes", [3]]]),
        mk("multibroadcast", [["out_lens", [256, 64, 1, 1]]]),
    ]


def test_optimize_squeeze_broadcast2() -> None:
    assert check_optimize_shape_transforms(
        [1, 128, 1],
        [
            mk("squeeze", [["axes", [0]]]),
            mk("multibroadcast", [["out_lens", [128, 768]]]),
        ],
    ) == [
        mk("squeeze", [["axes", [0]]]),
        mk("multibroadcast", [["out_lens", [128, 768]]]),
    ]


def test_optimize_squeeze_unsqueeze_broadcast_to_broadcast() -> None:
    assert check_optimize_shape_transforms(
        [256],
        [
            mk("unsqueeze", [["axes", [0]]]),
            mk("squeeze"),
            mk("broadcast", [["axis", 0], ["out_lens", [256, 64, 1, 1]]]),
        ],
    ) == [
        mk("broadcast", [["axis", 0], ["out_lens", [256, 64, 1, 1]]]),
    ]


def test_optimize_transpose_reshape_to_transpose() -> None:
    assert check_optimize_shape_transforms(
        [3, 3, 3, 1],
        [
            mk("transpose", [["permutation", [3, 2, 0, 1]]]),
            mk("reshape", [["dims", [3, 1, 3, 3]]]),
        ],
    ) == [
        mk("transpose", [["permutation", [2, 3, 0, 1]]]),
    ]


def test_optimize_scalar_broadcast_unsqueeze() -> None:
    assert check_optimize_shape_transforms(
        [1],
        [
            mk("multibroadcast", [["out_lens", [2]]]),
            mk("unsqueeze", [["axes", [1]]]),
        ],
    ) == [
        mk("multibroadcast", [["out_lens", [2, 1]]]),
    ]


def test_optimize_broadcast_reshape_transpose() -> None:
    assert check_optimize_shape_transforms(
        [2, 16, 1],
        [
            mk("multibroadcast", [["out_lens", [2, 16, 10240]]]),
            mk("reshape", [["dims", [2, 160, 32, 32]]]),
            mk("transpose", [["permutation", [0, 2, 3, 1]]]),
        ],
    ) == [
        mk("unsqueeze", [["axes", [3, 4]]]),
        mk("transpose", [["permutation", [0, 3, 4, 1, 2]]]),
        mk("multibroadcast", [["out_lens", [2, 1, 1, 16, 10]]]),
        mk("reshape", [["dims", [2, 1, 1, 160]]]),
        mk("multibroadcast", [["out_lens", [2, 32, 32, 160]]]),
    ]


def test_optimize_multibroadcast_transpose() -> None:
    assert check_optimize_shape_transforms(
        [320, 1, 1],
        [
            mk("multibroadcast", [["out_lens", [2, 320, 64, 64]]]),
            mk("transpose", [["permutation", [0, 2, 3, 1]]]),
        ],
    ) == [
        mk("unsqueeze", [["axes", [0]]]),
        mk("transpose", [["permutation", [0, 2, 3, 1]]]),
        mk("multibroadcast", [["out_lens", [2, 64, 64, 320]]]),
    ]


def test_optimize_unsqueeze_transpose_squeeze_multibroadcast() -> None:
    assert check_optimize_shape_transforms(
        [320, 1, 1],
        [
            mk("unsqueeze", [["axes", [0]]]),
            mk("transpose", [["permutation", [0, 2, 1, 3]]]),
            mk("squeeze", [["axes", [0, 1]]]),
            mk("multibroadcast", [["out_lens", [320, 320]]]),
        ],
    ) == [
        mk("multibroadcast", [["out_lens", [320, 1, 320]]]),
        mk("squeeze", [["axes", [1]]]),
    ]


def test_optimize_squeeze_multibroadcast_transpose() -> None:
    assert check_optimize_shape_transforms(
        [16, 1, 16],
        [
            mk("squeeze", [["axes", [1]]]),
            mk("multibroadcast", [["out_lens", [4, 16, 16]]]),
            mk("transpose", [["permutation", [1, 0, 2]]]),
        ],
    ) == [
        mk("multibroadcast", [["out_lens", [16, 4, 16]]]),
    ]


def test_optimize_squeeze_1x1() -> None:
    assert check_optimize_shape_transforms(
        [1, 1],
        [
            mk("squeeze", [["axes", [0]]]),
        ],
    ) == [
        mk("squeeze", [["axes", [0]]]),
    ]


def test_optimize_broadcast_squeeze_reshape() -> None:
    assert check_optimize_shape_transforms(
        [2, 32, 1, 1, 1],
        [
            mk("multibroadcast", [["out_lens", [2, 32, 40960, 1, 1]]]),
            mk("squeeze", [["axes", [3, 4]]]),
            mk("reshape", [["dims", [2, 32, 10, 64, 64]]]),
        ],
    ) == [
        mk("multibroadcast", [["out_lens", [2, 32, 10, 64, 64]]]),
    ]


def test_common_dims_reshape_less() -> None:
    desc = make_simple_descriptor([2, 32, 40, 8], mk("reshape", [["dims", [2, 1280, 8]]]))
    assert desc.common_dims() == [2, 32, 40, 8]
    assert desc.common_axes_map_from_src() == [[0], [1], [2], [3]]
    assert desc.common_axes_map_from_dst() == [[0], [1, 2], [3]]
    assert desc.to_common_from_src().generate() == []
    assert desc.to_common_from_dst().generate() == [mk("reshape", [["dims", [2, 32, 40, 8]]])]
    assert desc.to_dst_from_common().generate() == [mk("reshape", [["dims", [2, 1280, 8]]])]
    assert desc.to_src_from_common().generate() == []


def test_common_dims_reshape1() -> None:
    desc = make_simple_descriptor([2, 32, 2560], mk("reshape", [["dims", [2, 1280, 8, 8]]]))
    assert desc.common_dims() == [2, 32, 40, 8, 8]
    assert desc.common_axes_map_from_src() == [[0], [1], [2, 3, 4]]
    assert desc.common_axes_map_from_dst() == [[0], [1, 2], [3], [4]]
    assert desc.to_common_from_src().generate() == [mk("reshape", [["dims", [2, 32, 40, 8, 8]]])]
    assert desc.to_common_from_dst().generate() == [mk("reshape", [["dims", [2, 32, 40, 8, 8]]])]
    assert desc.to_dst_from_common().generate() == [mk("reshape", [["dims", [2, 1280, 8, 8]]])]
    assert desc.to_src_from_common().generate() == [mk("reshape", [["dims", [2, 32, 2560]]])]


def test_common_dims_reshape2() -> None:
    desc = make_simple_descriptor([2, 1280, 8, 8], mk("reshape", [["dims", [2, 32, 2560]]]))
    assert desc.common_dims() == [2, 32, 40, 8, 8]
    assert desc.common_axes_map_from_src() == [[0], [1, 2], [3], [4]]
    assert desc.common_axes_map_from_dst() == [[0], [1], [2, 3, 4]]
    assert desc.to_common_from_src().generate() == [mk("reshape", [["dims", [2, 32, 40, 8, 8]]])]
    assert desc.to_common_from_dst().generate() == [mk("reshape", [["dims", [2, 32, 40, 8, 8]]])]
    assert desc.to_dst_from_common().generate() == [mk("reshape", [["dims", [2, 32, 2560]]])]
    assert desc.to_src_from_common().generate() == [mk("reshape", [["dims", [2, 1280, 8, 8]]])]


def test_common_dims_reshape3() -> None:
    desc = make_simple_descriptor([2, 32, 4096], mk("reshape", [["dims", [4, 16, 64, 64]]]))
    assert desc.common_dims() == [2, 2, 16, 64, 64]
    assert desc.common_dims([2, 1, 4096]) == [2, 1, 1, 64, 64]
    assert desc.common_dims([2, 32, 1]) == [2, 2, 16, 1, 1]
    assert desc.common_axes_map_from_src() == [[0], [1, 2], [3, 4]]
    assert desc.common_axes_map_from_dst() == [[0, 1], [2], [3], [4]]
    assert desc.to_common_from_src().generate() == [mk("reshape", [["dims", [2, 2, 16, 64, 64]]])]
    assert desc.to_common_from_src().generate([2, 32, 1]) == [mk("reshape", [["dims", [2, 2, 16, 1, 1]]])]
    assert desc.to_common_from_src().generate([2, 1, 4096]) == [mk("reshape", [["dims", [2, 1, 1, 64, 64]]])]
    assert desc.to_common_from_dst().generate() == [mk("reshape", [["dims", [2, 2, 16, 64, 64]]])]
    assert desc.to_common_from_dst().generate([4, 16, 1, 1]) == [mk("reshape", [["dims", [2, 2, 16, 1, 1]]])]
    assert desc.to_common_from_dst().generate([4, 1, 64, 64]) == [mk("reshape", [["dims", [2, 2, 1, 64, 64]]])]
    assert desc.to_dst_from_common().generate() == [mk("reshape", [["dims", [4, 16, 64, 64]]])]
    assert desc.to_dst_from_common().generate([2, 2, 1, 64, 64]) == [mk("reshape", [["dims", [4, 1, 64, 64]]])]
    assert desc.to_dst_from_common().generate([2, 2, 16, 1, 1]) == [mk("reshape", [["dims", [4, 16, 1, 1]]])]
    assert desc.to_dst_from_common().generate([2, 1, 16, 64, 64]) == [mk("squeeze", [["axes", [1]]])]
    assert desc.to_src_from_common().generate() == [mk("reshape", [["dims", [2, 32, 4096]]])]
    assert desc.to_src_from_common().generate([2, 2, 1, 64, 64]) == [mk("reshape", [["dims", [2, 2, 4096]]])]
    assert desc.to_src_from_common().generate([2, 2, 16, 1, 1]) == [mk("reshape", [["dims", [2, 32, 1]]])]
    assert desc.to_src_from_common().generate([2, 1, 16, 64, 64]) == [mk("reshape", [["dims", [2, 16, 4096]]])]


def test_common_dims_reshape4() -> None:
    desc = make_simple_descriptor([4, 16, 64, 64], mk("reshape", [["dims", [2, 32, 4096]]]))
    assert desc.common_dims() == [2, 2, 16, 64, 64]
    assert desc.common_dims([4, 16, 1, 1]) == [2, 2, 16, 1, 1]
    assert desc.common_dims([4, 1, 64, 64]) == [2, 2, 1, 64, 64]
    assert desc.common_axes_map_from_src() == [[0, 1], [2], [3], [4]]
    assert desc.common_axes_map_from_dst() == [[0], [1, 2], [3, 4]]
    assert desc.to_common_from_dst().generate() == [mk("reshape", [["dims", [2, 2, 16, 64, 64]]])]
    assert desc.to_common_from_dst().generate([2, 32, 1]) == [mk("reshape", [["dims", [2, 2, 16, 1, 1]]])]
    assert desc.to_common_from_dst().generate([2, 1, 4096]) == [mk("reshape", [["dims", [2, 1, 1, 64, 64]]])]
    assert desc.to_common_from_src().generate() == [mk("reshape", [["dims", [2, 2, 16, 64, 64]]])]
    assert desc.to_common_from_src().generate([4, 16, 1, 1]) == [mk("reshape", [["dims", [2, 2, 16, 1, 1]]])]
    assert desc.to_common_from_src().generate([4, 1, 64, 64]) == [mk("reshape", [["dims", [2, 2, 1, 64, 64]]])]
    assert desc.to_dst_from_common().generate() == [mk("reshape", [["dims", [2, 32, 4096]]])]
    assert desc.to_dst_from_common().generate([2, 2, 1, 64, 64]) == [mk("reshape", [["dims", [2, 2, 4096]]])]
    assert desc.to_dst_from_common().generate([2, 2, 16, 1, 1]) == [mk("reshape", [["dims", [2, 32, 1]]])]
    assert desc.to_dst_from_common().generate([2, 1, 16, 64, 64]) == [mk("reshape", [["dims", [2, 16, 4096]]])]
    assert desc.to_src_from_common().generate() == [mk("reshape", [["dims", [4, 16, 64, 64]]])]
    assert desc.to_src_from_common().generate([2, 2, 1, 64, 64]) == [mk("reshape", [["dims", [4, 1, 64, 64]]])]
    assert desc.to_src_from_common().generate([2, 2, 16, 1, 1]) == [mk("reshape", [["dims", [4, 16, 1, 1]]])]
    assert desc.to_src_from_common().generate([2, 1, 16, 64, 64]) == [mk("squeeze", [["axes", [1]]])]


def test_common_dims_transpose_reshape() -> None:
    desc = make_simple_descriptor(
        [2, 16, 64, 64], mk("transpose", [["permutation", [0, 2, 3, 1]]]), mk("reshape", [["dims", [2, 32, 2048]]])
    )
    assert desc.common_dims() == [2, 32, 2, 64, 16]
    assert desc.common_axes_map_from_src() == [[0], [4], [1, 2], [3]]
    assert desc.common_axes_map_from_dst() == [[0], [1], [2, 3, 4]]
    assert desc.to_common_from_dst().generate() == [mk("reshape", [["dims", [2, 32, 2, 64, 16]]])]
    assert desc.to_common_from_dst().generate([2, 32, 1]) == [mk("unsqueeze", [["axes", [3, 4]]])]
    assert desc.to_common_from_dst().generate([2, 1, 2048]) == [mk("reshape", [["dims", [2, 1, 2, 64, 16]]])]
    assert desc.to_common_from_src().generate() == [
        mk("reshape", [["dims", [2, 16, 32, 2, 64]]]),
        mk("transpose", [["permutation", [0, 2, 3, 4, 1]]]),
    ]
    assert desc.to_common_from_src().generate([2, 16, 1, 1]) == [
        mk("unsqueeze", [["axes", [3]]]),
        mk("transpose", [["permutation", [0, 2, 3, 4, 1]]]),
    ]
    assert desc.to_common_from_src().generate([2, 1, 64, 64]) == [
        mk("reshape", [["dims", [2, 1, 32, 2, 64]]]),
        mk("transpose", [["permutation", [0, 2, 3, 4, 1]]]),
    ]
    assert desc.to_dst_from_common().generate() == [mk("reshape", [["dims", [2, 32, 2048]]])]
    assert desc.to_dst_from_common().generate([2, 1, 2, 64, 16]) == [mk("reshape", [["dims", [2, 1, 2048]]])]
    assert desc.to_dst_from_common().generate([2, 1, 1, 1, 16]) == [mk("squeeze", [["axes", [2, 3]]])]
    assert desc.to_dst_from_common().generate([2, 32, 2, 64, 1]) == [mk("reshape", [["dims", [2, 32, 128]]])]
    assert desc.to_src_from_common().generate() == [
        mk("transpose", [["permutation", [0, 4, 1, 2, 3]]]),
        mk("reshape", [["dims", [2, 16, 64, 64]]]),
    ]
    assert desc.to_src_from_common().generate([2, 1, 2, 64, 16]) == [
        mk("transpose", [["permutation", [0, 4, 1, 2, 3]]]),
        mk("squeeze", [["axes", [2]]]),
    ]
    assert desc.to_src_from_common().generate([2, 1, 1, 1, 16]) == [
        mk("transpose", [["permutation", [0, 4, 1, 2, 3]]]),
        mk("squeeze", [["axes", [2]]]),
    ]
    assert desc.to_src_from_common().generate([2, 32, 2, 64, 1]) == [
        mk("transpose", [["permutation", [0, 4, 1, 2, 3]]]),
        mk("reshape", [["dims", [2, 1, 64, 64]]]),
    ]


def test_common_dims_broadcast_reshape() -> None:
    desc = make_simple_descriptor(
        [2, 32, 1], mk("multibroadcast", [["out_lens", [2, 32, 4096]]]), mk("reshape", [["dims", [4, 16, 64, 64]]])
    )
    assert desc.common_dims() == [2, 2, 16, 64, 64]
    assert desc.common_dims([2, 1, 1]) == [2, 1, 1, 64, 64]
    assert desc.common_dims([2, 1, 4096]) == [2, 1, 1, 64, 64]
    assert desc.common_dims([2, 32, 4096]) == [2, 2, 16, 64, 64]
    assert desc.common_axes_map_from_src() == [[0], [1, 2], [3, 4]]
    assert desc.common_axes_map_from_dst() == [[0, 1], [2], [3], [4]]
    assert desc.to_common_from_src().generate() == [
        mk("reshape", [["dims", [2, 2, 16, 1, 1]]]),
        mk("multibroadcast", [["out_lens", [2, 2, 16, 64, 64]]]),
    ]
    assert desc.to_common_from_src().generate([2, 1, 1]) == [
        mk("unsqueeze", [["axes", [2, 4]]]),
        mk("multibroadcast", [["out_lens", [2, 1, 1, 64, 64]]]),
    ]
    assert desc.to_common_from_dst().generate() == [mk("reshape", [["dims", [2, 2, 16, 64, 64]]])]
    assert desc.to_common_from_dst().generate([4, 16, 1, 1]) == [mk("reshape", [["dims", [2, 2, 16, 1, 1]]])]
    assert desc.to_common_from_dst().generate([4, 1, 64, 64]) == [mk("reshape", [["dims", [2, 2, 1, 64, 64]]])]
    assert desc.to_dst_from_common().generate() == [mk("reshape", [["dims", [4, 16, 64, 64]]])]
    assert desc.to_dst_from_common().generate([2, 2, 1, 64, 64]) == [mk("reshape", [["dims", [4, 1, 64, 64]]])]
    assert desc.to_dst_from_common().generate([2, 2, 16, 1, 1]) == [mk("reshape", [["dims", [4, 16, 1, 1]]])]
    assert desc.to_dst_from_common().generate([2, 1, 16, 64, 64]) == [mk("squeeze", [["axes", [1]]])]
    assert desc.to_src_from_common().generate() == [mk("reshape", [["dims", [2, 32, 4096]]])]
    assert desc.to_src_from_common().generate([2, 2, 1, 64, 64]) == [mk("reshape", [["dims", [2, 2, 4096]]])]
    assert desc.to_src_from_common().generate([2, 2, 16, 1, 1]) == [mk("reshape", [["dims", [2, 32, 1]]])]
    assert desc.to_src_from_common().generate([2, 1, 16, 64, 64]) == [mk("reshape", [["dims", [2, 16, 4096]]])]


def test_common_dims_resize() -> None:
    desc = make_simple_descriptor(
        [4, 16, 32, 32],
        mk("reshape", [["dims", [4, 16, 32, 1, 32, 1]]]),
        mk("multibroadcast", [["out_lens", [4, 16, 32, 2, 32, 2]]]),
        mk("reshape", [["dims", [4, 16, 64, 64]]]),
    )
    assert desc.common_dims() == [4, 16, 32, 2, 32, 2]
    assert desc.common_dims([4, 16, 1, 1]) == [4, 16, 1, 2, 1, 2]
    assert desc.common_dims([4, 1, 32, 32]) == [4, 1, 32, 2, 32, 2]
    assert desc.common_axes_map_from_src() == [[0], [1], [2], [4]]
    assert desc.common_axes_map_from_dst() == [[0], [1], [2, 3], [4, 5]]
    assert desc.to_common_from_src().generate() == [
        mk("unsqueeze", [["axes", [3, 5]]]),
        mk("multibroadcast", [["out_lens", [4, 16, 32, 2, 32, 2]]]),
    ]
    assert desc.to_common_from_src().generate([4, 16, 1, 1]) == [
        mk("unsqueeze", [["axes", [3, 5]]]),
        mk("multibroadcast", [["out_lens", [4, 16, 1, 2, 1, 2]]]),
    ]
    assert desc.to_common_from_src().generate([4, 1, 32, 32]) == [
        mk("unsqueeze", [["axes", [3, 5]]]),
        mk("multibroadcast", [["out_lens", [4, 1, 32, 2, 32, 2]]]),
    ]
    assert desc.to_common_from_dst().generate() == [mk("reshape", [["dims", [4, 16, 32, 2, 32, 2]]])]
    assert desc.to_common_from_dst().generate([4, 16, 1, 1]) == [mk("unsqueeze", [["axes", [3, 5]]])]
    assert desc.to_common_from_dst().generate([4, 1, 64, 64]) == [mk("reshape", [["dims", [4, 1, 32, 2, 32, 2]]])]
    assert desc.to_dst_from_common().generate() == [mk("reshape", [["dims", [4, 16, 64, 64]]])]
    assert desc.to_dst_from_common().generate([4, 16, 1, 2, 1, 2]) == [mk("squeeze", [["axes", [2, 4]]])]
    assert desc.to_dst_from_common().generate([4, 1, 32, 2, 32, 2]) == [mk("reshape", [["dims", [4, 1, 64, 64]]])]
    assert desc.to_dst_from_common().generate([4, 16, 32, 1, 32, 1]) == [mk("squeeze", [["axes", [3, 5]]])]
    assert desc.to_src_from_common().generate() == [mk("squeeze", [["axes", [3, 5]]])]
    assert desc.to_src_from_common().generate([4, 16, 1, 1, 1, 1]) == [mk("squeeze", [["axes", [3, 4]]])]
    assert desc.to_src_from_common().generate([4, 1, 32, 1, 32, 1]) == [mk("squeeze", [["axes", [3, 5]]])]
    assert desc.to_src_from_common().generate([4, 16, 32, 1, 32, 1]) == [mk("squeeze", [["axes", [3, 5]]])]


def test_common_dims_squeeze_1x1() -> None:
    desc = make_simple_descriptor([1, 1], mk("squeeze", [["axes", [0]]]))
    desc.simplify()
    assert desc.common_dims() == [1, 1]
    assert desc.common_axes_map_from_src() == [[0], [1]]
    assert desc.common_axes_map_from_dst() == [[0, 1]]
    assert desc.to_common_from_src().generate() == []
    assert desc.to_common_from_dst().generate() == [mk("unsqueeze", [["axes", [1]]])]
    assert desc.to_dst_from_common().generate() == [mk("squeeze", [["axes", [0]]])]
    assert desc.to_src_from_common().generate() == []


def test_rebase_reshape_broadcast() -> None:
    base_desc = make_simple_descriptor(
        [3, 4, 64, 1],
        mk("reshape", [["dims", [12, 8, 8, 1, 1]]]),
        mk("multibroadcast", [["out_lens", [12, 8, 8, 2, 2]]]),
    )
    desc = base_desc.rebase([3, 4, 64, 4])
    assert get_final_lens(desc) == [12, 8, 8, 2, 2]
    assert get_all_lens(desc) == [[3, 4], [8], [8], [2], [2]]
    assert desc.generate() == [
        mk("reshape", [["dims", [3, 4, 8, 8, 2, 2]]]),
        mk("reshape", [["dims", [12, 8, 8, 2, 2]]]),
    ]
    desc = base_desc.rebase([3, 5, 64, 1])
    assert get_final_lens(desc) == [15, 8, 8, 2, 2]
    assert get_all_lens(desc) == [[3, 5], [8], [8], [2], [2]]
    assert desc.generate() == [
        mk("reshape", [["dims", [3, 5, 8, 8, 1, 1]]]),
        mk("reshape", [["dims", [15, 8, 8, 1, 1]]]),
        mk("multibroadcast", [["out_lens", [15, 8, 8, 2, 2]]]),
    ]
    desc = base_desc.rebase([3, 4, 1, 1])
    assert get_final_lens(desc) == [12, 1, 1, 2, 2]
    assert get_all_lens(desc) == [[3, 4], [1], [1], [2], [2]]
    assert desc.generate() == [
        mk("unsqueeze", [["axes", [3, 5]]]),
        mk("reshape", [["dims", [12, 1, 1, 1, 1]]]),
        mk("multibroadcast", [["out_lens", [12, 1, 1, 2, 2]]]),
    ]


def test_rebase_unsqueeze_broadcast() -> None:
    base_desc = make_simple_descriptor(
        [1, 3, 1, 1], mk("unsqueeze", [["axes", [3, 5]]]), mk("multibroadcast", [["out_lens", [1, 3, 256, 2, 256, 2]]])
    )
    desc = base_desc.rebase([1, 3, 512, 512])
    assert get_final_lens(desc) == [1, 3, 256, 2, 256, 2]
    assert get_all_lens(desc) == [[1], [3], [256], [2], [256], [2]]
    assert desc.generate() == [
        mk("reshape", [["dims", [1, 3, 256, 2, 256, 2]]]),
    ]
    desc = base_desc.rebase([1, 16, 512, 512])
    assert get_final_lens(desc) == [1, 16, 256, 2, 256, 2]
    assert get_all_lens(desc) == [[1], [16], [256], [2], [256], [2]]
    assert desc.generate() == [
        mk("reshape", [["dims", [1, 16, 256, 2, 256, 2]]]),
    ]


def test_rebase_unsqueeze_broadcast_transpose() -> None:
    base_desc = make_simple_descriptor(
        [1, 1, 1, 3],
        mk("unsqueeze", [["axes", [3, 4]]]),
        mk("transpose", [["permutation", [0, 5, 1, 2, 3, 4]]]),
        mk("multibroadcast", [["out_lens", [1, 3, 256, 2, 256, 2]]]),
    )
    desc = base_desc.rebase([1, 512, 512, 3])
    assert get_final_lens(desc) == [1, 3, 256, 2, 256, 2]
    assert get_all_lens(desc) == [[1], [3], [256], [2], [256], [2]]
    assert desc.generate() == [
        mk("reshape", [["dims", [1, 256, 2, 256, 2, 3]]]),
        mk("transpose", [["permutation", [0, 5, 1, 2, 3, 4]]]),
    ]


def test_rebase_squeeze_broadcast_transpose() -> None:
    base_desc = make_simple_descriptor(
        [1, 1, 1, 1, 1, 3],
        mk("squeeze", [["axes", [2, 4]]]),
        mk("transpose", [["permutation", [0, 3, 1, 2]]]),
        mk("multibroadcast", [["out_lens", [1, 3, 512, 512]]]),
    )
    desc = base_desc.rebase([1, 256, 2, 256, 2, 3])
    assert get_final_lens(desc) == [1, 3, 512, 512]
    assert get_all_lens(desc) == [[1], [3], [256, 2], [256, 2]]
    assert desc.generate() == [
        mk("transpose", [["permutation", [0, 5, 1, 2, 3, 4]]]),
        mk("reshape", [["dims", [1, 3, 512, 512]]]),
    ]


def test_rebase_transpose_reshape_1s() -> None:
    base_desc = make_simple_descriptor(
        [1, 3, 256, 2, 256, 2],
        mk("transpose", [["permutation", [0, 2, 5, 3, 4, 1]]]),
        mk("reshape", [["dims", [1, 512, 512, 3]]]),
    )
    desc = base_desc.rebase([1, 3, 1, 1, 1, 1])
    assert get_final_lens(desc) == [1, 1, 1, 3]
    assert get_all_lens(desc) == [[1], [1, 1], [1, 1], [3]]
    assert desc.generate() == [
        mk("transpose", [["permutation", [0, 2, 5, 3, 4, 1]]]),
        mk("squeeze", [["axes", [1, 3]]]),
    ]


def test_rebase_adjust_axes_basic_shortage() -> None:
    base_desc = make_simple_descriptor(
        [1, 16], mk("multibroadcast", [["out_lens", [16, 16]]]), mk("reshape", [["dims", [2, 8, 16]]])
    )
    desc = base_desc.rebase([1, 16])
    assert not desc.empty()
    assert get_final_lens(desc) == [2, 8, 16]
    assert get_all_lens(desc) == [[2], [8], [16]]
    generated = desc.generate()
    assert generated == [
        mk("unsqueeze", [["axes", [1]]]),
        mk("multibroadcast", [["out_lens", [2, 8, 16]]]),
    ]


def test_rebase_adjust_axes_multiple_groups() -> None:
    base_desc = make_simple_descriptor(
        [1, 1, 32], mk("multibroadcast", [["out_lens", [4, 8, 32]]]), mk("reshape", [["dims", [2, 2, 2, 4, 32]]])
    )
    desc = base_desc.rebase([1, 1, 32], True)
    assert not desc.empty()
    assert get_final_lens(desc) == [2, 2, 2, 4, 32]
    assert get_all_lens(desc) == [[2], [2], [2], [4], [32]]
    generated = desc.generate()
    assert generated == [
        mk("unsqueeze", [["axes", [1, 3]]]),
        mk("multibroadcast", [["out_lens", [2, 2, 2, 4, 32]]]),
    ]


def test_rebase_adjust_axes_hidden_swap_simple() -> None:
    base_desc = make_simple_descriptor([2, 1, 16], mk("multibroadcast", [["out_lens", [2, 8, 16]]]))
    desc = base_desc.rebase([2, 1, 16], True)
    assert not desc.empty()
    assert get_final_lens(desc) == [2, 8, 16]
    assert get_all_lens(desc) == [[2], [8], [16]]
    assert len(desc.find_broadcasted_axes()) == 1
    generated = desc.generate()
    assert generated == [
        mk("multibroadcast", [["out_lens", [2, 8, 16]]]),
    ]


def test_rebase_adjust_axes_axis_movement() -> None:
    base_desc = make_simple_descriptor(
        [8, 1], mk("reshape", [["dims", [2, 4, 1]]]), mk("multibroadcast", [["out_lens", [2, 4, 16]]])
    )
    desc = base_desc.rebase([8, 1])
    assert not desc.empty()
    assert get_final_lens(desc) == [2, 4, 16]
    assert get_all_lens(desc) == [[2], [4], [16]]
    generated = desc.generate()
    assert generated == [
        mk("reshape", [["dims", [2, 4, 1]]]),
        mk("multibroadcast", [["out_lens", [2, 4, 16]]]),
    ]


def test_rebase_adjust_axes_group_unique_hidden() -> None:
    base_desc = make_simple_descriptor([1, 1, 1, 16], mk("multibroadcast", [["out_lens", [2, 4, 8, 16]]]))
    desc = base_desc.rebase([1, 1, 1, 16], True)
    assert not desc.empty()
    assert get_final_lens(desc) == [2, 4, 8, 16]
    assert get_all_lens(desc) == [[2], [4], [8], [16]]
    assert len(desc.find_broadcasted_axes()) == 3
    generated = desc.generate()
    assert generated == [
        mk("multibroadcast", [["out_lens", [2, 4, 8, 16]]]),
    ]


def test_rebase_no_axis_subdimensions() -> None:
    base_desc = make_simple_descriptor(
        [1], mk("multibroadcast", [["out_lens", [16]]]), mk("reshape", [["dims", [2, 8]]])
    )
    desc = base_desc.rebase([16])
    assert get_final_lens(desc) == [2, 8]
    assert desc.generate() == [
        mk("reshape", [["dims", [2, 8]]]),
    ]


def test_rebase_adjust_axes_insert_and_sort() -> None:
    base_desc = make_simple_descriptor(
        [16, 1],
        mk("reshape", [["dims", [2, 8, 1]]]),
        mk("multibroadcast", [["out_lens", [2, 8, 32]]]),
        mk("reshape", [["dims", [2, 256]]]),
    )
    desc = base_desc.rebase([16, 1])
    assert not desc.empty()
    assert get_final_lens(desc) == [2, 256]
    assert get_all_lens(desc) == [[2], [8, 32]]
    generated = desc.generate()
    assert generated == [
        mk("reshape", [["dims", [2, 8, 1]]]),
        mk("multibroadcast", [["out_lens", [2, 8, 32]]]),
        mk("reshape", [["dims", [2, 256]]]),
    ]


def test_rebase_adjust_axes_group_unique_segments() -> None:
    base_desc = make_simple_descriptor(
        [1, 1, 32], mk("multibroadcast", [["out_lens", [8, 4, 32]]]), mk("reshape", [["dims", [2, 4, 4, 32]]])
    )
    desc = base_desc.rebase([1, 1, 32], True)
    assert not desc.empty()
    assert get_final_lens(desc) == [2, 4, 4, 32]
    assert get_all_lens(desc) == [[2], [4], [4], [32]]
    generated = desc.generate()
    assert generated == [
        mk("unsqueeze", [["axes", [1]]]),
        mk("multibroadcast", [["out_lens", [2, 4, 4, 32]]]),
    ]


def test_rebase_adjust_axes_many_hidden_groups() -> None:
    base_desc = make_simple_descriptor(
        [1, 1, 1, 1, 1, 16],
        mk("multibroadcast", [["out_lens", [2, 3, 4, 5, 6, 16]]]),
        mk("reshape", [["dims", [2, 3, 2, 2, 5, 2, 3, 16]]]),
    )
    desc = base_desc.rebase([1, 1, 1, 1, 1, 16], True)
    assert not desc.empty()
    assert get_final_lens(desc) == [2, 3, 2, 2, 5, 2, 3, 16]
    assert get_all_lens(desc) == [[2], [3], [2], [2], [5], [2], [3], [16]]
    assert len(desc.find_broadcasted_axes()) == 5
    generated = desc.generate()
    assert generated == [
        mk("unsqueeze", [["axes", [3, 6]]]),
        mk("multibroadcast", [["out_lens", [2, 3, 2, 2, 5, 2, 3, 16]]]),
    ]


def test_rebase_adjust_axes_many_moved_groups() -> None:
    base_desc = make_simple_descriptor(
        [1, 1, 1, 1, 64],
        mk("multibroadcast", [["out_lens", [8, 4, 2, 6, 64]]]),
        mk("reshape", [["dims", [2, 4, 2, 2, 2, 3, 2, 2, 32]]]),
    )
    desc = base_desc.rebase([1, 1, 1, 1, 64], True)
    assert not desc.empty()
    assert get_final_lens(desc) == [2, 4, 2, 2, 2, 3, 2, 2, 32]
    assert get_all_lens(desc) == [[2], [4], [2], [2], [2], [3], [2], [2], [32]]
    generated = desc.generate()
    assert generated == [
        mk("reshape", [["dims", [1, 1, 1, 1, 1, 1, 1, 2, 32]]]),
        mk("multibroadcast", [["out_lens", [2, 4, 2, 2, 2, 3, 2, 2, 32]]]),
    ]


def test_rebase_adjust_squeeze_unsqueeze_broadcast() -> None:
    base_desc = make_simple_descriptor(
        [1, 1, 1, 1, 1, 1, 32, 1, 1, 1, 1, 1],
        mk("squeeze", [["axes", [1, 2, 3, 4, 5, 7, 8, 9, 10]]]),
        mk("unsqueeze", [["axes", [1, 2, 3, 4, 5, 7, 8, 10, 11]]]),
        mk("multibroadcast", [["out_lens", [1, 1, 1, 1, 1, 1, 32, 10, 16, 1, 90, 160]]]),
    )
    desc = base_desc.rebase([1, 1, 1, 1, 1, 1, 32, 10, 16, 1, 90, 160])
    assert not desc.empty()
    assert get_final_lens(desc) == [1, 1, 1, 1, 1, 1, 32, 10, 16, 1, 90, 160]
    assert get_all_lens(desc) == [[1], [1], [1], [1], [1], [1], [32], [10], [16], [1], [90], [160]]
    assert desc.generate() == []
