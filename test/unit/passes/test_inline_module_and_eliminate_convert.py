"""inline_module and eliminate_convert: what they count, and that a branch or convert they must
leave does not stop them at those after it."""

from __future__ import annotations

from mgxir.ir.dtype import DType
from mgxir.ir.program import Program
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.verifier import verify


def rewritten(source: str, pipeline: str) -> tuple[Program, PassContext]:
    program = parse_program(source)
    context = PassContext()
    for p in parse_pipeline(pipeline):
        p.apply(program, context)
    verify(program)
    return program, context


def main_ops(program: Program) -> list[str]:
    return [i.op.defn.name for i in program.main if not (i.is_param or i.is_literal or i.is_return)]


IFS = """module: "main"
@0 = @literal{1} -> bool_type, {1}, {0}
c = @param:c -> bool_type, {1}, {0}
x = @param:x -> float_type, {2}, {1}
@3 = if(c), [then, else] -> [float_type, {2}, {1}]
@4 = get_tuple_elem[index=0](@3) -> float_type, {2}, {1}
@5 = if(@0), [then, else] -> [float_type, {2}, {1}]
@6 = identity(@5) -> [float_type, {2}, {1}]
@7 = if(@0), [then, else] -> [float_type, {2}, {1}]
@8 = get_tuple_elem[index=0](@7) -> float_type, {2}, {1}
@9 = @return(@4,@6,@8)

module: "then"
then:@0 = neg(x) -> float_type, {2}, {1}
then:@1 = @return(then:@0)

module: "else"
else:@0 = exp(x) -> float_type, {2}, {1}
else:@1 = @return(else:@0)
"""


def test_constant_if_after_ones_left_is_inlined() -> None:
    """An `if` on a parameter, and one whose result is not only read by get_tuple_elem, stay; the
    third, on a constant, becomes its then-branch."""
    program, context = rewritten(IFS, "inline_module,dce")
    assert context.statistics["if inlined"] == 1, print_program(program)
    assert program.main.return_instruction.args[2].op.defn.name == "neg"
    assert main_ops(program).count("if") == 2


CONVERTS = """module: "main"
x = @param:x -> float_type, {2}, {1}
@1 = convert[target_type=half_type](x) -> half_type, {2}, {1}
@2 = convert[target_type=float_type](@1) -> float_type, {2}, {1}
@3 = convert[target_type=double_type](@1) -> double_type, {2}, {1}
@4 = convert[target_type=float_type](x) -> float_type, {2}, {1}
@5 = @return(@2,@3,@4)
"""


def test_eliminate_convert_counts() -> None:
    program, context = rewritten(CONVERTS, "eliminate_convert")
    assert context.statistics["nested converts folded"] == 2, print_program(program)
    assert context.statistics["converts removed"] == 1


def test_only_if_is_inlined_not_another_op_with_two_modules() -> None:
    """A select_module over the constant, with the same two modules and read by get_tuple_elem, stays."""
    program = parse_program(IFS)
    main = program.main
    select_shapes = Shape.tuple_of([Shape.make(DType.float, (2,))])
    flag = next(iter(main))  # the constant condition
    branches = [program.modules["then"], program.modules["else"]]
    select = main.insert(
        main.last,
        make_op("select_module", output_dyn_shapes=select_shapes),
        [flag],
        branches,
    )
    element = main.insert(main.last, make_op("get_tuple_elem", index=0), [select])
    main.last.set_args([*main.last.args, element])
    context = PassContext()
    parse_pipeline("inline_module")[0].apply(program, context)
    assert context.statistics["if inlined"] == 1
    assert select.parent is main and element.args == [select]
