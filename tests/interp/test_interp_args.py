"""Launch arguments: every mistake a caller can make is a TlcError naming the parameter."""
import ml_dtypes
import numpy as np
import pytest

from interp_kit import c, kernel, scalar, tensor, v
from tlc.diagnostics import TlcError
from tlc.dtypes import BF16, F16, F32, I32, I64
from tlc.ir import BinOp, Break, Cast, For, IRVerifyError, Parallel, Print, Store, samples
from tlc.interp import ArgumentError, InterpError, run_kernel


def mm_args(M=8, K=6, N=4, K2=None, dtype=np.float16):
    return dict(A=np.ones((M, K), dtype), B=np.ones((K if K2 is None else K2, N), dtype),
                C=np.zeros((M, N), dtype))


@pytest.mark.parametrize("args, message", [
    ({**mm_args(), "D": np.ones(2)}, "unexpected argument 'D'; kernel 'matmul' takes A, B, C"),
    ({k: x for k, x in mm_args().items() if k != "B"}, "missing argument 'B'"),
    (mm_args(dtype=np.float32), "'A' has dtype f32 but the kernel expects f16"),
    ({**mm_args(), "B": [[1.0]]}, "'B' must be a NumPy array (f16[K, N]); got list"),
    ({**mm_args(), "C": np.zeros((8, 4, 1), np.float16)},
     "'C' has rank 3 but the kernel expects rank 2 (f16[M, N])"),
    (mm_args(K=100, K2=96), "shape symbol 'K' is 100 in 'A' (axis 1) but 96 in 'B' (axis 0)"),
    ({**mm_args(), "C": np.zeros((8, 5), np.float16)},
     "shape symbol 'N' is 4 in 'B' (axis 1) but 5 in 'C' (axis 1)"),
    ({**mm_args(), "A": np.ones((8, 6), ml_dtypes.bfloat16)},
     "'A' has dtype bf16 but the kernel expects f16"),
])
def test_matmul_argument_errors(args, message):
    with pytest.raises(ArgumentError) as e:
        run_kernel(samples.matmul(), args)
    assert str(e.value) == message
    assert isinstance(e.value, TlcError)


def test_fixed_dimension_and_read_only_output():
    k = kernel([tensor("x", F32, 4), tensor("y", F32, "n")],
               [Parallel(("i",), (4,), [Store("y", (v("i"),), c(1.0))])])
    with pytest.raises(ArgumentError, match=r"^'x' axis 0 has size 5 but the kernel expects 4$"):
        run_kernel(k, dict(x=np.ones(5, np.float32), y=np.ones(4, np.float32)))
    y = np.ones(4, np.float32)
    y.flags.writeable = False
    with pytest.raises(ArgumentError, match=r"^'y' is read-only but the kernel writes it$"):
        run_kernel(k, dict(x=np.ones(4, np.float32), y=y))


@pytest.mark.parametrize("dtype, value, message", [
    (I32, 2.5, "scalar 'a' (i32) cannot hold 2.5"),
    (I32, 2**40, f"scalar 'a' (i32) cannot hold {2**40}"),
    (F32, np.ones(2), "scalar 'a' (f32) must be a number; got ndarray"),
])
def test_scalar_argument_errors(dtype, value, message):
    k = kernel([scalar("a", dtype)], [])
    with pytest.raises(ArgumentError) as e:
        run_kernel(k, dict(a=value))
    assert str(e.value) == message


def test_scalar_arguments_convert_to_the_param_dtype():
    k = kernel([scalar("a", I32), scalar("h", BF16), tensor("out", F32, 2)],
               [Store("out", (c(0),), Cast(v("a"), F32)), Store("out", (c(1),), Cast(v("h", BF16), F32))])
    out = np.zeros(2, np.float32)
    run_kernel(k, dict(a=3.0, h=1.001, out=out))  # 3.0 is a whole number: accepted for i32
    assert out.tolist() == [3.0, float(ml_dtypes.bfloat16(1.001))]


def test_runtime_errors_of_the_kernel_itself():
    zero_step = kernel([scalar("s", I32)], [For("k", c(0), c(4), v("s"), "serial", 0, [Break()])])
    with pytest.raises(InterpError, match=r"^kernel 'k': loop 'k' has step 0$"):
        run_kernel(zero_step, dict(s=0))
    negative_grid = kernel([scalar("g", I32)], [], grid=(v("g"),))
    with pytest.raises(InterpError, match=r"^grid dimension x of kernel 'k' is -1; the GPU allows 1 to 2147483647$"):
        run_kernel(negative_grid, dict(g=-1))
    run_kernel(negative_grid, dict(g=0))  # an empty grid runs nothing
    wide_grid = kernel([scalar("g", I64)], [], grid=(Cast(v("g", I64), I32),))
    with pytest.raises(InterpError, match=r"^grid dimension x of kernel 'k' is 1099511627776; the GPU allows "):
        run_kernel(wide_grid, dict(g=2**40))  # not wrapped to an i32's 0: an empty grid that "ran"
    zero_grid = kernel([scalar("g", I32)], [], grid=(BinOp("//", c(4), v("g"), I32),))
    with pytest.raises(InterpError) as e:
        run_kernel(zero_grid, dict(g=0))
    assert str(e.value) == "kernel 'k': grid dimension x, 4 // g with g = 0, divides by zero"
    bad_format = kernel([scalar("g", I32)], [Print("%d %d\n", (v("g"),))])
    with pytest.raises(InterpError, match=r"^print format '%d %d\\n' does not fit its 1 argument: "):
        run_kernel(bad_format, dict(g=1))


def test_malformed_ir_is_rejected_before_running():
    bad = kernel([tensor("y", F16, 2)], [Store("y", (c(0),), c(1.0))])
    with pytest.raises(IRVerifyError):
        run_kernel(bad, dict(y=np.zeros(2, np.float16)))
