"""std.nn_train and std.nn_layers against NumPy, one table (nn_train_kit.OPS): every operator on
the interpreter at ragged shapes for f32, f16 and bf16; every backward against finite differences
of its forward's float64 reference; each module compiled by nvcc for sm_80 and sm_90a; the
registry and the reference pages.  tests/gpu/test_nn_train_gpu.py runs the table on the GPU and checks the
backwards against PyTorch's autograd.  Tolerances: op_tolerances.py."""
from __future__ import annotations

import re
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import tlc
from nn_train_kit import FORWARDS, OPS, PATHS, Op, compare, f64, kernel_consts, kernel_name, module_of
from op_registry import check_or_record

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))  # the nvcc helper
from nvcc import compile_object  # noqa: E402


@pytest.fixture(scope="module")
def mod():
    """Both modules as one: mod.NAME is the kernel of whichever holds it."""
    mods = {m: tlc.load(path, target="cpu") for m, path in PATHS.items()}

    class Both:
        kernels = {k for m in mods.values() for k in m.kernels}

        def __getattr__(self, name):
            return getattr(mods[module_of(name)], name)
    return Both()


def check_row(mod, op: Op, dtype: str, shape, consts: dict, seed: int = 0) -> None:
    """Run one row and compare each output with its reference."""
    args, checks = op.make(np.random.default_rng(seed + zlib.crc32(op.name.encode())), dtype, shape)
    getattr(mod, kernel_name(op))(*args, **kernel_consts(op, consts))
    compare(args, checks, op.name, f" {dtype} shape={shape} {kernel_consts(op, consts)}")


def test_the_modules_hold_every_operator_of_the_table():
    for m, path in PATHS.items():
        table = {kernel_name(op) for op in OPS if module_of(kernel_name(op)) == m}
        assert table == set(tlc.load(path, target="cpu").kernels)


@pytest.mark.parametrize("module", PATHS)
def test_every_operator_has_a_doc_comment(module):
    """The line under each def is a comment saying what it computes (the reference page reads it)."""
    text = Path(PATHS[module]).read_text()
    defs = re.findall(r"^def (\w+)\(.*?\).*?:\n(\s*)(\S)", text, re.M | re.S)
    assert defs and all(first == "#" for _, _, first in defs), [d for d, _, f in defs if f != "#"]


PASSED: dict[str, set] = {}  # kernel -> the dtypes all of whose rows passed in this run
ROWS_PASSED: dict[tuple, int] = {}  # (kernel, dtype) -> rows passed


@pytest.mark.parametrize("op,dtype", [pytest.param(op, d, id=f"{op.name}-{d}") for op in OPS for d in op.dtypes])
def test_against_numpy(mod, op, dtype):
    for shape, consts in op.shapes:
        check_row(mod, op, dtype, shape, consts)
    key = (kernel_name(op), dtype)
    ROWS_PASSED[key] = ROWS_PASSED.get(key, 0) + 1
    if ROWS_PASSED[key] == sum(kernel_name(o) == key[0] for o in OPS):
        PASSED.setdefault(key[0], set()).add(dtype)


# ---- backwards against finite differences of the forward -----------------------------------------

def directional(fwd, inputs: dict, name: str, direction, dy, h=1e-6, **other) -> float:
    """sum(dy * d fwd / d inputs[name] . direction) by central differences in float64."""
    plus = {**inputs, name: inputs[name] + h * direction}
    minus = {**inputs, name: inputs[name] - h * direction}
    return float((dy * (fwd(**plus, **other) - fwd(**minus, **other))).sum() / (2 * h))


