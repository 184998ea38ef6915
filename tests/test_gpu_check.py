"""scripts/gpu-check's batch mode: a queue of scripts run in name order, each under its own
`# limit:`, its output in $OUT/<name>.txt, a line each in $OUT/batch.txt, and the scripts that
would pass BATCH_LIMIT left unstarted (the device machine stops a command at 600 s)."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_batch_runs_each_script_under_its_limit_and_skips_what_would_pass_the_budget(tmp_path):
    queue, out, bin_ = tmp_path / "queue", tmp_path / "out", tmp_path / "bin"
    queue.mkdir(), bin_.mkdir()
    (bin_ / "nvidia-smi").write_text("#!/bin/sh\necho 'NVIDIA H200'\n")  # no GPU here
    (bin_ / "nvidia-smi").chmod(0o755)
    (queue / "a_first.sh").write_text("# limit: 20\necho first; echo to-stderr >&2\n")
    (queue / "b_hangs.sh").write_text("# limit: 1\nsleep 30\n")
    (queue / "c_fails.sh").write_text("# limit: 20\necho failing; exit 3\n")
    (queue / "d_too_long.sh").write_text("# limit: 500\necho never\n")
    env = {**os.environ, "OUT": str(out), "BATCH_LIMIT": "100", "PATH": f"{bin_}:{os.environ['PATH']}"}
    res = subprocess.run(["bash", str(ROOT / "scripts" / "gpu-check"), "batch", str(queue)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    lines = (out / "batch.txt").read_text().splitlines()
    assert re.fullmatch(r"a_first: exit 0 in [01] s", lines[0]), lines  # whole seconds: bash's SECONDS
    assert re.fullmatch(r"b_hangs: exit 124 \(timed out\) in [12] s", lines[1]), lines
    assert re.fullmatch(r"c_fails: exit 3 in [01] s", lines[2]), lines
    assert lines[3] == "d_too_long: not started (500 s would pass BATCH_LIMIT)"
    assert (out / "a_first.txt").read_text() == "first\nto-stderr\n"
    assert not (out / "d_too_long.txt").exists()
    assert (out / "gpu.txt").read_text() == "NVIDIA H200\n"
