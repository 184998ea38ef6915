"""bench/queue/D2_w4a16_tma_ring.sh without a GPU (#18): its bench/lowbit.py call parses and names
variants that exist, each "options" row's switches exist on their modules and are set only while
its launchers compile, and the answer step turns lowbit's printed rows into the promised ANSWER
lines (a failed TMA row says to keep the option off)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(Path(__file__).parent))
import lowbit  # noqa: E402
from test_lowbit_queue import _answer_step, _lowbit_commands, _row  # noqa: E402

SCRIPT = ROOT / "bench" / "queue" / "D2_w4a16_tma_ring.sh"


def test_the_call_names_real_variants_within_30_seconds():
    text = SCRIPT.read_text()
    assert "# limit: 30\n" in text
    (argv,) = _lowbit_commands(text)
    args = lowbit.parser().parse_args(argv)
    labels = {v[0]: v for v in lowbit.W4_DECODE_VARIANTS}
    only = args.only.split(",")
    assert args.w4a16 and args.quick and set(only) <= set(labels), set(only) - set(labels)
    options = {labels[x][2]["options"] for x in only if "options" in labels[x][2]}
    assert options == {"tma", "tma-1", "tma-mma", "forms", "ring-split"}


def test_an_options_row_sets_its_switches_only_while_it_compiles():
    from tlc.codegen import copies
    from tlc.schedule import dequant_ring, ring_split_k
    seen = lowbit._switched("tma", lambda: dequant_ring.DEQUANT_RING)
    assert seen is True and dequant_ring.DEQUANT_RING is False
    assert lowbit._switched("forms", lambda: (copies.ROUND_STEPS, copies.CLIP_ROWS_MAX)) == (True, 8)
    assert (copies.ROUND_STEPS, copies.CLIP_ROWS_MAX) == (False, 0)
    assert lowbit._switched("ring-split", lambda: ring_split_k.RING_SPLIT) is True and not ring_split_k.RING_SPLIT
    assert lowbit._switched("tma-1", lambda: (dequant_ring.DEQUANT_RING, dequant_ring.DEQUANT_BLOCKS)) == (True, 1)
    assert dequant_ring.DEQUANT_BLOCKS == 3
    from tlc.schedule import operand_layout
    assert lowbit._switched("tma-mma", lambda: operand_layout.WGMMA_REGISTER_A_MAX) == 32
    assert operand_layout.WGMMA_REGISTER_A_MAX == 0
    assert lowbit._switched(None, lambda: 3) == 3


def test_the_answers(tmp_path):
    rows = [_row(1, "w4a16", 36.0, 1.1), _row(1, "w4a16 TMA ring", 30.0, 1.3), _row(1, "F.linear f16", 39.0, 1.0),
            _row(1, "w4a16 split-K 4", 26.0, 1.5), _row(1, "w4a16 TMA ring split-K 4", 20.0, 1.95),
            _row(16, "w4a16 split-K 2", 27.0, 1.3),
            lowbit.w4a16_line({"row": "decode M=16 N=8192 K=8192 g128", "variant": "w4a16 TMA ring",
                               "error": "max error 3.2 units"})]
    out = Path("/tmp/D2_tma.txt")
    out.write_text("\n".join(rows) + "\n")
    try:
        res = subprocess.run([sys.executable, "-"], input=_answer_step(SCRIPT.read_text()), text=True,
                             capture_output=True, cwd=ROOT, check=True)
    finally:
        out.unlink()
    lines = [x for x in res.stdout.splitlines() if x.startswith("ANSWER:")]
    assert lines[0] == ("ANSWER: TMA ring decode M=1 N=8192 K=8192 g128: w4a16 TMA ring / w4a16 0.833 "
                        "(30.0 vs 36.0 us), "
                        "w4a16 TMA ring split-K 4 / w4a16 split-K 4 0.769 (20.0 vs 26.0 us); best w4a16 TMA ring "
                        "split-K 4 20.0 us = 1.95x F.linear (39.0 us)")
    assert lines[1].startswith("ANSWER: TMA ring decode M=16 N=8192 K=8192 g128: no pair timed; best w4a16 split-K 2")
    assert lines[2].startswith("ANSWER: TMA ring FAILED its check, keep DEQUANT_RING off: decode M=16")
