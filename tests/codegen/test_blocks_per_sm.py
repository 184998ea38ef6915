"""`grid(..., blocks_per_sm=N)`: the kernel asks ptxas for N blocks per SM (`__launch_bounds__`),
capped by what an SM holds; 0 (the default) keeps the compiler's estimate."""
from tlc.codegen import generate
from kit_codegen import scheduled_source

SRC = """
@kernel
def k(A: f32[N], B: f32[N], BLOCKS: const = 3, THREADS: const = 256):
    with grid(cdiv(N, THREADS), threads=THREADS, blocks_per_sm=BLOCKS) as bx:
        t = fragment(f32[THREADS])
        copy(A[bx * THREADS], t)
        copy(t, B[bx * THREADS])
"""


def _kernel(arch="sm_90a", **constants):
    k, sources = scheduled_source(SRC, "k", arch, constants)
    return k, generate(k, arch, sources=sources).source


def test_the_kernel_asks_for_the_blocks_it_names():
    k, src = _kernel()
    assert k.min_blocks == 3 and "__launch_bounds__(256, 3)" in src
    _, src = _kernel("sm_80", BLOCKS=5)
    assert "__launch_bounds__(256, 5)" in src


def test_zero_keeps_the_estimate_and_a_request_stays_within_the_sm():
    k, src = _kernel(BLOCKS=0)
    assert k.min_blocks == 6 and "__launch_bounds__(256, 6)" in src  # the scheduler's estimate (blocks_per_sm.py)
    _, src = _kernel(BLOCKS=32, THREADS=1024)  # 2048 threads an SM: 2 blocks of 1024 at most
    assert "__launch_bounds__(1024, 2)" in src
