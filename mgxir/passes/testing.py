"""Passes that exist only for tests (filed by mgxir.passes.registry where MGXIR_TEST_PASSES is set):
they fail on purpose so the pass manager's error path, reproducers and `--run-reproducer` can be
checked."""

from __future__ import annotations

import dataclasses

from mgxir.diagnostics import MgxError
from mgxir.ir.module import Module
from mgxir.ir.registry import make_op
from mgxir.passes.base import ModulePass, PassContext


@dataclasses.dataclass
class TestFail(ModulePass):
    name = "test_fail"
    description = (
        "(tests only) Raise an error, or with invalid=true leave IR that fails verification; "
        "with on=OP only in a module holding an OP instruction."
    )
    invalid: bool = False
    on: str = ""

    def apply_module(self, module: Module, context: PassContext) -> None:
        if self.on and not any(ins.name == self.on for ins in module):
            return
        if not self.invalid:
            raise MgxError(f"test_fail: failing on purpose in module '{module.name}'")
        first = module.first
        if first is not None and first.users:
            # a use of an instruction before its definition
            module.insert(first, make_op("neg"), [next(iter(first.users))])


@dataclasses.dataclass
class TestMiscompile(ModulePass):
    name = "test_miscompile"
    description = "(tests only) Compute something else on purpose: each `add` of two `mul`s becomes a `sub`."

    def apply_module(self, module: Module, context: PassContext) -> None:
        for ins in module:
            if ins.name == "add" and all(a.name == "mul" for a in ins.args):
                module.replace(ins, make_op("sub"))
