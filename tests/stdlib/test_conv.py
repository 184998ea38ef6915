"""std.conv against NumPy (conv_kit's float64 references) on the interpreter, at small ragged
shapes: padding at the borders, stride 2, dilation 2, groups 2, channel counts that are not a
multiple of the K tile, output pixels that end inside a tile; the module compiled by nvcc for
sm_80 and sm_90a without spills; its reference page.  tests/gpu/test_conv_gpu.py runs the same
cases on the GPU against torch.nn.functional in f32, at larger shapes too."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import conv_kit as ck
import tlc
from module_checks import (assert_builds_without_spills, assert_reference_page_is_current,
                           defs_without_a_doc_comment)
from op_registry import check_or_record

SMALL = dict(BM=32, BN=16, BK=16, stages=2, THREADS=64)  # small tiles: many ragged tiles per case

# (N, H, W, C, F, K, S, P, D): borders padded, strides, dilations, ragged C and F
CONV_CASES = [(2, 9, 7, 24, 20, 3, 1, 1, 1), (1, 8, 9, 16, 12, 3, 2, 1, 1), (2, 7, 8, 8, 10, 3, 1, 2, 2),
              (1, 6, 5, 3, 5, 1, 1, 0, 1), (1, 11, 10, 10, 7, 5, 2, 2, 1)]
GROUPED_CASES = [(2, 9, 7, 12, 10, 3, 2, 1, 1, 2), (1, 6, 7, 8, 8, 3, 1, 2, 2, 4), (1, 5, 6, 6, 4, 3, 1, 1, 1, 2)]
DW_CASES = [(2, 9, 7, 20, 3, 1, 1, 1), (1, 8, 9, 70, 3, 2, 1, 1), (1, 7, 8, 8, 3, 1, 2, 2), (1, 5, 6, 3, 5, 1, 2, 1)]
C1D_CASES = [(2, 5, 37, 4), (1, 9, 300, 3), (3, 1, 5, 4)]
POOL_CASES = [(2, 9, 7, 20, 3, 2, 1), (1, 8, 9, 70, 2, 2, 0), (1, 7, 8, 8, 3, 1, 1)]


# operator -> the dtypes its test covers; PASSED the cases that passed in this run
TABLE = {"conv2d": ("f16", "f32"), "conv2d_grouped": ("f16",), "depthwise_conv2d": ("f16",),
         "causal_conv1d": ("f16",), "max_pool2d": ("f16",), "avg_pool2d": ("f16",), "conv2d_bwd_data": ("f16",),
         "conv2d_bwd_weight": ("f16",)}
CASES = {"conv2d": 2 * len(CONV_CASES), "conv2d_grouped": len(GROUPED_CASES), "depthwise_conv2d": 3 * len(DW_CASES),
         "causal_conv1d": 4 * len(C1D_CASES), "max_pool2d": len(POOL_CASES), "avg_pool2d": 2 * len(POOL_CASES),
         "conv2d_bwd_data": 2 * len(CONV_CASES), "conv2d_bwd_weight": len(CONV_CASES)}
PASSED: dict[str, int] = {}


def _passed(op: str) -> None:
    PASSED[op] = PASSED.get(op, 0) + 1


@pytest.fixture(scope="module")
def mod():
    return tlc.load(ck.CONV_PATH, target="cpu")


def _rng(*key):
    return np.random.default_rng(abs(hash(key)) % 2 ** 32)


def test_every_operator_has_a_doc_comment():
    assert defs_without_a_doc_comment(ck.CONV_PATH) == []


@pytest.mark.parametrize("dtype", ["f16", "f32"])
@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv2d(mod, case, dtype):
    N, H, W, C, F, K, S, P, D = case
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((N, H, W, C)).astype(ck.NP[dtype])
    w = rng.standard_normal((F, K, K, C)).astype(ck.NP[dtype])
    want = ck.conv2d(x, w, S, P, D)
    y = np.full(want.shape, np.nan, x.dtype)
    mod.conv2d(x, w, y, S=S, P=P, D=D, **SMALL)
    assert ck.rel_err(y, want) < (2e-3 if dtype == "f16" else 1e-5)
    _passed("conv2d")


# FLAT's K steps over the flattened (kh, kw, c): few channels (the RGB stem's 3, 7 x 7, stride
# 2), K tiles that straddle kernel positions and the last one past K * K * C, a 16-channel case
# whose vectors move whole, dilation 2
FLAT_CASES = [(1, 15, 14, 3, 10, 7, 2, 3, 1), (2, 9, 7, 5, 20, 3, 1, 1, 1), (1, 8, 9, 16, 12, 3, 2, 1, 1),
              (2, 7, 8, 8, 10, 3, 1, 2, 2), (1, 6, 5, 3, 5, 1, 1, 0, 1)]


@pytest.mark.parametrize("tiles", ["small", "wide"])
@pytest.mark.parametrize("case", FLAT_CASES, ids=str)
def test_conv2d_flat(mod, case, tiles):
    N, H, W, C, F, K, S, P, D = case
    rng = np.random.default_rng(sum(case) + 1)
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    w = rng.standard_normal((F, K, K, C)).astype(np.float16)
    want = ck.conv2d(x, w, S, P, D)
    y = np.full(want.shape, np.nan, x.dtype)
    consts = SMALL if tiles == "small" else dict(BM=64, BN=32, BK=64, stages=3, THREADS=128)
    mod.conv2d(x, w, y, S=S, P=P, D=D, FLAT=True, **consts)
    assert ck.rel_err(y, want) < 2e-3



# FLAT's staged path (the K input rows of a tile in shared memory, the whole im2col tile built
# from them): output rows longer than a tile (35 pixels of 32-pixel tiles), 3 blocks walking
# every tile, and a channel count whose staged buffers do not fit (the im2col fallback)
@pytest.mark.parametrize("case", [(2, 9, 70, 16, 16, 3, 2, 1, 1), (1, 15, 14, 3, 10, 7, 2, 3, 1), (1, 13, 40, 5, 20, 3, 1, 2, 2),
                                  (1, 9, 9, 40, 8, 7, 1, 3, 1)], ids=str)
def test_conv2d_flat_staged_walk(mod, case):
    N, H, W, C, F, K, S, P, D = case
    rng = np.random.default_rng(sum(case) + 2)
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    w = rng.standard_normal((F, K, K, C)).astype(np.float16)
    want = ck.conv2d(x, w, S, P, D)
    y = np.full(want.shape, np.nan, x.dtype)
    mod.conv2d(x, w, y, S=S, P=P, D=D, FLAT=True, BLOCKS=3, **SMALL)
    assert ck.rel_err(y, want) < 2e-3

# conv2d written with the output pixel's divisions inside the gather (bench/conv_gather_ws.tl,
# session 15's form, timed beside std.conv's by bench/conv.py --source): sm_90a schedules it as a
# warp-specialized ring whose producer loads x's tile by one box of the TMA's im2col mode
# (schedule/im2col_tma.py: the gather is one) and w's by an ordinary box, run by the interpreter
# as recorded (tlc/interp/ring.py): stride 2, dilation 2, C not a multiple of 8, ragged pixels and F
GATHER_WS_PATH = str(Path(__file__).resolve().parents[2] / "bench" / "conv_gather_ws.tl")
RING_CASES = [((2, 9, 7, 64, 70, 3, 1, 1, 1), {}), ((1, 11, 10, 72, 64, 3, 2, 1, 1), {"BN": 64}),
              ((1, 6, 5, 36, 20, 3, 1, 2, 2), {"BM": 64, "BN": 64, "THREADS": 128})]


def test_std_conv2d_on_sm90a_is_the_tma_im2col_ring(mod):
    """std.conv's conv2d on sm_90a: x's tile through the TMA's im2col mode, w's through an
    ordinary box, on the persistent warp-specialized ring (a TMA producer warpgroup, two wgmma
    consumer warpgroups).  FLAT stages the block's K input rows in shared memory (no ring); where
    they would not fit in 64 KB, im2col's flattened columns and a view's copy of w keep the
    cp.async ring (the view's copy is a gather of the general form).  C and K are compiled in."""
    for consts in ({"S": 1, "P": 1}, {"S": 2, "P": 1, "BN": 64}, {"S": 1, "P": 1, "BN": 256, "stages": 4}):
        kernel = mod.kernels["conv2d"].scheduled({"C": 64, "K": 3, **consts}, "sm_90a")
        ws = kernel.warp_spec
        assert ws is not None and kernel.threads == 256 and ws.tile_order is not None
        assert [(x.buffer, bool(x.im2col), x.row_axis) for x in ws.loads] == [("xs", True, None), ("ws", False, 0)]
    staged = mod.kernels["conv2d"].scheduled({"S": 2, "P": 3, "FLAT": True, "C": 3, "K": 7}, "sm_90a")
    rows = {b.name: b for b in staged.buffers}.get("rows")
    assert staged.warp_spec is None and rows is not None and tuple(rows.shape) == (7, 783)
    flat = mod.kernels["conv2d"].scheduled({"S": 2, "P": 3, "FLAT": True, "C": 64, "K": 7}, "sm_90a")
    assert flat.warp_spec is None and "rows" not in {b.name for b in flat.buffers}



@pytest.mark.parametrize("consts, cluster", [({"C": 256, "K": 3, "BN": 256}, 2), ({"C": 512, "K": 1, "BN": 256}, 1),
                                             ({"C": 512, "K": 3, "BN": 256, "BM": 64, "stages": 4}, 1),
                                             ({"C": 128, "K": 3, "stages": 6}, 1), ({"C": 64, "K": 3, "BN": 64, "BM": 256, "stages": 4}, 1)])
def test_conv2d_sm90a_clusters_only_long_rings_of_wide_w_tiles(mod, consts, cluster):
    """schedule/warpspec.py: an im2col ring runs in clusters of 2 (w multicast) only where w's tile
    has 256 rows or more, x's 128 or more and the K loop 16 steps or more (H200: conv3x3_56_256
    1.00x cuDNN clustered, 0.95x not; the 1x1 rows, the 64- and 128-channel rows and the 7 x 7
    image's 64 x 256 tiles 1-11% faster unclustered)."""
    ws = mod.kernels["conv2d"].scheduled({"S": 1, "P": 1, **consts}, "sm_90a").warp_spec
    assert ws.tile_order.cluster == cluster and [x.multicast for x in ws.loads] == [False, cluster == 2]

@pytest.mark.parametrize("case, consts", RING_CASES, ids=str)
def test_conv2d_on_the_sm90a_ring(case, consts):
    N, H, W, C, F, K, S, P, D = case
    kernel = tlc.load(GATHER_WS_PATH, target="cpu").kernels["conv2d"].scheduled({"S": S, "P": P, "D": D, **consts}, "sm_90a")
    ws = kernel.warp_spec
    assert ws is not None and [(x.buffer, x.gather, bool(x.im2col), x.row_axis) for x in ws.loads] == \
        [("xs", False, True, None), ("ws", False, False, 0)]
    assert ws.tile_order is not None and ws.producer_registers == 40  # persistent; a TMA producer
    assert ck.scheduled_conv2d_error(kernel, case) < 2e-3


def test_conv2d_sm90a_code():
    """The C of bench/conv_gather_ws.tl's conv2d on sm_90a: one thread of the producer loads x's
    tile by one TMA im2col box a K step (the first pixel's window corner at the padding, once a
    tile, the kernel position's offsets counted along), w's through an ordinary box (64 channels x 1 x 1 x BN output
    channels); where the host has no maps its threads gather x's rows instead (the C launcher
    encodes no im2col map); the consumers only wait and compute."""
    from tlc.runner import build

    cu, _ = build(GATHER_WS_PATH, kernels=("conv2d",), defines=("T=f16", "S=1", "P=1"), arch="sm_90a")
    assert "warp-specialized over 3 stages: threads 256..383 produce (TMA), 2 consumer" in cu
    assert "const cuuint32_t box[] = {64, 1, 1, 128};" in cu  # w's whole tile: an im2col ring is not clustered
    assert "tl_tma_loads = false;  // an im2col map: this launcher encodes tiled maps only" in cu
    producer = cu[cu.index("the producer warpgroup"):cu.index("tl::setmaxnreg_inc")]
    # 40 registers where every map encodes; the generic build's producer may gather: a gatherer's
    assert "(TL_TMA_FLAGS & 1)  // every map encoded: the TMA copies\n      tl::setmaxnreg_dec<40>();\n#else" in producer
    assert "      tl::setmaxnreg_dec<128>();\n#endif" in producer
    tma = producer[:producer.index("the host could not encode a tensor map")]
    assert "gather rows" not in tma
    # the first pixel's window's corner (w, h, image) once a tile, before the K loop
    corner = tma[tma.index("const int k_200002eh"):tma.index("for (int tl_k = 0;")]
    assert "(tl::pymod<int>(((by * 128) + 0), OW) + (-1))" in corner
    assert "tl::floordiv<int>(((by * 128) + 0), (OW * OH))" in corner
    # the K step's channel block and kernel position counted along (codegen/warpspec/stepped.py),
    # where every divisor is above 0; the divisions otherwise
    stepped, divided = tma.split("} else {", 1)
    stepped = stepped[stepped.index("if (tl_stepped) {"):]
    assert stepped.count("tl::tma_load_im2col<half, 128, 64>((xs + ") == 1
    assert stepped.count("tl::tma_load_box<half, 128, 64, 4>(") == 1 and "multicast" not in stepped
    assert "floordiv" not in stepped and "pymod" not in stepped
    assert divided.count("tl::tma_load_im2col<half, 128, 64>((xs + ") == 1 and "tl::pymod<int>(k, CB)" in divided
    assert "if (++k_200002er0_ == k_200002eh0_) {" in divided  # after both: the counters step
    fallback = producer[producer.index("the host could not encode a tensor map"):]
    assert fallback.count("gather rows of x into xs: 16-byte vectors through cp.async") == 1
    consumer = cu[cu.index("tl::setmaxnreg_inc"):]
    assert "tl::fence_proxy_async();  // the producer's cp.async writes" not in consumer
    assert "copy(acc, y_flat[by * BM, bx * BN])" in consumer


@pytest.mark.nvcc
@pytest.mark.slow
def test_conv2d_sm90a_sass(tmp_path):
    """sm_90a SASS of bench/conv_gather_ws.tl's conv2d (128 x 128 x 64 tiles) as the runtime
    builds it for launches whose maps encode (TL_TMA_FLAGS): x's tile one UTMALDG.4D.IM2COL a K
    step and w's tile one UTMALDG (no cluster), 4 HGMMA.64x128x16 a K step and no block barrier in the
    consumers' loop, no local memory."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import cubin_sass
    from tlc.runner import build

    source, _ = build(GATHER_WS_PATH, kernels=("conv2d",), defines=("T=f16", "S=1", "P=1"), arch="sm_90a")
    sass, log = cubin_sass("#define TL_TMA_FLAGS 1\n" + source, "sm_90a", tmp_path, "conv")
    assert not re.search(r"\b(LDL|STL)\b", sass) and " 0 bytes spill stores" in log
    assert "HGMMA.64x128x16.F32" in sass and "HMMA" not in sass.replace("HGMMA", "")
    # one box a K step, counted or (a divisor not above 0) divided: two UTMALDG in the code
    assert sass.count("UTMALDG.4D.IM2COL") == 2 and "UTMALDG.4D.MULTICAST" not in sass and "LDGSTS" not in sass
    first = sass.index("HGMMA")
    step = sass[sass.rindex("TRYWAIT", 0, first):sass.index("WARPGROUP.DEPBAR", first)]
    assert step.count("HGMMA") == 4 and "BAR.SYNC" not in step


@pytest.mark.parametrize("case", GROUPED_CASES, ids=str)
def test_conv2d_grouped(mod, case):
    N, H, W, C, F, K, S, P, D, G = case
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    w = rng.standard_normal((F, K, K, C // G)).astype(np.float16)
    want = ck.conv2d(x, w, S, P, D, groups=G)
    y = np.full(want.shape, np.nan, np.float16)
    mod.conv2d_grouped(x, w, y, G=G, S=S, P=P, D=D, BM=32, BN=16, BK=16, THREADS=64)
    assert ck.rel_err(y, want) < 2e-3
    _passed("conv2d_grouped")


def test_conv2d_grouped_refuses_channels_that_do_not_divide(mod):
    from tlc.device_assert import DeviceAssertError

    x = np.zeros((1, 4, 4, 6), np.float16)
    w = np.zeros((4, 3, 3, 2), np.float16)  # C // G = 2 with G = 2: C would be 4
    with pytest.raises(DeviceAssertError, match=r"conv2d_grouped: C = 6, F = 4, weight's C // G = 2, G = 2"):
        mod.conv2d_grouped(x, w, np.zeros((1, 2, 2, 4), np.float16), G=2, BM=32, BN=16, BK=16, THREADS=64)


@pytest.mark.parametrize("tiles", ["small", "rows", "default"])  # rows: 3 output rows a block, the last block's ragged
@pytest.mark.parametrize("case", DW_CASES, ids=str)
def test_depthwise_conv2d(mod, case, tiles):
    N, H, W, C, K, S, P, D = case
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    w = rng.standard_normal((C, K, K)).astype(np.float16)
    want = ck.depthwise_conv2d(x, w, S, P, D)
    y = np.full(want.shape, np.nan, np.float16)
    consts = {"small": dict(BW=4, BC=16, THREADS=32), "rows": dict(BH=3, BW=4, BC=16, THREADS=32), "default": {}}[tiles]
    mod.depthwise_conv2d(x, w, y, S=S, P=P, D=D, **consts)
    assert ck.rel_err(y, want) < 2e-3
    _passed("depthwise_conv2d")


def test_depthwise_conv2d_reads_x_a_run_at_a_time(mod):
    """Each tap's parallel loop reads x at its channel: a thread's run of 8 channels is one
    tl::load_run_global (16 bytes where the run is inside x and aligned), the weights a run of
    the shared tap-major copy (before: 2-byte loads of both, 8x slower than cuDNN)."""
    text = mod.kernels["depthwise_conv2d"].cuda_source("sm_90a", S=2, P=1, D=1, K=3)
    assert text.count("tl::load_run_global<tl_depthwise_conv2d_layout_0::RUN>(") == 1
    assert "tl::load_run<tl_depthwise_conv2d_layout_0::RUN>(" in text
    assert re.search(r"using tl_depthwise_conv2d_layout_0 = tl::Blocked<8, 128, 128, 8>;", text)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch,BH", [("sm_80", 4), ("sm_90a", 4), pytest.param("sm_90a", 8, marks=pytest.mark.slow)])
def test_depthwise_conv2d_sass(mod, arch, BH, tmp_path):
    """3 x 3 taps of BH output rows, unrolled (4, the .tl's; 8, config.json's sm_90a rule for
    3 x 3).  The build for whole runs (C a multiple of 8, the runtime's first) loads each of the
    BH + 2 input rows' 3 taps once, 18 16-byte loads of x a thread at BH = 4 (36 before: a
    predicated load per tap and row, which nvcc neither hoisted nor merged), 30 at 8, and 8 FFMA
    a tap of a row.  The general build keeps its element paths; neither touches local memory."""
    import sys

    from tlc.runtime.whole_runs import DEFINE

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import cubin_sass

    source = mod.kernels["depthwise_conv2d"].cuda_source(arch, S=1, P=1, D=1, K=3, BH=BH)
    for build, text in [("whole", DEFINE + source), ("general", source)]:
        sass, log = cubin_sass(text, arch, tmp_path, f"dw_{build}")
        assert not re.search(r"\b(LDL|STL)\b", sass) and " 0 bytes spill stores" in log
        loads = len(re.findall(r"LDG\.E\.128\b", sass))
        if build == "whole":
            assert loads == 3 * (BH + 2)
            assert len(re.findall(r"\bFFMA\b", sass)) == BH * 9 * 8
        else:
            assert loads >= 3 * (BH + 2)


@pytest.mark.parametrize("arch,K,C,want", [("sm_90a", 3, 256, {"BH": 8}), ("sm_90a", 3, 96, {"BW": 8, "BC": 96, "THREADS": 96, "BH": 8}),
                                           ("sm_90a", 5, 256, {}), ("sm_90a", 5, 96, {"BW": 8, "BC": 96, "THREADS": 96}),
                                           ("sm_80", 3, 256, {}), ("sm_80", 3, 96, {"BW": 8, "BC": 96, "THREADS": 96})])
def test_depthwise_conv2d_rows_a_block_by_the_table(mod, arch, K, C, want):
    """config.json: 8 output rows a block for 3 x 3 taps on sm_90a (H200: 1.05x / 1.11x cuDNN where
    4 rows gave 0.83x / 1.03x), beside the 96-channel tile; 5 x 5 (which spills at any BH) and
    sm_80 (not timed) keep the .tl's 4."""
    values = {"x": np.zeros((1, 8, 8, C), np.float16), "w": np.zeros((C, K, K), np.float16)}
    assert mod.kernels["depthwise_conv2d"].with_recorded(values, {}, arch) == want


@pytest.mark.parametrize("arch,H,C,F,K,want", [
    ("sm_90a", 8, 64, 64, 3, {"BN": 64, "BM": 256, "stages": 4}), ("sm_90a", 8, 256, 256, 3, {"BN": 256, "stages": 3}),
    ("sm_90a", 8, 128, 128, 3, {"stages": 6}), ("sm_90a", 8, 3, 64, 7, {"FLAT": True, "BN": 64, "BK": 32, "BLOCKS": 396}),
    ("sm_90a", 7, 512, 512, 3, {"BM": 64, "BN": 256, "stages": 4}), ("sm_90a", 7, 512, 2048, 1, {"BN": 256, "stages": 3}),
    ("sm_90a", 7, 2048, 512, 1, {"BN": 256, "stages": 3}), ("sm_80", 8, 64, 64, 3, {"BN": 64})])
def test_conv2d_tiles_by_the_table(mod, arch, H, C, F, K, want):
    """config.json: 256 x 64 tiles on 4 stages for up to 64 output channels on sm_90a (H200,
    r50_s1_3x3_64 0.90x cuDNN where 128 x 64 gave 0.65x), 6 stages for 65-128, 128 x 256 on 3
    stages past 128 but 64 x 256 for a 3 x 3 conv over a 7 x 7 image of up to 512 output
    channels (50 tiles of 128 x 256 at batch 64), the stem's flattened K steps; sm_80 keeps
    128 x 64."""
    values = {"x": np.zeros((1, H, H, C), np.float16), "w": np.zeros((F, K, K, C), np.float16)}
    assert mod.kernels["conv2d"].with_recorded(values, {}, arch) == want


@pytest.mark.parametrize("silu", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("case", C1D_CASES, ids=str)
def test_causal_conv1d(mod, case, bias, silu):
    B, C, L, WIDTH = case
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((B, C, L)).astype(np.float16)
    w = rng.standard_normal((C, WIDTH)).astype(np.float16)
    b = rng.standard_normal(C).astype(np.float16)
    want = ck.causal_conv1d(x, w, b if bias else None, silu)
    y = np.full(want.shape, np.nan, np.float16)
    mod.causal_conv1d(x, w, b, y, HAS_BIAS=bias, SILU=silu, BC=4, BL=32, THREADS=32)
    assert ck.rel_err(y, want) < 2e-3
    assert y[:, :, 0] == pytest.approx(want[:, :, 0], rel=2e-3, abs=2e-3)  # only the last tap reads x
    _passed("causal_conv1d")


@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_max_pool2d(mod, case):
    N, H, W, C, K, S, P = case
    x = np.random.default_rng(sum(case)).standard_normal((N, H, W, C)).astype(np.float16)
    x[0, 0, 0, 0] = np.nan  # propagated, as PyTorch does
    x[0, -1, -1, -1] = -np.inf
    want = ck.max_pool2d(x, K, S, P)
    y = np.zeros(want.shape, np.float16)
    mod.max_pool2d(x, y, K=K, S=S, P=P, BW=4, BC=16, THREADS=32)
    np.testing.assert_array_equal(y.astype(np.float64), want)  # a maximum is exact
    assert np.isnan(y[0, 0, 0, 0])
    _passed("max_pool2d")


@pytest.mark.parametrize("count_pad", [True, False])
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_avg_pool2d(mod, case, count_pad):
    N, H, W, C, K, S, P = case
    x = np.random.default_rng(sum(case)).standard_normal((N, H, W, C)).astype(np.float16)
    want = ck.avg_pool2d(x, K, S, P, count_pad)
    y = np.full(want.shape, np.nan, np.float16)
    mod.avg_pool2d(x, y, K=K, S=S, P=P, COUNT_PAD=count_pad, BW=4, BC=16, THREADS=32)
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-3)
    _passed("avg_pool2d")


@pytest.mark.parametrize("ring", [False, True])
@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv2d_bwd_data(mod, case, ring):
    N, H, W, C, F, K, S, P, D = case
    rng = np.random.default_rng(sum(case) + 1)
    w = rng.standard_normal((F, K, K, C)).astype(np.float16)
    dy = rng.standard_normal((N, ck.out_size(H, K, S, P, D), ck.out_size(W, K, S, P, D), F)).astype(np.float16)
    want = ck.conv2d_bwd_data(dy, w, H, W, S, P, D)
    dx = np.full(want.shape, np.nan, np.float16)
    mod.conv2d_bwd_data(dy, w, dx, S=S, P=P, D=D, RING=ring, **SMALL)
    assert ck.rel_err(dx, want) < 2e-3
    _passed("conv2d_bwd_data")


@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv2d_bwd_weight(mod, case):
    N, H, W, C, F, K, S, P, D = case
    rng = np.random.default_rng(sum(case) + 2)
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    dy = rng.standard_normal((N, ck.out_size(H, K, S, P, D), ck.out_size(W, K, S, P, D), F)).astype(np.float16)
    want = ck.conv2d_bwd_weight(dy, x, K, S, P, D)
    dw = np.full(want.shape, np.nan, np.float16)
    mod.conv2d_bwd_weight(dy, x, dw, S=S, P=P, D=D, SPLIT=3, BM=16, BN=16, BK=16, stages=2, THREADS=64, BE=64)
    assert ck.rel_err(dw, want) < 2e-3
    _passed("conv2d_bwd_weight")


@pytest.mark.parametrize("case", [(2, 9, 7, 24, 64, 3, 1, 1, 1), (1, 6, 5, 16, 72, 1, 1, 0, 1), (1, 7, 8, 8, 80, 3, 1, 2, 2),
                                  (1, 5, 6, 16, 64, 1, 1, 1, 1)], ids=str)
def test_conv2d_bwd_data_ring_at_stride_1_is_the_tma_im2col_ring(mod, case):
    """RING=True at S = 1: conv2d_bwd_data is conv2d's implicit GEMM over dy (its window's corner
    -Q, Q = (K - 1) * D - P, at a kernel position w's (K - 1 - kq, K - 1 - kr)): on sm_90a the
    persistent ring loads dy's tile by one box of the TMA's im2col mode, w's by an ordinary box
    (rows along F), and stores dx through the TMA; run by the interpreter as scheduled
    (tlc/interp/ring.py): ragged pixels and C, F not a multiple of BK, dilation 2, a positive
    corner (K = 1, P = 1).  At S = 2, and with RING=False (the .tl's default, sm_80's), dy's rows
    are gathered (a row off the stride reads 0): no im2col box."""
    from tlc.interp import run_kernel

    N, H, W, C, F, K, S, P, D = case
    kernel = mod.kernels["conv2d_bwd_data"].scheduled({"S": S, "P": P, "D": D, "K": K, "BM": 64, "BN": 64,
                                                       "THREADS": 128, "RING": True}, "sm_90a")
    ws = kernel.warp_spec
    assert ws is not None and ws.tile_order is not None and ws.store is not None
    assert [(x.buffer, bool(x.im2col), x.gather) for x in ws.loads] == [("dys", True, False), ("ws", False, False)]
    assert ws.loads[0].im2col.lower == ((P - (K - 1) * D),) * 2
    rng = np.random.default_rng(sum(case) + 3)
    w = rng.standard_normal((F, K, K, C)).astype(np.float16)
    dy = rng.standard_normal((N, ck.out_size(H, K, S, P, D), ck.out_size(W, K, S, P, D), F)).astype(np.float16)
    want = ck.conv2d_bwd_data(dy, w, H, W, S, P, D)
    dx = np.full(want.shape, np.nan, np.float16)
    run_kernel(kernel, {"dy": dy, "w": w, "dx": dx})
    assert ck.rel_err(dx, want) < 2e-3
    for consts in ({"S": 2, "P": 1, "K": 3, "RING": True}, {"S": 1, "P": 1, "K": 3}):
        gathered = mod.kernels["conv2d_bwd_data"].scheduled(consts, "sm_90a").warp_spec
        assert gathered is None or not any(x.im2col for x in gathered.loads)


def test_the_backwards_refuse_a_dy_of_another_size(mod):
    from tlc.interp.args import ArgumentError

    # both backwards' dy has conv2d's output size in its type: the call checks it (no device
    # assert before the loop, which would keep the ring from being persistent and split)
    dy = np.zeros((1, 4, 4, 8), np.float16)  # conv2d of 6 x 6 by 3 x 3, no padding, gives 4 x 4; of 7 x 6, 5 x 4
    with pytest.raises(ArgumentError, match=r"'dy' axis 1 has size 4 but the kernel expects "
                                            r"\(H \+ 2 \* P - D \* \(K - 1\) - 1\) // S \+ 1 = 5 \(H = 7 from 'dx'"):
        mod.conv2d_bwd_data(dy, np.zeros((8, 3, 3, 8), np.float16), np.zeros((1, 7, 6, 8), np.float16), **SMALL)
    with pytest.raises(ArgumentError, match=r"'dy' axis 1 has size 4 but the kernel expects "
                                            r"\(H \+ 2 \* P - D \* \(K - 1\) - 1\) // S \+ 1 = 5 \(H = 7 from 'x'"):
        mod.conv2d_bwd_weight(dy, np.zeros((1, 7, 6, 8), np.float16), np.zeros((8, 3, 3, 8), np.float16), SPLIT=2,
                              BM=16, BN=16, BK=16, stages=2, THREADS=64, BE=64)


def test_registry():
    """stdlib/tested.json lists exactly the operators of this file's table, each of whose cases
    passed in this run (TLC_RECORD_TESTED=1 rewrites it; tests/stdlib/op_registry.py)."""
    table = {op: set(d) for op, d in TABLE.items()}
    check_or_record("std.conv", table, {op: table[op] for op, n in PASSED.items() if n == CASES[op]}, __file__)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch,dtype,defines", [  # one in the default run (the README command's time), all under -m slow
    pytest.param("sm_80", "f16", (), marks=pytest.mark.slow), pytest.param("sm_90a", "bf16", (), marks=pytest.mark.slow),
    pytest.param("sm_80", "bf16", ("FLAT=True",), marks=pytest.mark.slow), ("sm_90a", "f16", ("FLAT=True",))])
