"""fuse_reduce's reduce_reshape (a reshape between a pointwise and a reduction moves below the
fused_reduce, whose body is rebuilt on the reshaped dimensions), FuseReduce on one module,
module_fusion's helpers (fuse_module, last_output) called directly, and fuse_pointwise's
rewrite_broadcasts on a two-input multibroadcast."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_pass_differential import check_pipeline

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.shape import Shape
from mgxir.passes.base import PassContext
from mgxir.passes.fuse_reduce import FuseReduce
from mgxir.passes.module_fusion import fuse_instructions, fuse_module, last_output
from mgxir.passes.registry import parse_pipeline
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_module

PIPELINE = "fuse_pointwise,fuse_reduce,dce"
DATA = Path(__file__).parents[1] / "data" / "mutation_fuse"

SOFTMAX_SUM = """module: "main"
x = @param:x -> float_type, {2, 3, 4}, {12, 4, 1}
@1 = exp(x) -> float_type, {2, 3, 4}, {12, 4, 1}
@2 = reshape[dims={2, 12}](@1) -> float_type, {2, 12}, {12, 1}
@3 = reduce_sum[axes={1}](@2) -> float_type, {2, 1}, {1, 1}
@4 = multibroadcast[out_lens={2, 12}](@3) -> float_type, {2, 12}, {1, 0}
@5 = div(@2,@4) -> float_type, {2, 12}, {12, 1}
@6 = @return(@5)
"""

SCALED_MAX = """module: "main"
s = @param:s -> float_type, {2, 1}, {1, 1}
x = @param:x -> float_type, {2, 3, 4}, {12, 4, 1}
@1 = exp(x) -> float_type, {2, 3, 4}, {12, 4, 1}
@2 = reshape[dims={2, 12}](@1) -> float_type, {2, 12}, {12, 1}
@3 = multibroadcast[out_lens={2, 12}](s) -> float_type, {2, 12}, {1, 0}
@4 = mul(@3,@2) -> float_type, {2, 12}, {12, 1}
@5 = reduce_max[axes={1}](@4) -> float_type, {2, 1}, {1, 1}
@6 = multibroadcast[out_lens={2, 12}](@5) -> float_type, {2, 12}, {1, 0}
@7 = sub(@4,@6) -> float_type, {2, 12}, {12, 1}
@8 = @return(@7)
"""

ROW_ARGMAX = """module: "main"
x = @param:x -> float_type, {2, 3, 4}, {12, 4, 1}
@1 = exp(x) -> float_type, {2, 3, 4}, {12, 4, 1}
@2 = reshape[dims={6, 4}](@1) -> float_type, {6, 4}, {4, 1}
@3 = argmax[axis=1](@2) -> int64_type, {6, 1}, {1, 1}
@4 = @return(@3)
"""
POINTWISE_ADD = """module: "main"
x = @param:x -> float_type, {2, 3, 4}, {12, 4, 1}
y = @param:y -> float_type, {6, 4}, {4, 1}
@2 = exp(x) -> float_type, {2, 3, 4}, {12, 4, 1}
@3 = reshape[dims={6, 4}](@2) -> float_type, {6, 4}, {4, 1}
@4 = add(@3,y) -> float_type, {6, 4}, {4, 1}
@5 = @return(@4)
"""
CASES = {"pointwise_add": POINTWISE_ADD, "softmax_sum": SOFTMAX_SUM, "scaled_max": SCALED_MAX, "row_argmax": ROW_ARGMAX}


def fused(text: str) -> str:
    program = parse_program(text)
    context = PassContext()
    for p in parse_pipeline(PIPELINE):
        p.apply(program, context)
    assert context.statistics["find_op_reshape_op applied"] >= 1
    return "\n".join(print_module(program.modules[name]) for name in program.modules)


@pytest.mark.parametrize("name", sorted(CASES))
def test_reduce_reshape_rebuilds_the_body_on_the_reshaped_dims(name: str) -> None:
    text = CASES[name]
    assert fused(text) == (DATA / f"{name}.txt").read_text()
    check_pipeline(parse_program(text), PIPELINE, 0)


def test_reduce_reshape_moves_the_argmax_axis() -> None:
    """argmax's `axis` follows the reshape: axis 1 of {6, 4} is axis 2 of {2, 3, 4}."""
    program = parse_program(ROW_ARGMAX)
    for p in parse_pipeline(PIPELINE):
        p.apply(program, PassContext())
    (body,) = (m for m in program.modules.values() if m.name.endswith("_reshape"))
    (argmax,) = (ins for ins in body if ins.op.defn.name == "argmax")
    assert argmax.op["axis"] == 2


