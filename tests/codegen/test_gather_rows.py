"""Row gathers leading a pipelined loop (schedule/gather_rows.py): a `parallel` loop that fills
a shared tile from rows of a tensor found by index arithmetic (an implicit GEMM's im2col tile)
is a producer of the cp.async ring like a copy: its buffer staged, its 16-byte vectors issued
`stages - 1` iterations ahead (codegen/row_gathers.py gather_async).  Before, such a loop made the
whole pipelined loop a plain one, each element loaded synchronously.  On sm_90a the
gathers are the producer warpgroup's (schedule/warpspec.py): its threads move their vectors
through cp.async and arrive on the stage's full barrier as they land, the copies beside them
through the TMA, and a simple gather's rows keep their part of each index in registers over
the K loop (codegen/row_gathers.py gather_rows_kept).

Which loops are gathers (the simple form, where only the last index reads j as `a + j`, and
the general one, each element's position computed, as im2col's lowering and a masked group
gather need), the staged buffers, the cp.async ring in the generated C for sm_80 and the
warp-specialized one for sm_90a, nvcc with warnings as errors, and the interpreter, which runs
the loop as written (tests/stdlib/test_conv.py: conv2d's ring against NumPy).  tests/gpu/test_conv_gpu.py and
tests/gpu/test_views_gpu.py run the kernels on the GPU."""
from __future__ import annotations

import re

import numpy as np
import pytest

from nvcc import compile_device
from tlc import runner
from tlc.api import compile_source
from tlc.schedule import gather_rows

PORT = "tests/ports/convolution.tl"

_KERNEL = """
@kernel
def {name}(x: T[{xdims}], idx: i32[M], y: f32[M, N], w: T[N, C], T: dtype = f16, BM: const = 64, BN: const = 64,
           BK: const = 32, HALF: const = 40, stages: const = 3, THREADS: const = 128):
    with grid(cdiv(N, BN), cdiv(M, BM), threads=THREADS) as (bx, by):
        xs = shared(T[BM, BK])
        ws = shared(T[BN, BK])
        acc = fragment(f32[BM, BN])
        clear(acc)
        for k in pipelined(cdiv(C, BK), stages=stages):
            for i, j in parallel(BM, BK):
{gather}
            copy(w[bx * BN, k * BK], ws)
            gemm(xs, ws, acc, trans_b=True)
        copy(acc, y[by * BM, bx * BN])
"""
_BODIES = {  # rows picked by idx (the simple form); a column mask (the general one); j down a column (none)
    "gathered": ("R, C", "r = idx[by * BM + i]\nxs[i, j] = x[r, k * BK + j]"),
    "masked": ("R, C", "c = k * BK + j\nxs[i, j] = where(c < HALF, x[idx[by * BM + i], c], T(0))"),
    "transposed": ("C, R", "xs[i, j] = x[k * BK + j, by * BM + i]"),
}
GATHERS = "".join(_KERNEL.format(name=name, xdims=dims, gather="\n".join(" " * 16 + line for line in body.split("\n")))
                  for name, (dims, body) in _BODIES.items())


def _ir(kernel: str, arch: str = "sm_80", source: str = GATHERS) -> str:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "g.tl"
        path.write_text(source)
        return runner.build(str(path), kernels=(kernel,), arch=arch, emit="ir")[0]


def _cu(kernel: str, arch: str, source: str = GATHERS, path: str | None = None, **defines) -> str:
    import tempfile
    from pathlib import Path

    d = [f"{k}={v}" for k, v in defines.items()]
    if path is not None:
        return runner.build(path, kernels=(kernel,), arch=arch, defines=d)[0]
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "g.tl"
        p.write_text(source)
        return runner.build(str(p), kernels=(kernel,), arch=arch, defines=d)[0]


