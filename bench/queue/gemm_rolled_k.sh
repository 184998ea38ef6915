# limit: 300
# Issue #15, helper (session 19, NVRTC area): std.gemm's matmul (sm_90a) with the warp-specialized
# K loops kept rolled (`#pragma unroll 1` before the consumers' loop, or both loops): on the CPU
# machine NVRTC 13.0 took 534 -> 350 ms of CPU (consumers) and -> 320 (both); SASS 1600 -> 1384
# / 1024 instructions, HGMMA 12 -> 4, UTMALDG 39 -> 13, 168 registers, no local memory.  NVVM
# unrolls the K loop 3 times (the ring's `% 3`), and ptxas's time follows the HGMMA.  Question:
# is the kernel as fast?  Each mode in its own process and kernel cache; output checked against
# torch.mm first; tlc and torch.mm timed alternately (tlc.timing.compare); NVRTC's wall time too.
for mode in base consumers both base; do
  TLC_CACHE_DIR=$(mktemp -d) python3 - "$mode" <<'PY'
import re, sys, time
import torch
import tlc
from tlc.runtime import compile as rc
from tlc.timing import compare

mode = sys.argv[1]
LOOP = r"(\n[ \t]*)(for \(int tl_k = 0; tl_k < tl_n; \+\+tl_k, \+\+tl_it\) \{\n[^\n]*\n[ \t]*tl::mbar_wait\(tl_{which} )"

def rolled(source):
    whichs = {"base": (), "consumers": ("full",), "both": ("full", "empty")}[mode]
    for which in whichs:
        source, n = re.subn(LOOP.replace("{which}", which), r"\1#pragma unroll 1\1\2", source)
        assert n >= 1, (which, "loop not found")
    return source

real = rc.nvrtc_compile
def patched(source, arch, name):
    t = time.perf_counter()
    out = real(rolled(source), arch, name)
    print(f"{mode}: nvrtc {name} {(time.perf_counter() - t) * 1e3:.0f} ms, {len(out)} bytes", flush=True)
    return out
rc.nvrtc_compile = patched

mm = tlc.load("std.gemm", target="cuda").matmul
g = torch.Generator(device="cuda").manual_seed(0)
for n in (8192, 4096):
    A = torch.randn(n, n, device="cuda", generator=g).half()
    B = torch.randn(n, n, device="cuda", generator=g).half()
    C, D = torch.empty(n, n, device="cuda").half(), torch.empty(n, n, device="cuda").half()
    mm(A, B, C)
    torch.mm(A, B, out=D)
    torch.cuda.synchronize()
    err = ((C.float() - D.float()).abs().max() / D.float().abs().max()).item()
    assert err < 1e-2, f"{mode} {n}: WRONG, max error {err}"
    ms = compare({"tlc": lambda: mm(A, B, C), "torch": lambda: torch.mm(A, B, out=D)}, min_ms=300)
    tf = lambda t: 2 * n ** 3 / t / 1e9
    print(f"{mode}: {n}^3 f16 tlc {tf(ms['tlc']):.1f} TFLOP/s, torch.mm {tf(ms['torch']):.1f}, "
          f"{ms['torch'] / ms['tlc']:.3f}x torch (max rel. error {err:.1e})", flush=True)
PY
done
