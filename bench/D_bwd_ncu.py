"""Helper D, session 25 (#19): bench/attention_bwd_fused.tl's backward launched twice (B=1 H=32
S=4096 D=128 f16 unless given: B H S D [det]), for Nsight Compute to profile the second launch of
its grid over key blocks (bench/queue/D_r2_ncu.sh); after them its dQ, dK, dV are checked
against std.attention's flash_bwd (itself checked against PyTorch's math backend every session)."""
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import torch  # noqa: E402

import tlc  # noqa: E402

B, H, S, D = (int(x) for x in (sys.argv[1:5] if len(sys.argv) > 4 else (1, 32, 4096, 128)))
det = len(sys.argv) > 5 and sys.argv[5] == "det"
std = tlc.load("std.attention", target="cuda")
fused = tlc.load(str(ROOT / "bench" / "attention_bwd_fused.tl"), target="cuda")
gen = torch.Generator(device="cuda").manual_seed(0)
q, k, v, do = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16, generator=gen) for _ in range(4))
o, lse = torch.empty_like(q), torch.empty(B, H, S, device="cuda", dtype=torch.float32)
scale = 1.0 / math.sqrt(D)
std.flash_fwd(q, k, v, o, lse, scale)
got = [torch.empty_like(q) for _ in range(3)]
for _ in range(2):
    fused.flash_bwd_fused(q, k, v, o, do, lse, *got, scale, DETERMINISTIC=det)
want = [torch.empty_like(q) for _ in range(3)]
std.flash_bwd(q, k, v, o, do, lse, *want, scale)
torch.cuda.synchronize()
errs = [((g.float() - w.float()).abs().max() / w.float().abs().max()).item() for g, w in zip(got, want)]
print(f"flash_bwd_fused B={B} H={H} S={S} D={D} det={det}: max |d - std| / max |std| (dQ, dK, dV) = "
      + ", ".join(f"{e:.3g}" for e in errs), "ok" if max(errs) < 1e-2 else "WRONG")
