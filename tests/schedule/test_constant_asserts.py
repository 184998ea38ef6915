"""A device_assert whose condition its constants decide and which holds is left out of the
kernel (tlc/schedule/const_cond.py): a kernel holding an assert has its failure record read
after every launch (a device synchronization and a copy), which std.gemm's w4a16 decode kernels,
whose only assert is `G % BK == 0 and BK % 32 == 0`, paid at every call: ~30 us of a ~65 us
kernel in session 15's H200 run.  One that fails stays and fails at the launch with its message;
one that reads a run-time value stays."""
import numpy as np
import pytest

import tlc
from tlc import ir
from tlc.device_assert import DeviceAssertError, sites
from tlc.dtypes import BOOL, F32, I32
from tlc.driver import check_file
from tlc.runner import build
from tlc.schedule import schedule
from tlc.schedule.const_cond import truth

SRC = """
@kernel
def steps(x: f32[N], y: f32[N], BK: const = 64, THREADS: const = 32):
    with grid(cdiv(N, 32), threads=THREADS) as b:
        device_assert(BK % 32 == 0 and BK // 32 >= 1, "steps: BK = %d, not a multiple of 32", BK)
        for i in parallel(32):
            y[b * 32 + i] = x[b * 32 + i] * 2.0

@kernel
def sized(x: f32[N], y: f32[N], THREADS: const = 32):
    with grid(cdiv(N, 32), threads=THREADS) as b:
        device_assert(N % 32 == 0, "sized: N = %d", N)
        for i in parallel(32):
            y[b * 32 + i] = x[b * 32 + i] * 2.0
"""


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "asserts.tl"
    p.write_text(SRC)
    return p


def asserts(path, name, consts):
    r = check_file(str(path))
    return sites(schedule(r.program, name, consts, target="sm_90a").body)


def test_a_constant_condition_that_holds_is_left_out(path):
    assert asserts(path, "steps", {"BK": 64}) == ()
    src, _ = build(str(path), arch="sm_90a", kernels=("steps",))
    assert "tl::assert_fail(tl_assert_record" not in src
    x = np.arange(64, dtype=np.float32)
    y = np.zeros_like(x)
    tlc.load(str(path), target="cpu").steps(x, y)
    assert np.array_equal(y, 2 * x)


def test_one_that_fails_stays_and_fails_with_its_message(path):
    assert len(asserts(path, "steps", {"BK": 48})) == 1
    x = np.zeros(64, np.float32)
    with pytest.raises(DeviceAssertError, match="steps: BK = 48, not a multiple of 32"):
        tlc.load(str(path), target="cpu").steps(x, np.zeros_like(x), BK=48)


def test_one_that_reads_a_run_time_size_stays(path):
    assert len(asserts(path, "sized", {})) == 1
    x = np.zeros(40, np.float32)
    with pytest.raises(DeviceAssertError, match="sized: N = 40"):
        tlc.load(str(path), target="cpu").sized(x, np.zeros_like(x))


def c(v, dt=I32):
    return ir.Const(v, dt)


@pytest.mark.parametrize("e, want", [
    (ir.BinOp("==", ir.BinOp("%", c(128), c(32), I32), c(0), BOOL), True),
    (ir.BinOp("<", c(-7), ir.BinOp("//", c(-7), c(2), I32), BOOL), True),  # -7 // 2 is -4: floor
    (ir.BinOp("==", ir.BinOp("%", c(-7), c(2), I32), c(1), BOOL), True),  # Python's sign
    (ir.BinOp("==", ir.BinOp("%", c(5), c(0), I32), c(0), BOOL), None),  # by zero: not decided here
    (ir.BinOp("==", ir.BinOp("*", c(1 << 20), c(1 << 20), I32), c(0), BOOL), None),  # wraps in i32
    (ir.BinOp(">", c(1.5, F32), c(1.0, F32), BOOL), None),  # floats: not decided here
    (ir.BinOp("and", ir.BinOp("<", c(1), c(2), BOOL), ir.UnaryOp("not", c(False, BOOL), BOOL), BOOL), True),
    (ir.BinOp("<", ir.Var("n", I32), c(2), BOOL), None),
])
def test_truth(e, want):
    assert truth(e) is want
