"""The command-line front ends (`mgx-opt`, `mgx-run`, `mgx-translate`, `mgx-roundtrip`).

numpy is imported here, first, inside `mgxir.stack.with_room`: imported deeper in a tool's chain of
imports, its typing modules made CPython map and unmap a frame chunk over a thousand times.
"""

from mgxir.stack import with_room

with_room(lambda: __import__("numpy"))
