"""tlc's switches (module constants such as tlc.codegen.copies.STMATRIX, off until the GPU
has timed them) set for a block of a bench script and put back after it: the one place
bench/attention_bwd.py, fwd_variants.py, lowbit.py, mla_variants.py and ops_variants.py set
them, each with its own way of naming them.  A switch the compiler reads is not in the kernel
cache's keys: a process that times one needs caches of its own (TLC_CACHE_DIR)."""
from __future__ import annotations

import contextlib
import importlib


@contextlib.contextmanager
def switched(settings):
    """Each (MODULE, NAME, VALUE) of `settings`, MODULE a module or its dotted name: its
    constant NAME set to VALUE while the block runs, and every one set put back after it, also
    where the block (or a later setting) raises."""
    saved = []
    try:
        for module, name, value in settings:
            module = importlib.import_module(module) if isinstance(module, str) else module
            saved.append((module, name, getattr(module, name)))
            setattr(module, name, value)
        yield
    finally:
        for module, name, value in reversed(saved):
            setattr(module, name, value)
