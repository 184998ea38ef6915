"""device_assert on the GPU (issue 14): a failing assert is reported by the runtime as
DeviceAssertError with the interpreter's message and the failing block and thread; a passing
one prints nothing and changes nothing; the record is cleared once reported, so the next
launch of the same kernel runs clean."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.device_assert import DeviceAssertError

pytestmark = pytest.mark.gpu

KERNEL = Path(__file__).resolve().parent.parent / "typecheck" / "device_assert.tl"


@pytest.fixture(scope="module")
def module():
    return tlc.load(str(KERNEL), target="cuda")


def test_a_passing_assert_prints_nothing_and_changes_nothing(module, capfd):
    import cupy

    x, y = cupy.arange(200, dtype=cupy.float32), cupy.zeros(200, cupy.float32)
    module.scale(x, y, 1000.0)
    cupy.cuda.runtime.deviceSynchronize()
    assert capfd.readouterr().out == "" and bool((y == 2 * x).all())


def test_a_failing_assert_is_reported_with_its_message_block_and_thread(module):
    import cupy

    x = np.zeros(200, np.float32)
    x[70] = 100.0  # the one element that fails: block 1, index 6
    with pytest.raises(DeviceAssertError) as e:
        module.scale(cupy.asarray(x), cupy.zeros(200, cupy.float32), 50.0)
    assert re.fullmatch(re.escape(str(KERNEL)) + r":7:13: device_assert failed: X\[70\] = 100\.0 is not below 50\.0 "
                        r"\(block \(1, 0, 0\), thread \d+\)", str(e.value)), str(e.value)
    with pytest.raises(DeviceAssertError) as cpu:  # the interpreter says the same before the parentheses
        tlc.load(str(KERNEL), target="cpu").scale(x, np.zeros(200, np.float32), 50.0)
    assert str(cpu.value).split(" (block")[0] == str(e.value).split(" (block")[0]
    # reported once: the next launch runs clean
    y = cupy.zeros(200, cupy.float32)
    module.scale(cupy.asarray(x), y, 1000.0)
    np.testing.assert_array_equal(cupy.asnumpy(y), x * 2)


def test_a_numpy_call_reports_the_once_per_block_assert(module):
    x = np.zeros(101 * 64, np.float32)
    with pytest.raises(DeviceAssertError) as e:
        module.scale(x, np.zeros_like(x), 1.0)
    assert str(e.value) == f"{KERNEL}:5:9: device_assert failed: too many blocks: 100 (block (100, 0, 0), thread 0)"
