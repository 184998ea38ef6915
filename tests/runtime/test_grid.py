"""Grid extents evaluated on the host: Python integer semantics, every node kind a grid uses,
and the errors for what the host cannot evaluate."""
import pytest

from runtime_kit import cdiv, i32
from tlc.dtypes import BOOL, F32, I32, I64
from tlc.ir import BinOp, Call, Cast, Const, Load, Select, UnaryOp, Var
from tlc.runtime.grid import (GridError, _guarded, compile_function, compile_grid, grid_source, launches_blocks,
                             py_function, py_source)

SLOTS = {"N": 0, "M": 1, "alpha": 2}
N, M = Var("N", I32), Var("M", I32)


def compile_expr(expr, slots):
    text = py_source(expr, {name: f"vals[{i}]" for name, i in slots.items()})
    return compile_function(f"def f(vals):\n    return {text}\n", "f")


def ev(expr, N=0, M=0, alpha=0.0):
    """`expr`'s value by `py_source`'s text (which the fast paths compile) and by `py_function`'s
    closures (compile_grid's), which must agree; an error is the text's."""
    text = compile_expr(expr, SLOTS)([N, M, alpha])
    assert _guarded(py_function(expr, SLOTS), "", "a grid extent")([N, M, alpha]) == text
    return text


@pytest.mark.parametrize("n, expected", [(0, 0), (1, 1), (128, 1), (129, 2), (1000, 8)])
def test_cdiv_as_the_scheduler_spells_it(n, expected):
    assert ev(cdiv(N, 128), N=n) == expected


@pytest.mark.parametrize("op, a, b, expected", [
    ("//", -7, 2, -4),  # floors, as Python does (C would truncate to -3)
    ("%", -7, 2, 1),  # takes the divisor's sign
    ("%", 7, -2, -1),
    ("min", 3, 9, 3), ("max", 3, 9, 9), ("-", 3, 9, -6), ("*", 3, 9, 27), ("**", 2, 10, 1024),
    ("<<", 1, 4, 16), (">>", 64, 3, 8), ("&", 12, 10, 8), ("|", 12, 10, 14), ("^", 12, 10, 6),
])
def test_binary_operators(op, a, b, expected):
    assert ev(BinOp(op, N, M, I32), N=a, M=b) == expected


def test_min_max_as_calls_unary_select_and_casts():
    assert ev(Call("min", (N, M), I32), N=5, M=2) == 2
    assert ev(Call("max", (N, M), I32), N=5, M=2) == 5
    assert ev(UnaryOp("-", N, I32), N=5) == -5
    assert ev(UnaryOp("~", N, I32), N=5) == -6
    assert ev(Select(BinOp("<", N, M, BOOL), N, M, I32), N=5, M=2) == 2
    assert ev(Select(BinOp("and", BinOp(">", N, i32(0), BOOL), UnaryOp("not", Const(False, BOOL), BOOL), BOOL),
                     N, M, I32), N=5, M=2) == 5
    # a float cast to an integer truncates toward zero, as in C
    assert ev(Cast(BinOp("*", Var("alpha", F32), Const(2.0, F32), F32), I64), alpha=-1.75) == -3
    assert ev(Cast(BinOp("/", Cast(N, F32), Const(4.0, F32), F32), I32), N=10) == 2


def test_grid_pads_to_three_dimensions():
    grid = compile_grid((cdiv(N, 64), cdiv(M, 16)), SLOTS)
    assert grid([100, 17, 0.0]) == (2, 2, 1)
    assert compile_grid((Const(7, I32),), SLOTS)([0, 0, 0.0]) == (7, 1, 1)
    assert compile_grid((N, M, Const(3, I32)), SLOTS)([2, 5, 0.0]) == (2, 5, 3)
    assert compile_grid((Cast(Var("alpha", F32), I32),), SLOTS)([0, 0, 2.5]) == (2, 1, 1)
    # the fast paths' text of the same grid
    assert grid_source((Cast(Var("alpha", F32), I32),), {"alpha": "vals[2]"}) == "(int(vals[2]), 1, 1)"


