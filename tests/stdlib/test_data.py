"""std.data against NumPy: one table of operators (kernel, NumPy reference, ragged shapes,
dtypes), run on the interpreter; the module built with nvcc for sm_80 and sm_90a.  The GPU test
(tests/gpu/test_data_gpu.py) runs the same table on the device.  Data movement is exact: every
output is compared bit for bit, except the float sums of the atomic scatter_add (TOL)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from tlc import package_data
from typing import Callable

import numpy as np
import pytest

import tlc
from tlc.dtypes import DTYPES
from tlc.interp.args import ArgumentError

DATA_PATH = str(package_data.stdlib().joinpath("data.tl"))
FLOATS = ("f16", "bf16", "f32")
ALL = FLOATS + ("i8", "i32", "i64")
ATOMIC = FLOATS + ("i32", "i64")  # the CUDA targets have no 8-bit atomics (E069)
# Relative error of an atomic float sum (the order of the additions is not fixed): a few
# roundings of the dtype over sums of at most a few terms.
TOL = {"f16": 4e-3, "bf16": 3e-2, "f32": 1e-6}


@dataclass(frozen=True)
class Op:
    """One operator of the table: `make(rng, dtype, shape)` gives the kernel's arguments and
    constants, `ref(args, consts)` NumPy's answer, `out` the argument it is written to."""
    kernel: str
    make: Callable
    ref: Callable
    shapes: tuple
    dtypes: tuple = ALL
    out: int = -1
    exact: bool = True


def values(rng, dtype, shape):
    """Random values that every dtype holds exactly (small integers for integer dtypes)."""
    if dtype.kind == "float":
        return (rng.standard_normal(shape) * 4).astype(np.float32).astype(dtype.numpy())
    return rng.integers(-100, 100, shape).astype(dtype.numpy())


def empty(dtype, shape):
    """An output whose every element is wrong until written: NaN, or the dtype's largest integer."""
    fill = np.nan if dtype.kind == "float" else np.iinfo(dtype.numpy()).max
    return np.full(shape, fill).astype(dtype.numpy())


def indices(rng, n, shape, outside=True):
    """i64 indices into an axis of n, a few of them outside [0, n) (-1 and n) where `outside`."""
    idx = rng.integers(0, n, shape)
    if outside and idx.size > 2:
        idx.flat[0], idx.flat[-1] = -1, n
    return idx


def unique_indices(rng, n, shape):
    """Indices along axis 1 of (A, K, C), each column's K distinct (scatter then has one answer)."""
    a, k, c = shape
    return np.stack([np.stack([rng.permutation(n)[:k] for _ in range(c)], 1) for _ in range(a)])


def gathered(x, idx):
    """x[a, idx[a, k, c], c], 0 where the index is outside x."""
    ok = (idx >= 0) & (idx < x.shape[1])
    return np.where(ok, np.take_along_axis(x, np.clip(idx, 0, x.shape[1] - 1), 1), 0).astype(x.dtype)


def scattered_add(y, idx, src):
    """np.add.at of src into y along axis 1, in order (skipping indices outside y)."""
    y = y.copy()
    a, k, c = np.meshgrid(*map(np.arange, idx.shape), indexing="ij")
    ok = (idx >= 0) & (idx < y.shape[1])
    np.add.at(y, (a[ok], idx[ok], c[ok]), src[ok])
    return y


def scattered(y, idx, src):
    y = y.copy()
    np.put_along_axis(y, idx, src, 1)
    return y


def padded(x, P, Q, top, left, value):
    """y of (P, Q) filled with value, x placed with its corner at (top, left) (cropped by y)."""
    y = np.full((P, Q), value).astype(x.dtype)
    r, c, xr, xc = max(top, 0), max(left, 0), max(-top, 0), max(-left, 0)
    h, w = min(P - r, x.shape[0] - xr), min(Q - c, x.shape[1] - xc)
    if h > 0 and w > 0:
        y[r:r + h, c:c + w] = x[xr:xr + h, xc:xc + w]
    return y


