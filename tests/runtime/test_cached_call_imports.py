"""`import tlc` and a new process's call of a kernel from the caches import the runtime and not
the compiler's front end (issue #15, time to first result): no parser (nor Lark), no type
checker, no scheduler, no code generator (nor Jinja2), no config.json reader, no profiler.
Those were half of `import tlc` (after NumPy: 489.8 M -> 238.7 M instructions by callgrind, 83 ->
48 ms best of 7 here); a call served by the checked-module cache, its launch memo and the
program cache needs none of them.  The GPU is
stood in for as bench/first_cached_host.py stands it in (CuPy, PyTorch and the driver answer as
an H200 would); one process fills the caches, another is checked."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import first_cached_host  # noqa: E402

FRONT_END = ("tlc.parser", "tlc.typecheck", "lark", "tlc.schedule", "tlc.codegen", "jinja2", "tlc.config_table",
             "tlc.profiling", "tlc.tune", "tlc.interp", "tlc.generated")

CHECK = first_cached_host.STAND_IN + r"""
import json, sys
FRONT_END = tuple(json.loads(sys.argv[-1]))
def front_end():
    return sorted(m for m in sys.modules if m.startswith(FRONT_END))
import tlc
after_import = front_end()
from tlc.runtime import driver_api, tensormap
driver_api.libcuda = tensormap.libcuda = lambda: _LibCuda()  # tensormap holds its own name
before = set(sys.modules)
mod = tlc.load("std.gemm", target="cuda")
mod.matmul(A, A, C)
print(json.dumps({"import": after_import, "call": front_end(), "launches": len(_Function.launches),
                  "decoded": "fn" in vars(mod.matmul),
                  "call_imported": sorted(m for m in set(sys.modules) - before if m.startswith("tlc"))}))
"""


def run(code: str, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_a_call_from_the_caches_imports_no_front_end(tmp_path):
    env = {**os.environ, "TLC_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    filled = run(first_cached_host.FILL, env)  # parses, checks, schedules, generates (NVRTC stood in)
    assert filled.returncode == 0, filled.stderr[-3000:]
    done = run(CHECK, env, json.dumps(FRONT_END))
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    # the call was served from the caches (one launch, the signature not decoded) ...
    assert found["launches"] == 1 and found["decoded"] is False
    # ... and neither `import tlc` nor the call imported the front end
    assert found["import"] == [] and found["call"] == []
    # the call itself imports nothing of tlc: what every cached call needs is imported with tlc,
    # outside overheads.py's clock, which starts after `import tlc` (a program entry's classes
    # decoded in the clock once imported ir.warpspec there: 5-9 ms); the GPU's target is known
    # from `targets.OWN_TARGETS` without its module (importing tlc.targets.sm90a: ~0.1 ms)
    assert found["call_imported"] == []


def test_the_front_end_is_there_when_a_text_is_checked():
    """The same modules, imported where they are needed: a check of a text (not from the cache)."""
    code = ("import json, sys, tlc\nbefore = sorted(m for m in sys.modules if m.startswith(('tlc.parser', 'tlc.typecheck')))\n"
            "mod = tlc.compile_source('@kernel\\ndef k(x: f32[4]):\\n    with grid(1, threads=4) as bx:\\n"
            "        for i in parallel(4):\\n            x[i] = 1.0\\n', target='cpu')\n"
            "print(json.dumps([before, 'tlc.parser' in sys.modules, 'tlc.typecheck' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [[], True, True]
