"""device_assert(cond, "message", values...) (issue 14): the message is checked as print()'s
format against its values, the interpreter raises DeviceAssertError at the statement with the
message and the block, and the generated code builds for sm_80 and sm_90a with the failure
record of tl/assert.cuh.  The GPU side is tests/gpu/test_device_assert_gpu.py."""
import sys
from pathlib import Path

import numpy as np
import pytest

from tlc import device_assert
import tlc
from tlc.device_assert import DeviceAssertError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "codegen"))
from nvcc import ARCH_FLAGS, compile_object, nvcc  # noqa: E402  (tests/codegen/nvcc.py: nvcc -Werror, cached)
from test_print_format import VALID, caret, rendered  # noqa: E402  (print()'s checks, in the same kernel)

KERNEL = Path(__file__).resolve().parent / "device_assert.tl"


NINE = 'device_assert(x > 0.0, "%d %d %d %d %d %d %d %d %d", bx, bx, bx, bx, bx, bx, bx, bx, bx)'


@pytest.mark.parametrize("call, code, message, at, hint", [
    ('device_assert(bx < 4)', "E380", 'device_assert() takes a condition and then a message: '
     'device_assert(i < n, "i = %d is out of range", i)', (0, 21), None),
    ('device_assert(bx < 4, n)', "E380", 'device_assert() takes a condition and then a message: '
     'device_assert(i < n, "i = %d is out of range", i)', (0, 24), None),
    ('device_assert(bx, "bx")', "E381", "device_assert()'s condition must be a bool, found i32", (14, 2),
     "  = hint: compare it: device_assert(x != 0, ...)"),
    (NINE, "E382", "device_assert() reports at most 8 values, 9 are given", (85, 2), None),
    ('device_assert(bx < 4, "bx = %f", bx)', "E175", "'%f' prints a float but the value is i32", (33, 2),
     "  = hint: write %d for i32 values, or convert the value: f32(...)"),
    ('device_assert(x > 0.0, "x = %d", x)', "E175", "'%d' prints an integer but the value is f32", (33, 1),
     "  = hint: write %f for f32 values, or convert the value: i32(...)"),
    ('device_assert(bx < 4, "%s", bx)', "E172", "'%s' would read its argument as the address of a string; "
     "device_assert() prints numbers", (22, 4), VALID),
    ('device_assert(bx < 4, "%d", bx, n)', "E053", "the format has 1 placeholder but 2 values are given", (0, 34), None),
])
def test_wrong_device_asserts(call, code, message, at, hint):
    lines = [f"t.tl:5:{9 + at[0]}: error[{code}]: {message}", caret(call, *at)] + ([hint] if hint else [])
    assert rendered(call) == "\n".join(lines)


def test_a_right_device_assert_checks():
    assert rendered('device_assert(bx < 4 and x > 0.0, "bx = %d, n = %d, x = %.2f", bx, n, x)') == ""


@pytest.fixture(scope="module")
def module():
    return tlc.load(str(KERNEL), target="cpu")


def test_a_passing_assert_changes_nothing(module, capsys):
    x = np.arange(200, dtype=np.float32)
    y = np.zeros_like(x)
    module.scale(x, y, 1000.0)
    np.testing.assert_array_equal(y, x * 2)
    assert capsys.readouterr().out == ""


def test_the_interpreter_raises_at_the_first_failing_index(module):
    x = np.arange(200, dtype=np.float32)
    with pytest.raises(DeviceAssertError) as e:
        module.scale(x, np.zeros_like(x), 70.0)
    assert str(e.value) == (f"{KERNEL}:7:13: device_assert failed: X[70] = 70.0 is not below 70.0 "
                            "(block (1, 0, 0), index (6))")


def test_an_assert_once_per_block_names_thread_0(module):
    x = np.zeros(101 * 64, dtype=np.float32)
    with pytest.raises(DeviceAssertError) as e:
        module.scale(x, np.zeros_like(x), 1.0)
    assert str(e.value) == f"{KERNEL}:5:9: device_assert failed: too many blocks: 100 (block (100, 0, 0), thread 0)"