def test_builds_with_nvcc(arch, dtype, defines, tmp_path):
    """Every kernel of the module, for one dtype, compiles without warnings or spills, and
    without ptxas's performance notes (C7514: the pipelined wgmmas of conv2d and
    conv2d_bwd_data serialized, a wait after each HGMMA, when the accumulator's copy out after
    the loop converted its registers one at a time)."""
    # K=3: depthwise_conv2d compiles its kernel size in (its taps' weights in shared memory), and
    # conv2d its channel count and kernel size (FLAT's staged rows): 3 channels, FLAT's staged path
    C = 3 if "FLAT=True" in defines else 64
    log = assert_builds_without_spills(ck.CONV_PATH, arch, dtype, tmp_path, ("K=3", f"C={C}", *defines))
    assert not re.search(r"C75\d\d", log), log


def test_the_reference_page_is_generated_from_the_sources():
    """docs/stdlib/conv.md is what scripts/stdlib-docs writes (rerun it after editing the .tl)."""
    assert_reference_page_is_current(ck.CONV_PATH)


def _depthwise_rules():
    import json

    config = json.loads((Path(ck.CONV_PATH).parent / "config.json").read_text())
    return config["kernels"]["conv.tl"]["depthwise_conv2d"]


@pytest.mark.parametrize("rule", _depthwise_rules(), ids=lambda r: str(r["constants"]))
def test_depthwise_conv2d_config_rules_compute_the_convolution(mod, rule):
    """Each of stdlib/config.json's depthwise rules, at a C of its bucket (ragged pixels, stride 2)."""
    C = rule["when"].get("C", [None, 40])[1]  # a rule for every C: 40, a ragged channel tile
    x = np.random.default_rng(C).standard_normal((1, 9, 11, C)).astype(np.float16)
    w = np.random.default_rng(C + 1).standard_normal((C, 3, 3)).astype(np.float16)
    want = ck.depthwise_conv2d(x, w, 2, 1, 1)
    y = np.full(want.shape, np.nan, np.float16)
    mod.depthwise_conv2d(x, w, y, S=2, P=1, **rule["constants"])
    assert ck.rel_err(y, want) < 2e-3


