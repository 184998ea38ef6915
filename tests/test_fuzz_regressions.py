"""Bugs the fuzzer found (tests/fuzz, scripts/fuzz), each reduced to a minimal program: the
exact diagnostics it must get, or "" where it must check, build for both targets, (where
inputs are given) run on the interpreter and (where an architecture is given) compile with
nvcc -Werror.  tests/fuzz/FINDINGS.md lists what each was."""
from __future__ import annotations

import numpy as np
import pytest

from fuzz.oracles import nvcc_werror
from tlc import runner
from tlc.api import compile_source
from tlc.diagnostics import DiagnosticError, render_all
from tlc.driver import check_source

ATOMIC = """\
@kernel
def k(acc: {dt}[1], BLOCK: const = 64):
    with grid(1, threads=64) as bx:
        for i in parallel(BLOCK):
            atomic_add(acc[0], {dt}(1))
"""

# (id, source, expected diagnostics ("" = clean and builds), interpreter call: (name, inputs, expected) or None,
#  the architecture whose build nvcc -Werror must compile, or None)
CASES = [
    # A named scalar intermediate of a tile op (`t = 2.0`) passed check and then ended in
    # LoweringError ("'t' cannot be used as a value here") in build: the lowering expanded
    # named tensors only.
    ("tile_op_named_scalar", """\
@tile_op
def op(x: f32[M, N]) -> f32[M, N]:
    t = 2.0
    return x + t
""", "", ("op", [np.ones((2, 3), np.float32)], np.full((2, 3), 3.0, np.float32)), None),
    ("tile_op_named_scalar_in_epilogue", """\
@tile_op
def op(x: f16[M, K], w: f16[K, N], s: f32) -> f32[M, N]:
    t = s * 0.5
    return (x @ w) + t
""", "", ("op", [np.ones((2, 3), np.float16), np.ones((3, 4), np.float16), 4.0], np.full((2, 4), 5.0, np.float32)),
     None),
    # The fix of the two rows above expanded every name of a tile op's intermediates, also a
    # device function's local of the same name while it was inlined: f's `t` read the tile
    # op's `t = f32(x0)`, 5 + 5 instead of 2 + 5 (or "region of 'x0' has 1 offset" at build).
    ("tile_op_name_shadowed_in_device_function", """\
def f(a: f32) -> f32:
    t = a * 2.0
    return t

@tile_op
def op(x0: f16[M, N], x1: f32[M, N]) -> f32[M, N]:
    t = f32(x0)
    return f(x1) + t
""", "", ("op", [np.full((2, 3), 5, np.float16), np.ones((2, 3), np.float32)], np.full((2, 3), 7.0)), None),
    # ... and where the tile op's `t` named a call of that function, its `t` expanded into
    # the call again: RecursionError at build (build5 seeds 6004444, 6005339).
    ("tile_op_name_shadowed_recursively", """\
def f(a: f32) -> f32:
    t = a * 2.0
    return t

@tile_op
def op(x0: f32[M, N]) -> f32[M, N]:
    t = f(x0)
    return x0 + t
""", "", ("op", [np.ones((2, 3), np.float32)], np.full((2, 3), 3.0)), None),
    # A buffer the kernel never uses became an unused C array: nvcc's warning 177 ("declared
    # but never referenced"), an error under -Werror.  Unused buffers are now left out.
    ("unused_buffers", """\
@kernel
def k(x: f32[N], out: f32[N], BLOCK: const = 128):
    with grid(cdiv(N, BLOCK), threads=128) as bx:
        unused = fragment(f32[BLOCK])
        idle = shared(f16[BLOCK])
        a = fragment(f32[BLOCK])
        copy(x[bx * BLOCK], a)
        copy(a, out[bx * BLOCK])
""", "", ("k", [np.arange(5, dtype=np.float32), np.zeros(5, np.float32)], None), "sm_80"),
    # Buffers and per-thread scalars that are written but never read: nvcc's warning 550
    # ("set but never used"), an error under -Werror.  They are dropped with their writes.
    ("write_only_buffers_and_scalars", """\
@kernel
def k(x: f32[N], y: f32[N], BLOCK: const = 64):
    with grid(cdiv(N, BLOCK), threads=64) as bx:
        t = fragment(f32[BLOCK])
        l = local(f32[2])
        w = fragment(f32[BLOCK])
        fill(l, 1.5)
        copy(x[bx * BLOCK], t)
        copy(t, w)
        s = 0.0
        for i in parallel(BLOCK):
            v = t[i] * 2.0
            u = v + 1.0
            t[i] = t[i] + 1.0
        copy(t, y[bx * BLOCK])
""", "", ("k", [np.arange(5, dtype=np.float32), np.zeros(5, np.float32)], np.arange(1, 6)), "sm_80"),
    # An f64 tile reduced along dim 0 combines partials by atomics in shared memory, and
    # tl::atomic_combine had no double overload: nvcc error "no instance of overloaded
    # function" on a program that checks.
    ("f64_column_max", """\
@kernel
def k(x: f64[M, N], out: f64[N], BM: const = 64, BN: const = 16):
    with grid(cdiv(N, BN), threads=64) as bx:
        tile = fragment(f64[BM, BN])
        total = fragment(f64[BN])
        copy(x[0, bx * BN], tile)
        reduce_max(tile, total, dim=0)
        copy(total, out[bx * BN])
""", "", None, "sm_80"),
    # A reduction of a shared tile into a fragment: the layout pass gave the destination its
    # source's layout, replicated, and a shared buffer has none: KeyError in build.
    ("reduce_shared_into_fragment", """\
@kernel
def k(x: f32[M, N], rows: f32[M], BM: const = 4, BN: const = 32):
    with grid(cdiv(M, BM), threads=32) as bx:
        ts = shared(f32[BM, BN])
        red = fragment(f32[BM])
        copy(x[bx * BM, 0], ts)
        reduce_sum(ts, red, dim=1)
        copy(red, rows[bx * BM])
""", "", ("k", [np.arange(6 * 40, dtype=np.float32).reshape(6, 40) % 7, np.zeros(6, np.float32)],
          (np.arange(6 * 40, dtype=np.float32).reshape(6, 40) % 7)[:, :32].sum(1)), "sm_80"),
    # A literal its operand's narrow dtype cannot hold (`t & 255` of an i8 t): the generated C
    # cast it, static_cast<signed char>(255) = -1, and the interpreter ended in NumPy's
    # OverflowError; then both wrapped it, silently `t & -1`; it is E157 now (NumPy 2 raises too).
    ("i8_and_255", """\
@kernel
def k(x: i8[N], y: i8[N], BLOCK: const = 32):
    with grid(cdiv(N, BLOCK), threads=32) as bx:
        t = fragment(i8[BLOCK])
        copy(x[bx * BLOCK], t)
        for i in parallel(BLOCK):
            t[i] = t[i] & 255
        copy(t, y[bx * BLOCK])
""", """\
{path}:7:27: error[E157]: the literal 255 does not fit i8, the type of the other operand of '&'
  |
7 |             t[i] = t[i] & 255
  |                           ^^^
  = hint: 255 is -1 as an i8: write t[i] & -1 for the same bits, or i16(t[i]) & 255 to compute in i16""", None, None),
    # atomic_add of an i64 was atomicAdd(long long*, ...), which CUDA does not have (nvcc:
    # no instance of overloaded function); it adds through unsigned long long now.
    ("atomic_add_i64", ATOMIC.format(dt="i64"), "", ("k", [np.array([5], np.int64)], np.array([5 + 64])), "sm_80"),
    # An atomic in a parallel loop whose element and value are the same for every iteration
    # ran once on the interpreter (5 + 1) and once per iteration on the GPU (5 + 64): a silent
    # difference between the targets.  Every lane updates now.
    ("atomic_in_parallel_every_lane", ATOMIC.format(dt="i32"), "", ("k", [np.array([5], np.int32)], np.array([69])),
     None),
    # A tile op's parameter named `bx` checked, then its build ended in "kernel 'op': 'bx' is
    # declared twice": the scheduled kernel's block index was `bx` too (mutate5 seed 7007745).
    # The kernel builders' names are fresh now, `bx1` here (tests/schedule/tileops/test_tile_op_names.py).
    ("tile_op_parameter_named_bx", """\
@tile_op
def op(bx: f32[M, N]) -> f32[M, N]:
    return bx * 2.0
""", "", ("op", [np.ones((2, 3), np.float32)], np.full((2, 3), 2.0, np.float32)), "sm_80"),
    # A scalar declared outside a parallel loop and assigned inside it (mutate5 seed 7007500)
    # checked, then `tlc build` failed in the IR verifier without a place; it is E158 now.
    ("scalar_assigned_in_parallel", """\
@kernel
def k(x: f32[N], y: f32[N], BLOCK: const = 32):
    with grid(cdiv(N, BLOCK), threads=32) as bx:
        t = fragment(f32[BLOCK])
        r = 0
        for q in parallel(4):
            r = q * 2
        copy(x[r], t)
        copy(t, y[bx * BLOCK])
""", """\
{path}:7:13: error[E158]: 'r' is declared outside this parallel loop and cannot be assigned inside it: its iterations run at once on different threads
  |
7 |             r = q * 2
  |             ^
  = hint: give each index its own scalar, declared in the loop's body, or store the value into a buffer element""", None, None),
    # A dimension named like another parameter (mutate7 seed 30001900: examples/gemm.tl's
    # `A: T[M, K]` mutated to `A: T[A, K]`) checked and then ended in NotConstant in the
    # lowering of shape expressions; so did a scalar's name (`X: f32[n], n: i32`) and, as
    # E061 printing a DType, a dtype parameter's.
    ("dimension_named_like_its_tensor", """\
@kernel
def k(A: f32[A, K], B: f32[K]):
    with grid(1, threads=32) as bx:
        B[0] = A[0, 0]
""", """\
{path}:2:14: error[E044]: the dimension 'A' is the tensor parameter 'A'
  |
2 | def k(A: f32[A, K], B: f32[K]):
  |              ^
  = hint: a dimension is a literal, a constant expression or a shape symbol""", None, None),
    ("dimension_named_like_a_scalar", """\
@kernel
def k(X: f32[n], Y: f32[n], n: i32):
    with grid(1, threads=32) as bx:
        Y[0] = X[0] + f32(n)
""", """\
{path}:2:14: error[E044]: the dimension 'n' is the scalar parameter 'n'
  |
2 | def k(X: f32[n], Y: f32[n], n: i32):
  |              ^
  = hint: a dimension is a literal, a constant expression or a shape symbol

{path}:2:25: error[E044]: the dimension 'n' is the scalar parameter 'n'
  |
2 | def k(X: f32[n], Y: f32[n], n: i32):
  |                         ^
  = hint: a dimension is a literal, a constant expression or a shape symbol""", None, None),
    ("dimension_named_like_a_dtype", """\
@kernel
def k(X: f32[T], T: dtype = f16):
    with grid(1, threads=32) as bx:
        X[0] = 1.0
""", """\
{path}:2:14: error[E044]: the dimension 'T' is the dtype parameter 'T'
  |
2 | def k(X: f32[T], T: dtype = f16):
  |              ^
  = hint: a dimension is a literal, a constant expression or a shape symbol""", None, None),
    # An order of a number and a dtype in a constant expression (`SPLITS > T`, a grid
    # dimension's condition) ended in TypeError inside the constant evaluator (mutate seed
    # 26002389: std.attention's flash_decode_paged); it is no constant, and the checker says why.
    ("constant_compare_of_a_dtype", """\
@kernel
def k(x: f32[N], T: dtype = f16, S: const = 2):
    with grid(4 if S > T else 1, threads=128) as bx:
        x[bx] = 1.0
""", """\
{path}:3:24: error[E032]: 'T' is a dtype, not a value
  |
3 |     with grid(4 if S > T else 1, threads=128) as bx:
  |                        ^
  = hint: to convert, write 'cast(x, T)'""", None, None),
    # A comparison of tensors whose shapes do not broadcast reported E057 and then ended in
    # AttributeError (check_Compare returned _broadcast's None; mutants of seed 398: std.elementwise's
    # `lt` with `b: T[M, N(1)]`).
    ("compare_of_shapes_that_do_not_broadcast", """\
@tile_op
def lt(a: f32[M, N], b: f32[M, 3]) -> bool[M, N]:
    return a < b
""", """\
{path}:3:12: error[E057]: shapes [M, N] and [M, 3] do not broadcast
  |
3 |     return a < b
  |            ^^^^^
  = hint: dimensions must be equal, or one of them 1""", None, None),
    # A tile op's inlined device function kept an unread parameter and a local set but never
    # read as scalars of its kernel: nvcc's warnings 177 and 550 under -Werror (build seeds
    # 3150, 3525, 5275 of session 20).  Tile ops' kernels now drop them as @kernel ones do.
    ("tile_op_unread_scalars_of_an_inlined_function", """\
def fn1(a: f32, b: f32) -> f32:
    t = a
    return a * -1.5

@tile_op
def op(x0: f32[M, N]) -> f32[M, N]:
    t = ceil(x0 * x0)
    return x0 + fn1(t, t)
""", "", ("op", [np.full((2, 3), 2.0, np.float32)], np.full((2, 3), 2.0 - 6.0, np.float32)), "sm_80"),
    # A buffer allocated in a branch that a test of constants leaves out, used after the `if`:
    # the checker lets it (an allocation is static) and lowering, taking the other branch only,
    # never declared it: KeyError 'mean' at build (mutate seed 5215 of session 20, of
    # examples/layernorm.tl).  The left-out branch's allocations are declared.
    ("buffer_allocated_in_a_branch_left_out", """\
@kernel
def k(x: f32[N], y: f32[N], BLOCK: const = 64):
    with grid(cdiv(N, BLOCK), threads=64) as bx:
        if False:
            acc = fragment(f32[BLOCK])
        clear(acc)
        copy(x[bx * BLOCK], acc)
        copy(acc, y[bx * BLOCK])
""", "", ("k", [np.arange(5, dtype=np.float32), np.zeros(5, np.float32)], np.arange(5)), "sm_80"),
    # Constants that every target computed wrongly from one IR (session 29, hand-written absurd
    # constants): a conversion of a constant retyped it (`f32(i8(300))` was 300, not 44; `u8(300.0)`
    # 300, not 255) and `(1 << 40)` meeting an i64 was computed in i32 (0).
    ("constants_converted_and_literal_expressions_exact", """\
@kernel
def k(x: f32[N], y: f64[N]):
    with grid(1, threads=32) as bx:
        y[0] = f64(f32(i8(300))) + f64(u8(300.0))
        y[1] = f64(i64(x[1]) + (1 << 40))
""", "", ("k", [np.ones(2, np.float32), np.zeros(2)], np.array([44.0 + 255.0, 2.0 ** 40 + 1])), None),
    # A conversion of an infinite constant into an integer: OverflowError ("cannot convert float
    # infinity to integer") out of build, where `cast` made Const(inf, i32) (session 29, mutate seed
    # 29001539: examples/softmax.tl's fill(row_max, -inf(f32)) mutated to -i32(inf(f32))).  It
    # saturates, as a float's conversion into an integer does.
    ("conversion_of_an_infinite_constant", """\
@kernel
def k(y: i32[4]):
    with grid(1, threads=32) as bx:
        y[0] = i32(inf(f32))
        y[1] = -i32(inf(f32))
        y[2] = i32(-inf(f32))
        y[3] = i32(u8(inf(f16)))
""", "", ("k", [np.zeros(4, np.int32)], np.array([2**31 - 1, -(2**31 - 1), -2**31, 255])), None),
]


