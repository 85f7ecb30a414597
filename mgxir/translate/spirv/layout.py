"""Kernel layouts: bindings, the push-constant words that describe each buffer's shape, and the
values a host writes into them for one launch.

A kernel iterates over the result's lens. Each buffer is read or written at `offset + sum(coord[d]
* stride[d])` with its own strides (0 along broadcast dimensions), so one kernel serves standard,
broadcast, sliced and transposed layouts. Dimensions that are contiguous in every buffer are
collapsed first; the kernel's rank is the collapsed rank of the shapes it was translated for, and a
launch with fewer dimensions pads with leading dimensions of length 1.

Reduction kernels split the dimensions into outer ones (one workgroup per outer index, a "group")
and inner ones (the reduced axes, walked by the workgroup's invocations)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from mgxir.analysis import kernel_plan
from mgxir.analysis.kernel_plan import collapse
from mgxir.translate.spirv.types import ElementType, Unsupported

# Vulkan guarantees 128 bytes of push constants on every device
PUSH_CONSTANT_BYTES = 128


@dataclass(frozen=True)
class View:
    """A buffer's layout in elements: lens, strides and the offset of element 0."""

    lens: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0


@dataclass(frozen=True)
class Binding:
    index: int
    name: str
    role: Literal["input", "output"]
    etype: ElementType


@dataclass
class KernelLayout:
    """What a host needs to launch a kernel; written to the manifest."""

    name: str
    kind: Literal["pointwise", "reduce"]
    bindings: list[Binding]
    workgroup_size: int
    outer_rank: int  # 0 for pointwise kernels
    inner_rank: int  # the iteration rank of pointwise kernels
    axes: tuple[int, ...] = ()
    shared_bytes: int = 0
    features: list[str] = field(default_factory=list)
    entry_point: str = "main"
    elements_per_invocation: int = 1  # pointwise: elements each invocation takes per loop step

    @property
    def push_names(self) -> list[str]:
        names: list[str] = []
        if self.kind == "pointwise":
            names.append("count")
            names += [f"lens[{d}]" for d in range(self.inner_rank)]
            for b in self.bindings:
                names.append(f"{b.name}.offset")
                names += [f"{b.name}.strides[{d}]" for d in range(self.inner_rank)]
            return names
        names += ["groups", "count"]
        names += [f"outer_lens[{d}]" for d in range(self.outer_rank)]
        names += [f"inner_lens[{d}]" for d in range(self.inner_rank)]
        for b in self.bindings:
            names.append(f"{b.name}.offset")
            names += [f"{b.name}.outer_strides[{d}]" for d in range(self.outer_rank)]
            names += [f"{b.name}.inner_strides[{d}]" for d in range(self.inner_rank)]
        return names

    def check_push_size(self) -> None:
        size = 4 * len(self.push_names)
        if size > PUSH_CONSTANT_BYTES:
            raise Unsupported(
                f"its shapes need {size} bytes of push constants, more than the {PUSH_CONSTANT_BYTES} "
                "every Vulkan device has"
            )

    def push_values(self, views: Sequence[View], lens: Sequence[int]) -> list[int]:
        """The push-constant words for one launch over `lens`, each binding laid out as `views`."""
        if len(views) != len(self.bindings):
            raise ValueError(f"kernel {self.name} has {len(self.bindings)} bindings, got {len(views)} views")
        strides = [broadcast_strides(v, lens) for v in views]
        if self.kind == "pointwise":
            dims, per_binding = _padded(*collapse(lens, strides), self.inner_rank, self.name)
            words = [math.prod(lens), *dims]
            for view, binding_strides in zip(views, per_binding):
                words += [view.offset, *binding_strides]
            return words
        outer = [d for d in range(len(lens)) if d not in self.axes]
        inner = [d for d in range(len(lens)) if d in self.axes]
        outer_lens, outer_strides = _padded(
            *collapse([lens[d] for d in outer], [[s[d] for d in outer] for s in strides]), self.outer_rank, self.name
        )
        inner_lens, inner_strides = _padded(
            *collapse([lens[d] for d in inner], [[s[d] for d in inner] for s in strides]), self.inner_rank, self.name
        )
        words = [math.prod(outer_lens), math.prod(inner_lens), *outer_lens, *inner_lens]
        for view, o, i in zip(views, outer_strides, inner_strides):
            words += [view.offset, *o, *i]
        return words

    def to_json(self) -> dict:
        return {
            "kernel": self.name,
            "entry_point": self.entry_point,
            "kind": self.kind,
            "workgroup_size": [self.workgroup_size, 1, 1],
            "elements_per_invocation": self.elements_per_invocation,
            "bindings": [
                {"set": 0, "binding": b.index, "name": b.name, "role": b.role, "type": b.etype.name}
                for b in self.bindings
            ],
            "push_constants": [
                {"name": name, "offset": 4 * i, "type": "uint32"} for i, name in enumerate(self.push_names)
            ],
            "reduce_axes": list(self.axes),
            "shared_memory_bytes": self.shared_bytes,
            "device_features": self.features,
        }


def broadcast_strides(view: View, lens: Sequence[int]) -> list[int]:
    """The view's strides over `lens`: 0 along dimensions it has length 1 in (broadcast)."""
    try:
        return kernel_plan.broadcast_strides(view.lens, view.strides, lens)
    except kernel_plan.Unplannable as e:
        raise Unsupported(str(e)) from None


def _padded(lens: list[int], strides: list[list[int]], rank: int, name: str) -> tuple[list[int], list[list[int]]]:
    if len(lens) > rank:
        raise Unsupported(f"kernel {name} was made for rank {rank}, these shapes need rank {len(lens)}")
    pad = rank - len(lens)
    return [1] * pad + lens, [[0] * pad + s for s in strides]
