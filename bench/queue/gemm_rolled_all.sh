# limit: 240
# Issue #15, session 20: WarpSpecialization.rolled keeps the producer's and the consumers' K loops
# rolled where the consumers' body is one wgmma gemm (std.gemm's matmul family, every precision).
# gemm_rolled_k.sh measured it for f16 matmul only (8192^3 1.034x -> 1.041x torch.mm, 4096^3
# 0.982x -> 0.984x; NVRTC 498 -> 297 ms).  This asks the same for every precision and the M=16
# decode rows: `bench/gemm.py --quick` (each output checked against the vendor's before timing)
# twice, each in its own process and kernel cache: "unrolled" with the pragmas taken out of the
# generated source before NVRTC, then "rolled" as built.
for mode in unrolled rolled; do
  echo "== $mode"
  TLC_CACHE_DIR=$(mktemp -d) python3 - "$mode" <<'PY'
import runpy, sys
from tlc.runtime import compile as rc

mode = sys.argv[1]
real = rc.nvrtc_compile
PRAGMA = "#pragma unroll 1  // WarpSpecialization.rolled"
def patched(source, arch, name):
    if mode == "unrolled":
        source = "\n".join(l for l in source.split("\n") if PRAGMA not in l)
    return real(source, arch, name)
rc.nvrtc_compile = patched
sys.argv = ["bench/gemm.py", "--quick", "--skip-overheads", "--no-chart", "--json", f"/tmp/gemm-{mode}.json"]
runpy.run_path("bench/gemm.py", run_name="__main__")
PY
done