def converted(v, dtype):
    """f64 values converted as tlc's cast does: into an integer toward zero, saturating."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        v = np.clip(np.trunc(v), info.min, info.max)
    return v.astype(dtype)


def _transpose(rng, dt, s):
    return [values(rng, dt, s), empty(dt, s[::-1])], {}


def _batched(rng, dt, s):
    return [values(rng, dt, s), empty(dt, (s[0], s[2], s[1]))], {}


def _permute(rng, dt, s):
    shape, perm = s
    return ([values(rng, dt, shape), empty(dt, tuple(shape[p] for p in perm))],
            dict(zip(("P0", "P1", "P2", "P3"), perm)))


def _concat(rng, dt, s):
    m, na, nb = s
    return [values(rng, dt, (m, na)), values(rng, dt, (m, nb)), empty(dt, (m, na + nb))], {}


def _split(rng, dt, s):
    m, na, nb = s
    return [values(rng, dt, (m, na + nb)), empty(dt, (m, na)), empty(dt, (m, nb))], {}


def _gather(rng, dt, s):
    a, n, c, k = s
    return [values(rng, dt, (a, n, c)), indices(rng, n, (a, k, c)), empty(dt, (a, k, c))], {}


def _gather_i32(rng, dt, s):
    args, consts = _gather(rng, dt, s)
    args[1] = args[1].astype(np.int32)
    return args, consts


def _gather_small_rows(rng, dt, s):
    """Rows of x up to 64 elements through shared memory, 16 outputs a block in steps of 8 (the
    first shape); longer rows read in global memory, 8 outputs a block (the others)."""
    args, _ = _gather(rng, dt, s)
    return args, dict(ROW=64, SPAN=16, BLOCK=8)


def _index_select(rng, dt, s):
    a, n, c, k = s
    return [values(rng, dt, (a, n, c)), indices(rng, n, k), empty(dt, (a, k, c))], {}


def _scatter(rng, dt, s):
    a, n, c, k = s
    k = min(k, n)  # distinct indices
    return [values(rng, dt, (a, k, c)), unique_indices(rng, n, (a, k, c)), values(rng, dt, (a, n, c))], {}


def _scatter_small_rows(rng, dt, s):
    """Rows of y up to 64 elements with up to 32 sources through shared memory, 8 sources a step
    (the first shape: 20 of them, the last step ragged); the others element by element."""
    args, _ = _scatter(rng, dt, s)
    return args, dict(ROW=64, SPAN=32, BLOCK=8)


def _scatter_add(rng, dt, s):
    a, n, c, k = s
    # small values, so that integer sums stay in range; repeated indices, and some outside
    src = rng.integers(-8, 8, (a, k, c)).astype(dt.numpy())
    return [src, indices(rng, n, (a, k, c)), values(rng, dt, (a, n, c))], {}


def _pad(rng, dt, s):
    m, n, p, q, top, left = s
    return [values(rng, dt, (m, n)), empty(dt, (p, q)), top, left, -2.5 if dt.kind == "float" else 7.0], {}


def _repeat(rng, dt, s):
    m, n, p, q = s
    return [values(rng, dt, (m, n)), empty(dt, (p, q))], {}


def _tri(rng, dt, s):
    m, n, k = s
    return [values(rng, dt, (m, n)), empty(dt, (m, n)), k], {}


def _mask(rng, dt, s):
    m, n, k = s
    return [np.zeros((m, n), dt.numpy()) if dt.name == "bool" else empty(dt, (m, n)), k], {"T": dt.name}


def _fill(rng, dt, n):
    return [empty(dt, n), -3.0], {}


def _arange(rng, dt, n):
    start, step = (-1.5, 0.25) if dt.kind == "float" else (-40.0, 3.0)
    return [empty(dt, n), start, step], {}


GATHER_SHAPES = ((2, 9, 5, 4), (1, 1000, 1, 300), (3, 5, 33, 8))  # (A, N, C, K)
TRI_SHAPES = ((5, 7, 1), (70, 33, -3), (1, 1, 0), (9, 40, 20))
OPS = [
    Op("transpose", _transpose, lambda a, c: a[0].T, ((37, 75), (1, 130), (130, 1), (64, 64))),
    Op("transpose_batched", _batched, lambda a, c: a[0].transpose(0, 2, 1), ((3, 37, 75), (2, 65, 1))),
    Op("permute", _permute, lambda a, c: a[0].transpose(c["P0"], c["P1"], c["P2"], c["P3"]),
       (((2, 3, 5, 7), (2, 0, 3, 1)), ((4, 1, 6, 3), (3, 2, 1, 0)), ((3, 5, 2, 9), (0, 2, 1, 3)),
        ((2, 3, 11, 300), (1, 0, 2, 3)), ((10, 2, 3, 5), (1, 2, 0, 3)), ((3, 13, 2, 260), (2, 1, 0, 3)))),
    Op("concat", _concat, lambda a, c: np.concatenate(a[:2], 1), ((5, 7, 3), (1, 1000, 3), (33, 1, 70))),
    Op("split", _split, lambda a, c: (a[0][:, :a[1].shape[1]], a[0][:, a[1].shape[1]:]),
       ((5, 7, 3), (1, 1000, 3), (33, 1, 70)), out=(1, 2)),
    Op("gather", _gather, lambda a, c: gathered(a[0], a[1]), GATHER_SHAPES),
    Op("gather", _gather_i32, lambda a, c: gathered(a[0], a[1]), GATHER_SHAPES[:1], FLOATS),
    Op("gather", _gather_small_rows, lambda a, c: gathered(a[0], a[1]), GATHER_SHAPES, ("f16", "f32", "i64")),
    Op("index_select", _index_select,
       lambda a, c: np.where(((a[1] >= 0) & (a[1] < a[0].shape[1]))[None, :, None],
                             a[0][:, np.clip(a[1], 0, a[0].shape[1] - 1), :], 0).astype(a[0].dtype), GATHER_SHAPES),
    Op("scatter", _scatter, lambda a, c: scattered(a[2], a[1], a[0]), GATHER_SHAPES),
    Op("scatter", _scatter_small_rows, lambda a, c: scattered(a[2], a[1], a[0]), GATHER_SHAPES, ("f16", "f32", "i64")),
    Op("scatter_add", _scatter_add, lambda a, c: scattered_add(a[2], a[1], a[0]), GATHER_SHAPES, ATOMIC, exact=False),
    Op("scatter_add_deterministic", _scatter_add, lambda a, c: scattered_add(a[2], a[1], a[0]), GATHER_SHAPES),
    Op("pad", _pad, lambda a, c: padded(a[0], *a[1].shape, a[2], a[3], a[4]),
       ((5, 7, 8, 12, 2, 3), (33, 70, 30, 75, -1, 0), (1, 1, 4, 4, 1, 2), (6, 5, 3, 3, -2, -1)), out=1),
    Op("repeat", _repeat, lambda a, c: np.tile(a[0], (a[1].shape[0] // a[0].shape[0], a[1].shape[1] // a[0].shape[1])),
       ((5, 7, 10, 21), (1, 3, 4, 9), (3, 1, 3, 1000), (9, 300, 18, 600))),  # the last: whole 8 x 256 tiles
    Op("tril", _tri, lambda a, c: np.tril(a[0], a[2]), TRI_SHAPES, out=1),
    Op("triu", _tri, lambda a, c: np.triu(a[0], a[2]), TRI_SHAPES, out=1),
    Op("tril_mask", _mask, lambda a, c: np.tri(*a[0].shape, a[1]).astype(a[0].dtype), TRI_SHAPES,
       ("bool", "f16", "bf16", "f32", "i32"), out=0),
    Op("fill", _fill, lambda a, c: converted(np.full(a[0].shape, a[1]), a[0].dtype), (1, 1000, 4097), out=0),
    Op("arange", _arange, lambda a, c: converted(a[1] + np.arange(a[0].size) * a[2], a[0].dtype), (1, 1000, 4097),
       out=0),
]
KERNELS = sorted({op.kernel for op in OPS})


def run(mod, op: Op, dtype: str, shape, seed=0):
    """Runs one row of the table on `mod` and asserts its output against NumPy's."""
    dt = DTYPES[dtype]
    args, consts = op.make(np.random.default_rng(seed), dt, shape)
    want = op.ref([a.copy() if isinstance(a, np.ndarray) else a for a in args], consts)
    getattr(mod, op.kernel)(*args, **consts)
    outs = op.out if isinstance(op.out, tuple) else (op.out,)
    wants = want if isinstance(op.out, tuple) else (want,)
    for i, w in zip(outs, wants):
        got = args[i]
        assert got.shape == w.shape and got.dtype == w.dtype, (got.shape, w.shape, got.dtype, w.dtype)
        if op.exact or dt.kind != "float":
            assert np.array_equal(got.view(np.uint8), np.ascontiguousarray(w).view(np.uint8)), \
                (op.kernel, dtype, shape, np.argwhere(got != w)[:5])
        else:
            g, r = got.astype(np.float64), w.astype(np.float64)
            assert np.linalg.norm(g - r) <= TOL[dtype] * np.linalg.norm(r), (op.kernel, dtype, shape)


