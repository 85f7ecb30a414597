"""Room on CPython's frame stack for work that calls one function many times.

CPython 3.11 keeps a thread's Python frames in 16 KiB chunks and unmaps a chunk as soon as the frame
that needed it returns, so a function called in a loop right at a chunk's edge maps and unmaps
memory on each call. Where that edge falls depends on how deep the caller is: numpy's typing
modules, imported three imports deep by `mgx-opt`, did it 1,250 times (a few milliseconds of a
tool's start-up), and `mgx-translate --to mlir`'s imports on the tool's deep-stack thread 400
times. `with_room(work)` calls `work()` inside a frame that asks for a 512 KiB chunk, leaving the
calls below it ~190 KiB (some thousands of frames) before the next edge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# values the frame of `with_room` asks room for (8 bytes each): 320 KiB, which CPython rounds up to
# a 512 KiB chunk
ROOM_SLOTS = 40_000


def with_room(work: Callable[[], T]) -> T:
    """`work()`, with its frames in a chunk of their own."""
    return work()


with_room.__code__ = with_room.__code__.replace(co_stacksize=ROOM_SLOTS)