def fd_case(mod, bwd: str, consts: dict):
    """(gradients the kernel computed by input name, the forward's inputs, other arguments, dy)
    for one backward at a ragged f32 shape."""
    rng = np.random.default_rng(zlib.crc32(bwd.encode()))
    n = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    k = getattr(mod, bwd)
    M, N = 5, 37
    if bwd in ("softmax_bwd", "log_softmax_bwd"):
        x, dy = n(M, N) * 2, n(M, N)
        y = FORWARDS[bwd](x).astype(np.float32)
        dx = np.full_like(x, np.nan)
        k(dy, y, dx, BM=2, BN=32, THREADS=32)
        return {"x": dx}, {"x": f64(x)}, {}, dy
    if bwd == "rms_norm_bwd":
        x, w, dy = n(M, N) + 0.5, n(N), n(M, N)
        dx, dw = np.full_like(x, np.nan), np.full_like(w, np.nan)
        k(dy, x, w, dx, dw, 1e-5, BM=2, BN=32, THREADS=32, CM=2, CN=16)
        return {"x": dx, "weight": dw}, {"x": f64(x), "weight": f64(w)}, {}, dy
    if bwd == "layer_norm_bwd":
        x, w, b, dy = n(M, N) + 3, n(N), n(N), n(M, N)
        dx, dw, db = np.full_like(x, np.nan), np.full_like(w, np.nan), np.full_like(w, np.nan)
        k(dy, x, w, dx, dw, db, 1e-5, BM=2, BN=32, THREADS=32, CM=2, CN=16)
        return {"x": dx, "weight": dw, "bias": db}, {"x": f64(x), "weight": f64(w), "bias": f64(b)}, {}, dy
    if bwd == "group_norm_bwd":
        x, w, b, dy = n(2, 6, 7) + 3, n(6), n(6), n(2, 6, 7)
        dx, dw, db = np.full_like(x, np.nan), np.full_like(w, np.nan), np.full_like(w, np.nan)
        k(dy, x, w, dx, dw, db, 1e-5, G=3, BLOCK=8, THREADS=32, BL=4)
        return ({"x": dx, "weight": dw, "bias": db}, {"x": f64(x), "weight": f64(w), "bias": f64(b)}, {"groups": 3},
                dy)
    if bwd == "cross_entropy_bwd":
        logits, dloss = n(M, N) * 2, n(M)
        t = rng.integers(0, N, M)
        t[1] = -100
        lse = (np.log(np.exp(f64(logits)).sum(-1))).astype(np.float32)
        dl = np.full_like(logits, np.nan)
        k(dloss, logits, t, lse, dl, BM=2, BN=16, THREADS=32)
        return {"logits": dl}, {"logits": f64(logits)}, {"target": t}, dloss
    if bwd == "rope_bwd":
        S, H, D = 3, 2, 10
        x, dy = n(S, H, D), n(S, H, D)
        angle = rng.uniform(0, 6, (S, D // 2))
        cos, sin = np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)
        dx = np.full_like(x, np.nan)
        k(dy, cos, sin, dx, INTERLEAVED=consts.get("INTERLEAVED", False), THREADS=32)
        return {"x": dx}, {"x": f64(x)}, {"cos": cos, "sin": sin, "interleaved": consts.get("INTERLEAVED", False)}, dy
    if bwd in ("swiglu_bwd", "geglu_bwd"):
        x, dy = n(M, 2, N) * 2, n(M, N)
        dx = np.full_like(x, np.nan)
        k(dy, x, dx, BM=2, BN=16, THREADS=32, **consts)
        return {"x": dx}, {"x": f64(x)}, ({"approx": consts.get("APPROX", False)} if bwd == "geglu_bwd" else {}), dy
    if bwd == "embedding_bwd":
        V, D = 9, 13
        w, dy, idx = n(V, D), n(M * 2, D), rng.integers(0, V, M * 2)
        dw = np.zeros_like(w)
        k(dy, idx, dw, BD=8, THREADS=32)
        return {"weight": dw}, {"weight": f64(w)}, {"idx": idx}, dy
    raise KeyError(bwd)


BACKWARDS = [("softmax_bwd", {}), ("log_softmax_bwd", {}), ("rms_norm_bwd", {}), ("layer_norm_bwd", {}),
             ("group_norm_bwd", {}), ("cross_entropy_bwd", {}), ("rope_bwd", {}), ("rope_bwd", dict(INTERLEAVED=True)),
             ("swiglu_bwd", {}), ("geglu_bwd", {}), ("geglu_bwd", dict(APPROX=True)), ("embedding_bwd", {})]


@pytest.mark.parametrize("bwd,consts", BACKWARDS, ids=[f"{b}{'-' + str(c) if c else ''}" for b, c in BACKWARDS])
def test_backward_against_finite_differences_of_the_forward(mod, bwd, consts):
    """<dy, d forward / d input . v> by central differences of the forward's float64 reference,
    against <gradient the kernel computed, v>, for three random directions v of each input."""
    grads, inputs, other, dy = fd_case(mod, bwd, consts)
    rng = np.random.default_rng(1)
    for name, grad in grads.items():
        for _ in range(3):
            v = rng.standard_normal(inputs[name].shape)
            want = directional(FORWARDS[bwd], inputs, name, v, f64(dy), **other)
            got = float((f64(grad) * v).sum())
            assert abs(got - want) <= 1e-4 * (1 + abs(want)), (bwd, name, got, want)


def group_norm_args(C=6, dtype=np.float32):
    """group_norm's and group_norm_bwd's arrays at B = 2, L = 7: (forward, backward)."""
    x, w = np.ones((2, C, 7), dtype), np.ones(C, dtype)
    return (x, w, w.copy(), x.copy(), 1e-5), (x, x.copy(), w, x.copy(), w.copy(), w.copy(), 1e-5)


# G = 4 does not divide C = 6: without bias's (dbias's) type G * (C // G), channels 4 and 5 were
# left unwritten, silently
REFUSED = {"group_norm": "'bias' axis 0 has size 6 but the kernel expects G * (C // G) = 4 (C = 6 from 'x' (axis 1))",
           "group_norm_bwd": "'dbias' axis 0 has size 6 but the kernel expects G * (C // G) = 4 "
                             "(C = 6 from 'dy' (axis 1))"}


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_group_norm_refuses_a_g_that_does_not_divide_c(target):
    from tlc.interp.args import ArgumentError

    m = tlc.load(PATHS["nn_layers"], target=target)
    fwd, bwd = group_norm_args()
    for name, args, consts in (("group_norm", fwd, dict(BLOCK=16, THREADS=32)),
                               ("group_norm_bwd", bwd, dict(BLOCK=16, THREADS=32, BL=4))):
        with pytest.raises(ArgumentError) as e:
            getattr(m, name)(*args, G=4, **consts)
        assert str(e.value) == REFUSED[name]
        with pytest.raises(tlc.DiagnosticError) as e:  # G = 0: refused when the kernel is specialized
            getattr(m, name)(*args, G=0, **consts)
        param = "bias" if name == "group_norm" else "dbias"
        assert "error[E202]: with G=0, " in str(e.value).splitlines()[0]
        assert str(e.value).splitlines()[0].endswith(
            f": the dimension G * (C // G) of '{param}' divides by zero (C // G with G = 0)")
        getattr(m, name)(*args, G=3, **consts)  # a G that divides C runs


@pytest.mark.parametrize("name", ["group_norm", "group_norm_bwd"])
def test_group_norm_cuda_launcher_refuses_a_g_that_does_not_divide_c(name):
    """The CUDA launcher's check, without a GPU: the binder of each grid (the kernel's defaults,
    sm_90a) refuses the arrays with the interpreter's message before anything launches."""
    from tlc.codegen import generate
    from tlc.runtime.args import Binder, LaunchArgumentError

    fwd, bwd = group_norm_args(dtype=np.float16)
    args = dict(zip(("x", "weight", "bias", "y", "eps") if name == "group_norm" else
                    ("dy", "x", "weight", "dx", "dweight", "dbias", "eps"), fwd if name == "group_norm" else bwd))
    kernel = getattr(tlc.load(PATHS["nn_layers"], target="cpu"), name)
    for grid in kernel.scheduled_grids({"G": 4}, "sm_90a"):
        binder = Binder(grid, generate(grid, "sm_90a"))
        given = {k: v for k, v in args.items() if k in binder.names}
        given.update({w: np.zeros((2, 4 if w in ("mu", "rstd") else 6), np.float32)  # the workspaces
                      for w in binder.names if w not in given})
        with pytest.raises(LaunchArgumentError) as e:
            binder.bind(given, device=0)
        assert str(e.value) == REFUSED[name]


@pytest.mark.parametrize("module", PATHS)
def test_registry(module):
    """stdlib/tested.json lists exactly the module's operators of this table, each of whose rows
    (every dtype) passed in this run (TLC_RECORD_TESTED=1 rewrites it; tests/stdlib/op_registry.py)."""
    table = {}
    for op in OPS:
        if module_of(kernel_name(op)) == module:
            table.setdefault(kernel_name(op), set()).update(op.dtypes)
    check_or_record(f"std.{module}", table, {k: v for k, v in PASSED.items() if v == table.get(k)}, __file__)


@pytest.mark.slow  # about 12 s of nvcc for each module and architecture
@pytest.mark.nvcc
@pytest.mark.parametrize("module", PATHS)
@pytest.mark.parametrize("arch,dtype", [("sm_80", "f16"), ("sm_90a", "bf16")])
def test_builds_with_nvcc(module, arch, dtype, tmp_path):
    """Every operator of the module, for one dtype, compiles without warnings or spills (the
    shape symbols that size rope's tiles, H and D, given as a common head shape)."""
    from tlc.runner import build

    heads = ("H=32", "D=128") if module == "nn_layers" else ()
    source, _ = build(PATHS[module], defines=(f"T={dtype}", *heads), arch=arch)
    log = compile_object(source, arch, tmp_path)
    spills = dict(re.findall(r"Function properties for (\w+)\n\s*\d+ bytes stack frame, (\d+) bytes spill", log))
    assert len([k for k in spills if not k.startswith("_Z")]) == source.count("__global__")
    assert {k for k, v in spills.items() if v != "0"} == set(), log


@pytest.mark.parametrize("module", PATHS)
def test_the_reference_page_is_generated_from_the_sources(module):
    """docs/stdlib/<module>.md is what scripts/stdlib-docs writes (rerun it after editing the .tl)."""
    from tlc.ops import load_tested, markdown, module_ops

    text = markdown(Path(PATHS[module]), module_ops(Path(PATHS[module]), load_tested()))
    page = Path(__file__).resolve().parents[2] / "docs" / "stdlib" / f"{module}.md"
    assert page.read_text() == text, f"docs/stdlib/{module}.md is stale: run scripts/stdlib-docs {module}"


def test_philox_reference_matches_random123s_known_answers():
    """The NumPy Philox the dropout rows compare with (bit for bit) is Random123's: its
    philox4x32_10 known-answer vectors (kat_vectors)."""
    from nn_train_kit import philox4x32

    kat = [([0, 0, 0, 0], [0, 0], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
           ([0xffffffff] * 4, [0xffffffff] * 2, [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
           ([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0],
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1])]
    for counter, key, words in kat:
        assert [int(w) for w in philox4x32(counter, key)] == words


def test_dropout_keeps_about_one_minus_p_and_changes_with_seed_and_offset(mod):
    x = np.ones(4096, np.float32)
    masks = {}
    for seed, offset in ((1, 0), (2, 0), (1, 1024)):
        y = np.full_like(x, np.nan)
        mod.dropout(x, y, 0.25, seed, offset, BLOCK=1024, THREADS=64)
        assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
        assert abs((y != 0).mean() - 0.75) < 0.03
        masks[seed, offset] = y != 0
    assert (masks[1, 0] != masks[2, 0]).mean() > 0.2 and (masks[1, 0] != masks[1, 1024]).mean() > 0.2


def test_wrong_shapes_are_refused_naming_the_argument(mod):
    """The shapes the kernels' signatures tie together, checked at the call: swiglu's x is the
    [M, 2, N] view of the fused projection, rope's tables have D / 2 columns, cross_entropy's
    target one class a row."""
    from tlc.interp.args import ArgumentError

    z = np.zeros
    cases = [(lambda: mod.swiglu(z((4, 3, 8), np.float32), z((4, 8), np.float32)),
              "'x' axis 1 has size 3 but the kernel expects 2"),
             (lambda: mod.rope(z((2, 3, 8), np.float32), z((2, 3), np.float32), z((2, 4), np.float32),
                               z((2, 3, 8), np.float32)), "'cos' axis 1 has size 3 but the kernel expects 4"),
             (lambda: mod.cross_entropy(z((4, 10), np.float32), z(5, np.int64), z(4, np.float32), z(4, np.float32)),
              "shape symbol 'M' is 4 in 'logits' (axis 0) but 5 in 'target' (axis 0)")]
    for call, message in cases:
        with pytest.raises(ArgumentError) as e:
            call()
        assert str(e.value) == message


# config.json's sm_90a rules from the H200 (bench/results/row_reductions2-h200-twentythird.txt):
# log_softmax in f16 at four blocks an SM (140.0 us against 160.3 at three; bf16 spills at four
# and keeps two, sm_80 keeps three), batch_norm in f32 at 16 rows a block (250.3 us against 259.2
# at 32; 16-bit keeps 32)
@pytest.mark.parametrize("name,arch,T,want", [
    ("log_softmax", "sm_90a", "f16", {"BLOCKS": 4}), ("log_softmax", "sm_90a", "bf16", {}),
    ("log_softmax", "sm_80", "f16", {"BLOCKS": 3}), ("batch_norm", "sm_90a", "f32", {"BM": 16}),
    ("batch_norm", "sm_90a", "f16", {}), ("batch_norm", "sm_80", "f32", {})])
def test_the_table_picks_the_measured_tiles(mod, name, arch, T, want):
    x = np.zeros((4, 8192), np.float16)  # the shapes bind M and N (R and L); the dtype comes from T
    assert getattr(mod, name).with_recorded({"x": x, "y": x}, {"T": T}, arch) == {**want, "T": T}


def test_batch_norm_at_16_rows_a_block_computes_what_numpy_does(mod):
    """The f32 rule's 16 rows a block over 3 x 11 = 33 rows (the third block cut short), 300
    columns (a ragged last tile)."""
    (op,) = [o for o in OPS if o.name == "batch_norm"]
    check_row(mod, op, "f32", (3, 11, 300), {"BM": 16, "BL": 256, "THREADS": 256})
