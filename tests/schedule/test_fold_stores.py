"""schedule/fold_stores.py: a fragment copied out right after the loop that computes it is stored
a run at a time inside the loop, where that cannot change what is stored."""
from __future__ import annotations

import numpy as np
import pytest

from tlc import ir
from tlc.interp import run_kernel
from tlc.ir import print_kernel

from kit import scheduled

TEMPLATE = """
@kernel
def k(X: f16[M, N], W: f16[M, N], Y: f16[M, N]):
    with grid(cdiv(N, 256), M, threads=64) as (bx, r):
        t = fragment(f32[1, 256])
        u = fragment(f32[1, 256])
        copy(X[r, bx * 256], t)
        for i, j in parallel(1, 256):
            {body}
        copy(t, Y[r, bx * 256])
"""


def kernel(body: str, target: str = "sm_90a") -> ir.Kernel:
    return scheduled(TEMPLATE.format(body=body), "k", target=target)


def folded(k: ir.Kernel) -> bool:
    loop = next(s for s in k.body if isinstance(s, ir.Parallel))
    return [c.dst.name for c in loop.stores] == ["Y"] and not any(isinstance(s, ir.Copy) and s.dst.name == "Y"
                                                                for s in k.body)


@pytest.mark.parametrize("body, fold", [
    ("t[i, j] = t[i, j] * 2.0", True),                       # each register written at its own index
    ("t[i, j] = t[i, j] + f32(W[r, bx * 256 + j])", True),   # reads another tensor
    ("t[i, j] = t[i, j] + f32(Y[r, bx * 256 + j])", False),  # reads the tensor the copy writes
    ("Y[r, bx * 256 + j] = f16(t[i, j])", False),             # writes it
    ("t[i, 255 - j] = t[i, j] * 2.0", False),                # writes another register of the fragment
])
def test_what_is_folded(body, fold):
    assert folded(kernel(body)) is fold


def test_the_copy_is_shown_under_the_loop():
    text = print_kernel(kernel("t[i, j] = t[i, j] * 2.0"))
    assert ("    t[i, j] = t[i, j] * 2.0\n"
            "  copy t -> Y[r, bx * 256]<1, 256>  # folded into the loop above: a run at a time, as it finishes each\n"
            ) in text


def test_a_host_target_keeps_the_copy_after_the_loop():
    assert not folded(kernel("t[i, j] = t[i, j] * 2.0", target="cpu"))


def test_a_loop_in_another_layout_than_the_fragment_keeps_it():
    # the loop runs in u's layout, which the transposed read gives: t is exchanged around it
    src = """
@kernel
def k(X: f32[N, N], Y: f32[N, N]):
    with grid(1, threads=64) as bx:
        t = fragment(f32[64, 64])
        copy(X[0, 0], t)
        for i, j in parallel(64, 64):
            t[i, j] = t[j, i] * 2.0
        copy(t, Y[0, 0])
"""
    k = scheduled(src, "k", target="sm_90a")
    loop = next(s for s in k.body if isinstance(s, ir.Parallel))
    assert loop.exchange and not loop.stores


def test_the_folded_kernel_computes_the_same_on_the_interpreter():
    k = kernel("t[i, j] = t[i, j] * 2.0 + f32(W[r, bx * 256 + j])")
    assert folded(k)
    rng = np.random.default_rng(1)
    x, w = (rng.standard_normal((3, 300)).astype(np.float16) for _ in range(2))
    y = np.full((3, 300), np.nan, np.float16)
    run_kernel(k, {"X": x, "W": w, "Y": y})
    want = (x.astype(np.float32) * 2 + w.astype(np.float32)).astype(np.float16)
    assert np.array_equal(y, want)
