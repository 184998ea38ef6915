"""An `if` whose test reads only bound constants is decided when the kernel is lowered
(schedule/lower.py `_known`): only the branch taken is in the tile IR, so the blocks-per-SM
estimate counts only its scalars (std.data.permute's tile path: the element path's 9 scalars,
36 registers, had held it to 6 blocks an SM)."""
from __future__ import annotations

import numpy as np
import pytest

import tlc
from tlc.ir import print_kernel

from kit import scheduled

SRC = """
@kernel
def pick(x: f32[N], y: f32[N], MODE: const = 0, BLOCK: const = 256):
    with grid(cdiv(N, BLOCK), threads=128) as bx:
        if MODE == 0 and not MODE > 1:
            for i in parallel(BLOCK):
                y[bx * BLOCK + i] = x[bx * BLOCK + i] * 2.0
        else:
            for i in parallel(BLOCK):
                a = bx * BLOCK + i
                b = a % 7
                c = a // 7
                y[a] = x[a] + f32(b * c)
"""


def test_only_the_branch_taken_is_lowered():
    text = print_kernel(scheduled(SRC, "pick", {"MODE": 0}))
    assert " if " not in text and "let " not in text and "* 2.0" in text, text
    text = print_kernel(scheduled(SRC, "pick", {"MODE": 1}))
    assert " if " not in text and "* 2.0" not in text and "let b: i32" in text, text


def test_a_test_of_run_time_values_stays():
    text = print_kernel(scheduled(SRC.replace("MODE == 0 and not MODE > 1", "N > 5"), "pick"))
    assert "if N > 5:" in text, text


@pytest.mark.parametrize("mode", [0, 1])
def test_the_branch_taken_computes_as_written(mode):
    mod = tlc.compile_source(SRC, target="cpu", path="pick.tl")
    x = np.arange(300, dtype=np.float32)
    y = np.zeros_like(x)
    mod.pick(x, y, MODE=mode)
    a = np.arange(300)
    np.testing.assert_array_equal(y, x * 2 if mode == 0 else x + (a % 7) * (a // 7))


def test_permute_counts_the_tile_paths_scalars_only():
    from tlc import package_data

    k = scheduled(package_data.stdlib().joinpath("data.tl").read_text(), "permute", dict(T="f16", BR=32, BC=64, P0=0, P1=2, P2=1, P3=3, BLOCKS=0),
                  target="sm_90a")
    note = next(n for n in k.notes if n.startswith("blocks per SM"))
    assert "16 for scalars" in note, note  # c0, s0, b1, b0