@pytest.mark.parametrize("expr, message", [
    (Var("K", I32), "a grid extent reads 'K', which is neither a scalar parameter nor a shape symbol"),
    (BinOp("@", N, M, I32), "a grid extent uses the operator '@', which the host cannot evaluate"),
    (UnaryOp("!", N, I32), "a grid extent uses the operator '!', which the host cannot evaluate"),
    (Load("A", (i32(0),), I32), "a grid extent is a Load, which the host cannot evaluate"),
    (Call("exp", (N,), I32), "a grid extent calls 'exp', which the host cannot evaluate"),
])
def test_what_the_host_cannot_evaluate(expr, message):
    with pytest.raises(GridError) as e:
        compile_grid((expr,), SLOTS)
    assert str(e.value) == message
    with pytest.raises(GridError) as e:
        py_function(expr, SLOTS)
    assert str(e.value) == message


def test_bad_values():
    with pytest.raises(GridError, match=r"^a grid extent divides by zero$"):
        ev(BinOp("//", N, M, I32), N=4, M=0)
    with pytest.raises(GridError, match=r"^a grid extent divides by zero$"):
        compile_grid((BinOp("%", N, M, I32),), SLOTS)([4, 0, 0.0])
    with pytest.raises(GridError, match=r"^a grid extent evaluated to 2.5, not an integer$"):
        compile_grid((BinOp("/", Var("alpha", F32), Const(2.0, F32), F32),), SLOTS)([0, 0, 5.0])
    with pytest.raises(GridError, match=r"^a launch grid has 1 to 3 dimensions, not 4$"):
        compile_grid((N,) * 4, SLOTS)


def test_a_persistent_grid_launches_at_most_one_block_per_sm():
    grid = compile_grid([cdiv(N, 256), cdiv(M, 128)], SLOTS, persistent_blocks=132)
    assert grid([8192, 8192, 0.0]) == (132, 1, 1)  # 32 x 64 tiles
    assert grid([512, 300, 0.0]) == (6, 1, 1)  # fewer tiles than SMs: one block each
    assert grid([0, 300, 0.0]) == (0, 3, 1)  # empty: left for the launch's own check


def test_a_clustered_persistent_grid_is_whole_clusters_over_consecutive_tiles():
    grid = compile_grid([cdiv(N, 256), cdiv(M, 128)], SLOTS, persistent_blocks=132, cluster=2)
    assert grid([8192, 8192, 0.0]) == (132, 1, 1)
    assert grid([1280, 300, 0.0]) == (16, 1, 1)  # 5 x 3 tiles: 8 pairs, the last one half empty
    assert grid([256, 100, 0.0]) == (2, 1, 1)  # one tile: its cluster's peer stores nothing
    assert compile_grid([cdiv(N, 256), cdiv(M, 128)], SLOTS, persistent_blocks=133, cluster=2)([8192, 8192, 0.0]) \
        == (132, 1, 1)


@pytest.mark.parametrize("grid, message", [
    ((2**40, 1, 1), "grid dimension x of kernel 'k' is 1099511627776; the GPU allows 1 to 2147483647"),
    ((-5, 1, 1), "grid dimension x of kernel 'k' is -5; the GPU allows 1 to 2147483647"),
    ((1, 65536, 1), "grid dimension y of kernel 'k' is 65536; the GPU allows 1 to 65535"),
    ((0, 1, -1), "grid dimension z of kernel 'k' is -1; the GPU allows 1 to 65535"),  # empty, yet wrong
])
def test_a_grid_beyond_the_gpus_limits_is_an_error_naming_the_dimension(grid, message):
    with pytest.raises(GridError) as e:
        launches_blocks("k", grid)
    assert str(e.value) == message


def test_the_largest_grid_launches_and_an_empty_one_launches_nothing():
    assert launches_blocks("k", (2**31 - 1, 65535, 65535))
    assert not launches_blocks("k", (0, 3, 1))  # an empty tensor: nothing to do, no error
    assert compile_grid((cdiv(N, 128),), SLOTS, kernel="k")([2**40, 0, 0.0]) == (2**33, 1, 1)  # never truncated