@pytest.mark.parametrize("kernel, staged", [("gathered", True), ("masked", True), ("transposed", False)])
def test_which_loops_are_gathers_and_stage_their_buffer(kernel, staged):
    """A gather's buffer is staged like a copy's; a loop whose rows are not consecutive elements
    (j reads down a column) is no gather, and the pipelined loop stays a plain one."""
    ir = _ir(kernel)
    assert bool(re.search(r"shared xs: f16\[64, 32\] @\d+ layout=\d+ B, stages=3", ir)) == staged


def test_the_simple_form_and_the_general_one():
    mod = compile_source(GATHERS, target="cpu")
    found = {}
    for name in ("gathered", "masked", "transposed"):
        k = getattr(mod, name).scheduled({})
        params, buffers = {p.name: p for p in k.params}, {b.name: b for b in k.buffers}
        loop = next(s for s in k.body if getattr(s, "kind", None) == "pipelined")
        g = gather_rows.row_gather(loop.body[0], params, buffers)
        found[name] = None if g is None else g.simple
    assert found == {"gathered": True, "masked": False, "transposed": None}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("kernel", ["gathered", "masked"])
def test_the_ring_issues_the_gather_ahead(kernel, arch, tmp_path):
    """sm_80, and sm_90a for the general form: the cp.async ring, the gather in its prologue and
    its loop.  sm_90a, the simple form: the producer warpgroup's, with w's tile through the TMA
    (and element by element where the host has no tensor map: the gather in both of the
    producer's loops), the rows' parts of the indices kept in registers over the K loop."""
    cu = _cu(kernel, arch)
    if arch == "sm_80" or kernel == "masked":
        ring = cu[cu.index("pipelined over 3 stages"):]
        if arch == "sm_90a":
            assert "tl::gemm_wgmma<" in ring
    else:
        ring = cu[cu.index("warp-specialized over 3 stages: threads 128..255 produce (cp.async row gathers and TMA)"):]
        assert "tl::tma_load_tile<" in ring and "tl::gemm_wgmma<" in ring
        assert ring.count("tl::cp_async_mbar_arrive_noinc(tl_full + tl_stage);") == 2
        assert ring.count("tl_g0_o[tl_round] = ") == 2  # the rows' offsets, before each producer loop
    assert ring.count("gather rows of x into xs: 16-byte vectors through cp.async") == 2
    assert "tl::cp_async_16_full(tl_dst" in ring and "tl::cp_async_16(tl_dst, x, 0)" in ring
    assert ("tl_off[tl_e]" in ring) == (kernel == "masked")  # the general form compares each element's position
    compile_device(cu, arch, tmp_path)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_im2col_and_the_view_copy_of_the_convolution_port_run_on_the_ring(arch, tmp_path):
    """TileLang's convolution example, `im2col` into shared and a view's copy, pipelined: both
    lowered loops are gathers (im2col's in the general form: its column splits into a kernel
    position and a channel), so the loop is a 3-stage cp.async ring."""
    cu = _cu("convolution", arch, path=PORT)
    assert cu.count("gather rows of data into data_shared") == 2
    assert cu.count("gather rows of kernel into kernel_shared") == 2
    assert "pipelined over 3 stages" in cu
    compile_device(cu, arch, tmp_path)


