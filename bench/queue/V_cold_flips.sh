#!/bin/bash
# limit: 40
# Helper H, session 28 (#15, time to first result): the flips of H_cold_steps (bench/results/
# q_H_cold_steps-h200-twentyeighth.txt) timed again against the tree before them.  That run:
# "." (the caches' stores beside NVRTC's compile, runtime/beside.py, d2c014e) load + call median
# 946.5 ms, ".#inline" (the stores where asked for) 761.0, inline faster in both runs; so 3c51d8d
# removed beside.py (the stores inline) and 504f4b3 WARM_UP_FINDS_ARCH (".#thread": load 354.2
# against 340.1).  Here: "." (this tree) against /tmp/tlc-before-H, this tree's tlc/ with
# bench/queue/V_cold_flips.before.diff applied (beside.py and WARM_UP_FINDS_ARCH back: 3c51d8d
# and 504f4b3 undone in those four files; session 29 (H) rebased the diff onto HEAD e301a10,
# where db0eb4a had removed the one-part flag that the first diff still carried, and
# checked that it applies and that the before tree runs the stood-in cold call; the diff is
# applied by the Python below, the device having no git), 2 new processes each, alternating (each ~7 s: torch + cupy imported before
# the clock), every call's C checked against 256 before its time counts.  CPU: nothing to time
# (NVRTC stood in; the 2-core machine's imports vary more than the 14-22 ms store moved).
# Answer: per tree "load + call median, load, call", the step table and the imports by module and
# package (the import step was 250-311 ms there: which modules, for the next cut).  If "." is not slower
# than the before tree in both runs, the revert stands (RESULTS: first call = "."'s median);
# else the H200 disagrees with itself across sessions: note it and time 5 runs next session.
# Both trees hold session 29's host-side changes (the std modules' ASTs shipped, 8ce1edc: no
# parse and no Lark in this call; the targets found without importlib.metadata, 5c4df82; the
# store's encoder, 9743c65: ~-33% of the stood-in call's instructions on the CPU): "."'s median
# against session 28's 761.0 ms is what they give on the H200.  Watch the nvrtc_compile row:
# with less Python before it, the kernel's compile may now wait for the warm-up thread's NVRTC.
# Delete this script and V_cold_flips.before.diff once answered.
set -e
export PYTHONUNBUFFERED=1
rm -rf /tmp/tlc-before-H && mkdir -p /tmp/tlc-before-H
cp -r tlc grammar templates stdlib pyproject.toml /tmp/tlc-before-H/
python3 - bench/queue/V_cold_flips.before.diff /tmp/tlc-before-H <<'PY'
import re, sys, pathlib
diff, root = pathlib.Path(sys.argv[1]).read_text().splitlines(), pathlib.Path(sys.argv[2])
files, hunk = {}, None
for line in diff:
    if line.startswith("+++ "):
        name = line[6:]; files[name] = []
    elif line.startswith("@@"):
        hunk = ([], []); files[name].append(hunk)
    elif hunk is not None and line[:1] in " -+" and not line.startswith(("--- a/", "--- /dev")):
        if line[:1] in " -": hunk[0].append(line[1:])
        if line[:1] in " +": hunk[1].append(line[1:])
for name, hunks in files.items():
    path = root / name
    text = path.read_text() if path.exists() else ""
    for old, new in hunks:
        a, b = "".join(l + "\n" for l in old), "".join(l + "\n" for l in new)
        assert text.count(a) == 1, f"{name}: a hunk's text is not there once (the file changed since 504f4b3)"
        text = text.replace(a, b)
    path.write_text(text)
print("before tree:", ", ".join(files))
PY
python3 bench/first_cold_steps.py --gpu --runs 2 --tree . --tree /tmp/tlc-before-H