def cases(first_shape_only: bool):
    """(op, dtype, shape) params: every op at every dtype on its first shape, every shape at f32
    (and f16 where the op takes no f32), the rest marked slow."""
    out = []
    for op in OPS:
        for dtype in op.dtypes:
            for i, shape in enumerate(op.shapes):
                fast = i == 0 or dtype == op.dtypes[-1 if "f32" not in op.dtypes else op.dtypes.index("f32")]
                if first_shape_only and not fast:
                    continue
                out.append(pytest.param(op, dtype, shape, id=f"{op.kernel}-{dtype}-{i}",
                                        marks=[] if fast else [pytest.mark.slow]))
    return out


@pytest.fixture(scope="module")
def cpu_mod():
    return tlc.load(DATA_PATH, target="cpu")


def test_std_data_checks_clean_and_has_its_kernels(cpu_mod):
    assert sorted(cpu_mod.kernels) == KERNELS


PASSED: dict = {}  # kernel -> the dtypes whose every row passed on the interpreter in this run (test_registry)


@pytest.mark.parametrize("op,dtype,shape", cases(first_shape_only=False))
def test_against_numpy_on_the_interpreter(cpu_mod, op, dtype, shape):
    run(cpu_mod, op, dtype, shape)
    PASSED.setdefault(op.kernel, set()).add(dtype)