MERGED_ARGMAX = """module: "main"
x = @param:x -> float_type, {2, 3, 4}, {12, 4, 1}
@1 = exp(x) -> float_type, {2, 3, 4}, {12, 4, 1}
@2 = reshape[dims={2, 12}](@1) -> float_type, {2, 12}, {12, 1}
@3 = argmax[axis=1](@2) -> int64_type, {2, 1}, {1, 1}
@4 = @return(@3)
"""


def test_reduce_reshape_leaves_an_argmax_whose_axis_the_reshape_merged() -> None:
    """A deliberate difference from MIGraphX, whose reduce_reshape would rebuild this argmax over
    axis 1 of {2, 3, 4} (the first of the two axes that {2, 12}'s axis 1 came from), a {2, 1, 4}
    result instead of {2, 1}: the reshape stays outside the fused_reduce."""
    program = parse_program(MERGED_ARGMAX)
    check_pipeline(parse_program(MERGED_ARGMAX), PIPELINE, 0)
    for p in parse_pipeline(PIPELINE):
        p.apply(program, PassContext())
    main = print_module(program.modules["main"])
    assert "reshape[dims={2, 12}]" in main
    assert "fused_reduce[axes={1}](@2), [main:argmax0] -> int64_type, {2, 1}, {1, 1}" in main
    assert not any(name.endswith("_reshape") for name in program.modules)


def test_fuse_reduce_on_one_module_wraps_and_reshapes() -> None:
    """FuseReduce.apply_module on main alone: the reduction is wrapped, the pointwise fused in and
    the reshape moved below the fused_reduce."""
    program = parse_program(SOFTMAX_SUM)
    (fuse_pointwise,) = parse_pipeline("fuse_pointwise")
    fuse_pointwise.apply(program, PassContext())
    FuseReduce().apply_module(program.main, PassContext())
    names = [ins.op.defn.name for ins in program.main if not ins.is_param]
    assert names == ["fused_reduce", "reshape", "@return"]


TWO_OUTPUTS = """module: "main"
a = @param:a -> float_type, {2, 3}, {1, 2}
b = @param:b -> float_type, {2, 3}, {3, 1}
@2 = pointwise(a,b), [m] -> float_type, {2, 3}, {3, 1}
@3 = @return(@2)

module: "m"
m:x1 = @param:x1 -> float_type, {1}, {0}
m:x0 = @param:x0 -> float_type, {1}, {0}
m:@2 = add(m:x0,m:x1) -> float_type, {1}, {0}
m:@3 = neg(m:x0) -> float_type, {1}, {0}
m:@4 = @return(m:@2,m:@3)
"""


def test_last_output_is_the_first_returned_value() -> None:
    program = parse_program(TWO_OUTPUTS)
    body = program.modules["m"]
    assert last_output(body).op.defn.name == "add"
    assert last_output(program.main).op.defn.name == "pointwise"


def test_fuse_module_parameters_take_the_transformed_shapes() -> None:
    program = parse_program(TWO_OUTPUTS)
    a, b = (ins for ins in program.main if ins.is_param)
    target = program.create_module("t")
    fuse_module(target, program.modules["m"], [a, b], shape_transform=lambda shape: Shape(shape.dtype, [6]))
    assert [p.shape.lens for p in target.parameters()] == [(6,), (6,)]
    plain = program.create_module("u")
    fuse_module(plain, program.modules["m"], [a, b])
    assert [p.shape.strides for p in plain.parameters()] == [(3, 1), (3, 1)]


def test_fuse_module_wants_an_input_per_parameter() -> None:
    program = parse_program(TWO_OUTPUTS)
    a = next(ins for ins in program.main if ins.is_param)
    with pytest.raises(ValueError, match="zip"):
        fuse_module(program.create_module("t"), program.modules["m"], [a])


