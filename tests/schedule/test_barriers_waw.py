"""Barriers between two writes of one shared buffer (WAW, schedule/barriers.py): a `parallel`
loop that writes elements at an index it computes (a digit read from memory, an id) may write
an element another thread wrote before it, so a barrier stands between it and the earlier
writes; two loops of one layout that write each element at their own index write it from the
same thread and need none.  std.reduce.sort's run boundaries (`tstart[d] = q` after zeroing
tstart) raced before the rule; so did std.moe.expert_histogram's atomics after its fill."""
from tlc.runner import build

KERNELS = """
@kernel
def starts(x: i32[N], y: i32[256], THREADS: const = 128):
    with grid(1, threads=THREADS) as b:
        t = shared(i32[256])
        for d in parallel(256):
            t[d] = -1
        for q in parallel(1024):
            t[x[q] & 255] = q
        for d in parallel(256):
            y[d] = t[d]


@kernel
def own(x: i32[256], y: i32[256], THREADS: const = 128):
    with grid(1, threads=THREADS) as b:
        t = shared(i32[256])
        for d in parallel(256):
            t[d] = 0
        for d in parallel(256):
            t[d] = x[d] + 1
        for d in parallel(256):
            y[255 - d] = t[255 - d]


@kernel
def counts(x: i32[N], y: i32[64], THREADS: const = 128):
    with grid(1, threads=THREADS) as b:
        h = shared(i32[64])
        fill(h, 0)
        for q in parallel(1024):
            atomic_add(h[x[q] & 63], 1)
        for e in parallel(64):
            y[e] = h[e]
"""


def _between(src: str, kernel: str, first: str, second: str) -> int:
    """The __syncthreads of `kernel` between the line holding `first` and the next holding `second`."""
    body = src[src.index(f" {kernel}("):]
    body = body[:body.index("\n}\n")]
    start = body.index(first)
    return body[start:body.index(second, start)].count("__syncthreads")


def test_a_write_at_a_computed_index_waits_for_the_writes_before_it(tmp_path):
    path = tmp_path / "waw.tl"
    path.write_text(KERNELS)
    for arch in ("sm_80", "sm_90a"):
        src, _ = build(str(path), arch=arch)
        assert _between(src, "starts", "= (-1);", "= q;") == 1
        assert _between(src, "counts", "fill", "atomicAdd") == 1


def test_loops_that_write_each_element_at_their_own_index_need_no_barrier(tmp_path):
    path = tmp_path / "waw.tl"
    path.write_text(KERNELS)
    src, _ = build(str(path), arch="sm_90a")
    assert _between(src, "own", "= 0;", "+ 1);") == 0
    assert _between(src, "own", "+ 1);", "y[") == 1  # the reads of other threads' elements wait
