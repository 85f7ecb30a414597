"""random_uniform: the reference interpreter's draw (numpy's Generator over MT19937 seeded with the
run-time seed), reproduced bit for bit in integer arithmetic.

numpy seeds MT19937 through SeedSequence: the seed's 32-bit words are hashed into a pool of four
words, the pool into 624 state words (the first set to 0x80000000), and the first output is the last
state word tempered, before any twist. Every later block of 624 outputs is one twist of the state,
tempered. A float is (w0 >> 5, w1 >> 6) of two consecutive outputs as a 53-bit fraction (in f64,
then rounded to the type, as numpy's `astype`); the integers of `integers(0, max, endpoint=True)`
take one output (32-bit), two (64-bit, high word first) or a byte/half-word of one (8/16-bit, the
low part first), halved for signed types (Lemire's bound on [0, 2^(bits-1)) never rejects).

The twist's 624 updates depend on one another only across 227 positions, so it is four parallel
`linalg.generic`s; the twists are an `scf.for` carrying the state and writing each tempered block
into the stream, from which a `linalg.generic` over the output reads its words."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, cf, linalg, scf, tensor

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.mlir.emitter import PARALLEL
from mgxir.translate.mlir.families.indexed import IndexMath, SizeMath
from mgxir.translate.mlir.registry import lowers
from mgxir.translate.mlir.types import UNSIGNED

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]
M32 = 0xFFFFFFFF
N = 624  # MT19937's state words
SHIFT = 397
# SeedSequence's hashing constants (numpy/random/bit_generator.pyx)
INIT_A, MULT_A, INIT_B, MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
MIX_MULT_L, MIX_MULT_R, XSHIFT = 0xCA01F9DD, 0x4973F715, 16
POOL = 4


def _hash_constants(start: int, mult: int, count: int) -> list[tuple[int, int]]:
    """(xor, multiply) constants of `count` consecutive hashes: the hash constant before and after
    each step (it depends on nothing but the step)."""
    pairs, h = [], start
    for _ in range(count):
        after = (h * mult) & M32
        pairs.append((h, after))
        h = after
    return pairs


# pool hashing: one hash per pool word, then one per (source, destination) pair of distinct words
POOL_HASHES = _hash_constants(INIT_A, MULT_A, POOL + POOL * (POOL - 1))
STATE_HASHES = np.array(_hash_constants(INIT_B, MULT_B, N), dtype=np.uint64).astype(np.uint32)


class Words:
    """uint32 arithmetic (signless i32) at the current insertion point."""

    def __init__(self, lowering: Lowering) -> None:
        self.s = lowering.scalars

    def const(self, value: int) -> ir.Value:
        return self.s.const(value & M32, DType.uint32)

    def xor(self, a: ir.Value, b: ir.Value | int) -> ir.Value:
        return arith.xori(a, self._value(b))

    def and_(self, a: ir.Value, b: ir.Value | int) -> ir.Value:
        return arith.andi(a, self._value(b))

    def shr(self, a: ir.Value, n: int) -> ir.Value:
        return arith.shrui(a, self.const(n))

    def shl(self, a: ir.Value, n: int) -> ir.Value:
        return arith.shli(a, self.const(n))

    def hash(self, value: ir.Value, constants: tuple[int, int]) -> ir.Value:
        """SeedSequence's hashmix with the step's constants."""
        xor, multiply = constants
        v = arith.muli(self.xor(value, xor), self.const(multiply))
        return self.xor(v, self.shr(v, XSHIFT))

    def mix(self, x: ir.Value, y: ir.Value) -> ir.Value:
        r = arith.subi(arith.muli(self.const(MIX_MULT_L), x), arith.muli(self.const(MIX_MULT_R), y))
        return self.xor(r, self.shr(r, XSHIFT))

    def temper(self, y: ir.Value) -> ir.Value:
        y = self.xor(y, self.shr(y, 11))
        y = self.xor(y, self.and_(self.shl(y, 7), 0x9D2C5680))
        y = self.xor(y, self.and_(self.shl(y, 15), 0xEFC60000))
        return self.xor(y, self.shr(y, 18))

    def _value(self, v: ir.Value | int) -> ir.Value:
        return self.const(v) if isinstance(v, int) else v


@lowers(
    "random_uniform",
    to="numpy's MT19937 stream in i32 arithmetic: SeedSequence hashing of the run-time seed, scf.for of "
    "twists (four linalg.generics each) writing the tempered words, a linalg.generic reading each "
    "output's words (floats via f64, as numpy)",
    dynamic=True,
)
def _random_uniform(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    t = ins.shape.dtype
    e, n = lowering.emitter, SizeMath(lowering)
    dims = e.dims(args[1])
    count = 1
    for d in dims:
        count = n.mul(count, d)
    bits = 8 * t.itemsize
    if t.is_float or t is DType.bool:
        words = n.mul(count, 2)
    elif bits == 64:
        words = n.mul(count, 2)
    else:
        words = n.div(count, 32 // bits, ceil=True)
    twists = n.div(n.max(n.sub(words, 1), 0), N, ceil=True)
    state = _seeded_state(lowering, ins, args[0])
    stream = _stream(lowering, state, twists)
    flat = _draws(lowering, t, stream, count)
    if not ins.shape.is_dynamic:
        assert isinstance(count, int)
        return e.reshape(flat, [count], ins.shape.lens)
    shape = tensor.from_elements(ir.RankedTensorType.get([len(dims)], lowering.types.index), [n.value(d) for d in dims])
    return tensor.reshape(lowering.types.of_shape(ins.shape), flat, shape)


def _seed_words(lowering: Lowering, ins: Instruction, seed: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The low and high 32-bit words of int(seed), which numpy takes as SeedSequence's entropy (a
    missing high word hashes as 0, so one word and two with a zero high word seed alike). A seed
    outside [0, 2^64) (NaN, negative) fails the run: numpy refuses it."""
    e, s = lowering.emitter, lowering.scalars
    shape = ins.args[0].shape
    t = shape.dtype
    first = tensor.extract(e.reshape(seed, shape.lens, [shape.elements]) if shape.lens else seed, [e.index(0)])
    u64 = DType.uint64
    if t.is_float:
        wide = DType.double if t is DType.double else DType.float
        x = s.to_float(first, t, wide)
        fits = arith.andi(s.cmp("gt", x, s.const(-1.0, wide), wide), s.cmp("lt", x, s.const(2.0**64, wide), wide))
        cf.AssertOp(fits, "random_uniform: the seed must be in [0, 2^64)")
        x = s.select(s.cmp("lt", x, s.const(1.0, wide), wide), s.const(0.0, wide), x)  # int() truncates
        value = arith.fptoui(lowering.types.element(u64), x)
    elif t in UNSIGNED or t is DType.bool:
        value = s.widen(first, t, u64)
    else:
        cf.AssertOp(s.cmp("ge", first, s.const(0, t), t), "random_uniform: the seed must be in [0, 2^64)")
        value = s.widen(first, t, DType.int64)
    i32 = lowering.types.element(DType.uint32)
    low = arith.trunci(i32, value)
    high = arith.trunci(i32, arith.shrui(value, s.const(32, u64)))
    return low, high


