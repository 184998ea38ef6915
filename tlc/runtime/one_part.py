"""The build of a split-K kernel for launches that take K in one part (`TL_ONE_PART`), #15, time
to first result.  A persistent GEMM that schedule/split_k.py splits computes its parts of K from
the sizes (the tile grid's z, `tl_tiles_z`) and carries split-K's fixup (codegen/warpspec/
split_k.py) for any launch; most launches (every one with more than half a wave of tiles, or a
short K) take one part, and for them the build with `TL_ONE_PART` defined makes `tl_tiles_z` the
constant 1 (kernel.cu.j2's `tl_one_part`), so that NVRTC compiles the fixup out.  std.gemm's
matmul (sm_90a, NVRTC 13.0 through ctypes on the 2-core CPU machine, the compile's CPU through the
warm-up's precompiled primitives, 3 new processes each): 448 -> 364 ms; 1,192 -> 1,008 SASS
instructions.  A launch whose tiles' z is not 1 launches the build without it (`split` in
launch.py), compiled the first time one needs it.

Off: timed on the H200 (session 28, bench/results/q_E_one_part-h200-twentyeighth.txt, outputs
checked) it saves no NVRTC time there (61 ms either way after a warm-up compile; the CPU's 476 ->
366 ms does not carry over) and its kernels are slower: matmul f16 4096^3 0.1920 -> 0.1946 ms
(1.014x), 8192^3 1.6116 -> 1.6662 (1.034x), matmul_nt 8192^3 1.6081 -> 1.6302 (1.014x) (4096^3
0.977x).  Off, every build is the source as before (`tl_one_part` false: the same SASS)."""
from __future__ import annotations

ONE_PART_BUILD = False  # the switch: off, the H200 timed it slower (the docstring)
DEFINE = "#define TL_ONE_PART 1  // the launches take K in one part: split-K's fixup compiled out\n"


def with_one_part(source: str, one_part: bool) -> str:
    """A generated kernel's source as the runtime compiles it for launches whose tiles' z is 1
    (`one_part`: the kernel has that build and it is wanted), else as it is."""
    return DEFINE + source if one_part else source


def parts_of(z, slots: dict):
    """A function of a launch's C arguments (`launch.CompiledKernel.kernel_args`' list, indexed by
    `slots`, the binder's) giving the tile grid's z of a split-K kernel, whose extent is `z` (an IR
    expression of sizes and integer scalars), computed on Python ints."""
    from ..ir.walk import variables
    from .grid import py_function

    names = sorted({v.name for v in variables(z)})
    f = py_function(z, {n: i for i, n in enumerate(names)})
    places = tuple(slots[n] for n in names)
    return lambda args: f([int(args[i]) for i in places])