# bench/conv_rows_tma.tl (timed beside std.conv's conv2d by bench/conv.py --source): a block's
# pixels along one output row, so that each K step's im2col tile is one box of x, loaded by the
# TMA on sm_90a's warp-specialized ring (the box's rows before the image, past it, and the
# padding's rows read 0: the TMA's out-of-bounds fill); stride 1 only
ROWS_TMA_PATH = str(Path(__file__).resolve().parents[2] / "bench" / "conv_rows_tma.tl")


@pytest.mark.parametrize("case", [c for c in CONV_CASES if c[6] == 1], ids=str)
def test_conv2d_rows_tma(case):
    """Borders padded, dilation 2, ragged C, F and rows of pixels, against conv_kit's check."""
    ck.check_op(tlc.load(ROWS_TMA_PATH, target="cpu"), "conv2d", case, dict(BM=16, BN=16, BK=16, stages=2))


def test_conv2d_rows_tma_loads_both_tiles_through_the_tma():
    kernel = tlc.load(ROWS_TMA_PATH, target="cpu").kernels["conv2d"].scheduled({"S": 1, "P": 1}, "sm_90a")
    ws = kernel.warp_spec
    assert ws is not None and [(x.buffer, x.gather, x.row_axis) for x in ws.loads] == [("xs", False, None), ("ws", False, 0)]
    # persistent in clusters of 2 whose blocks take consecutive tiles of x's rows: w's tile of a
    # kernel position is the same for both, each loading half of its output channels for both
    assert ws.tile_order.cluster == 2 and [x.multicast for x in ws.loads] == [False, True]
    assert [m.box() for m in ws.tensor_maps[:2]] == [[64, 64, 1, 1], [64, 1, 1, 128]]