# rows compiled by nvcc carry the nvcc marker: conftest.py skips them, saying why, without a toolkit
@pytest.mark.parametrize("name,source,expected,call,nvcc_arch",
                         [pytest.param(*c, marks=pytest.mark.nvcc) if c[4] else c for c in CASES],
                         ids=[c[0] for c in CASES])
def test_fuzz_regression(name, source, expected, call, nvcc_arch, tmp_path):
    path = tmp_path / f"{name}.tl"
    path.write_text(source)
    result = check_source(source, str(path))
    assert render_all(result.diagnostics, result.sources) == expected.replace("{path}", str(path))
    if expected:
        return
    built = {arch: runner.build(str(path), arch=arch)[0] for arch in ("sm_80", "sm_90a")}
    if call is not None:
        fn, inputs, want = call
        got = getattr(compile_source(source, target="cpu", path=str(path)), fn)(*inputs)
        if want is not None:  # a tile op's result, or a kernel's last argument
            np.testing.assert_allclose(inputs[-1] if got is None else got, want, rtol=1e-3)
    if nvcc_arch is not None:
        failed = nvcc_werror(built[nvcc_arch], nvcc_arch, str(tmp_path))
        assert failed is None, failed.detail


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_f64_column_reduction_on_the_gpu(op):
    """The double atomic_combine's result: the first 64 rows of x reduced down each column."""
    source = CASES[[c[0] for c in CASES].index("f64_column_max")][1].replace("reduce_max", f"reduce_{op}")
    mod = compile_source(source, target="cuda")
    x = np.random.default_rng(0).standard_normal((70, 20))
    out = np.zeros(20)
    mod.k(x, out)
    np.testing.assert_allclose(out, getattr(x[:64], op)(axis=0), rtol=1e-12)