def adds_in_order_of_k(mod):
    """Many f32 terms into one element: the deterministic kernel's sum is np.add.at's, in order
    of k, bit for bit (a sum in another order differs in the last bits)."""
    rng = np.random.default_rng(3)
    src = (rng.standard_normal((1, 500, 2)) * 1e3).astype(np.float32)
    idx = np.zeros((1, 500, 2), np.int64)
    y = np.zeros((1, 1, 2), np.float32)
    mod.scatter_add_deterministic(src, idx, y)
    want = np.zeros(2, np.float32)
    for k in range(500):
        want += src[0, k]
    assert np.array_equal(y[0, 0], want)


def test_scatter_add_deterministic_adds_in_order_of_k(cpu_mod):
    adds_in_order_of_k(cpu_mod)


def test_wrong_shapes_say_which_argument_and_axis(cpu_mod):
    a, b = np.zeros((3, 4), np.float32), np.zeros((3, 5), np.float32)
    with pytest.raises(ArgumentError) as e:
        cpu_mod.concat(a, b, np.zeros((3, 10), np.float32))
    assert str(e.value) == ("'y' axis 1 has size 10 but the kernel expects Na + Nb = 9 (Na = 4 from 'a' (axis 1), "
                            "Nb = 5 from 'b' (axis 1))")
    with pytest.raises(ArgumentError) as e:
        cpu_mod.transpose(a, np.zeros((3, 4), np.float32))
    assert str(e.value) == "shape symbol 'N' is 4 in 'x' (axis 1) but 3 in 'y' (axis 0)"


def test_scatter_add_of_8_bit_integers_is_refused_for_the_gpu():
    """The CUDA targets have no 8-bit atomics: the checker says where (scatter_add_deterministic
    takes them)."""
    from click.testing import CliRunner

    from tlc.cli import main

    lines = open(DATA_PATH).read().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "atomic_add(y[a, n, c]" in t)
    r = CliRunner().invoke(main, ["check", DATA_PATH, "-D", "T=i8"])
    assert r.exit_code == 1
    assert (f"data.tl:{line}:21: error[E069]: the sm_80 target: atomic_add on i8 is not supported by the CUDA "
            "target\n") in r.output
    assert "1 error in" in r.output


