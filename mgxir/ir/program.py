"""Programs: named modules, `main` first."""

from __future__ import annotations

from collections.abc import Iterator

from mgxir.ir.module import Module


class Program:
    def __init__(self) -> None:
        self.modules: dict[str, Module] = {}

    @property
    def main(self) -> Module:
        m = self.modules.get("main")
        if m is None:
            m = self.create_module("main")
        return m

    def create_module(self, name: str) -> Module:
        if name in self.modules:
            raise ValueError(f"module '{name}' already exists")
        m = Module(name, self)
        self.modules[name] = m
        return m

    def get_module(self, name: str) -> Module | None:
        return self.modules.get(name)

    def remove_module(self, name: str) -> None:
        """Drops a module; its instructions stop being users of what they read (values of an
        enclosing module included), as MIGraphX's `program::remove_module` unlinks them."""
        module = self.modules.pop(name)
        for ins in module:
            ins._unlink_args()

    def clone(self) -> Program:
        """An independent copy, made without printing (see `mgxir.ir.clone`)."""
        from mgxir.ir.clone import clone_program

        return clone_program(self)

    def __iter__(self) -> Iterator[Module]:
        return iter(self.modules.values())

    def __len__(self) -> int:
        return len(self.modules)

    def print_order(self) -> list[Module]:
        """The order MIGraphX prints modules in: main, then for each instruction its module inputs
        followed by their submodules (recursively; a module used twice is listed twice, as
        MIGraphX lists it), then the modules nothing reaches, in creation order."""
        main = self.modules.get("main")
        order: list[Module] = [] if main is None else [main, *_sub_modules(main)]
        listed = {id(m) for m in order}
        order.extend(m for m in self.modules.values() if id(m) not in listed)
        return order

    def reachable_modules(self) -> list[Module]:
        main = self.modules.get("main")
        return [] if main is None else main.reachable_modules()

    def __repr__(self) -> str:
        return f"<Program {list(self.modules)}>"


def _sub_modules(module: Module, active: frozenset[int] = frozenset()) -> list[Module]:
    active = active | {id(module)}
    out: list[Module] = []
    for ins in module:
        if ins.module_args:
            out.extend(ins.module_args)
            for sub in ins.module_args:
                if id(sub) not in active:  # a cycle is the verifier's to report
                    out.extend(_sub_modules(sub, active))
    return out