TWO_ARG_BROADCAST = """module: "main"
x = @param:x -> float_type, {2, 1}, {1, 1}
r = @param:r -> float_type, {2, 3}, {3, 1}
y = @param:y -> float_type, {2, 3}, {3, 1}
@3 = exp(x) -> float_type, {2, 1}, {1, 1}
@4 = multibroadcast(@3,r) -> float_type, {2, 3}, {1, 0}
@5 = add(@4,y) -> float_type, {2, 3}, {3, 1}
@6 = @return(@5)
"""


def test_rewrite_broadcasts_keeps_the_shape_argument_of_a_two_input_multibroadcast() -> None:
    """The broadcast moved above exp keeps its second input (the shape it broadcasts to), and
    exp and add merge into one pointwise."""
    pipeline = "fuse_pointwise{enable_rewrite_broadcasts=true},dce"
    program = parse_program(TWO_ARG_BROADCAST)
    for p in parse_pipeline(pipeline):
        p.apply(program, PassContext())
    (broadcast,) = (ins for ins in program.main if ins.op.defn.name == "multibroadcast")
    assert [a.param_name for a in broadcast.args] == ["x", "r"]
    assert [ins.op.defn.name for ins in program.main if not ins.is_param] == ["multibroadcast", "pointwise", "@return"]
    check_pipeline(parse_program(TWO_ARG_BROADCAST), pipeline, 0)


SHARED_PRODUCER_MODULE = """module: "main"
x = @param:x -> float_type, {2, 3}, {3, 1}
y = @param:y -> float_type, {2, 3}, {3, 1}
@2 = pointwise(x), [m0] -> float_type, {2, 3}, {3, 1}
@3 = pointwise(@2), [m1] -> float_type, {2, 3}, {3, 1}
@4 = pointwise(y), [m0] -> float_type, {2, 3}, {3, 1}
@5 = @return(@3,@4)

module: "m0"
m0:x0 = @param:x0 -> float_type, {1}, {0}
m0:@1 = neg(m0:x0) -> float_type, {1}, {0}
m0:@2 = @return(m0:@1)

module: "m1"
m1:x0 = @param:x0 -> float_type, {1}, {0}
m1:@1 = exp(m1:x0) -> float_type, {1}, {0}
m1:@2 = @return(m1:@1)
"""


def test_a_copied_shared_module_belongs_to_the_program() -> None:
    """The producer's module, used twice, is copied before it grows; the copy is the program's."""
    program = parse_program(SHARED_PRODUCER_MODULE)
    for module in program.modules.values():
        module.bypass = module.name != "main"
    (fuse_pointwise,) = parse_pipeline("fuse_pointwise")
    fuse_pointwise.apply(program, PassContext())
    assert "m0:m1-deleted" in program.modules
    assert all(module.program is program for module in program.modules.values())


REDUCE_USED_THRICE = """module: "main"
x = @param:x -> float_type, {2, 3}, {3, 1}
y = @param:y -> float_type, {2, 3}, {3, 1}
@2 = reduce_sum[axes={1}](x) -> float_type, {2, 1}, {1, 1}
@3 = multibroadcast[out_lens={2, 3}](@2) -> float_type, {2, 3}, {1, 0}
@4 = add(@3,y) -> float_type, {2, 3}, {3, 1}
@5 = neg(@2) -> float_type, {2, 1}, {1, 1}
@6 = exp(@2) -> float_type, {2, 1}, {1, 1}
@7 = @return(@4,@5,@6)
"""

