"""A staged buffer used after its pipelined loop (schedule/last_stage.py): the interpreter runs
the loop plainly, so the buffer then holds the last iteration's tile; the cp.async ring keeps
`stages` copies and names stage 0 after the loop, so it copies stage (n - 1) % stages there
once drained.  Before, the generated code read stage 0 whenever (n - 1) % stages != 0.

The IR's choice (which loops keep which buffers), the interpreter against NumPy, the generated
C for sm_80 and sm_90a (where the warp-specialization pass leaves such a loop to the ring)
and nvcc with warnings as errors; tests/gpu/test_stage_after_loop_gpu.py runs it."""
from __future__ import annotations

import pathlib
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "schedule"))
from test_warpspec_pass import READS_A_STAGE_AFTER  # noqa: E402

import tlc  # noqa: E402
from nvcc import compile_device  # noqa: E402
from tlc import runner  # noqa: E402
from tlc.api import compile_source  # noqa: E402

SMALL = {"BM": 64, "BN": 128, "BK": 32, "THREADS": 128}  # the grid's blocks each read a 64x32 tile of A
_AFTER = "        copy(acc, C[by * BM, bx * BN])\n"
_READ = "        for i, j in parallel(BM, BK):\n            D[by * BM + i, bx * BN + j] = As[i, j]\n"
assert READS_A_STAGE_AFTER.count(_AFTER + _READ) == 1

_WITH_E = READS_A_STAGE_AFTER.replace("D: T[M, N],", "D: T[M, N], E: T[M, N],")
_ACC2 = "        acc2 = fragment(f32[BM, BN])\n        clear(acc2)\n"

# the same read through a copy; after a partial write; through a gemm of As and Bs and a
# reduce of As into E (D then as before); after a second pipelined loop over one tile fewer
# that stages As again (empty when n == 1) and multiplies by Bs, which that loop does not
# stage, so Bs is read after the first loop
VARIANTS = {
    "element": READS_A_STAGE_AFTER,
    "copy": READS_A_STAGE_AFTER.replace(_READ, "        copy(As, D[by * BM, bx * BN])\n"),
    "write": READS_A_STAGE_AFTER.replace(_READ, "        for i, j in parallel(BM, 8):\n            As[i, j] = T(0)\n"
                                         + _READ),
    "gemm": _WITH_E.replace(_READ, _ACC2 + "        gemm(As, Bs, acc2)\n        copy(acc2, E[by * BM, bx * BN])\n"
                            + _READ),
    "reduce": _WITH_E.replace(_READ, "        rs = fragment(f32[BM])\n        reduce_sum(As, rs, dim=1)\n"
                              "        for i in parallel(BM):\n            E[by * BM + i, bx * BN] = T(rs[i])\n" + _READ),
    "second_loop": _WITH_E.replace(
        _READ, _ACC2 + "        for k2 in pipelined(cdiv(K, BK) - 1, stages=stages):\n"
        "            copy(A[by * BM, k2 * BK], As)\n            gemm(As, Bs, acc2)\n"
        "        copy(acc2, E[by * BM, bx * BN])\n" + _READ),
}


def _write(tmp_path, name: str) -> pathlib.Path:
    path = tmp_path / f"stage_after_{name}.tl"
    path.write_text(VARIANTS[name])
    return path


def _loops(kernel):
    return [s for s in kernel.body if getattr(s, "kind", None) == "pipelined"]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_buffers_read_after_a_ring_keep_its_last_stage(tmp_path, arch):
    kept = {name: [loop.keep_last_stage for loop in _loops(tlc.load(str(_write(tmp_path, name)), target="cpu")
                                                          .kernels["matmul"].scheduled({}, arch))]
            for name in VARIANTS}
    assert kept == {"element": [("As",)], "copy": [("As",)], "write": [("As",)], "gemm": [("As", "Bs")],
                    "reduce": [("As",)], "second_loop": [("As", "Bs"), ("As",)]}
    gemm = tlc.load(str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "gemm.tl"), target="cpu")
    assert [loop.keep_last_stage for loop in _loops(gemm.kernels["matmul"].scheduled({}, "sm_80"))] == [()]


NESTED = """@kernel
def nested(A: f16[M, K], D: f16[M, K], BM: const = 64, BK: const = 32, stages: const = 3):
    with grid(cdiv(M, BM), threads=128) as bx:
        As = shared(f16[BM, BK])
        fill(As, 0)
        for r in range(2):
            for i, j in parallel(BM, BK):
                D[bx * BM + i, r * BK + j] = As[i, j]
            for k in pipelined(cdiv(K, BK), stages=stages):
                copy(A[bx * BM, k * BK], As)
                for i, j in parallel(BM, BK):
                    D[bx * BM + i, k * BK + j] = As[i, j] * f16(2)
"""


@pytest.mark.parametrize("reads_before", [True, False])
def test_a_read_before_the_ring_in_an_enclosing_loop_runs_after_it(tmp_path, reads_before):
    """The outer loop's next iteration reads what the ring left: its last tile."""
    path = tmp_path / "nested.tl"
    path.write_text(NESTED if reads_before else NESTED.replace("r * BK + j] = As[i, j]", "r * BK + j] = f16(1)"))
    kernel = tlc.load(str(path), target="cpu").kernels["nested"].scheduled({}, "sm_80")
    loop = next(s for s in kernel.body[-1].body if getattr(s, "kind", None) == "pipelined")
    assert loop.keep_last_stage == (("As",) if reads_before else ())
    text = runner.build(str(path))[0]
    assert ("tl::copy_stage_to_first<half, 2048, 128>(As, (tl_n - 1) % 3);" in text) == reads_before


