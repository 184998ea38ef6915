"""The reference interpreter of the tile IR, in NumPy (`tlc run --target cpu`, `--check`).

Owns executing a `tlc.ir.Kernel` on the CPU exactly as LANGUAGE.md defines it, ignoring
fragment layouts and shared-memory plans, so that a scheduling bug shows as a difference from
this reference; a warp-specialized kernel's ring is run as the schedule recorded it (its
stages in the buffers the plan gave them), so that a wrong ring shows too.  Modules: `args`
(launch arguments), `numerics` (element semantics), `tiles` (whole-tile operations),
`machine` (statements and the grid), `ring` (a warp-specialized kernel's roles).
"""
from __future__ import annotations

import numpy as np

from ..ir.nodes import Kernel
from ..ir.verify import verify
from .args import ArgumentError, InterpError, bind
from .machine import Machine


def run_kernel(kernel: Kernel, args: dict, *, check_ir: bool = True) -> None:
    """Run `kernel` over its whole grid, writing the NumPy arrays in `args` in place.

    `args` maps every param name to a NumPy array (tensor params, dtype and rank as declared;
    shape symbols are bound from the arrays) or a number (scalar params).  Raises
    `ArgumentError` for arguments that do not fit and `InterpError` for a kernel that cannot
    run (a loop with step 0, a negative grid); `check_ir` runs the IR verifier first.
    """
    if check_ir:
        verify(kernel)
    bound = bind(kernel, args)
    # integer overflow wraps and float overflow gives inf as on the GPU, without warnings
    with np.errstate(all="ignore"):
        Machine(kernel, bound).run()


__all__ = ["run_kernel", "InterpError", "ArgumentError"]
