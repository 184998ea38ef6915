"""The std kernels' config.json: every rule fits its kernel, runs correctly on the
interpreter, and compiles for its architectures with nvcc without spilling."""
import dataclasses
import pathlib
import re
import sys

import numpy as np
import pytest

import tlc
from tlc.codegen import generate_file
from tlc.dtypes import F16
from gemm_shapes_kit import SHAPE_KERNELS, f32, grouped_case, grouped_f8_case, rand
from stdlib_kit import GEMM_PATH, rel_err

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "codegen"))  # the nvcc helper
from nvcc import compile_object  # noqa: E402

GEMM_KERNELS = ["matmul", "matmul_nt", "matmul_f8", "matmul_skinny", "matmul_skinny_splitk", "matmul_splitk", "matmul_grouped",
                "matmul_skinny_tf32", "matmul_skinny_f8", "matmul_skinny_f8_blockscaled", "matmul_skinny_i8",
                "matmul_f8_rowwise", "matmul_skinny_i8_scaled", "matmul_skinny_f8_rowwise", "matmul_grouped_f8_blockscaled",
                "matmul_f8_blockscaled"]


@pytest.fixture(scope="module")
def mod():
    return tlc.load(GEMM_PATH, target="cpu")


def rules(mod):
    """(kernel, rule) for every rule of std.gemm's table."""
    return [(name, r) for name, k in mod.kernels.items() for r in k.recorded_rules()]


def test_every_rule_fits_its_kernel_and_the_shape_kernels_have_rules(mod):
    found = {name for name, _ in rules(mod)}  # recorded_rules() checks each against its kernel
    assert set(SHAPE_KERNELS) <= found


@pytest.mark.slow
def test_every_shape_rule_computes_the_right_thing(mod):
    rng = np.random.default_rng(12)
    for name, rule in rules(mod):
        if name not in SHAPE_KERNELS:
            continue
        consts = dict(rule.constants)
        if name == "matmul_grouped":
            A, W, offsets, ref = grouped_case(rng, np.float16, [0, 3, 150], N=260, K=130)
            C = np.full(ref.shape, np.nan, np.float16)
            mod.matmul_grouped(A, W, offsets, C, **consts)
        elif name == "matmul_grouped_f8_blockscaled":
            A, W, offsets, SA, SB, ref = grouped_f8_case(rng, [0, 3, 150], N=260, K=300)
            C = np.full(ref.shape, np.nan, np.float32)
            mod.matmul_grouped_f8_blockscaled(A, W, offsets, C, SA, SB, **consts)
        elif name == "splitk_reduce":
            P = rng.standard_normal((3, 20, 300)).astype(np.float32)
            C = np.full((20, 300), np.nan, np.float32)
            mod.splitk_reduce(P, C, **consts)
            ref = P.sum(0)
        else:
            skinny = name.startswith("matmul_skinny")
            A = rand(rng, np.float16, 20, 300)
            B = rand(rng, np.float16, *((130, 300) if skinny else (300, 130)))
            ref = f32(A) @ (f32(B).T if skinny else f32(B))
            if name == "matmul_skinny":
                C = np.full(ref.shape, np.nan, np.float16)
                mod.matmul_skinny(A, B, C, **consts)
            else:
                C = np.full((2,) + ref.shape, np.nan, np.float32)
                getattr(mod, name)(A, B, C, **consts)
                C = C.sum(0)
        assert rel_err(C, ref) < 2e-3, (name, consts)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_every_rule_compiles_without_spills(mod, arch, tmp_path):
    kernels = []
    for i, (name, rule) in enumerate(rules(mod)):
        if arch in rule.archs:
            dtypes = {"T": F16} if any(p.name == "T" for p in mod.kernels[name].fn.params) else {}
            k = mod.kernels[name].scheduled({**dtypes, **dict(rule.constants)}, arch)
            kernels.append(dataclasses.replace(k, name=f"{name}_{i}"))  # one file, distinct names
    source = generate_file(kernels, arch, sources=mod.program.sources)
    if arch == "sm_90a":  # the skinny and grouped tiles fit wgmma, except skinny tiles of W under
        # 64 rows (wgmma's M), which a rule picks for more blocks and mma.sync runs
        gemms = [k for k in kernels if k.name.rsplit("_", 1)[0] in GEMM_KERNELS
                 and not (k.name.startswith("matmul_skinny") and dict(k.constants)["BN"] < 64)]
        # a gemm waited for at once, or issued and waited for where its result is needed (7a8d169)
        bodies = source.split('extern "C" __global__')[1:]
        assert sum(bool(re.search(r"tl::gemm_wgmma(_issue)?<", b)) for b in bodies) == len(gemms)
    log = compile_object(source, arch, tmp_path)
    spills = re.findall(r"(\d+) bytes spill stores", log)
    assert len(spills) == len(kernels) and set(spills) == {"0"}, log
