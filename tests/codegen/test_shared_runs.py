"""codegen/shared_runs.py: a parallel loop's reads of a shared buffer at its column are one vector
load a run, and a copy folded into the loop (schedule/fold_stores.py) stores each run as the loop
finishes it."""
import re

import numpy as np
import pytest

import tlc
from kit_codegen import generated_source, kernel_part
from nvcc import cubin_sass

SOURCE = """
@kernel
def k(X: f16[M, N], W: f16[N], Y: f16[M, N]):
    with grid(M, threads=128) as r:
        ws = shared(f16[1024])
        t = fragment(f32[1, 1024])
        copy(W[0], ws)
        copy(X[r, 0], t)
        for i, j in parallel(1, 1024):
            t[i, j] = t[i, j] * f32(ws[{index}])
        copy(t, Y[r, 0])
"""


def body(index: str = "j", arch: str = "sm_90a") -> str:
    return kernel_part(generated_source(SOURCE.format(index=index), arch=arch, line_directives=False).source)


def test_a_read_at_the_column_is_one_vector_a_run():
    text = body()
    run = re.search(r"half (tl_run\d+)\[tl_k_layout_0::RUN\];", text).group(1)
    assert f"tl::load_run<tl_k_layout_0::RUN>({run}, &ws[tl::smem_index<half, 1, 1024, 0, 0>(0, j)]);" in text
    assert f"(t[tl_r] * tl::cvt<float>({run}[tl_e]))" in text


def test_the_folded_copy_stores_each_run_after_it_is_computed():
    text = body()
    assert "const tl::FragmentStore<tl_k_layout_0, half> tl_store" in text
    loop = text[text.index("for (int tl_r0 = 0;"):]
    assert loop.index("tl::load_run<") < loop.index("for (int tl_e = 0;") < loop.index(".run(t, tl_r0);")
    assert "tl::copy_f2g<" not in text


def test_a_read_elsewhere_than_the_column_stays_an_element_read():
    text = body("1023 - j")
    assert "tl::load_run<" not in text
    assert "ws[tl::smem_index<half, 1, 1024, 0, 0>(0, (1023 - j))]" in text


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_runs_are_16_byte_shared_loads(arch, tmp_path):
    source = generated_source(SOURCE.format(index="j"), arch=arch, line_directives=False).source
    sass, log = cubin_sass(source, arch, tmp_path)
    assert "LDS.U16" not in sass and "LDS.128" in sass
    assert "0 bytes spill stores" in log


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1024, 1000, 37])
def test_it_computes_what_the_interpreter_does(n):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, n)).astype(np.float16)
    w = rng.standard_normal(n).astype(np.float16)
    outs = []
    for target in ("cpu", "cuda"):
        y = np.full((5, n), np.nan, np.float16)
        tlc.compile_source(SOURCE.format(index="j"), target=target).kernels["k"](x, w, y)
        outs.append(y)
    assert np.array_equal(outs[0], outs[1])
    assert np.array_equal(outs[0], (x.astype(np.float32) * w.astype(np.float32)).astype(np.float16))


SWIZZLED = """
@kernel
def k(X: f16[M, N], Y: f32[M, N]):
    with grid(cdiv(M, 64), threads=128) as bx:
        s = shared(f16[64, {cols}])
        t = fragment(f32[64, {cols}])
        copy(X[bx * 64, 0], s)
        copy(s, t)
        copy(t, Y[bx * 64, 0])
"""


@pytest.mark.parametrize("cols, runs", [(64, True), (36, True), (33, False)])  # runs of 8, 4, 1
def test_a_shared_tile_goes_into_a_fragment_a_run_at_a_time_where_its_runs_are_vectors(cols, runs):
    text = kernel_part(generated_source(SWIZZLED.format(cols=cols), arch="sm_90a", line_directives=False).source)
    call = re.search(r"tl::copy_s2f<[^>]*>", text).group(0)
    assert call.endswith(", true>") is runs


# A tensor's element read at the loop's column plus an offset constant along the run (a depthwise
# convolution's tap: x[n, ih, iw, c0 + j]): one tl::load_run_global a run, vectors where the run
# lies inside the tensor and is aligned, element by element otherwise (rows outside, the columns'
# last ragged run, bases off 16 bytes)
GLOBAL = """
@kernel
def k(X: f16[M, N], Y: f16[M, N]):
    with grid(cdiv(N, 256), M, threads=64) as (bx, r):
        t = fragment(f32[2, 256])
        clear(t)
        for d in range(3):
            for i, j in parallel(2, 256):
                t[i, j] += f32(X[r + i + d - 1, {col}])
        for i, j in parallel(2, 256):
            if i == 0:
                Y[r, bx * 256 + j] = f16(t[i, j])
"""