def test_emit_ir_says_which_buffers_keep_the_last_stage(tmp_path):
    text = runner.build(str(_write(tmp_path, "element")), emit="ir")[0]
    assert "for k in pipelined(0, (K - 1) // 64 + 1, 1, stages=3):  # after it As: the last stage" in text


def _expected(A, B, n, variant):
    """(C, D, E) as the language says: D the last tile of A each block read, after the variant's work."""
    M, N = A.shape[0], B.shape[1]
    BM, BN, BK = SMALL["BM"], SMALL["BN"], SMALL["BK"]
    Af, Bf = A.astype(np.float32), B.astype(np.float32)
    C = (Af @ Bf).astype(np.float16)
    last = n - 1 if variant != "second_loop" or n == 1 else n - 2
    D, E = np.zeros((M, N), np.float16), np.zeros((M, N), np.float16)
    A_last = Af[:, (n - 1) * BK:n * BK]
    for bx in range(N // BN):
        D[:, bx * BN:bx * BN + BK] = A[:, last * BK:(last + 1) * BK]
        B_last = Bf[(n - 1) * BK:n * BK, bx * BN:(bx + 1) * BN]
        if variant == "second_loop":
            E[:, bx * BN:(bx + 1) * BN] = (Af[:, :(n - 1) * BK] @ np.tile(B_last, (n - 1, 1))).astype(np.float16)
        elif variant == "gemm":
            E[:, bx * BN:(bx + 1) * BN] = (A_last @ B_last).astype(np.float16)
        elif variant == "reduce":
            E[:, bx * BN] = A_last.sum(axis=1).astype(np.float16)
    if variant == "write":
        for bx in range(N // BN):
            D[:, bx * BN:bx * BN + 8] = 0
    return C, D, E


def run_case(module, variant: str, n: int, stages: int, seed: int = 0):
    """Runs `variant` of matmul for K = n tiles; returns (got, want) pairs of (C, D, E)."""
    rng = np.random.default_rng(seed)
    M, N, K = 2 * SMALL["BM"], 2 * SMALL["BN"], n * SMALL["BK"]
    A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    C, D, E = (np.zeros((M, N), np.float16) for _ in range(3))
    args = (A, B, C, D, E) if "E: T[M, N]" in VARIANTS[variant] else (A, B, C, D)
    module.matmul(*args, stages=stages, **SMALL)
    want = _expected(A, B, n, variant)
    return (C, D, E), want


def check(got, want, variant: str) -> None:
    C, D, E = got
    wC, wD, wE = want
    np.testing.assert_allclose(C.astype(np.float32), wC.astype(np.float32), rtol=2e-2, atol=2e-2)
    np.testing.assert_array_equal(D, wD)
    if "E: T[M, N]" in VARIANTS[variant]:
        np.testing.assert_allclose(E.astype(np.float32), wE.astype(np.float32), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("n, stages", [(1, 2), (2, 2), (2, 3), (4, 3)])
def test_the_interpreter_reads_the_last_tile(variant, n, stages):
    module = compile_source(VARIANTS[variant], target="cpu", path=f"{variant}.tl")
    got, want = run_case(module, variant, n, stages)
    check(got, want, variant)


def _ring_tail(text: str) -> str:
    """The generated matmul from its ring's drain to the first use of As after it."""
    body = text[text.index("__global__"):]
    start = body.index("tl::cp_async_wait<0>();")
    return body[start:body.index("As", body.index("__syncthreads();", start) + 20)]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_ring_copies_the_last_stage_into_the_first_after_draining(tmp_path, arch):
    text = runner.build(str(_write(tmp_path, "element")), arch=arch, defines=["stages=3"])[0]
    tail = _ring_tail(text)
    fence = r"\s*tl::fence_proxy_async\(\);\n" if arch == "sm_90a" else ""  # the loop's wgmma reads As
    # not when the loop was empty: the buffer holds what it held, as in the interpreter
    assert re.search(r"if \(tl_n > 0 && \(tl_n - 1\) % 3 != 0\) \{[^\n]*\n\s*"
                     r"tl::copy_stage_to_first<half, 8192, 256>\(As, \(tl_n - 1\) % 3\);\n" + fence +
                     r"\s*__syncthreads\(\);", text), tail


def test_a_wgmma_after_the_loop_reads_the_copied_stage_through_a_proxy_fence(tmp_path):
    text = runner.build(str(_write(tmp_path, "gemm")), arch="sm_90a")[0]
    assert re.search(r"tl::copy_stage_to_first<half, 16384, 256>\(Bs, \(tl_n - 1\) % 3\);\n"
                     r"\s*tl::fence_proxy_async\(\);\n\s*__syncthreads\(\);", text)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
# the default run builds the plain read and the nested loop; the other variants differ only in
# the statement after the loop (the IR test above covers their choice), so theirs are slow
@pytest.mark.parametrize("variant", [pytest.param(v, marks=[] if v in ("element", "nested") else [pytest.mark.slow])
                                     for v in [*VARIANTS, "nested"]])
def test_it_compiles_with_werror(tmp_path, arch, variant):
    path = tmp_path / f"{variant}.tl"
    path.write_text(VARIANTS.get(variant, NESTED))
    defines = [f"{k}={v}" for k, v in SMALL.items()] if variant in VARIANTS else []
    compile_device(runner.build(str(path), arch=arch, defines=defines)[0], arch, tmp_path)
