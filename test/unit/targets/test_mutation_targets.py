"""mgxir/targets/timing.py's table (`mgx-run --timing`), which the targets' own tests never print:
the cases its mutation run found unchecked (docs/mutation.md)."""

from __future__ import annotations

from mgxir.targets.timing import TimingLog, collect_timing, record


def test_nothing_timed() -> None:
    assert TimingLog().render() == "timing: nothing was timed"


def test_rows_in_milliseconds_with_notes_and_totals_per_target() -> None:
    with collect_timing() as log:
        record("@3", "dot", "vulkan", 0.0025)
        record("@12", "softmax", "ref", 0.5, note="not lowered")
        record("@4", "add", "vulkan", 0.001)
    record("@5", "relu", "ref", 9.0)  # outside the block: not recorded
    assert log.render().splitlines() == [
        "timing: @3   dot      vulkan      2.5000 ms",
        "timing: @12  softmax  ref       500.0000 ms  (not lowered)",
        "timing: @4   add      vulkan      1.0000 ms",
        "timing: total: vulkan 3.5000 ms, ref 500.0000 ms",
    ]