@pytest.mark.parametrize("dt", ["i8", "u8", "i16", "u16"])
def test_atomic_add_of_narrow_integers_is_refused_at_build(dt, tmp_path):
    """CUDA has no atomicAdd of 8- or 16-bit integers: a diagnostic, not an nvcc error."""
    path = tmp_path / "k.tl"
    path.write_text(ATOMIC.format(dt=dt))
    with pytest.raises(DiagnosticError) as e:
        runner.build(str(path), arch="sm_80")
    assert render_all(e.value.diagnostics, e.value.sources) == (
        f"{path}:5:13: error[E069]: the sm_80 target: atomic_add on {dt} is not supported by the CUDA target\n"
        "  |\n"
        f"5 |             atomic_add(acc[0], {dt}(1))\n"
        f"  |             {'^' * len(f'atomic_add(acc[0], {dt}(1))')}")


def test_a_reduction_of_i64_is_refused_at_its_line(tmp_path):
    """The CUDA targets reduce at most 32-bit integers: E069 pointed at the kernel's `def` (session
    29, mutate seed 29000273: std.moe's i32 fragments made i64), now at the reduction."""
    path = tmp_path / "k.tl"
    path.write_text("""\
@kernel
def k(x: i64[N, 32], out: i64[N]):
    with grid(cdiv(N, 4), threads=128) as bx:
        t = fragment(i64[4, 32])
        m = fragment(i64[4])
        copy(x[bx * 4, 0], t)
        reduce_min(t, m, dim=1)
        copy(m, out[bx * 4])
""")
    with pytest.raises(DiagnosticError) as e:
        runner.build(str(path), arch="sm_80")
    assert render_all(e.value.diagnostics, e.value.sources) == (
        f"{path}:7:9: error[E069]: the sm_80 target: reductions of i64 are not supported by the CUDA target yet\n"
        "  |\n"
        "7 |         reduce_min(t, m, dim=1)\n"
        f"  |         {'^' * len('reduce_min(t, m, dim=1)')}")


def test_an_unused_parameter_of_a_device_function_declares_nothing(tmp_path):
    """An inlined device function that ignores its parameter declared `float fn_0_a` and never
    read it: nvcc's warning 177 under -Werror (build5 seed 6003500); the unread scalar goes."""
    path = tmp_path / "k.tl"
    path.write_text("""\\
def fn(a: f32) -> f32:
    return 2.0

@kernel
def k(x: f32[N], BLOCK: const = 64):
    with grid(cdiv(N, BLOCK), threads=64) as bx:
        t = fragment(f32[BLOCK])
        for i in parallel(BLOCK):
            t[i] = fn(1.0)
        copy(t, x[bx * BLOCK])
""")
    source, _ = runner.build(str(path), arch="sm_80")
    assert "fn_0_return" in source and "fn_0_a" not in source
