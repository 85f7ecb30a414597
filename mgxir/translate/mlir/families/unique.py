"""`unique` (ONNX Unique, MIGraphX's op/unique.hpp): the distinct elements (axis None) or rows (axis
0) of a static input, sorted or in order of first occurrence, with the index of each one's first
occurrence, each input row's position among them and their counts. The number of distinct rows is
known only at run time, so the results are dynamic: pairwise comparisons find each row's first
occurrence and its position, and the outputs are gathered over a `tensor.empty` of the counted size."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iree.compiler import ir
from iree.compiler.dialects import arith, scf, tensor

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.mlir.families.indexed import IndexMath, indexed
from mgxir.translate.mlir.registry import lowers

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]
I8, I64 = DType.int8, DType.int64


@lowers(
    "unique",
    to="scf.execute_region of linalg.generics: lexicographic comparison of every pair of rows (NaN after "
    "numbers, NaNs equal), each row's first occurrence and position (sorted: distinct rows before it; "
    "unsorted: first occurrences before its own), then values, first indices and counts gathered over "
    "tensor.empty(count of distinct rows) (results: the tuple)",
    dynamic=True,
)
def _unique(lowering: Lowering, ins: Instruction, args: Values) -> Values:
    source = ins.args[0].shape
    t = source.dtype
    e, s, x = lowering.emitter, lowering.scalars, IndexMath(lowering)
    by_rows = ins.op["axis"] is not None
    n = source.lens[0] if by_rows else source.elements
    width = source.elements // n
    rows = e.reshape(args[0], source.lens, [n, width])
    region = scf.ExecuteRegionOp([lowering.types.of_shape(shape) for shape in ins.shape.sub_shapes])
    with ir.InsertionPoint(region.region.blocks.append()):
        i64 = lowering.types.element(I64)

        def less(a: ir.Value, b: ir.Value) -> ir.Value:
            below = s.cmp("lt", a, b, t)
            if t.is_float:  # NaN sorts after every number, as numpy's sort does
                below = arith.ori(below, arith.andi(s.is_nan(b), arith.xori(s.is_nan(a), s.const(True, DType.bool))))
            return below

        def compare(coords: Values, scalars: Values) -> Values:
            """order[i, j]: -1, 0 or 1 as row i is before, equal to or after row j (the first
            element that differs decides)."""
            i, j, k = coords
            a, b = tensor.extract(rows, [i, k]), tensor.extract(rows, [j, k])
            sign = arith.select(less(a, b), s.const(-1, I8), arith.select(less(b, a), s.const(1, I8), s.const(0, I8)))
            acc = scalars[-1]
            return [arith.select(s.cmp("eq", acc, s.const(0, I8), I8), sign, acc)]

        order = indexed(lowering, I8, [n, n], compare, init=e.filled(I8, [n, n], 0), reduced=[width])

        def first_of(coords: Values, scalars: Values) -> Values:
            i, j = coords
            acc = scalars[-1]
            same = s.cmp("eq", tensor.extract(order, [i, j]), s.const(0, I8), I8)
            j64 = x.to_element(j, I64)
            return [arith.select(arith.andi(same, s.cmp("lt", j64, acc, I64)), j64, acc)]

        first = indexed(lowering, I64, [n], first_of, init=e.filled(I64, [n], n), reduced=[n])

        def is_first(j: ir.Value) -> ir.Value:
            return s.cmp("eq", tensor.extract(first, [j]), x.to_element(j, I64), I64)

        def position_of(coords: Values, scalars: Values) -> Values:
            """Row i's position among the distinct rows: those before it (sorted), or those whose
            first occurrence is before its own (unsorted)."""
            i, j = coords
            if ins.op["sorted"]:
                before = s.cmp("lt", tensor.extract(order, [j, i]), s.const(0, I8), I8)
            else:
                before = s.cmp("lt", x.to_element(j, I64), tensor.extract(first, [i]), I64)
            counted = arith.extui(i64, arith.andi(is_first(j), before))
            return [arith.addi(scalars[-1], counted)]

        position = indexed(lowering, I64, [n], position_of, init=e.filled(I64, [n], 0), reduced=[n])

        def count_distinct(coords: Values, scalars: Values) -> Values:
            return [arith.addi(scalars[-1], arith.extui(i64, is_first(coords[0])))]

        distinct = indexed(lowering, I64, [], count_distinct, init=e.filled(I64, [], 0), reduced=[n])
        size = arith.index_cast(lowering.types.index, tensor.extract(distinct, []))

        def first_index(coords: Values, scalars: Values) -> Values:
            p, i = coords
            here = arith.andi(is_first(i), s.cmp("eq", tensor.extract(position, [i]), x.to_element(p, I64), I64))
            return [arith.select(here, x.to_element(i, I64), scalars[-1])]

        def count(coords: Values, scalars: Values) -> Values:
            p, i = coords
            here = s.cmp("eq", tensor.extract(position, [i]), x.to_element(p, I64), I64)
            return [arith.addi(scalars[-1], arith.extui(i64, here))]

        firsts = indexed(lowering, I64, [size], first_index, init=e.filled(I64, [size], 0), reduced=[n])
        counts = indexed(lowering, I64, [size], count, init=e.filled(I64, [size], 0), reduced=[n])
        value_lens = [size, *source.lens[1:]] if by_rows else [size]

        def gather(coords: Values, scalars: Values) -> Values:
            row = x.from_element(tensor.extract(firsts, [coords[0]]), I64)
            if by_rows:
                return [tensor.extract(args[0], [row, *coords[1:]])]
            return [tensor.extract(rows, [row, x.const(0)])]

        values = indexed(lowering, t, value_lens, gather)
        results = [values, firsts, position, counts]
        types = [r.type for r in region.results]
        scf.YieldOp([v if v.type == want else tensor.cast(want, v) for v, want in zip(results, types)])
    return list(region.results)
