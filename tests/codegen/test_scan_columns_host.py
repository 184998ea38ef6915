"""tl::cumsum_shared's lines across the rows (tl/scan.cuh: a thread per line and chunk of the rows,
the chunks' totals combined across the block; a chunk of at most 32 held in registers) as host
code: the template compiled by the system's C++ compiler, one std::thread a CUDA thread and a
barrier for __syncthreads, each scan checked element by element against a sequential one.  The
column scans of std.reduce (cumsum_axis0 and the rest: [256, 32] tiles at 256 threads) take this
path on the GPU; the interpreter never runs it.  No GPU: the indexing and the barriers are what
can go wrong."""
from __future__ import annotations

import pytest

from host_cxx import CXX, run
from tlc.package_data import templates

HARNESS = r"""
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>
#define __device__
#define __host__
#define __forceinline__ inline
struct uint4 { unsigned x, y, z, w; };
struct uint2 { unsigned x, y; };
struct Index { int x; };
thread_local Index threadIdx;
struct Barrier {  // every thread of the block waits for the others, as __syncthreads
  std::mutex m;
  std::condition_variable cv;
  int count = 0, waiting = 0, phase = 0;
  void wait() {
    std::unique_lock<std::mutex> lock(m);
    const int p = phase;
    if (++waiting == count) { waiting = 0; ++phase; cv.notify_all(); }
    else cv.wait(lock, [&] { return phase != p; });
  }
};
static Barrier block;
inline void __syncthreads() { block.wait(); }
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
inline double __longlong_as_double(long long i) { double f; memcpy(&f, &i, 8); return f; }
namespace tl {
template <typename T, typename S> inline T cvt(S s) { return T(s); }
template <typename T, int ROWS, int COLS, int PAD, int SWIZZLE> inline int smem_index(int r, int c) {
  return r * (COLS + PAD) + c;
}
}
SCAN
using namespace tl;
// A tile of OUTER x N x INNER, stored as rows of INNER / SPLIT (padded by PAD), scanned along N.
template <ScanOp OP, int OUTER, int N, int INNER, bool REVERSE, int THREADS, int PAD, int SPLIT>
void check(const char* name) {
  constexpr int COLS = INNER / SPLIT, ROWS = OUTER * N * SPLIT;
  std::vector<float> tile(ROWS * (COLS + PAD), -777.0f);
  unsigned s = 12345;
  for (int r = 0; r < ROWS; ++r)
    for (int c = 0; c < COLS; ++c) {
      s = s * 1103515245u + 12345u;
      tile[r * (COLS + PAD) + c] = static_cast<float>(static_cast<int>(s >> 16) % 5 - 2);  // sums exact
    }
  std::vector<float> want = tile;
  for (int o = 0; o < OUTER; ++o)
    for (int i = 0; i < INNER; ++i) {
      float acc = scan_identity<OP, float>();
      for (int k = 0; k < N; ++k) {
        const int flat = (o * N + (REVERSE ? N - 1 - k : k)) * INNER + i;
        float& e = want[(flat / COLS) * (COLS + PAD) + flat % COLS];
        acc = scan_combine<OP>(acc, e);
        e = acc;
      }
    }
  block.count = THREADS;
  std::vector<std::thread> threads;
  for (int t = 0; t < THREADS; ++t)
    threads.emplace_back([&tile, t] {
      threadIdx.x = t;
      cumsum_shared<OP, float, float, float, OUTER, N, INNER, REVERSE, THREADS, ROWS, COLS, PAD, 0, PAD, 0>(
          tile.data(), tile.data());
    });
  for (auto& t : threads) t.join();
  int wrong = 0;
  for (size_t e = 0; e < tile.size(); ++e) wrong += !(tile[e] == want[e]);
  printf("%s %d\n", name, wrong);
}
int main() {
CHECKS}
"""

# name: the scan (sum, prod, max, min), OUTER, N (the length scanned), INNER, reversed, threads,
# the rows' padding, the stored rows a line of INNER spans
CASES = {"sum-256x32-256threads": ("sum", 1, 256, 32, False, 256, 4, 1),  # std.reduce's column tiles
         "sum-256x32-512threads": ("sum", 1, 256, 32, False, 512, 4, 1),
         "sum-512x32-chunks-of-64": ("sum", 1, 512, 32, False, 256, 4, 1),  # past the registers' 32
         "sum-250x32-last-chunk-short": ("sum", 1, 250, 32, False, 256, 4, 1),
         "sum-18x32-empty-chunks": ("sum", 1, 18, 32, False, 256, 0, 1),
         "sum-reversed": ("sum", 1, 256, 32, True, 256, 4, 1),
         "max-256x32": ("max", 1, 256, 32, False, 256, 0, 1),
         "min-reversed": ("min", 1, 256, 32, True, 256, 0, 1),
         "prod-128x64": ("prod", 1, 128, 64, False, 256, 0, 1),
         "sum-two-outer-lines-a-thread-each": ("sum", 2, 64, 64, False, 32, 0, 1),
         "sum-three-outer-reversed": ("sum", 3, 40, 32, True, 64, 0, 1),
         "sum-lines-over-two-stored-rows": ("sum", 2, 64, 64, False, 64, 4, 2),
         "max-lines-over-four-stored-rows-reversed": ("max", 1, 256, 64, True, 256, 0, 4)}


def checks() -> str:
    """main()'s body: one check<...> a case."""
    lines = []
    for name, (op, outer, n, inner, reverse, threads, pad, split) in CASES.items():
        args = f"ScanOp::{op}, {outer}, {n}, {inner}, {str(reverse).lower()}, {threads}, {pad}, {split}"
        lines.append(f'  check<{args}>("{name}");\n')
    return "".join(lines)


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler")
def test_column_scans_match_a_sequential_scan(tmp_path):
    scan = (templates() / "tl" / "scan.cuh").read_text()
    out = run(HARNESS.replace("SCAN", scan).replace("CHECKS", checks()), tmp_path, "scan_columns")
    wrong = dict(line.split() for line in out.splitlines())
    assert list(wrong) == list(CASES)
    assert all(n == "0" for n in wrong.values()), out
