"""cpu: the host's processor, through C++17 with OpenMP (tlc/codegen/cpp, compiled by the
system's C++ compiler: tlc/runtime/cpp.py).  Scheduled with the limits of sm_80, so that a
kernel's default constants (and so its tiles, and its results) are those of a GPU run; it has
no GPU instruction, and serves no GPU (`host`)."""
from .base import Target

CPU = Target(name="cpu", capability=(0, 0), generator="tlc.codegen.cpp:generate", smem_per_block=163 * 1024,
             mma_sync=False, host=True)
