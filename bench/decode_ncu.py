"""Issue #19: bench/decode_paged.py's contenders as Nsight Compute sees them (DRAM and L2 traffic,
issue, stalls), to say why flash_decode_paged trails flash_decode.  Each contender's output is
checked first (decode_paged.contenders: 16 f16 units of the f32 reference), then each runs once
between cudaProfilerStart / Stop, which `ncu --profile-from-start off` profiles:

    ncu --profile-from-start off --clock-control none --section ... python3 bench/decode_ncu.py [--rows mha]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import tlc  # noqa: E402
from tlc.timing import verify  # noqa: E402

from decode_paged import contenders  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="mha")
    ap.add_argument("--only", default="contig,paged,inorder,hnd,cudnn", help="contenders to profile, in this order")
    args = ap.parse_args(argv)
    import torch
    import torch.nn.functional as F

    mod = tlc.load(str(ROOT / "stdlib" / "attention.tl"), target="cuda")
    for case in args.rows.split(","):
        checked, _ = contenders(torch, F, mod, case)
        names = args.only.split(",")
        for name in names:
            v = verify(checked[name])
            print(f"{case} {name}: {'ok' if v.ok else 'WRONG ' + v.why}", flush=True)
            if not v.ok:
                return 1
        for _ in range(2):
            for name in names:
                checked[name].run()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        for name in names:
            torch.cuda.nvtx.range_push(f"{case}:{name}")
            checked[name].run()
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        del checked
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