def test_a_gpu_record_decodes_to_the_interpreters_message(module):
    """The words tl::assert_fail writes (tl/assert.cuh), decoded as the runtime does."""
    sites = (device_assert.Site("assert.tl", 5, 9, "too many blocks: %d", ("i32",)),
             device_assert.Site("assert.tl", 7, 13, "X[%d] = %.1f is not below %.1f", ("i32", "f32", "f32")))
    words = [0] * device_assert.RECORD_WORDS
    assert device_assert.decode(sites, words) is None
    words[:7] = [2, 1, 6 << 32, 0, 70, np.float64(70.0).view(np.uint64), np.float64(70.0).view(np.uint64)]
    assert str(device_assert.decode(sites, words)) == ("assert.tl:7:13: device_assert failed: X[70] = 70.0 is not "
                                                      "below 70.0 (block (1, 0, 0), thread 6)")
    words[:5] = [1, 100, 0, 0, 2 ** 64 - 3]  # an i32 of -3, sign-extended
    assert str(device_assert.decode(sites, words)).endswith("too many blocks: -3 (block (100, 0, 0), thread 0)")


def test_the_ir_shows_the_assert(module):
    text = module.scale.ir()
    assert "device_assert bx < 100, 'too many blocks: %d', bx" in text
    assert "device_assert[per thread] " in text


def test_the_sites_are_the_kernels_asserts(module):
    kernel = module.scale.scheduled({}, arch="sm_80")
    assert [(x.line, x.col, x.dtypes) for x in device_assert.sites(kernel.body)] == \
        [(5, 9, ("i32",)), (7, 13, ("i32", "f32", "f32"))]
    from tlc.runtime import ir_codec  # the program cache holds the asserts, and the runtime reads its sites from it
    cached = ir_codec.loads(ir_codec.dumps(kernel))
    assert cached == kernel and device_assert.sites(cached.body) == device_assert.sites(kernel.body)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_assert_builds(module, arch, tmp_path):
    source = module.scale.cuda_source(arch=arch)
    assert "__device__ unsigned long long tl_assert_record[12];" in source
    assert "tl::assert_fail(tl_assert_record, 1u, " in source
    compile_object(source, arch, tmp_path)


def test_tlc_run_reports_a_failing_assert_as_an_error():
    import re

    from click.testing import CliRunner

    from tlc import cli

    r = CliRunner().invoke(cli.main, ["run", str(KERNEL), "-k", "scale", "--target", "interp", "--shape", "N=100",
                                      "--in", "limit=-1000"])
    assert r.exit_code == 1 and r.stdout == ""
    assert re.fullmatch(re.escape(f"error: {KERNEL}:7:13: device_assert failed: X[0] = ") + r"-?\d+\.\d"
                        + re.escape(" is not below -1000.0 (block (0, 0, 0), index (0))\n"), r.stderr), r.stderr


def test_two_files_with_asserts_link_into_one_program(module, tmp_path):
    """nvcc builds: two generated files with asserts link together, and a C caller reads each
    file's record through its tl_assert_record_KERNEL."""
    other = tlc.compile_source(KERNEL.read_text().replace("def scale(", "def scale2("), target="cpu", path="b.tl")
    (tmp_path / "a.cu").write_text(module.scale.cuda_source(arch="sm_80"))
    (tmp_path / "b.cu").write_text(other.scale2.cuda_source(arch="sm_80"))
    (tmp_path / "main.cu").write_text(
        '#include <cuda_runtime.h>\n'
        'extern "C" cudaError_t tl_assert_record_scale(unsigned long long* out);\n'
        'extern "C" cudaError_t tl_assert_record_scale2(unsigned long long* out);\n'
        'int main() { unsigned long long a[12], b[12];\n'
        '  return (tl_assert_record_scale(a) != cudaSuccess) + (tl_assert_record_scale2(b) != cudaSuccess); }\n')
    res = nvcc([*ARCH_FLAGS["sm_80"], "a.cu", "b.cu", "main.cu", "-o", "prog"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
