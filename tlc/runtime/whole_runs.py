"""The build of a kernel for launches whose copies between fragments and tensors move whole,
aligned runs (`TL_WHOLE_RUNS`, templates/tl/layout.cuh; which kernels and what they ask:
codegen/whole_runs.py), #15, time to first result.  The runtime compiles that build first
(std.nn's rms_norm: 3,632 -> 1,696 SASS instructions, NVRTC 833 -> 342 ms of CPU); a launch
that does not satisfy it (a tensor whose base is not 16-byte aligned, or whose last size is not
a multiple of its copies' runs: a ragged row) launches the general build, compiled the first
time one needs it (`launch.CompiledKernel.function_for`), as a TMA kernel's launch whose maps
do not encode does (`tensormap.built_flags`)."""
from __future__ import annotations

DEFINE = "#define TL_WHOLE_RUNS 1  // every copy's runs whole or outside, aligned\n"


def with_whole_runs(source: str, facts) -> str:
    """A generated kernel's source as the runtime compiles it for launches satisfying `facts`
    (`GeneratedKernel.whole_runs`; None: the source as it is; (): no copy asks anything)."""
    return source if facts is None else DEFINE + source


def size_keeps_runs_whole(size: int, run: int) -> bool:
    """Whether a launch's last size `size` keeps a tensor's runs whole, for the run of its fact
    (codegen/whole_runs.py; a negative one: a multiple of -run, or 1)."""
    return size % abs(run) == 0 or (run < 0 and size == 1)