def global_body(col: str, arch: str = "sm_90a") -> str:
    return kernel_part(generated_source(GLOBAL.format(col=col), arch=arch, line_directives=False).source)


def test_a_tensor_read_at_the_column_plus_an_offset_is_one_load_a_run():
    text = global_body("bx * 256 + j")
    run = re.search(r"half (tl_run\d+)\[tl_k_layout_0::RUN\];", text).group(1)
    row = "(((r + i) + d) - 1)"
    assert (f"tl::load_run_global<tl_k_layout_0::RUN>({run}, X + (static_cast<long long>({row}) * N + ((bx * 256) + j)), "
            f"({row} >= 0) & ({row} < M), ((bx * 256) + j), N);") in text
    assert f"tl::cvt<float>({run}[tl_e])" in text


@pytest.mark.parametrize("col", ["255 - j", "j * 2", "bx * 256 + i"])
def test_a_tensor_read_elsewhere_stays_an_element_read(col):
    assert "tl::load_run_global<" not in global_body(col)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_tensor_runs_are_vector_global_loads(arch, tmp_path):
    """The loop's f32 layout has runs of 4: a run of f16 is one 8-byte load (the element path's
    2-byte loads beside it)."""
    source = generated_source(GLOBAL.format(col="bx * 256 + j"), arch=arch, line_directives=False).source
    sass, log = cubin_sass(source, arch, tmp_path)
    assert re.search(r"LDG\.E\.64\b", sass)
    assert "0 bytes spill stores" in log


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, off", [(5, 512, 0), (4, 300, 0), (3, 256, 1), (6, 37, 0)])
def test_tensor_runs_compute_what_the_interpreter_does(m, n, off):
    """Whole aligned runs, a ragged last run (300), every base off 16 bytes (a view one element
    in), runs of 37 columns; rows -1 and M read 0."""
    rng = np.random.default_rng(4)
    flat = rng.standard_normal(m * n + off).astype(np.float16)
    outs = []
    for target in ("cpu", "cuda"):
        x = flat[off:].reshape(m, n)
        y = np.full((m, n), np.nan, np.float16)
        tlc.compile_source(GLOBAL.format(col="bx * 256 + j"), target=target).kernels["k"](x, y)
        outs.append(y)
    x = flat[off:].reshape(m, n).astype(np.float32)
    pad = np.concatenate([np.zeros((1, n), np.float32), x, np.zeros((1, n), np.float32)])
    want = (pad[0:m] + pad[1:m + 1] + pad[2:m + 2]).astype(np.float16)
    assert np.array_equal(outs[0], outs[1])
    assert np.allclose(outs[0].astype(np.float32), want, rtol=2e-3, atol=2e-3)


def test_tensor_runs_from_an_origin_of_whole_runs_ask_the_whole_runs_build():
    """A read whose offset is a multiple of the run (bx * 256) asks the launch for X's last size
    a multiple of the run (codegen/whole_runs.py): under TL_WHOLE_RUNS a run is whole or wholly
    outside, one predicated vector load; an offset of 3 leaves partial runs, no such build."""
    from kit_codegen import generated_source as gen

    assert gen(GLOBAL.format(col="bx * 256 + j"), arch="sm_90a").whole_runs == (("X", "N", 4),)
    assert gen(GLOBAL.format(col="bx * 256 + 3 + j"), arch="sm_90a").whole_runs is None


@pytest.mark.nvcc
def test_the_whole_runs_build_has_no_element_path(tmp_path):
    source = generated_source(GLOBAL.format(col="bx * 256 + j"), arch="sm_90a", line_directives=False).source
    sass, log = cubin_sass("#define TL_WHOLE_RUNS 1\n" + source, "sm_90a", tmp_path)
    assert re.search(r"LDG\.E\.64", sass) and "LDG.E.U16" not in sass
    assert "0 bytes spill stores" in log


# A loop's store to a shared buffer at its column (std.reduce's scans filling their shared tile):
# each register's value into the run's registers, the run stored as vectors once computed
STORE = """
@kernel
def k(X: f16[M, N], Y: f16[M, N]):
    with grid(cdiv(M, 4), threads=128) as bx:
        t = fragment(f16[4, 1024])
        run = shared(f32[4, 1024])
        out = fragment(f16[4, 1024])
        copy(X[bx * 4, 0], t)
        for i, j in parallel(4, 1024):
            {store}
        cumsum(run, dim=1)
        for i, j in parallel(4, 1024):
            out[i, j] = f16(run[i, j])
        copy(out, Y[bx * 4, 0])
"""