def test_errors_of_a_kernels_grid_name_the_kernel():
    with pytest.raises(GridError, match=r"^the grid of kernel 'k' divides by zero$"):
        compile_grid((BinOp("//", N, M, I32),), SLOTS, kernel="k")([100, 0, 0.0])
    with pytest.raises(GridError, match=r"^the grid of kernel 'k' cannot be computed: negative shift count$"):
        compile_grid((BinOp("<<", N, M, I32),), SLOTS, kernel="k")([1, -1, 0.0])


def test_an_extent_that_divides_by_zero_beside_an_extent_of_0_is_an_empty_grid():
    """No block runs, so none reads what divided (std.attention's flash_decode at B = 0: its
    split count divides by B * HK * ...); without an extent of 0 it is the error it was."""
    grid = compile_grid((BinOp("//", N, M, I32), M), SLOTS, kernel="k")
    assert grid([100, 0, 0.0]) == (0, 0, 1) and not launches_blocks("k", grid([100, 0, 0.0]))
    grid = compile_grid((BinOp("//", N, M, I32), N), SLOTS, kernel="k")
    assert grid([0, 0, 0.0]) == (0, 0, 1)
    with pytest.raises(GridError, match=r"^the grid of kernel 'k' divides by zero$"):
        grid([100, 0, 0.0])
    persistent = compile_grid((BinOp("//", N, M, I32), M), SLOTS, persistent_blocks=132, kernel="k")
    assert persistent([100, 0, 0.0]) == (0, 0, 1)


def test_a_persistent_kernel_counts_at_most_an_ints_worth_of_tiles():
    grid = compile_grid([cdiv(N, 128), cdiv(M, 128)], SLOTS, persistent_blocks=132, kernel="k")
    assert grid([2**23 - 128, 2**22, 0.0]) == (132, 1, 1)  # 65535 x 32768 tiles
    with pytest.raises(GridError) as e:
        grid([2**23, 2**23, 0.0])
    assert str(e.value) == "the persistent kernel 'k' has 4294967296 tiles (65536 x 65536 x 1); it counts at most 2147483647"


def test_a_grid_that_divides_by_zero_names_its_dimension_and_the_sizes():
    """A grid whose extent divides by a quotient of sizes that is 0 (as std.attention's
    flash_decode_paged did with fewer query heads than key heads, H // HK = 0, found by
    scripts/fuzz --mode tuning, which its LSE's type now refuses before the grid): the error
    names the kernel's line, the dimension, its expression and the sizes it read, where it said
    only "an extent divides by zero"."""
    import numpy as np

    import tlc

    src = ("@kernel\ndef split(x: f32[N], parts: f32[P]):\n"
           "    with grid(cdiv(N, 32) // (N // P), threads=32) as bx:\n        pass\n")
    for target in ("interp", "cpu"):
        with pytest.raises(tlc.TlcError) as e:
            tlc.compile_source(src, target=target, path="split.tl").split(np.zeros(4, np.float32), np.zeros(8, np.float32))
        assert str(e.value) == ("kernel 'split' (split.tl:2): grid dimension x, ((N - 1) // 32 + 1) // (N // P) "
                                "with N = 4, P = 8, divides by zero")


def test_a_grid_that_divides_by_zero_beside_an_empty_dimension_runs_nothing():
    """The interpreter's and the cpu target's grid (`grid_extents`) as the GPU's: y = 0 leaves
    x's division by zero unread, and no block runs; y = 3 is the error that names x."""
    import numpy as np

    import tlc

    src = ("@kernel\ndef split(x: f32[N], parts: f32[P], rows: f32[R]):\n"
           "    with grid(cdiv(N, 32) // (N // P), R, threads=32) as (bx, by):\n"
           "        for i in parallel(32):\n            if i < N:\n                x[i] = 1.0\n")
    for target in ("interp", "cpu"):
        split = tlc.compile_source(src, target=target, path="split.tl").split
        x = np.zeros(4, np.float32)
        split(x, np.zeros(8, np.float32), np.zeros(0, np.float32))
        assert not x.any()
        with pytest.raises(tlc.TlcError) as e:
            split(x, np.zeros(8, np.float32), np.zeros(3, np.float32))
        assert str(e.value) == ("kernel 'split' (split.tl:2): grid dimension x, ((N - 1) // 32 + 1) // (N // P) "
                                "with N = 4, P = 8, divides by zero")
