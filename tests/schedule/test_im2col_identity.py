"""An im2col tile whose window is the identity (a 1 x 1 convolution at stride 1 without padding:
schedule/im2col_tma.identity_window) loaded as tiled boxes of the image seen as [N * H * W, C]
rather than in the TMA's im2col mode, behind im2col_tma.TILED_IDENTITY (off: the H200
timed no gain in session 28): which windows are the identity, the IR and the
CUDA saying so, the interpreter against NumPy, the SASS's tiled 2-D load."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import tlc
from tlc.ir.printer import print_kernel
from tlc.schedule import im2col_tma

ROOT = Path(__file__).resolve().parents[2]
CONV = str(ROOT / "stdlib" / "conv.tl")
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
import conv_kit as ck  # noqa: E402

RING = {"C": 64, "K": 1, "BN": 64, "BM": 256, "stages": 4}  # config.json's r50_s1_1x1_64 tiles


@pytest.fixture
def tiled(monkeypatch):
    monkeypatch.setattr(im2col_tma, "TILED_IDENTITY", True)


def _ws(consts):
    return tlc.load(CONV, target="cpu").kernels["conv2d"].scheduled(consts, "sm_90a").warp_spec


@pytest.mark.parametrize("consts, identity", [
    ({}, True), ({"D": 2}, True), ({"C": 512, "BN": 256, "BM": 128, "stages": 3}, True),  # 8 channel steps
    ({"P": 1}, False), ({"S": 2}, False), ({"K": 3, "P": 1}, False), ({"K": 3}, False)], ids=str)
def test_an_identity_window_is_loaded_as_the_images_rows(tiled, consts, identity):
    ws = _ws({**RING, **consts})
    assert [(x.buffer, bool(x.im2col), x.tiled) for x in ws.loads] == [("xs", True, identity), ("ws", False, False)]
    x_map = ws.tensor_maps[ws.loads[0].tensor_map]
    assert (x_map.view is not None, x_map.im2col is None) == (identity, identity)


def test_an_image_whose_extents_are_computed_is_no_identity(tiled):
    """conv2d_bwd_weight's im2col tile reads dy, whose H and W are conv2d's output extents (a
    DimExpr each, not a shape symbol): its ring keeps the im2col map, where the check raised a
    TypeError (int() of a DimExpr) with the switch on."""
    for consts in ({}, {"SPLIT": 1, "BM": 64, "BN": 64, "THREADS": 128, "stages": 4}):  # config.json's
        k = tlc.load(CONV, target="cpu").kernels["conv2d_bwd_weight"]
        ws = k.scheduled_grids(consts, "sm_90a")[0].warp_spec
        assert ws is not None and not any(x.tiled for x in ws.loads)


def test_the_sizes_check_evaluates_only_what_it_knows():
    from tlc import ir
    from tlc.dtypes import I32
    W = ir.Var("W", I32)
    one, zero = ir.Const(1, I32), ir.Const(0, I32)
    assert im2col_tma._value(ir.BinOp("+", ir.BinOp("//", ir.BinOp("-", W, one, I32), one, I32), one, I32), {"W": 7}) == 7
    assert im2col_tma._value(ir.BinOp("//", W, zero, I32), {"W": 7}) is None  # a division by 0: unknown
    assert im2col_tma._value(ir.BinOp("+", ir.BinOp("%", W, zero, I32), one, I32), {"W": 7}) is None
    assert im2col_tma._value(ir.UnaryOp("-", W, I32), {"W": 7}) is None  # not an operation it evaluates


def test_the_switch_is_off_by_default():
    assert im2col_tma.TILED_IDENTITY is False
    ws = _ws(RING)
    assert not ws.loads[0].tiled and ws.tensor_maps[ws.loads[0].tensor_map].im2col is not None


def test_the_ir_and_the_cuda_say_so(tiled):
    conv = tlc.load(CONV, target="cpu").kernels["conv2d"]
    text = print_kernel(conv.scheduled(RING, "sm_90a"))
    assert "copies rows of x -> xs, w -> ws into stage it % 4" in text
    assert "tensor maps: #0 x box 256x64 (as [N * H * W, 64]), #1 w box 64x64 (rows along dimension 0)" in text
    src = conv.cuda_source("sm_90a", **RING)
    # the first pixel's corner (n, h, w), stepped as before, its row of [N * H * W, C] a tiled box
    assert re.search(r"tl::tma_load_tile<half, 256, 64, 2>\(\(xs \+ \(\(tl_it\) % 4\) \* 16384\), &tl_map0, "
                     r"tl_full \+ tl_stage, \(k_\w+ \* 64\), \(k_\w+ \* H \+ k_\w+\) \* W \+ k_\w+, \{0\}\);", src)
    assert "tma_load_im2col" not in src[src.index("extern \"C\" __global__"):]


def test_the_interpreter_matches_numpy(tiled):
    kernel = tlc.load(CONV, target="cpu").kernels["conv2d"].scheduled(
        {"C": 128, "K": 1, "BN": 64, "BM": 64, "THREADS": 128}, "sm_90a")
    assert kernel.warp_spec.loads[0].tiled
    assert ck.scheduled_conv2d_error(kernel, (2, 9, 7, 128, 70, 1, 1, 0, 1)) < 2e-3


@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
@pytest.mark.nvcc
def test_the_tiled_ring_builds_without_spills_and_loads_a_2d_box(tiled, tmp_path):
    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from nvcc import cubin_sass
    from tlc.runner import build

    source, _ = build(CONV, kernels=("conv2d",), defines=tuple(f"{k}={v}" for k, v in RING.items()), arch="sm_90a")
    sass, log = cubin_sass(source, "sm_90a", tmp_path, "conv2d")
    spills = re.findall(r"(\d+) bytes spill stores", log)
    assert spills and set(spills) == {"0"}, log
    assert "UTMALDG.2D" in sass and "IM2COL" not in sass