def store_body(store: str, arch: str = "sm_90a") -> str:
    return kernel_part(generated_source(STORE.format(store=store), arch=arch, line_directives=False).source)


def test_a_store_at_the_column_is_one_vector_store_a_run():
    text = store_body("run[i, j] = f32(t[i, j]) + where(j == 0, 1.0, 0.0)")
    run = re.search(r"float (tl_wrun\d+)\[tl_k_layout_0::RUN\];", text).group(1)
    assert f"{run}[tl_e] = (tl::cvt<float>(t[tl_r]) + " in text
    store = f"tl::store_run<tl_k_layout_0::RUN>(&run[tl::smem_index<float, 4, 1024, 4, 0>(i, j)], {run});"
    assert store in text
    loop = text[text.index(f"float {run}["):]
    assert loop.index("for (int tl_e = 0;") < loop.index(store) < loop.index("tl::cumsum_shared<")


@pytest.mark.parametrize("store", [
    "run[i, 1023 - j] = f32(t[i, j])",                                   # not at the column
    "if j > 0:\n                run[i, j] = f32(t[i, j])",              # not every register
    "run[i, j] = f32(t[i, j])\n            run[i, j] += 1.0",            # read back in the loop
])
def test_other_stores_stay_element_stores(store):
    text = store_body(store)
    assert "tl_wrun" not in text and "tl::store_run<tl_k_layout_0::RUN>(&run" not in text
    assert re.search(r"run\[tl::smem_index<float, 4, 1024, 4, 0>\([^;]*\] = ", text)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_store_runs_are_16_byte_shared_stores(arch, tmp_path):
    source = generated_source(STORE.format(store="run[i, j] = f32(t[i, j])"), arch=arch, line_directives=False).source
    sass, log = cubin_sass(source, arch, tmp_path)
    assert "STS.128" in sass and not re.search(r"\bSTS\s", sass)
    assert "0 bytes spill stores" in log


@pytest.mark.gpu
@pytest.mark.parametrize("m, n", [(8, 1024), (5, 1000), (3, 37)])
def test_store_runs_compute_what_the_interpreter_does(m, n):
    """Whole tiles, a ragged last row block, ragged columns (the copy's zeros scanned past N)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((m, n)).astype(np.float16)
    src = STORE.format(store="run[i, j] = f32(t[i, j]) + where(j == 0, 1.0, 0.0)")
    outs = []
    for target in ("cpu", "cuda"):
        y = np.full((m, n), np.nan, np.float16)
        tlc.compile_source(src, target=target).kernels["k"](x, y)
        outs.append(y)
    want = np.cumsum(x.astype(np.float32) + (np.arange(n) == 0), axis=1)
    np.testing.assert_allclose(outs[1].astype(np.float32), want, rtol=2e-3, atol=2e-2)
    np.testing.assert_allclose(outs[0].astype(np.float32), outs[1].astype(np.float32), rtol=1e-3, atol=1e-2)


ROW_VECTOR = """
@kernel
def k(X: f16[M, N], b: f16[N], Y: f16[M, N]):
    with grid(cdiv(N, 256), cdiv(M, 8), threads=128) as (bx, by):
        t = fragment(f16[8, 256])
        copy(X[by * 8, bx * 256], t)
        for i, j in parallel(8, 256):
            t[i, j] = t[i, j] + b[bx * 256 + j]
        copy(t, Y[by * 8, bx * 256])
