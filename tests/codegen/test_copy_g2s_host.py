"""tl::copy_g2s (templates/tl/copy.cuh) run as host code by the system's C++ compiler, each of a
block's threads in turn (a thread's vectors do not depend on another's): every path the code
generator can ask for (the plain one, whole rows a round, the edge loop, the elements) moves each element of the tile, outside the tensor a zero, into its place of
the shared layout (padded or swizzled), at tiles inside the tensor, past its last rows, past its
last columns and unaligned.  cp.async stood in by a copy of its source size, zero-filled after
(its PTX meaning).  The GPU runs the same index arithmetic; this checks it without one (#18)."""
from __future__ import annotations

import itertools
import re
import shutil
import subprocess

import pytest

from tlc.package_data import templates

CXX = shutil.which("g++") or shutil.which("c++")

HARNESS = r"""
#include <cstdio>
#include <cstring>
#include <cstdint>
struct uint4 { unsigned x, y, z, w; };
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
struct Dim3 { unsigned x, y, z; };
static Dim3 threadIdx;
namespace tl {
inline int swizzle128(int byte_offset) { return byte_offset ^ (((byte_offset >> 7) & 7) << 4); }
template <typename T> inline T cvt(float v) { return static_cast<T>(v); }
// cp.async: `src_bytes` bytes copied, the rest of the 16 zero-filled (the PTX's meaning)
inline void cp_async_16(void* dst, const void* src, int src_bytes) {
  std::memset(dst, 0, 16);
  std::memcpy(dst, src, src_bytes);
}
inline void cp_async_16_full(void* dst, const void* src) { std::memcpy(dst, src, 16); }
SMEM_INDEX_AND_COPIES
}  // namespace tl

static int failures = 0;
template <typename T, int ROWS, int COLS, int THREADS, int PAD, int SW, bool ASYNC>
void check(const char* name, long long rows, long long cols, long long row0, long long col0, int misalign) {
  const long long stride = cols + (misalign ? 1 : 0);
  static T g[1 << 16];
  alignas(1024) static T smem[1 << 15];
  for (long long i = 0; i < (1 << 16); ++i) g[i] = static_cast<T>(1 + (i * 7919) % 97);
  for (int i = 0; i < (1 << 15); ++i) smem[i] = static_cast<T>(-1);
  for (unsigned t = 0; t < THREADS; ++t) {
    threadIdx.x = t;
    tl::copy_g2s<T, ROWS, COLS, THREADS, PAD, SW, ASYNC>(smem, g, stride, rows, cols, row0, col0);
  }
  int bad = 0;
  for (int r = 0; r < ROWS; ++r)
    for (int c = 0; c < COLS; ++c) {
      const long long gr = row0 + r, gc = col0 + c;
      const bool in = gr >= 0 && gr < rows && gc >= 0 && gc < cols;
      const T want = in ? g[gr * stride + gc] : static_cast<T>(0);
      if (smem[tl::smem_index<T, ROWS, COLS, PAD, SW>(r, c)] != want) ++bad;
    }
  if (bad) { std::printf("FAIL %s rows=%lld cols=%lld row0=%lld col0=%lld misalign=%d: %d of %d\n",
                         name, rows, cols, row0, col0, misalign, bad, ROWS * COLS); ++failures; }
}

int main() {
CASES
  std::printf("%d failures\n", failures);
  return failures != 0;
}
"""


def _primitives() -> str:
    """copy.cuh's smem_index, copy_g2s_elements and the copy_g2s family (up to copy_s2g), their
    device qualifiers dropped; its cp.async and shared-address helpers are the harness's."""
    text = (templates() / "tl" / "copy.cuh").read_text()
    index = text[text.index("template <typename T, int ROWS, int COLS, int PAD, int SWIZZLE>"):
                 text.index("// A 32-bit value the compiler cannot see through")]
    copies = text[text.index("// The same tile element by element"):text.index("// A shared ROWS x COLS tile -> global")]
    body = index + copies
    return body.replace("__host__ ", "").replace("__device__ ", "").replace("__forceinline__", "inline")


# (C type, ROWS, COLS, THREADS, PAD, SWIZZLE): the w4a16 kernels' tiles (u32 weights with a pad,
# f16 activations swizzled, f32 scales, u8 zero points), a round of whole rows, a row of whole
# rounds, vectors that divide neither, rows of one vector, a 16-bit tile wider than the swizzle atom
TILES = [("unsigned", 64, 64, 128, 4, 0), ("unsigned short", 8, 512, 128, 0, 128), ("float", 64, 8, 128, 0, 0),
         ("unsigned char", 64, 16, 128, 0, 0), ("unsigned short", 2, 1024, 64, 8, 0), ("unsigned short", 8, 24, 128, 0, 0),
         ("unsigned char", 6, 16, 128, 0, 0), ("unsigned short", 16, 64, 128, 0, 128), ("unsigned short", 64, 256, 128, 0, 128),
         ("unsigned", 16, 128, 128, 4, 0), ("unsigned short", 4, 2048, 128, 0, 0)]


def _placements(rows: int, cols: int) -> list:
    """(tensor rows, cols, row0, col0, misaligned): inside; the last rows past the tensor (M = 1,
    a ragged M); columns past it; a tile wholly past it; unaligned rows."""
    return [(4 * rows, 2 * cols, rows, cols, 0), (1, 2 * cols, 0, 0, 0), (rows + rows // 2 + 1, 2 * cols, rows, cols, 0),
            (2 * rows, cols + cols // 2 + 3, 0, cols, 0), (rows, cols, rows, 0, 0), (2 * rows, 2 * cols, 0, 0, 1)]


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_every_path_puts_every_element_in_its_place(tmp_path):
    cases = []
    for (ct, R, C, T, P, S), asyn in itertools.product(TILES, (0, 1)):
        for rows, cols, row0, col0, mis in _placements(R, C):
            name = f"{ct} {R}x{C} T{T} pad{P} sw{S} async{asyn}"
            cases.append(f'  check<{ct}, {R}, {C}, {T}, {P}, {S}, {bool(asyn).__str__().lower()}>("{name}", {rows}, '
                         f'{cols}, {row0}, {col0}, {mis});')
    source = HARNESS.replace("SMEM_INDEX_AND_COPIES", _primitives()).replace("CASES", "\n".join(cases))
    src, exe = tmp_path / "copies.cpp", tmp_path / "copies"
    src.write_text(source)
    build = subprocess.run([CXX, "-std=c++17", "-O1", "-w", "-o", str(exe), str(src)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.stdout.strip().endswith("0 failures") and run.returncode == 0, run.stdout[-3000:]
    assert len(cases) == len(TILES) * 2 * 6 and not re.search("FAIL", run.stdout)