REDUCE_BROADCAST_TWICE = """module: "main"
x = @param:x -> float_type, {2, 3}, {3, 1}
y = @param:y -> float_type, {2, 3}, {3, 1}
z = @param:z -> float_type, {2, 5}, {5, 1}
@3 = reduce_sum[axes={1}](x) -> float_type, {2, 1}, {1, 1}
@4 = multibroadcast[out_lens={2, 3}](@3) -> float_type, {2, 3}, {1, 0}
@5 = add(@4,y) -> float_type, {2, 3}, {3, 1}
@6 = multibroadcast[out_lens={2, 5}](@3) -> float_type, {2, 5}, {1, 0}
@7 = mul(@6,z) -> float_type, {2, 5}, {5, 1}
@8 = @return(@5,@7)
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (REDUCE_USED_THRICE, ["fused_reduce", "multibroadcast", "pointwise", "pointwise", "pointwise", "@return"]),
        (
            REDUCE_BROADCAST_TWICE,
            ["fused_reduce", "multibroadcast", "pointwise", "multibroadcast", "pointwise", "@return"],
        ),
    ],
    ids=["used_thrice", "broadcast_twice"],
)
def test_a_reduction_used_elsewhere_is_not_fused_into_a_broadcast_consumer(text: str, expected: list[str]) -> None:
    """A reduction reaches its pointwise consumer through a broadcast but is used by more than
    that consumer: it stays its own fused_reduce."""
    program = parse_program(text)
    for p in parse_pipeline(PIPELINE):
        p.apply(program, PassContext())
    assert [ins.op.defn.name for ins in program.main if not ins.is_param] == expected
    check_pipeline(parse_program(text), PIPELINE, 0)


FUSE_SOURCE = """module: "main"
a = @param:a -> float_type, {2, 3}, {3, 1}
@1 = @literal{2} -> float_type, {1}, {0}
@2 = multibroadcast[out_lens={2, 3}](@1) -> float_type, {2, 3}, {0, 0}
@3 = add(a,@2) -> float_type, {2, 3}, {3, 1}
@4 = neg(@3) -> float_type, {2, 3}, {3, 1}
@5 = @return(@4)
"""


def test_fuse_instructions_copies_members_and_makes_the_rest_parameters() -> None:
    """module::fuse: members (a literal too) are copied, outside values become parameters named
    after those already there (a literal at the front does not end the count), of the shape
    `shape_transform` gives, and `insert` makes every copied op."""
    program = parse_program(FUSE_SOURCE)
    literal, broadcast, _, neg = (ins for ins in program.main if not ins.is_param and not ins.is_return)
    target = program.create_module("t")
    target.add_parameter("x0", Shape.make(DType.float, [1]))
    target.add_literal(literal.literal)
    inserted: list[str] = []

    def insert(module: Module, op: Operation, args: list[Instruction], module_args: list[Module]) -> Instruction:
        inserted.append(op.defn.name)
        return module.insert(None, op, args, module_args)

    outputs = fuse_instructions(
        target, [literal, broadcast, neg], insert=insert, shape_transform=lambda s: Shape.make(s.dtype, [6])
    )
    assert inserted == ["multibroadcast", "neg"]
    assert sorted((p.param_name, p.shape.lens) for p in target.parameters()) == [("x0", (1,)), ("x1", (6,))]
    assert outputs == [target.last]
    names = [ins.op.defn.name for ins in target]
    assert names == ["@literal", "@param", "@literal", "@param", "multibroadcast", "neg"]  # copies go to the front
    assert fuse_instructions(program.create_module("u"), []) == []


TAKEN_NAME = """module: "main"
x = @param:x -> float_type, {2, 3}, {3, 1}
@1 = fused_reduce[axes={1}](x), [main:reduce_sum0] -> float_type, {2, 1}, {1, 1}
@2 = reduce_sum[axes={1}](x) -> float_type, {2, 1}, {1, 1}
@3 = @return(@1,@2)

module: "main:reduce_sum0"
x0 = @param:x0 -> float_type, {2, 3}, {3, 1}
@1 = exp(x0) -> float_type, {2, 3}, {3, 1}
@2 = reduce_sum[axes={1}](@1) -> float_type, {2, 1}, {1, 1}
@3 = @return(@2)
"""


@pytest.mark.parametrize(
    ("extra", "name"),
    [("", "main:reduce_sum0:0"), ('\nmodule: "main:reduce_sum0:0"\n@0 = @return()\n', "main:reduce_sum0:1")],
)
def test_fuse_reduce_names_a_module_past_the_names_taken(extra: str, name: str) -> None:
    """A reduction whose module name (main:reduce_sum0) is taken gets the name with the first free
    suffix :0, :1, ..."""
    program = parse_program(TAKEN_NAME + extra)
    FuseReduce().apply(program, PassContext())
    wrapped = [ins for ins in program.main if ins.op.defn.name == "fused_reduce"]
    assert [ins.module_args[0].name for ins in wrapped] == ["main:reduce_sum0", name]