def test_conv2d_rows_tma_refuses_a_stride():
    from tlc.device_assert import DeviceAssertError

    x, w = np.zeros((1, 6, 6, 8), np.float16), np.zeros((4, 3, 3, 8), np.float16)
    with pytest.raises(DeviceAssertError, match=r"conv_rows_tma.tl: stride 2, only 1"):
        tlc.load(ROWS_TMA_PATH, target="cpu").conv2d(x, w, np.zeros((1, 3, 3, 4), np.float16), S=2, P=1, BM=16, BN=16,
                                                     BK=16, stages=2)


# ---- the TMA's im2col mode (schedule/im2col_tma.py, runtime/tensormap.py im2col_geometry) --------
BENCH = Path(__file__).resolve().parents[2] / "bench"
IM2COL_GATHER_PATH, IM2COL_TMA_PATH = str(BENCH / "conv_im2col_gather.tl"), str(BENCH / "conv_im2col_tma.tl")
TMA_CASES = [(2, 9, 7, 24, 20, 3, 1, 1, 1), (1, 8, 9, 16, 12, 3, 2, 1, 1), (2, 7, 8, 8, 10, 3, 1, 2, 2),
             (1, 6, 5, 64, 5, 1, 1, 0, 1), (1, 11, 10, 72, 7, 5, 2, 2, 1), (3, 7, 7, 64, 9, 3, 1, 1, 1)]


