"""nonmaxsuppression with MIGraphX's static output ({batches · classes · boxes, 3}, zero rows after the
selected ones). Greedy suppression as a fixed point: a box is kept when its score passes, fewer than
`max_output_boxes_per_class` boxes ranked before it are kept and none of those overlaps it by more
than the IoU threshold. Each pass of an `scf.for` over the box count settles one more rank, so after
`boxes` passes the flags are the greedy ones. Coordinates and IoU are computed in f64, as the
reference does."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, scf, tensor

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.mlir.emitter import PARALLEL, REDUCTION
from mgxir.translate.mlir.families.indexed import IndexMath, indexed
from mgxir.translate.mlir.registry import lowers

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]
F64 = DType.double


@lowers(
    "nonmaxsuppression",
    to="linalg.generics: each box's rank by score, then an scf.for of fixed-point passes (kept-before count "
    "and IoU suppression, f64), then each output row gathers the kept box of its position",
)
def _nonmaxsuppression(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    boxes_shape, scores_shape = ins.args[0].shape, ins.args[1].shape
    batches, classes, count = scores_shape.lens
    e, s, x = lowering.emitter, lowering.scalars, IndexMath(lowering)
    center = ins.op["center_point_box"]

    def optional_scalar(i: int, default: float, t: DType) -> ir.Value:
        """Input i's first element in type t, or `default` where the input is absent or empty."""
        if i >= len(args) or ins.args[i].shape.elements == 0 or ins.args[i].op.name == "undefined":
            return s.const(default, t)
        shape = ins.args[i].shape
        flat = e.reshape(args[i], shape.lens, [shape.elements])
        value = tensor.extract(flat, [x.const(0)])
        if t.is_float:
            return s.to_float(value, shape.dtype, t)
        return s.convert(value, shape.dtype, t)

    def score(b: ir.Value, c: ir.Value, i: ir.Value) -> ir.Value:
        return s.to_float(tensor.extract(args[1], [b, c, i]), scores_shape.dtype, F64)

    def corners(b: ir.Value, i: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
        """(y1, x1, y2, x2) of box i with y1 <= y2 and x1 <= x2."""
        a, bb, c, d = (
            s.to_float(tensor.extract(args[0], [b, i, x.const(k)]), boxes_shape.dtype, F64) for k in range(4)
        )
        if center:
            half = s.const(0.5, F64)
            return (
                arith.subf(bb, arith.mulf(d, half)),
                arith.subf(a, arith.mulf(c, half)),
                arith.addf(bb, arith.mulf(d, half)),
                arith.addf(a, arith.mulf(c, half)),
            )
        return s.min(a, c, F64), s.min(bb, d, F64), s.max(a, c, F64), s.max(bb, d, F64)

    def overlaps(b: ir.Value, i: ir.Value, j: ir.Value, threshold: ir.Value) -> ir.Value:
        """i1: IoU(i, j) > threshold with a positive union."""
        y1, x1, y2, x2 = corners(b, i)
        v1, u1, v2, u2 = corners(b, j)
        zero = s.const(0.0, F64)
        ih = s.max(arith.subf(s.min(y2, v2, F64), s.max(y1, v1, F64)), zero, F64)
        iw = s.max(arith.subf(s.min(x2, u2, F64), s.max(x1, u1, F64)), zero, F64)
        inter = arith.mulf(ih, iw)
        area_i = arith.mulf(arith.subf(y2, y1), arith.subf(x2, x1))
        area_j = arith.mulf(arith.subf(v2, v1), arith.subf(u2, u1))
        union = arith.subf(arith.addf(area_i, area_j), inter)
        positive = s.cmp("gt", union, zero, F64)
        return arith.andi(positive, s.cmp("gt", arith.divf(inter, union), threshold, F64))

    group = [batches, classes, count]

    # rank of each box in its (batch, class): the stable descending order of the scores
    def rank_body(coords: Values, scalars: Values) -> Values:
        b, c, i, j = coords
        si, sj = score(b, c, i), score(b, c, j)
        ahead = arith.ori(s.cmp("gt", sj, si, F64), arith.andi(s.cmp("eq", sj, si, F64), x.lt(j, i)))
        acc = scalars[0]
        return [arith.select(ahead, arith.addi(acc, s.const(1, DType.int64)), acc)]

    ranks = indexed(lowering, DType.int64, group, rank_body, init=e.filled(DType.int64, group, 0), reduced=[count])

    def rank_of(b: ir.Value, c: ir.Value, i: ir.Value) -> ir.Value:
        return tensor.extract(ranks, [b, c, i])

    kept = e.filled(DType.bool, group, True)
    loop = scf.ForOp(x.const(0), x.const(count), x.const(1), [kept])
    with ir.InsertionPoint(loop.body):
        previous = loop.inner_iter_args[0]
        iou_threshold = optional_scalar(3, 0.0, F64)
        before_count, suppressed = _kept_before(lowering, previous, ranks, group, overlaps, iou_threshold)
        per_class = optional_scalar(2, 0, DType.int64)
        score_threshold = optional_scalar(4, float("-inf"), F64)

        def decide(coords: Values, scalars: Values) -> Values:
            before, hit, _ = scalars
            b, c, i = coords
            passes = s.cmp("gt", score(b, c, i), score_threshold, F64)
            room = arith.cmpi(arith.CmpIPredicate.slt, before, per_class)
            return [arith.andi(arith.andi(passes, room), arith.xori(hit, s.const(True, DType.bool)))]

        identity = e.identity_map(3)
        settled = indexed(
            lowering, DType.bool, group, decide, inputs=[(before_count, identity), (suppressed, identity)]
        )
        scf.YieldOp([settled])
    kept = loop.results[0]

    # each kept box's row: the kept boxes of earlier (batch, class) groups, then those ranked before it
    totals = _group_totals(lowering, kept, group)

    def position_body(coords: Values, scalars: Values) -> Values:
        b, c, i, j = coords
        acc = scalars[0]
        same_group = arith.andi(
            tensor.extract(kept, [b, c, j]),
            x.lt(x.from_element(rank_of(b, c, j), DType.int64), x.from_element(rank_of(b, c, i), DType.int64)),
        )
        return [arith.select(same_group, arith.addi(acc, s.const(1, DType.int64)), acc)]

    def group_offset(coords: Values, scalars: Values) -> Values:
        b, c, g = coords
        acc = scalars[0]
        earlier = x.lt(g, x.add(x.mul(b, classes), c))
        total = tensor.extract(totals, [g])
        return [arith.select(earlier, arith.addi(acc, total), acc)]

    offsets = indexed(
        lowering,
        DType.int64,
        [batches, classes],
        group_offset,
        init=e.filled(DType.int64, [batches, classes], 0),
        reduced=[batches * classes],
    )
    within = indexed(lowering, DType.int64, group, position_body, init=e.filled(DType.int64, group, 0), reduced=[count])
    rows = ins.shape.lens[0]

    def gather(coords: Values, scalars: Values) -> Values:
        p, k, flat = coords
        acc = scalars[0]
        b, c, i = x.delinearize(flat, group)
        row = x.add(
            x.from_element(tensor.extract(offsets, [b, c]), DType.int64),
            x.from_element(tensor.extract(within, [b, c, i]), DType.int64),
        )
        hit = arith.andi(tensor.extract(kept, [b, c, i]), x.eq(row, p))
        component = x.select(x.eq(k, 0), b, x.select(x.eq(k, 1), c, i))
        return [arith.select(hit, x.to_element(component, DType.int64), acc)]

    init = e.filled(DType.int64, [rows, 3], 0)
    return indexed(lowering, DType.int64, [rows, 3], gather, init=init, reduced=[batches * classes * count])


def _group_totals(lowering: Lowering, kept: ir.Value, group: list[int]) -> ir.Value:
    """The number of kept boxes of each (batch, class), flattened to {batches · classes}."""
    e, s = lowering.emitter, lowering.scalars
    batches, classes, count = group
    init = e.filled(DType.int64, [batches, classes], 0)

    def body(xs: Values) -> Values:
        flag, acc = xs
        return [arith.select(flag, arith.addi(acc, s.const(1, DType.int64)), acc)]

    totals = e.generic(
        [(kept, e.identity_map(3))], [(init, e.projection(3, [0, 1]))], [PARALLEL, PARALLEL, REDUCTION], body
    )[0]
    return e.reshape(totals, [batches, classes], [batches * classes])


def _kept_before(
    lowering: Lowering,
    previous: ir.Value,
    ranks: ir.Value,
    group: list[int],
    overlaps: Callable[[ir.Value, ir.Value, ir.Value, ir.Value], ir.Value],
    threshold: ir.Value,
) -> tuple[ir.Value, ir.Value]:
    """For each box: how many boxes ranked before it are kept, and whether a kept one overlaps it."""
    e, s, x = lowering.emitter, lowering.scalars, IndexMath(lowering)
    count = group[2]
    domain = 4
    extent = e.empty(DType.bool, [count])
    outputs = [
        (e.filled(DType.int64, group, 0), e.projection(domain, [0, 1, 2])),
        (e.filled(DType.bool, group, False), e.projection(domain, [0, 1, 2])),
    ]

    def body(scalars: Values) -> Values:
        _, before, hit = scalars
        b, c, i, j = (linalg.IndexOp(d).result for d in range(domain))
        rank_i = x.from_element(tensor.extract(ranks, [b, c, i]), DType.int64)
        rank_j = x.from_element(tensor.extract(ranks, [b, c, j]), DType.int64)
        earlier = arith.andi(tensor.extract(previous, [b, c, j]), x.lt(rank_j, rank_i))
        counted = arith.select(earlier, arith.addi(before, s.const(1, DType.int64)), before)
        return [counted, arith.ori(hit, arith.andi(earlier, overlaps(b, i, j, threshold)))]

    results = e.generic([(extent, e.projection(domain, [3]))], outputs, [PARALLEL, PARALLEL, PARALLEL, REDUCTION], body)
    return results[0], results[1]