def _seeded_state(lowering: Lowering, ins: Instruction, seed: ir.Value) -> ir.Value:
    """The 624 state words numpy's MT19937(seed) starts from (SeedSequence.generate_state)."""
    w, e = Words(lowering), lowering.emitter
    low, high = _seed_words(lowering, ins, seed)
    hashes = iter(POOL_HASHES)
    pool = [w.hash(word, next(hashes)) for word in (low, high, w.const(0), w.const(0))]
    for source in range(POOL):
        for destination in range(POOL):
            if source != destination:
                pool[destination] = w.mix(pool[destination], w.hash(pool[source], next(hashes)))
    xors = e.constant(STATE_HASHES[:, 0].view(np.int32), DType.uint32)
    multipliers = e.constant(STATE_HASHES[:, 1].view(np.int32), DType.uint32)
    x = IndexMath(lowering)

    def body(scalars: Values) -> Values:
        xor, multiply, _ = scalars
        which = x.rem(linalg.IndexOp(0).result, POOL)
        word = pool[3]
        for k in (2, 1, 0):
            word = arith.select(x.eq(which, k), pool[k], word)
        v = arith.muli(w.xor(word, xor), multiply)
        return [w.xor(v, w.shr(v, XSHIFT))]

    identity = e.identity_map(1)
    state = e.generic(
        [(xors, identity), (multipliers, identity)], [(e.empty(DType.uint32, [N]), identity)], [PARALLEL], body
    )[0]
    return tensor.insert(w.const(0x80000000), state, [e.index(0)])  # numpy: "assuring non-zero"