def _tma_im2col_box(x, geometry, coords, offsets, rows: int, channels: int):
    """The box the TMA's im2col mode loads, as PTX describes it: from the first pixel's corner
    (w, h, n) the corners step by the traversal strides along W within [lower, W + upper), then
    along H within [lower, H + upper), then to the next image; each pixel reads `channels`
    channels from c at its corner shifted by the offsets, 0 outside the tensor."""
    dims, _, lower, upper, strides = geometry
    C, W, H, N = dims
    c, w, h, n = coords
    out = np.zeros((rows, channels), x.dtype)
    for r in range(rows):
        iw, ih = w + offsets[0], h + offsets[1]
        for j in range(channels):
            if 0 <= n < N and 0 <= ih < H and 0 <= iw < W and 0 <= c + j < C:
                out[r, j] = x[n, ih, iw, c + j]
        w += strides[1]
        if w >= W + upper[0]:
            w = lower[0]
            h += strides[2]
            if h >= H + upper[1]:
                h = lower[1]
                n += 1
    return out


def _im2col_ring(path: str, case, consts: dict):
    N, H, W, C, F, K, S, P, D = case
    return tlc.load(path, target="cpu").kernels["conv2d"].scheduled({"S": S, "P": P, "D": D, **consts}, "sm_90a")