def test_im2col_splits_its_column_once_and_batches_its_element_loads():
    """im2col's column (k: a kernel position and a channel, two divisions by C and K) is the
    same in every row a thread gathers (THREADS a multiple of a row's vectors): it is computed
    once for the thread's 8 columns before the rows, not once an element of each row; each
    index splits into a row's part and a column's (`oy * stride` + `ky * dilation - pad`), so an
    element's offset is one addition and its bounds compares of the split sums; a vector that
    cannot move whole (C = 3: none can) loads its elements into registers, stored after every
    row's loads are issued (before: 8 dependent loads a vector, one at a time)."""
    cu = _cu("convolution", "sm_90a", path=PORT)
    ring = cu[cu.index("pipelined over 3 stages"):]
    data = ring[ring.index("gather rows of data"):ring.index("gather rows of kernel")]
    hoist, rows = data.split("for (int tl_round = 0; tl_round < 1; ++tl_round) {")
    assert hoist.count("tl::cvt<unsigned int>(C)") == 2 and "tl::cvt<unsigned int>(C)" not in rows
    assert "tl_off[tl_e] = tl_ro + tl_hco[tl_e];" in rows and "tl_hseq" in rows
    assert "tl_ev[tl_round][tl_e] = tl_ok[tl_e] ? data[tl_off[tl_e]]" in rows and "#pragma unroll 1" not in data
    assert "tl_ed[tl_round][tl_e] = tl_ev[tl_round][tl_e];" in data
    # and the flat weight's copy (a view: its column splits into (kh, kw, c) too)
    kernel = ring[ring.index("gather rows of kernel"):]
    assert "tl_hco[tl_e]" in kernel[:kernel.index("tl::cp_async_commit")]


def test_the_interpreter_runs_the_gathers_as_written():
    mod = compile_source(GATHERS, target="cpu")
    rng = np.random.default_rng(1)
    R, C, M, N = 50, 72, 70, 40  # ragged tiles: C ends inside a K tile, M and N inside theirs
    x = rng.standard_normal((R, C)).astype(np.float16)
    w = rng.standard_normal((N, C)).astype(np.float16)
    idx = rng.integers(-3, R + 3, M).astype(np.int32)  # rows outside x read as 0
    rows = np.where(((idx >= 0) & (idx < R))[:, None], x[np.clip(idx, 0, R - 1)].astype(np.float64), 0)
    for name, want in (("gathered", rows @ w.T.astype(np.float64)),
                       ("masked", np.where(np.arange(C) < 40, rows, 0) @ w.T.astype(np.float64))):
        y = np.full((M, N), np.nan, np.float32)
        getattr(mod, name)(x, idx, y, w)
        np.testing.assert_allclose(y, want, rtol=1e-2, atol=1e-2)


SCATTER = """
@kernel
def scattered(x: f16[M, N], idx: i32[M], y: f16[R, N], BM: const = 32, BN: const = 64, THREADS: const = 128):
    with grid(cdiv(N, BN), cdiv(M, BM), threads=THREADS) as (bx, by):
        xs = shared(f16[BM, BN])
        copy(x[by * BM, bx * BN], xs)
        for i, j in parallel(BM, BN):
            r = idx[by * BM + i]
            y[r, bx * BN + j] = xs[i, j]
"""


def test_a_row_scatter_stores_16_byte_vectors(tmp_path):
    """The other way (gather_rows.row_scatter): a shared tile's rows stored to rows of a tensor
    found by index arithmetic (an implicit GEMM's output tile, whose rows are pixels) are 16-byte
    stores where a row lies inside the tensor, element by element at its edge."""
    for arch in ("sm_80", "sm_90a"):
        cu = _cu("scattered", arch, source=SCATTER)
        assert "scatter rows of xs into y: 16-byte vectors" in cu
        assert "*reinterpret_cast<uint4*>(tl_row + tl_c) = *reinterpret_cast<const uint4*>(tl_src)" in cu
        compile_device(cu, arch, tmp_path)
    mod = compile_source(SCATTER, target="cpu")
    rng = np.random.default_rng(2)
    M, N, R = 45, 70, 60  # ragged tiles; N not a multiple of 8
    x = rng.standard_normal((M, N)).astype(np.float16)
    idx = rng.permutation(R + 10)[:M].astype(np.int32) - 5  # distinct rows, some outside y
    y = np.zeros((R, N), np.float16)
    mod.scattered(x, idx, y)
    want = np.zeros((R, N), np.float16)
    inside = (idx >= 0) & (idx < R)
    want[idx[inside]] = x[inside]
    np.testing.assert_array_equal(y, want)