"""


def test_a_one_dimensional_tensor_read_at_the_column_is_one_load_a_run():
    """std.elementwise's add_row: b[N] read at the loop's column is a 16-byte vector a run (the
    run's other indices: none), where each register was a 2-byte load behind its bounds check
    (add_row f16 at (16384, 8192), sm_90a, the whole-runs build: 16 LDG.E.U16 and 239
    instructions a thread, now one LDG.E.128 for both of a thread's runs, which share their
    columns, and 131); the launch asks b's size a multiple of the run."""
    gen = generated_source(ROW_VECTOR, arch="sm_90a", line_directives=False)
    run = re.search(r"half (tl_run\d+)\[tl_k_layout_0::RUN\];", gen.source).group(1)
    assert (f"tl::load_run_global<tl_k_layout_0::RUN>({run}, b + static_cast<long long>(((bx * 256) + j)), true, "
            "((bx * 256) + j), N);") in gen.source
    assert gen.whole_runs == (("X", "N", 8), ("b", "N", 8), ("Y", "N", 8))


@pytest.mark.nvcc
def test_the_row_vector_is_read_as_16_byte_loads(tmp_path):
    sass, log = cubin_sass(generated_source(ROW_VECTOR, arch="sm_90a", line_directives=False).source, "sm_90a", tmp_path)
    assert re.search(r"LDG\.E\.128", sass) and "0 bytes spill stores" in log


BLOCK_SCALES = """
@kernel
def k(X: f16[M, N], E: {edt}[M, K], Y: f16[M, N]):
    with grid(cdiv(M, 16), threads=128) as bx:
        es = shared({edt}[16, 32])
        t = fragment(f16[16, 1024])
        copy(E[bx * 16, 0], es)
        copy(X[bx * 16, 0], t)
        for i, j in parallel(16, 1024):
            t[i, j] = f16(f32(t[i, j]) * f32({read}))
        copy(t, Y[bx * 16, 0])
"""


def block_scales(read: str, edt: str = "f32") -> str:
    return kernel_part(generated_source(BLOCK_SCALES.format(read=read, edt=edt), arch="sm_90a",
                                        line_directives=False).source)


@pytest.mark.parametrize("read", ["es[i, j // 32]", "E[bx * 16 + i, j // 16]"])
def test_a_read_at_the_columns_block_of_a_multiple_of_the_run_is_read_once_a_run(read):
    """std.quant's dequantize_mx: a scale a block of 32 columns (es[i, j // 32]) is the same
    element for every register of a run of 8 or 16 (its first column a multiple of the run),
    read once a run before the run's loop, where it was read once a register."""
    text = block_scales(read)
    once = re.search(r"float (tl_once\d+);", text).group(1)
    loop = text[text.index("for (int tl_r0 = 0;"):]
    assert loop.index(f"{once} = ") < loop.index("for (int tl_e = 0;")
    assert f"(tl::cvt<float>(t[tl_r]) * {once})" in loop


@pytest.mark.parametrize("read", ["es[i, j // 4]", "es[i, (j + 8) // 32]", "es[i, j // 32 + j % 2]"])
def test_a_block_smaller_than_the_run_or_another_column_stays_an_element_read(read):
    assert "tl_once" not in block_scales(read)


@pytest.mark.nvcc
def test_the_block_scales_are_one_shared_load_a_run(tmp_path):
    """16 x 1024 f16 on 128 threads: 128 registers a thread, 16 runs of 8, so 16 4-byte LDS
    (byte scales, u8: 16 LDS.U8), where each register read its own (128)."""
    for edt, op in (("f32", "LDS"), ("u8", "LDS.U8")):
        source = generated_source(BLOCK_SCALES.format(read="es[i, j // 32]", edt=edt), arch="sm_90a",
                                  line_directives=False).source
        sass, log = cubin_sass(source, "sm_90a", tmp_path, name=f"k_{edt}")
        assert len(re.findall(rf"\b{re.escape(op)} R", sass)) == 16, edt
        assert "0 bytes spill stores" in log


BLOCK_ROWS = """
@kernel
def k(X: f16[M, N], Y: f16[M, N]):
    with grid(cdiv(N, 256), cdiv(M, 4), threads=128) as (bx, by):
        xs = shared(f16[4, 256])
        ys = shared(f16[4, 256])
        t = fragment(f32[32, 32])  # a tile row's 8 blocks of 32 as 8 rows
        copy(X[by * 4, bx * 256], xs)
        for r, c in parallel(32, 32):
            t[r, c] = f32(xs[r // 8, {col}]) * 2.0
            ys[r // 8, {col}] = f16(t[r, c])
        copy(ys, Y[by * 4, bx * 256])
"""


def test_a_shared_access_at_the_column_plus_whole_runs_is_one_vector_a_run():
    """std.quant's quantize_mx: a tile row's blocks of 32 as the rows of a [BM * 8, 32] fragment
    (xs[r // 8, r % 8 * 32 + c]) read and write shared memory a run at a time, the offset a
    multiple of the run, where each register was its own 2-byte LDS and STS."""
    text = kernel_part(generated_source(BLOCK_ROWS.format(col="r % 8 * 32 + c"), arch="sm_90a",
                                        line_directives=False).source)
    assert "tl::load_run<tl_k_layout_0::RUN>(" in text and "tl::store_run<tl_k_layout_0::RUN>(" in text


@pytest.mark.parametrize("col", ["r % 8 * 32 + c + 1", "r % 8 * 31 + c"])
def test_an_offset_that_may_split_a_run_stays_element_access(col):
    text = kernel_part(generated_source(BLOCK_ROWS.format(col=col), arch="sm_90a", line_directives=False).source)
    assert "tl::load_run<" not in text and "tl::store_run<" not in text


@pytest.mark.nvcc
def test_the_block_rows_are_8_byte_shared_accesses(tmp_path):
    """32 x 32 f32 on 128 threads: 8 registers a thread, two runs of 4: two LDS.64 and two STS.64
    of f16 where the loops took 8 LDS.U16 and 8 STS.U16 (the 4 LDS.U16 and 2 STS.U16 left are
    the copies' element paths, there either way)."""
    source = generated_source(BLOCK_ROWS.format(col="r % 8 * 32 + c"), arch="sm_90a", line_directives=False).source
    sass, log = cubin_sass(source, "sm_90a", tmp_path)
    counts = {op: len(re.findall(rf"\b{re.escape(op)} ", sass)) for op in ("LDS.64", "STS.64", "LDS.U16", "STS.U16")}
    assert counts == {"LDS.64": 2, "STS.64": 2, "LDS.U16": 4, "STS.U16": 2}
    assert "0 bytes spill stores" in log


STORED = """
@kernel
def k(X: f16[M, N], Y: {out}[M, N]):
    with grid(M, threads=128) as r:
        t = fragment({frag}[1, 4096])
        copy(X[r, 0], t)
        for i, j in parallel(1, 4096):
            t[i, j] = t[i, j] * {frag}(2.0)
        copy(t, Y[r, 0])
"""


@pytest.mark.parametrize("frag,out,wide", [("f16", "f16", True), ("f16", "f32", False), ("f32", "f32", False)])
def test_with_ragged_vector_stores_a_wide_fragment_of_the_stored_dtype_asks_vector_runs(frag, out, wide, monkeypatch):
    """shared_runs.RAGGED_VECTOR_STORES: a folded store of a 16-bit fragment of 32 registers a
    thread into a tensor of its dtype asks tl::FragmentStore's VECTOR_RUNS; converted at the
    store (f16 to f32) or 4-byte elements (already vector stores) it does not; off, none does."""
    from tlc.codegen import shared_runs

    src = STORED.format(frag=frag, out=out)
    for on in (False, True):
        monkeypatch.setattr(shared_runs, "RAGGED_VECTOR_STORES", on)
        text = kernel_part(generated_source(src, arch="sm_90a", line_directives=False).source)
        store = re.search(r"const tl::FragmentStore<tl_k_layout_0, (\w+)(, true)?> tl_store", text)
        assert store and (store.group(2) is not None) == (on and wide), store and store.group(0)


@pytest.mark.nvcc
@pytest.mark.slow
def test_ragged_vector_stores_are_16_byte_stores_in_the_general_build_only(monkeypatch, tmp_path):
    """std.broadcast's pow of f16 at BLOCKS = 8 (A3, B3 not 1): its general build's whole runs go
    out as STG.E.128 with the switch, and nothing spills (16 STG.E a thread without it: nvcc split
    the union store, and 12 bytes spilled); the whole-runs build is the same SASS either way."""
    from tlc.codegen import shared_runs
    from tlc.dtypes import F16
    from tlc.typecheck.program import NOT_ONE

    k = tlc.load("std.broadcast", target="cpu").kernels["pow"]
    sass, logs = {}, {}
    for on in (False, True):
        monkeypatch.setattr(shared_runs, "RAGGED_VECTOR_STORES", on)
        kernels = k.scheduled_grids({"T": F16, "BLOCKS": 8, "A3": NOT_ONE, "B3": NOT_ONE}, "sm_90a")
        text = tlc.codegen.generate_file(list(kernels), "sm_90a", line_directives=False)
        for whole in (False, True):
            code, logs[on, whole] = cubin_sass(("#define TL_WHOLE_RUNS 1\n" if whole else "") + text, "sm_90a",
                                               tmp_path, name=f"v{int(on)}{int(whole)}")
            sass[on, whole] = [ln.split(";")[0].split("*/", 1)[1].strip() for ln in code.splitlines()
                               if re.match(r"\s+/\*[0-9a-f]{4,}\*/", ln)]
    count = lambda on, op: sum(bool(re.search(rf"(^|\s){re.escape(op)}\s", ln)) for ln in sass[on, False])  # noqa: E731
    assert count(False, "STG.E.128") == 0 and count(False, "STG.E") == 16
    assert count(True, "STG.E.128") == 4 and count(True, "STG.E") == 0
    assert " 0 bytes spill stores" in logs[True, False]
    assert sass[False, True] == sass[True, True]
