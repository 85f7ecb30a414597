"""The targets' in-process caches are keyed by fingerprints (`mgxir.ir.fingerprint`), never by
printed text: every instruction of a module counts."""

from __future__ import annotations

from mgxir.ir.module import Module
from mgxir.targets.gpu.dnn import epilogue_key
from mgxir.text.parser import parse_program
from mgxir.verifier import verify

EPILOGUE = """
module: "main"
x = @param:x -> float_type, {1, 4, 8, 8}, {256, 64, 8, 1}
b = @param:b -> float_type, {1, 4, 8, 8}, {256, 64, 8, 1}
@2 = pointwise(x,b), [main:pointwise0] -> float_type, {1, 4, 8, 8}, {256, 64, 8, 1}
@3 = @return(@2)

module: "main:pointwise0"
main:pointwise0:@0 = @literal{0.5} -> float_type, {1}, {0}
main:pointwise0:x0 = @param:x0 -> float_type, {1}, {0}
main:pointwise0:x1 = @param:x1 -> float_type, {1}, {0}
main:pointwise0:@3 = add(main:pointwise0:x0,main:pointwise0:x1) -> float_type, {1}, {0}
main:pointwise0:@4 = mul(main:pointwise0:@3,main:pointwise0:@0) -> float_type, {1}, {0}
main:pointwise0:@5 = relu(main:pointwise0:@4) -> float_type, {1}, {0}
main:pointwise0:@6 = @return(main:pointwise0:@5)
"""


def _epilogue(text: str) -> Module:
    program = parse_program(text)
    verify(program)
    body = program.get_module("main:pointwise0")
    assert body is not None
    return body


def test_the_convolution_plan_key_counts_the_epilogues_first_instruction() -> None:
    """The cuDNN plan cache's key dropped a module's first line (taken for a `module:` header that
    `print_module` does not write), so epilogues differing only there shared one plan."""
    other_first = EPILOGUE.replace("@literal{0.5}", "@literal{2}")
    assert epilogue_key(_epilogue(other_first)) != epilogue_key(_epilogue(EPILOGUE))


def test_the_convolution_plan_key_is_the_same_for_the_same_epilogue() -> None:
    renamed = EPILOGUE.replace("main:pointwise0", "main:pointwise7")
    body = parse_program(renamed)
    verify(body)
    twin = body.get_module("main:pointwise7")
    assert twin is not None
    assert epilogue_key(twin) == epilogue_key(_epilogue(EPILOGUE))
    assert epilogue_key(None) == ""