@pytest.mark.nvcc
@pytest.mark.parametrize("arch,dtype", [pytest.param("sm_80", "f16", marks=pytest.mark.slow), ("sm_90a", "bf16"),
                                        pytest.param("sm_80", "defaults", marks=pytest.mark.slow),
                                        pytest.param("sm_90a", "i64", marks=pytest.mark.slow)])
def test_module_builds_with_nvcc(arch, dtype, tmp_path):
    """Every kernel of the module, generated for the target, compiles with warnings as errors and
    keeps its registers (no spills, no stack frame)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import compile_object  # noqa: E402
    from tlc import runner

    defines = [f"T={dtype}"] if dtype != "defaults" else []  # defaults: f32, and tril_mask's bool
    source, _ = runner.build(DATA_PATH, defines=defines, arch=arch)
    log = compile_object(source, arch, tmp_path)
    assert log.count("Compiling entry function") == len(KERNELS) + 2  # concat and split launch two grids each
    frames = re.findall(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    assert len(frames) == len(KERNELS) + 2 and all(f == ("0", "0", "0") for f in frames), log


def _innermost_loop_of(sass: str, op: str) -> list:
    """The instructions of the innermost loop (a backward branch's span) that holds `op`."""
    code = [(int(a, 16), text.strip()) for a, text in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", sass)]
    loops = [(int(t, 16), a) for a, text in code for t in re.findall(r"BRA (?:\S+, )?0x([0-9a-f]+)$", text)
             if int(t, 16) < a]
    spans = [(lo, hi) for lo, hi in loops if any(lo <= a <= hi and op in text for a, text in code)]
    assert spans, f"no loop holds {op}"
    lo, hi = min(spans, key=lambda s: s[1] - s[0])
    return [text for a, text in code if lo <= a <= hi]


@pytest.mark.nvcc
def test_repeat_stores_its_whole_tiles_without_a_division_in_the_loop(tmp_path):
    """repeat's whole-tile test made once, outside its copies' loops (the code generator
    unswitches a loop whose body is one test it cannot change), and the loops' cdiv bounds
    computed once (it holds a range's stop): its innermost loop of 16-byte stores holds no
    integer division (MUFU.RCP, a division by a run-time size) and stays short (f16, sm_90a:
    2 STG.128 in about 60 instructions; the inner loop's bound recomputed there and the element
    path beside each copy took ~115 a store)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import cubin_sass  # noqa: E402
    from tlc import runner

    source, _ = runner.build(DATA_PATH, kernels=("repeat",), defines=("T=f16",), arch="sm_90a")
    loop = _innermost_loop_of(cubin_sass(source, "sm_90a", tmp_path)[0], "STG.E.128")
    assert not any("MUFU.RCP" in text for text in loop)
    assert sum("STG.E.128" in text for text in loop) == 2 and len(loop) < 120, loop


@pytest.mark.nvcc
@pytest.mark.parametrize("arch,dtype", [("sm_90a", "i64"), ("sm_90a", "i8"), ("sm_80", "i64"), ("sm_80", "bool")])
def test_repeat_keeps_16_elements_a_thread_in_registers(arch, dtype, tmp_path):
    """At 128 threads and 4 blocks an SM, the 1- and 8-byte types too (the whole-tile test
    unswitched: tested at each copy, the element path's registers spilled i64's 48 bytes on
    sm_90a)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import compile_device  # noqa: E402
    from tlc import runner

    source, _ = runner.build(DATA_PATH, kernels=("repeat",), defines=(f"T={dtype}",), arch=arch)
    log = compile_device(source, arch, tmp_path)
    assert re.findall(r"(\d+) bytes stack frame, (\d+) bytes spill stores", log) == [("0", "0")], log


def test_registry():
    """stdlib/tested.json lists exactly the operators of this table, each of whose rows (every
    dtype) passed in this run (TLC_RECORD_TESTED=1 rewrites it; tests/stdlib/op_registry.py)."""
    from op_registry import check_or_record

    table: dict = {}
    for op in OPS:
        table.setdefault(op.kernel, set()).update(op.dtypes)
    check_or_record("std.data", table, {k: v for k, v in PASSED.items() if v == table.get(k)}, __file__)
