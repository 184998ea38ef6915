"""flash_fwd at other constants, or from another .tl file, beside cuDNN in one process: the tool
of bench/queue scripts that ask which tile or which schedule of the forward is faster (#19).

Every contender's O is checked first against the f32 reference (bench/attention.py's, the same
16 units); a wrong one is reported and never timed.  Then all the right ones are timed
alternately (tlc.timing.compare: median, L2 flushed before each run).  One line a contender:
its label, TFLOP/s (4 B H S SK D, halved when causal), and the ratio to cuDNN.

    sys.path.insert(0, "bench"); from fwd_variants import run
    run(("float16", 4, 32, 32, 4096, 4096, 128, False),          # dtype, B, H, HK, S, SK, D, causal
        [("std", None, {}), ("bn176", None, {"BN": 176, "STAGES": 2}),
         ("mine", "/tmp/attention.tl", {})])                       # (label, .tl file or std, constants)

    TLC_TREE=bench/.old_F python3 -c '...'   # the same with the tlc of bench/.old_F (its own process)

A variant may carry a fourth element, compiler switches ({"tlc.schedule.warpspec.DYNAMIC_TILES":
True}): its kernel then comes from a copy of its file with flash_fwd renamed flash_fwd_LABEL (a
cache entry of its own: the program cache keys a kernel by its text, not by the switches), its
first call (the check, which compiles it) made with the switches set, as bench/attention_bwd.py's
--flags do.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# TLC_TREE: another checkout's tlc, templates and stdlib (an A/B's tree before a change), run in a
# process of its own beside this tree's; its kernels compile from its own sources
sys.path.insert(0, os.environ.get("TLC_TREE") or str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))


def run(shape, variants, *, cudnn: bool = True, min_ms: float = 100.0) -> list[dict]:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend

    import tlc
    from attention import forward_inputs, vendor
    from tlc.timing import Checked, compare, verify

    dtype, B, H, HK, S, SK, D, causal = shape
    t0 = time.time()
    q, k, v, scale, ref, tol = forward_inputs(torch, F, (*shape, {}))
    mods: dict = {}
    checks, fns = {}, {}
    for label, path, consts, *switches in variants:
        switches = switches[0] if switches else {}
        if switches:
            kernel = getattr(renamed(path, label), f"flash_fwd_{label}")
        else:
            kernel = (mods.get(path) or mods.setdefault(path, tlc.load(path or "std.attention", target="cuda"))).flash_fwd
        o = torch.empty_like(q)
        lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)

        def fn(kernel=kernel, o=o, lse=lse, consts=consts):
            kernel(q, k, v, o, lse, scale, CAUSAL=causal, **consts)
        fns[label] = fn
        checks[label] = Checked(lambda fn=fn, switches=switches: switched(fn, switches), ref, out=o, **tol)
    if cudnn:
        fns["cudnn"] = vendor(torch, F, SDPBackend.CUDNN_ATTENTION, q, k, v, scale, causal)
        checks["cudnn"] = Checked(fns["cudnn"], ref, **tol)
    verdicts = {}
    for label, c in checks.items():
        try:
            verdicts[label] = verify(c)
        except Exception as e:  # a build or launch that fails: said, and the rest go on
            verdicts[label] = type("V", (), {"ok": False, "why": f"{type(e).__name__}: {e}"})()
    ms = compare({lb: f for lb, f in fns.items() if verdicts[lb].ok}, min_ms=min_ms)
    flops = 4.0 * B * H * S * SK * D * (0.5 if causal else 1.0)
    out = []
    base = flops / ms["cudnn"] / 1e9 if "cudnn" in ms else None
    name = f"{dtype} B={B} H={H} HK={HK} S={S} SK={SK} D={D}{' causal' if causal else ''}"
    for label, verdict in verdicts.items():
        rec = {"shape": name, "label": label}
        if verdict.ok:
            rate = flops / ms[label] / 1e9
            rec.update(ms=ms[label], rate=rate, of_cudnn=rate / base if base else None)
            print(f"{name:48} {label:14} {ms[label] * 1e3:9.1f} us {rate:7.1f} TFLOP/s"
                  + (f"  {rate / base:.3f}x cuDNN" if base else ""), flush=True)
        else:
            rec["error"] = verdict.why
            print(f"{name:48} {label:14} WRONG or failed: {verdict.why}", flush=True)
        out.append(rec)
    print(f"  ({time.time() - t0:.1f} s)", flush=True)
    del q, k, v, ref
    torch.cuda.empty_cache()
    return out


def renamed(path, label: str, target: str = "cuda"):
    """`path` (None: std.attention) copied with flash_fwd renamed flash_fwd_LABEL, loaded."""
    import tempfile

    import tlc
    src = Path(path or ROOT / "stdlib" / "attention.tl").read_text()
    assert "def flash_fwd(" in src
    copy = Path(tempfile.mkdtemp(prefix="fwd_variants_")) / f"{label}.tl"
    copy.write_text(src.replace("def flash_fwd(", f"def flash_fwd_{label}("))
    return tlc.load(str(copy), target=target)


def switched(fn, switches: dict):
    """fn() with each "module.NAME" of `switches` set to its value, restored after."""
    import importlib

    from switches import switched as setting
    settings = []
    for where, value in switches.items():
        module, _, name = where.rpartition(".")
        if not hasattr(importlib.import_module(module), name):
            raise SystemExit(f"fwd_variants: {module} has no switch {name}")
        settings.append((module, name, value))
    with setting(settings):
        return fn()