@pytest.mark.parametrize("path", [IM2COL_GATHER_PATH, IM2COL_TMA_PATH], ids=["gather", "im2col"])
@pytest.mark.parametrize("case", TMA_CASES, ids=str)
def test_the_tma_im2col_box_is_the_loops_tile(path, case):
    """Each K step's box of the TMA's im2col mode (the producer's coordinates and offsets, the
    host's corners and strides), walked as PTX describes it, is the tile the loop gathers:
    padding, stride 2, dilation 2, 5 x 5, ragged C (the gather form's channels past C) and
    pixels past the last image.  The im2col form needs C a multiple of its columns: the host
    refuses its map otherwise (None), and its producer gathers."""
    from tlc.interp import run_kernel  # noqa: F401  (the loop's semantics: conv_kit's windows below)
    from tlc.runtime.grid import py_function
    from tlc.runtime.tensormap import im2col_geometry
    from tlc.schedule.im2col_tma import kernel_scalars, _subst

    N, H, W, C, F, K, S, P, D = case
    BM, BK = 64, 64
    kernel = _im2col_ring(path, case, {"BM": BM, "BN": 64, "BK": BK, "THREADS": 128})
    ws = kernel.warp_spec
    load = ws.loads[0]
    assert load.im2col is not None and load.buffer == "xs" and not load.gather
    spec = ws.tensor_maps[load.tensor_map]
    values = {"N": N, "H": H, "W": W, "C": C, "F": F, "K": K}
    geometry = im2col_geometry(spec, (N, H, W, C) + tuple(values[s] for s in spec.im2col.symbols))
    flat = path == IM2COL_TMA_PATH
    if flat and C % BK:
        assert geometry is None
        return
    assert geometry is not None
    defs = kernel_scalars(kernel.body[:ws.loop])
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    OH, OW = (H + 2 * P - D * (K - 1) - 1) // S + 1, (W + 2 * P - D * (K - 1) - 1) // S + 1
    CB = -(-C // BK)
    steps = K * K * C // BK if flat else K * K * CB
    names = ["by", "k", *values]
    for by in range(-(-N * OH * OW // BM)):
        for k in range(steps):
            env = dict(values, by=by, k=k)
            coords, offsets = ([int(py_function(_subst(e, defs), {n: i for i, n in enumerate(names)})(
                [env[n] for n in names])) for e in exprs] for exprs in (load.im2col.coords, load.im2col.offsets))
            box = _tma_im2col_box(x, geometry, coords, offsets, BM, BK)
            # the loop's tile: pixel m's input at kernel position (kh, kw), channels c0 + j
            kh, kw, c0 = (k * BK // C // K, k * BK // C % K, k * BK % C) if flat else (k // (K * CB), k // CB % K, k % CB * BK)
            want = np.zeros((BM, BK), np.float16)
            for i in range(BM):
                m = by * BM + i
                n, oh, ow = m // (OW * OH), m // OW % OH, m % OW
                ih, iw = oh * S + kh * D - P, ow * S + kw * D - P
                if n < N and 0 <= ih < H and 0 <= iw < W:
                    cs = np.arange(c0, c0 + BK)
                    ok = cs < C
                    want[i, ok] = x[n, ih, iw, cs[ok]]
            np.testing.assert_array_equal(box, want, err_msg=f"by={by} k={k}")


def test_the_gather_ring_loads_x_through_the_im2col_map():
    kernel = _im2col_ring(IM2COL_GATHER_PATH, (1, 8, 8, 64, 64, 3, 2, 1, 1), {})
    ws = kernel.warp_spec
    assert [(x.buffer, bool(x.im2col), x.gather, x.row_axis) for x in ws.loads] == [("xs", True, False, None),
                                                                                 ("ws", False, False, 0)]
    assert ws.tile_order is not None and ws.producer_registers == 40  # persistent; the TMA's producer
    spec = ws.tensor_maps[0]
    assert spec.im2col.lower == (-1, -1) and spec.im2col.stride == (2, 2) and spec.im2col.columns == 0
    assert spec.box() == [64, 128] and set(spec.im2col.symbols) == {"W", "H", "K"}


def test_the_epilogue_stores_y_as_its_flat_view_through_the_tma():
    """std.conv's epilogue copies the accumulator to y seen as [N * OH * OW, F] (a view): staged
    in shared memory and stored by the TMA through a 2-D map of that shape, which the launch
    computes from the shape symbols (runtime/tensormap.py view_sizes)."""
    from tlc.runtime.tensormap import view_sizes

    kernel = tlc.load(ck.CONV_PATH, target="cpu").kernels["conv2d"].scheduled({"S": 2, "P": 1, "BN": 64, "C": 64, "K": 3}, "sm_90a")
    ws = kernel.warp_spec
    if ws.store is None:
        pytest.skip("the view's copy is not a Copy of the tensor here (Region.dims)")
    spec = ws.tensor_maps[ws.store.tensor_map]
    assert spec.store and spec.view is not None and spec.box() == [64, 64]
    values = {"N": 3, "H": 11, "W": 10, "C": 64, "F": 96, "K": 3}
    OH, OW = (11 + 2 - 2 - 1) // 2 + 1, (10 + 2 - 2 - 1) // 2 + 1
    assert view_sizes(spec, tuple(values[s] for s in spec.launch_sizes)) == (3 * OH * OW, 96)


@pytest.mark.parametrize("C, want", [(64, {"RING": True, "BM": 256, "BN": 64, "stages": 4}),
                                     (128, {"RING": True, "stages": 6}), (256, {"RING": True, "BN": 256})])
def test_conv2d_bwd_data_takes_the_ring_on_sm90a_by_config(mod, C, want):
    # config.json (session 28's H200: RING 1.04-1.15x cuDNN at these tiles, the gather 0.26-0.49x);
    # sm_80 has no rule (the gather), and a caller's RING=False still wins
    k = mod.kernels["conv2d_bwd_data"]
    dy, w, dx = np.zeros((1, 8, 8, 64), np.float16), np.zeros((64, 3, 3, C), np.float16), np.zeros((1, 8, 8, C), np.float16)
    values, consts = k.bind((dy, w, dx), {"S": 1, "P": 1})
    assert {n: v for n, v in k.with_recorded(values, consts, "sm_90a").items() if n in want or n == "RING"} == want
    assert "RING" not in k.with_recorded(values, consts, "sm_80")
    values, consts = k.bind((dy, w, dx), {"S": 1, "P": 1, "RING": False})
    assert k.with_recorded(values, consts, "sm_90a")["RING"] is False


@pytest.mark.parametrize("case", [(1, 9, 7, 24, 40, 3, 1, 1, 1), (1, 7, 6, 72, 64, 1, 1, 0, 1), (1, 6, 5, 136, 72, 3, 1, 1, 1)],
                         ids=str)
def test_conv2d_bwd_data_at_its_sm90a_rule_runs_right_as_scheduled(mod, case):
    # each C bucket's config.json tiles (256 x 64 s4, s6, BN 256) on the ring as scheduled for sm_90a,
    # ragged pixels and C, against NumPy
    from tlc.interp import run_kernel

    N, H, W, C, F, K, S, P, D = case
    k = mod.kernels["conv2d_bwd_data"]
    rng = np.random.default_rng(sum(case))
    w = rng.standard_normal((F, K, K, C)).astype(np.float16)
    dy = rng.standard_normal((N, ck.out_size(H, K, S, P, D), ck.out_size(W, K, S, P, D), F)).astype(np.float16)
    want = ck.conv2d_bwd_data(dy, w, H, W, S, P, D)
    dx = np.full(want.shape, np.nan, np.float16)
    values, consts = k.bind((dy, w, dx), {"S": S, "P": P})
    chosen = {n: v for n, v in k.with_recorded(values, consts, "sm_90a").items() if n not in ("T", "C")}
    assert chosen["RING"] is True
    kernel = k.scheduled(chosen, "sm_90a")
    assert kernel.warp_spec is not None
    run_kernel(kernel, {"dy": dy, "w": w, "dx": dx})
    assert ck.rel_err(dx, want) < 2e-3