def _twist(lowering: Lowering, mt: ir.Value) -> ir.Value:
    """MT19937's state update: word i from words i, i + 1 and i + 397 (mod 624), the last 227 of
    those already updated. In four parallel steps over the ranges that read old or new words."""
    w, e = Words(lowering), lowering.emitter
    identity = e.identity_map(1)

    def part(start: int, length: int, source: ir.Value) -> ir.Value:
        return e.extract_slice(source, lowering.types.tensor(DType.uint32, [length]), [start], [length], [1])

    def step(upper: ir.Value, lower: ir.Value, far: ir.Value, length: int) -> ir.Value:
        def body(scalars: Values) -> Values:
            u, lo, f, _ = scalars
            y = arith.ori(w.and_(u, 0x80000000), w.and_(lo, 0x7FFFFFFF))
            odd = arith.cmpi(arith.CmpIPredicate.ne, w.and_(lo, 1), w.const(0))
            twisted = w.xor(w.xor(f, w.shr(y, 1)), arith.select(odd, w.const(0x9908B0DF), w.const(0)))
            return [twisted]

        inputs = [(upper, identity), (lower, identity), (far, identity)]
        return e.generic(inputs, [(e.empty(DType.uint32, [length]), identity)], [PARALLEL], body)[0]

    head = N - SHIFT  # 227
    a = step(part(0, head, mt), part(1, head, mt), part(SHIFT, head, mt), head)
    b = step(part(head, head, mt), part(head + 1, head, mt), a, head)
    rest = N - 1 - 2 * head  # 169
    c = step(part(2 * head, rest, mt), part(2 * head + 1, rest, mt), part(0, rest, b), rest)
    d = step(part(N - 1, 1, mt), part(0, 1, a), part(rest, 1, b), 1)
    return tensor.concat(lowering.types.tensor(DType.uint32, [N]), 0, [a, b, c, d])


def _tempered(lowering: Lowering, words: ir.Value, length: int) -> ir.Value:
    w = Words(lowering)
    return lowering.emitter.elementwise([(words, [length])], DType.uint32, [length], lambda xs: [w.temper(xs[0])])


def _stream(lowering: Lowering, state: ir.Value, twists: int | ir.Value) -> ir.Value:
    """The output words: the last state word tempered, then each twist's 624 words tempered."""
    e, n, w = lowering.emitter, SizeMath(lowering), Words(lowering)
    length = n.add(n.mul(twists, N), 1)
    first = w.temper(tensor.extract(state, [e.index(N - 1)]))
    stream = tensor.insert(first, e.empty(DType.uint32, [length]), [e.index(0)])
    stream_type = stream.type
    loop = scf.ForOp(e.index(0), n.value(twists), e.index(1), [state, stream])
    with ir.InsertionPoint(loop.body):
        mt, words = loop.inner_iter_args
        twisted = _twist(lowering, mt)
        block = _tempered(lowering, twisted, N)
        offset = arith.addi(arith.muli(loop.induction_variable, e.index(N)), e.index(1))
        dynamic = ir.ShapedType.get_dynamic_size()
        written = tensor.insert_slice(block, words, [offset], [], [], [dynamic], [N], [1])
        scf.YieldOp([twisted, written])
    assert loop.results[1].type == stream_type
    return loop.results[1]


def _draws(lowering: Lowering, t: DType, stream: ir.Value, count: int | ir.Value) -> ir.Value:
    """The flat output: element j's value from its words of the stream."""
    e, s, x, w = lowering.emitter, lowering.scalars, IndexMath(lowering), Words(lowering)
    i64, f64 = DType.uint64, DType.double
    bits = 8 * t.itemsize
    signed = t.is_integral and t not in UNSIGNED and t is not DType.bool  # fp4x2: raw bytes, as uint8

    def word(at: ir.Value) -> ir.Value:
        return tensor.extract(stream, [at])

    def widened(v: ir.Value) -> ir.Value:
        return arith.extui(lowering.types.element(i64), v)

    def body(scalars: Values) -> Values:
        j = linalg.IndexOp(0).result
        if t.is_float or t is DType.bool:  # numpy's random(): a 53-bit fraction of two words
            first, second = word(x.mul(j, 2)), word(x.add(x.mul(j, 2), 1))
            k = arith.addi(arith.shli(widened(w.shr(first, 5)), s.const(26, i64)), widened(w.shr(second, 6)))
            fraction = arith.mulf(arith.uitofp(lowering.types.element(f64), k), s.const(2.0**-53, f64))
            if t is DType.bool:
                return [s.cmp("ne", fraction, s.const(0.0, f64), f64)]
            return [s.convert(fraction, f64, t)]
        if bits == 64:  # next_uint64: the first word high
            first, second = word(x.mul(j, 2)), word(x.add(x.mul(j, 2), 1))
            value = arith.ori(arith.shli(widened(first), s.const(32, i64)), widened(second))
        elif bits == 32:
            value = word(j)
        else:  # numpy's buffered draws: the parts of one word, the low part first
            per = 32 // bits
            part = word(x.div(j, per))
            shift = arith.muli(arith.index_cast(lowering.types.element(DType.uint32), x.rem(j, per)), w.const(bits))
            value = arith.trunci(lowering.types.element(t), arith.shrui(part, shift))
        if signed:  # Lemire's bound on [0, 2^(bits-1) - 1]: the top bits of the draw
            value = arith.shrui(value, s.const(1, t))
        return [value]

    identity = e.identity_map(1)
    return e.generic([], [(e.empty(t, [count]), identity)], [PARALLEL], body)[0]
