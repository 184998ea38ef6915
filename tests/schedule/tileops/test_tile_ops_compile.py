"""The kernels tile ops are scheduled into compile with nvcc, warnings as errors, for sm_80 and
sm_90a: every tile op of the interpreter and fusion suites, in one file per target, plus the
row kernels of 16384-element rows (the widest tiles)."""
from __future__ import annotations

import pathlib
import re
import sys
from dataclasses import replace

import pytest

from tileops_kit import module

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "codegen"))
from nvcc import compile_device  # noqa: E402

from test_tile_op_fusion import FULL, FUSED, OPERANDS  # noqa: E402
from test_tile_ops_interp import SRC  # noqa: E402


# 30 s of nvcc each: the slow run, which CI makes (std's tile ops build in their modules' tests)
@pytest.mark.parametrize("arch", [pytest.param("sm_80", marks=pytest.mark.slow), pytest.param("sm_90a", marks=pytest.mark.slow)])
def test_every_tile_op_compiles(arch, tmp_path):
    from tlc.codegen import generate_file

    kernels, sources = [], {}
    for tag, text, sizes, only in (("a", SRC, {}, None), ("b", FUSED, {}, None),
                                   ("c", FUSED, {"N": 16384}, {"smax", "layernorm"}), ("d", OPERANDS, {}, None),
                                   ("e", FULL, {}, None)):
        mod = module(text)
        sources.update(mod.program.sources)
        for name, op in mod.kernels.items():
            if only is not None and name not in only:
                continue
            prog = op.program({}, arch, {k: v for k, v in sizes.items() if k in op.fn.shape_symbols})
            kernels.extend(replace(k, name=f"{tag}_{k.name}") for k in prog.kernels)
    assert len(kernels) > 40
    source = generate_file(kernels, arch, sources=sources, source_name="ops.tl")
    log = compile_device(source, arch, tmp_path)
    # A few bytes of spills in the widest row kernels (8192-element tiles) come from the block
    # reductions' code generation; anything larger means a tile choice that does not fit.
    spills = [int(n) for n in re.findall(r"(\d+) bytes spill stores", log)]
    assert max(spills) <= 64, log
