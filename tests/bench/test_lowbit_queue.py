"""bench/queue/D_w4a16_*.sh without a GPU (#18): every bench/lowbit.py command line in them
parses, its variant labels exist, its compiler switches land on their modules, and the register-A
script's answer step reads lowbit's printed rows (w4a16_line's format) into the ANSWER lines it
promises (the copies, ring-split and TMA-ring scripts were answered in session 28 and removed; the
ring split itself, RING_SPLIT, and the copy forms with their GPU tests' script in session 29)."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import lowbit  # noqa: E402

SCRIPTS = sorted((ROOT / "bench" / "queue").glob("D_w4a16_*.sh"))


def _lowbit_commands(text: str) -> list[list[str]]:
    """The argument lists of the script's bench/lowbit.py calls (continued lines joined)."""
    joined = text.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        if "bench/lowbit.py" in line and not line.lstrip().startswith("#"):
            words = shlex.split(line.split("|")[0])
            out.append(words[words.index("bench/lowbit.py") + 1:])
    return out


def _answer_step(text: str) -> str:
    """The script's Python answer step (its heredoc)."""
    return re.search(r"python3 - <<'PY'\n(.*?)\nPY\n", text, re.S).group(1)


def _row(M: int, variant: str, us: float, vs: float) -> str:
    return lowbit.w4a16_line({"row": f"decode M={M} N=8192 K=8192 g128", "variant": variant, "ms": us / 1e3,
                              "tflops": 1.0, "weight_of_copy": 0.3, "vs_torch": vs})


def test_each_script_fits_forty_seconds():
    limits = [int(re.search(r"^# limit: (\d+)$", p.read_text(), re.M).group(1)) for p in SCRIPTS]
    assert len(SCRIPTS) == 2 and max(limits) <= 40, limits


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_lowbit_call_parses_and_names_real_variants(script, monkeypatch):
    from tlc.schedule import operand_layout
    monkeypatch.setattr(operand_layout, "WGMMA_REGISTER_A_MAX", operand_layout.WGMMA_REGISTER_A_MAX)  # restored after
    labels = {v[0] for v in lowbit.W4_DECODE_VARIANTS}
    for argv in _lowbit_commands(script.read_text()):
        args = lowbit.parser().parse_args(argv)
        assert args.w4a16 and args.quick
        assert set(args.only.split(",")) <= labels, set(args.only.split(",")) - labels
        lowbit.apply_switches(args)
        if args.option:
            assert operand_layout.WGMMA_REGISTER_A_MAX == 32


def test_the_register_a_answers(tmp_path):
    mma = (ROOT / "bench" / "queue" / "D_w4a16_mma_register_a.sh").read_text()
    (tmp_path / "D_mma.txt").write_text(_row(16, "w4a16 split-K 2", 24.0, 1.46) + "\n")
    (tmp_path / "D_mma_off.txt").write_text("\n".join([
        _row(16, "w4a16 split-K 2", 26.6, 1.35), _row(16, "w4a16 split-K 2 unrolled reduce", 26.0, 1.38),
        _row(16, "F.linear f16", 36.0, 1.0)]) + "\n")
    out = subprocess.run([sys.executable, "-c", _answer_step(mma).replace("/tmp/", f"{tmp_path}/")],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.splitlines() == ["ANSWER: mma.sync register A decode M=16 N=8192 K=8192 g128 w4a16 split-K 2: "
                                "1.46x F.linear with it, 1.35x without",
                                "ANSWER: unrolled reduce decode M=16 N=8192 K=8192 g128 w4a16 split-K 2 unrolled reduce: "
                                "unrolled/std 0.977 (26.0 vs 26.6 us)"]


def test_the_flips_script_names_real_variants_and_answers(tmp_path):
    """bench/queue/V_D_flips.sh: its lowbit call parses and names variants that exist, within 40 s,
    and its answer step reads the printed rows (a row that failed its check is said so)."""
    text = (ROOT / "bench" / "queue" / "V_D_flips.sh").read_text()
    assert "# limit: 40\n" in text
    (argv,) = _lowbit_commands(text)
    args = lowbit.parser().parse_args(argv)
    assert args.w4a16 and args.quick and set(args.only.split(",")) <= {v[0] for v in lowbit.W4_DECODE_VARIANTS}
    (tmp_path / "V_D.txt").write_text("\n".join([
        _row(1, "w4a16", 24.0, 1.66), _row(1, "w4a16 gemv", 25.0, 1.6), _row(1, "F.linear f16", 40.0, 1.0),
        lowbit.w4a16_line({"row": "decode M=16 N=8192 K=8192 g128", "variant": "w4a16", "error": "wrong"}),
        _row(16, "w4a16 split-K 2", 27.0, 1.33)]) + "\n")
    out = subprocess.run([sys.executable, "-c", _answer_step(text).replace("/tmp/", f"{tmp_path}/")],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.splitlines() == [
        "ANSWER: decode M=1 N=8192 K=8192 g128: matmul_w4a16 at the TMA rule 24.0 us = 1.66x F.linear; w4a16 gemv 25.0",
        "ANSWER: decode M=16 N=8192 K=8192 g128: the TMA rule's row did not print (failed its check or timed out)"]


def test_the_split_ring_answers(tmp_path):
    """bench/queue/D_w4a16_split_ring.sh's answer step: each M's variants against its rule, the
    split's ratio at both Ms (a row that did not print is left out), the ring probe's rows."""
    from w4a16_probe import RING_PROBES
    text = (ROOT / "bench" / "queue" / "D_w4a16_split_ring.sh").read_text()
    assert "bench/w4a16_probe.py --ring" in text
    (tmp_path / "D_split.txt").write_text("\n".join([
        _row(1, "w4a16", 24.2, 1.65), _row(1, "w4a16 TMA split", 13.3, 3.0), _row(1, "F.linear f16", 40.0, 1.0),
        _row(16, "w4a16", 25.0, 1.44), _row(16, "w4a16 TMA split mma.sync stages=2", 20.0, 1.8)]) + "\n")
    (tmp_path / "D_ring.txt").write_text("".join(f"{label:<44} {us:8.1f} us  {gbs:7.0f} GB/s of int4 weight\n"
                                                 for (label, _, _), us, gbs in zip(RING_PROBES, (9.5, 9.0), (3532, 3728))))
    out = subprocess.run([sys.executable, "-c", _answer_step(text).replace("/tmp/", f"{tmp_path}/")],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.splitlines() == [
        "ANSWER: M=1 w4a16 TMA split: 13.3 us, 3.00x F.linear, 0.550 of the rule's 24.2 us",
        "ANSWER: DEQUANT_SPLIT at M=1: split/rule 0.550 (13.3 vs 24.2 us)",
        "ANSWER: M=16 w4a16 TMA split mma.sync stages=2: 20.0 us, 1.80x F.linear, 0.800 of the rule's 25.0 us",
        "ANSWER: ring probe run ring probe BK=256 stages=6: 9.5 us, 3532 GB/s of int4 weight",
        "ANSWER: ring probe run ring probe BK=512 stages=4: 9.0 us, 3728 GB/s of int4 weight"]
