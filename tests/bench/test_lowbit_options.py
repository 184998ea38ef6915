"""bench/lowbit.py's "options" rows without a GPU (#18): each W4_OPTION_SETS entry's switches
exist on their modules and are set only while its launchers compile (session 28's H200 timed the
TMA ring rows so: bench/results/q_D2_w4a16_tma_ring-h200-twentyeighth.txt)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import lowbit  # noqa: E402


def test_an_options_row_sets_its_switches_only_while_it_compiles():
    from tlc.schedule import dequant_ring
    seen = lowbit._switched("tma", lambda: dequant_ring.DEQUANT_RING)
    assert seen is True and dequant_ring.DEQUANT_RING is False
    assert lowbit._switched("tma-1", lambda: (dequant_ring.DEQUANT_RING, dequant_ring.DEQUANT_BLOCKS)) == (True, 1)
    assert dequant_ring.DEQUANT_BLOCKS == 3
    assert lowbit._switched("tma-split", lambda: dequant_ring.DEQUANT_SPLIT) is True and not dequant_ring.DEQUANT_SPLIT
    from tlc.schedule import operand_layout
    assert lowbit._switched("tma-mma", lambda: operand_layout.WGMMA_REGISTER_A_MAX) == 32
    assert operand_layout.WGMMA_REGISTER_A_MAX == 0
    assert lowbit._switched(None, lambda: 3) == 3
