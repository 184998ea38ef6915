"""What a target is: one GPU architecture as the compiler sees it.

A `Target` is data (a frozen dataclass), so a plugin describes a new architecture by making
one, or by `dataclasses.replace` of the nearest one: its name (`--arch`, config.json's "arch",
the kernel file's header), the compute capabilities its code serves, the limits the scheduler
checks against (shared memory a block may opt into, what one SM holds), the instructions it
may use (`mma_sync`, `f8_mma`, `wgmma`, `tma`), the gemm accumulator layouts that follow from
them, and its code generator, named as "module:Class" and imported only when code is
generated (the scheduler reads targets without importing the generators, which import it).
"""
from __future__ import annotations

import importlib

from ..frozen import frozen

# what CUDA lets any launch have, on every target: blocks in a grid's x, y and z (at least 1
# each), threads in a block, and the tiles a persistent kernel counts (in an int).  Here, in a
# module `import tlc` has loaded, so that a launch checks its grid without importing the
# scheduler's package (schedule/sm_limits.py offers them beside the SM's limits)
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_THREADS_PER_BLOCK = 1024
MAX_TILES = 2**31 - 1


class Arch:
    """What a target's `name`, `capability`, `exact` and `host` say of the GPUs it serves and of
    NVRTC's `-arch` for them: a `Target`'s, and a `targets.OwnArch`'s, which knows them of one of
    tlc's own targets without importing its module (a launch from the caches needs no more)."""

    __slots__ = ()

    def serves(self, capability: tuple[int, int]) -> bool:
        """Whether this target's code runs on a GPU of `capability`."""
        if self.host:
            return False
        return capability == self.capability if self.exact else capability >= self.capability

    def served(self) -> str:
        """The capabilities it serves, in words: "9.0", "8.0 or newer"."""
        text = f"{self.capability[0]}.{self.capability[1]}"
        return text if self.exact else f"{text} or newer"

    def compile_arch(self, capability: tuple[int, int], supported: tuple[int, ...]) -> str | None:
        """NVRTC's `-arch` that runs this target's code on a GPU of `capability` (one it
        serves): the target's own for arch-specific code, else a cubin for the device where
        this NVRTC knows it (`supported`), else PTX for the newest architecture it knows between
        the target's and the device's (the driver compiles it at load); None when it knows none."""
        if self.exact:
            return self.name
        cc = capability[0] * 10 + capability[1]
        if cc in supported:
            return f"sm_{cc}"
        older = [a for a in supported if self.capability[0] * 10 + self.capability[1] <= a <= cc]
        return f"compute_{max(older)}" if older else None


@frozen
class Target(Arch):
    name: str                      # "sm_80": what --arch and config.json's "arch" say
    capability: tuple[int, int]    # the oldest compute capability its code runs on
    generator: str                 # "module:Class" of its code generator (a `codegen.Sm80` subclass)
    smem_per_block: int            # bytes of dynamic shared memory one block may opt into
    exact: bool = False            # arch-specific code (sm_90a): runs on `capability` alone
    registers_per_sm: int = 65536
    threads_per_sm: int = 2048
    blocks_per_sm: int = 32        # ptxas rejects a larger minimum in __launch_bounds__
    mma_sync: bool = True          # warp-level tensor cores (mma.sync, ldmatrix); cp.async
    f8_mma: bool = False           # mma.sync takes e4m3/e5m2 operands (without it, f8 goes through f16)
    wgmma: bool = False            # warpgroup tensor cores (wgmma.mma_async)
    tma: bool = False              # the tensor memory accelerator (cp.async.bulk.tensor), mbarrier rings
    host: bool = False             # runs on the host's processor (the cpu target): serves no GPU

    def code_generator(self) -> type:
        """The generator class: constructed per kernel as `cls(kernel, sources, line_directives, target=self)`."""
        module, _, attr = self.generator.partition(":")
        return getattr(importlib.import_module(module), attr)

    def gemm_accumulator(self, gemm, buffers: dict, threads: int):
        """The layout of `gemm`'s accumulator where this target's own instructions dictate it
        (wgmma's), or None for the scheduler's default (mma.sync's, or blocked)."""
        if not self.wgmma:
            return None
        from ..schedule.layout import wgmma_accumulator, wgmma_gemm

        if not wgmma_gemm(gemm, buffers, threads):
            return None
        return wgmma_accumulator(buffers[gemm.c].shape, threads)
