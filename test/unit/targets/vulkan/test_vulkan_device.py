"""The Vulkan device on its own (lavapipe here and in CI): choosing the device by index, device
copies, and closing; skipped, saying why, where no Vulkan driver is."""

from __future__ import annotations

import numpy as np
import pytest
from spirv_support import require_vulkan

from mgxir.diagnostics import MgxError
from mgxir.targets.vulkan.device import DEVICE_ENV, Device


@pytest.fixture
def device(monkeypatch: pytest.MonkeyPatch) -> Device:
    require_vulkan()
    monkeypatch.setenv(DEVICE_ENV, "0")
    opened = Device()
    yield opened
    opened.close()


def test_device_copies_buffers(device: Device) -> None:
    data = np.arange(10, dtype=np.float32)
    source = device.upload(data)
    target = device.allocate(data.nbytes, host_visible=True)
    seconds = device.copy(source, target, data.nbytes, repeat=2)
    assert seconds >= 0 or np.isnan(seconds)
    np.testing.assert_array_equal(device.download(target, data.nbytes).view(np.float32), data)
    device.free(source)
    device.free(target)


@pytest.mark.parametrize("wanted", ["99", "first"])
def test_device_index_that_names_no_device_is_refused(monkeypatch: pytest.MonkeyPatch, wanted: str) -> None:
    require_vulkan()
    monkeypatch.setenv(DEVICE_ENV, wanted)
    with pytest.raises(MgxError, match=rf"^error: {DEVICE_ENV}={wanted} names none of the \d+ Vulkan devices$"):
        Device()
