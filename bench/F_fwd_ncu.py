"""Helper F, session 25 (#19): std.attention's flash_fwd launched twice (B=4 H=32 S=4096 D=128 f16,
or the shape given), its output checked against PyTorch's flash backend after the second, for
Nsight Compute to profile the second launch (bench/queue/F_fwd_ncu.sh)."""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tlc  # noqa: E402

B, H, S, D = (int(x) for x in (sys.argv[1:5] if len(sys.argv) > 4 else (4, 32, 4096, 128)))
causal = len(sys.argv) > 5 and sys.argv[5] == "causal"
mod = tlc.load("std.attention", target="cuda")
gen = torch.Generator(device="cuda").manual_seed(0)
q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
o = torch.empty_like(q)
lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)
scale = 1.0 / math.sqrt(D)
for _ in range(2):
    mod.flash_fwd(q, k, v, o, lse, scale, CAUSAL=causal)
torch.cuda.synchronize()
ref = F.scaled_dot_product_attention(q, k, v, scale=scale, is_causal=causal)
err = (o.float() - ref.float()).abs().max().item()
print(f"flash_fwd B={B} H={H} S={S} D={D} causal={causal}: max |O - sdpa| = {err:.3g}", "ok" if err < 2e-2 else "WRONG")
