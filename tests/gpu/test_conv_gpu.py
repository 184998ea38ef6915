"""std.conv on the GPU against torch.nn.functional in f32 (of the same f16/bf16 inputs): conv2d
with the default tiles (the cp.async ring of gathered rows, wgmma on sm_90a) and the small ones
of the CPU test, at ragged shapes with padding, stride 2, dilation 2, channel counts that are
not multiples of 8 (the gather's element path); groups, depthwise, the causal 1-D convolution
and pooling; tests/stdlib/test_conv.py runs the same kernels on the interpreter."""
import pathlib
import sys

import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))
import conv_kit as ck  # noqa: E402

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
Fn = torch.nn.functional
DT = {"f16": torch.float16, "bf16": torch.bfloat16}
TOL = {"f16": 2e-3, "bf16": 1.6e-2}


@pytest.fixture(scope="module")
def mod():
    torch.backends.cudnn.allow_tf32 = False  # the f32 references in f32, not TF32 (PyTorch's default for convolutions)
    return tlc.load(ck.CONV_PATH, target="cuda")


def _nchw(x):
    return x.permute(0, 3, 1, 2)


def _err(got, want) -> float:
    return float((got.double() - want.double()).abs().max() / want.double().abs().max())


# (N, H, W, C, F, K, S, P, D)
CONV = [(2, 9, 7, 24, 20, 3, 1, 1, 1), (1, 8, 9, 16, 12, 3, 2, 1, 1), (2, 7, 8, 8, 10, 3, 1, 2, 2),
        (1, 6, 5, 3, 5, 1, 1, 0, 1), (3, 31, 29, 64, 200, 3, 1, 1, 1), (2, 56, 56, 64, 64, 3, 2, 1, 1),
        (1, 17, 19, 36, 130, 5, 2, 2, 1), (2, 28, 28, 256, 128, 1, 1, 0, 1), (1, 15, 15, 12, 40, 7, 2, 3, 1)]


@pytest.mark.parametrize("tiles", ["default", "small"])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", CONV, ids=str)
def test_conv2d_against_torch(mod, case, dtype, tiles):
    N, H, W, C, F, K, S, P, D = case
    g = torch.Generator(device="cuda").manual_seed(sum(case))
    x = torch.randn(N, H, W, C, device="cuda", generator=g).to(DT[dtype])
    w = torch.randn(F, K, K, C, device="cuda", generator=g).to(DT[dtype])
    want = Fn.conv2d(_nchw(x).float(), _nchw(w).float(), stride=S, padding=P, dilation=D).permute(0, 2, 3, 1)
    y = torch.full(want.shape, float("nan"), device="cuda", dtype=DT[dtype])
    consts = {} if tiles == "default" else dict(BM=32, BN=16, BK=16, stages=2, THREADS=64)
    mod.conv2d(x, w, y, S=S, P=P, D=D, **consts)
    assert _err(y, want) < TOL[dtype]


# stream-K (tlc/schedule/stream_k.py, off by default until timed): ResNet-50's last stage at batch
# 64 leaves the last wave part empty (1 x 1 to 2048: 200 tiles of 8 K steps; 3 x 3 at 512: 98 of
# 72, fewer than a wave), and so does conv2d_bwd_weight at 7 x 7 x 512 (144 tiles), dx's RING too
# (100 tiles).  In a process of its own with the switch on and a kernel cache of its own (the
# cache's keys do not hold the switch): against torch in f32, and the same bits in a second run
# (the finishers add their contributors in order).
# (case, config.json's sm_90a constants for it, which the generated source is checked with);
# 14 x 14 x 256 streams its clusters (98 tiles in pairs, w multicast)
STREAMED = [((64, 7, 7, 512, 2048, 1, 1, 0, 1), {"BN": 256}), ((64, 7, 7, 512, 512, 3, 1, 1, 1),
            {"BN": 256, "BM": 64, "stages": 4}), ((64, 14, 14, 256, 256, 3, 1, 1, 1), {"BN": 256})]


def streamed_check(case, tiles):
    from tlc.schedule import stream_k
    stream_k.STREAM_K = True
    torch.backends.cudnn.allow_tf32 = False
    mod = tlc.load(ck.CONV_PATH, target="cuda")
    N, H, W, C, F, K, S, P, D = case
    assert "tl::StreamWalk" in mod.kernels["conv2d"].cuda_source("sm_90a", C=C, K=K, S=S, P=P, **tiles)
    g = torch.Generator(device="cuda").manual_seed(sum(case))
    x = torch.randn(N, H, W, C, device="cuda", generator=g).half()
    w = (torch.randn(F, K, K, C, device="cuda", generator=g) / (K * K * C) ** 0.5).half()
    want = Fn.conv2d(_nchw(x).float(), _nchw(w).float(), stride=S, padding=P, dilation=D).permute(0, 2, 3, 1)
    y = torch.full(want.shape, float("nan"), device="cuda", dtype=torch.float16)
    mod.conv2d(x, w, y, S=S, P=P, D=D)
    assert _err(y, want) < 2e-3
    again = torch.full_like(y, float("nan"))
    mod.conv2d(x, w, again, S=S, P=P, D=D)
    assert torch.equal(y, again)
    if K == 3 and H == 7:  # the backwards at the same layer
        dy = torch.randn(N, H, W, F, device="cuda", generator=g).half()
        want = torch.nn.grad.conv2d_weight(_nchw(x).float(), _nchw(w).shape, _nchw(dy).float(), padding=P) \
            .permute(0, 2, 3, 1)
        dw = torch.full(w.shape, float("nan"), device="cuda", dtype=torch.float16)
        mod.conv2d_bwd_weight(dy, x, dw, S=S, P=P)
        assert _err(dw, want) < 2e-3
        want = torch.nn.grad.conv2d_input(_nchw(x).shape, _nchw(w).float(), _nchw(dy).float(), padding=P) \
            .permute(0, 2, 3, 1)
        dx = torch.full(x.shape, float("nan"), device="cuda", dtype=torch.float16)
        mod.conv2d_bwd_data(dy, w, dx, S=S, P=P, RING=True)
        assert _err(dx, want) < 2e-3
    print("streamed ok")


@pytest.mark.parametrize("case, tiles", STREAMED, ids=str)
def test_streamed_convolutions_against_torch(case, tiles, tmp_path):
    import os
    import subprocess

    here = pathlib.Path(__file__).resolve().parent
    code = f"import sys; sys.path.insert(0, {str(here)!r}); import test_conv_gpu as t; t.streamed_check({case!r}, {tiles!r})"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "TLC_CACHE_DIR": str(tmp_path)},
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and "streamed ok" in out.stdout, out.stdout[-3000:] + out.stderr[-3000:]


# FLAT (K steps over the flattened kernel position and channel; config.json's choice for C <= 16):
# the ResNet stem's 3 channels, 7 x 7, stride 2, at a small batch; ragged shapes of the CPU test
FLAT = [(2, 64, 60, 3, 64, 7, 2, 3, 1), (2, 9, 7, 5, 20, 3, 1, 1, 1), (1, 8, 9, 16, 12, 3, 2, 1, 1),
        (2, 7, 8, 8, 10, 3, 1, 2, 2)]


def _flat_conv_error(mod, case, **consts):
    """conv2d of f16 NHWC data (N, H, W, C, F, K, S, P, D = case) against torch's f32 conv."""
    N, H, W, C, F, K, S, P, D = case
    g = torch.Generator(device="cuda").manual_seed(sum(case))
    x = torch.randn(N, H, W, C, device="cuda", generator=g).half()
    w = torch.randn(F, K, K, C, device="cuda", generator=g).half()
    want = Fn.conv2d(_nchw(x).float(), _nchw(w).float(), stride=S, padding=P, dilation=D).permute(0, 2, 3, 1)
    y = torch.full(want.shape, float("nan"), device="cuda", dtype=torch.float16)
    mod.conv2d(x, w, y, S=S, P=P, D=D, BN=64, **consts)
    return _err(y, want)


@pytest.mark.parametrize("flat", [True, False])
@pytest.mark.parametrize("case", FLAT, ids=str)
def test_conv2d_flat_against_torch(mod, case, flat):
    assert _flat_conv_error(mod, case, FLAT=flat) < TOL["f16"]


@pytest.mark.parametrize("case", [(3, 64, 60, 3, 64, 7, 2, 3, 1), (2, 40, 150, 3, 24, 3, 1, 2, 2), (2, 33, 70, 16, 40, 3, 2, 1, 1)],
                         ids=str)
def test_conv2d_flat_staged_walk_against_torch(mod, case):
    """FLAT's staged path with a few persistent blocks, each walking a run of many tiles (the
    input rows a tile shares with the one above it kept), rows longer than a tile (150 pixels
    of 128-pixel tiles), dilation 2."""
    assert _flat_conv_error(mod, case, FLAT=True, BLOCKS=5) < TOL["f16"]


def test_conv2d_of_an_unaligned_image(mod):
    """A tensor whose data starts 2 bytes past a 16-byte boundary: every vector moves element
    by element, the same values."""
    N, H, W, C, F, K = 2, 10, 11, 32, 64, 3
    g = torch.Generator(device="cuda").manual_seed(7)
    base = torch.randn(N * H * W * C + 1, device="cuda", generator=g).half()
    x = base[1:].view(N, H, W, C)
    w = torch.randn(F, K, K, C, device="cuda", generator=g).half()
    want = Fn.conv2d(_nchw(x).float(), _nchw(w).float(), padding=1).permute(0, 2, 3, 1)
    y = torch.empty(want.shape, device="cuda", dtype=torch.float16)
    mod.conv2d(x, w, y, P=1)
    assert _err(y, want) < 2e-3


@pytest.mark.parametrize("case", [(2, 9, 7, 12, 10, 3, 2, 1, 1, 2), (2, 30, 30, 64, 128, 3, 1, 1, 1, 4),
                                  (1, 6, 7, 8, 8, 3, 1, 2, 2, 4), (1, 14, 14, 96, 96, 3, 1, 1, 1, 32)], ids=str)
def test_conv2d_grouped_against_torch(mod, case):
    N, H, W, C, F, K, S, P, D, G = case
    g = torch.Generator(device="cuda").manual_seed(sum(case))
    x = torch.randn(N, H, W, C, device="cuda", generator=g).half()
    w = torch.randn(F, K, K, C // G, device="cuda", generator=g).half()
    want = Fn.conv2d(_nchw(x).float(), _nchw(w).float(), stride=S, padding=P, dilation=D, groups=G).permute(0, 2, 3, 1)
    y = torch.full(want.shape, float("nan"), device="cuda", dtype=torch.float16)
    mod.conv2d_grouped(x, w, y, G=G, S=S, P=P, D=D)
    assert _err(y, want) < 2e-3


@pytest.mark.parametrize("case", [(2, 9, 7, 20, 3, 1, 1, 1), (4, 56, 56, 256, 3, 1, 1, 1), (2, 112, 112, 96, 3, 2, 1, 1),
                                  (1, 7, 8, 8, 3, 1, 2, 2), (1, 15, 15, 70, 5, 1, 2, 1)], ids=str)
def test_depthwise_against_torch(mod, case):
    N, H, W, C, K, S, P, D = case
    g = torch.Generator(device="cuda").manual_seed(sum(case))
    x = torch.randn(N, H, W, C, device="cuda", generator=g).half()
    w = torch.randn(C, K, K, device="cuda", generator=g).half()
    want = Fn.conv2d(_nchw(x).float(), w[:, None].float(), stride=S, padding=P, dilation=D, groups=C).permute(0, 2, 3, 1)
    y = torch.full(want.shape, float("nan"), device="cuda", dtype=torch.float16)
    mod.depthwise_conv2d(x, w, y, S=S, P=P, D=D)
    assert _err(y, want) < 2e-3


@pytest.mark.parametrize("silu", [False, True])
@pytest.mark.parametrize("case", [(2, 5, 37, 4), (4, 1536, 2048, 4), (1, 9, 300, 3)], ids=str)
def test_causal_conv1d_against_torch(mod, case, silu):
    B, C, L, WIDTH = case
    g = torch.Generator(device="cuda").manual_seed(sum(case))
    x = torch.randn(B, C, L, device="cuda", generator=g).half()
    w = torch.randn(C, WIDTH, device="cuda", generator=g).half()
    b = torch.randn(C, device="cuda", generator=g).half()
    want = Fn.conv1d(x.float(), w[:, None].float(), b.float(), padding=WIDTH - 1, groups=C)[..., :L]
    if silu:
        want = Fn.silu(want)
    y = torch.full_like(x, float("nan"))
    mod.causal_conv1d(x, w, b, y, SILU=silu)
    assert _err(y, want) < 2e-3


@pytest.mark.parametrize("case", [(2, 9, 7, 20, 3, 2, 1), (8, 112, 112, 64, 3, 2, 1), (1, 8, 9, 70, 2, 2, 0)], ids=str)
def test_pooling_against_torch(mod, case):
    N, H, W, C, K, S, P = case
    g = torch.Generator(device="cuda").manual_seed(sum(case))
    x = torch.randn(N, H, W, C, device="cuda", generator=g).half()
    x[0, 0, 0, 0] = float("nan")
    want = Fn.max_pool2d(_nchw(x).float(), K, S, P).permute(0, 2, 3, 1)
    y = torch.zeros(want.shape, device="cuda", dtype=torch.float16)
    mod.max_pool2d(x, y, K=K, S=S, P=P)
    assert torch.equal(y.float().nan_to_num(7.0), want.nan_to_num(7.0))
    for count_pad in (True, False):
        want = Fn.avg_pool2d(_nchw(x).float(), K, S, P, count_include_pad=count_pad).permute(0, 2, 3, 1)
        y = torch.zeros(want.shape, device="cuda", dtype=torch.float16)
        mod.avg_pool2d(x, y, K=K, S=S, P=P, COUNT_PAD=count_pad)
        torch.testing.assert_close(y.float(), want, rtol=2e-3, atol=2e-3, equal_nan=True)


# conv2d_bwd_data's RING at S = 1 is the TMA im2col ring over dy: a 1 x 1 kernel too, and one whose
# padding passes the kernel (K = 1, P = 1: the window's corner at +1)
@pytest.mark.parametrize("case", [CONV[0], CONV[1], CONV[2], CONV[4], CONV[5], CONV[6], CONV[7],
                                  (2, 9, 9, 16, 24, 1, 1, 1, 1)], ids=str)
def test_backwards_against_torch(mod, case):
    N, H, W, C, F, K, S, P, D = case
    g = torch.Generator(device="cuda").manual_seed(sum(case))
    x = torch.randn(N, H, W, C, device="cuda", generator=g).half()
    w = torch.randn(F, K, K, C, device="cuda", generator=g).half()
    OH, OW = ck.out_size(H, K, S, P, D), ck.out_size(W, K, S, P, D)
    dy = torch.randn(N, OH, OW, F, device="cuda", generator=g).half()
    want = torch.nn.grad.conv2d_input(_nchw(x).shape, _nchw(w).float(), _nchw(dy).float(), stride=S, padding=P,
                                      dilation=D).permute(0, 2, 3, 1)
    for ring in (False, True):  # RING: at S = 1 the TMA im2col ring over dy
        dx = torch.full(x.shape, float("nan"), device="cuda", dtype=torch.float16)
        mod.conv2d_bwd_data(dy, w, dx, S=S, P=P, D=D, RING=ring)
        assert _err(dx, want) < 2e-3
    want = torch.nn.grad.conv2d_weight(_nchw(x).float(), _nchw(w).shape, _nchw(dy).float(), stride=S, padding=P,
                                       dilation=D).permute(0, 2, 3, 1)
    dw = torch.full(w.shape, float("nan"), device="cuda", dtype=torch.float16)
    mod.conv2d_bwd_weight(dy, x, dw, S=S, P=P, D=D)
    assert _err(dw, want) < 2e-3


# conv2d through the TMA's im2col mode (sm_90a): bench/conv_im2col_gather.tl (the gather written
# out, each K step one kernel position: any C) and bench/conv_im2col_tma.tl (`im2col`, whose
# flattened columns need C a multiple of BK: a device assertion), at the ragged shapes above
# (C = 3: rows of 6 bytes, which the TMA refuses: the producer gathers instead) and ResNet's
IM2COL_SOURCES = {"gather": "conv_im2col_gather.tl", "im2col": "conv_im2col_tma.tl"}
IM2COL_CASES = [(2, 9, 7, 24, 20, 3, 1, 1, 1), (1, 8, 9, 16, 12, 3, 2, 1, 1), (2, 7, 8, 8, 10, 3, 1, 2, 2),
                (1, 6, 5, 3, 5, 1, 1, 0, 1), (3, 31, 29, 64, 200, 3, 1, 1, 1), (2, 56, 56, 64, 64, 3, 2, 1, 1),
                (1, 17, 19, 128, 130, 5, 2, 2, 1), (2, 14, 14, 256, 256, 3, 1, 1, 1)]


@pytest.fixture(scope="module")
def im2col_mods():
    torch.backends.cudnn.allow_tf32 = False
    root = pathlib.Path(__file__).resolve().parents[2] / "bench"
    return {k: tlc.load(str(root / v), target="cuda") for k, v in IM2COL_SOURCES.items()}


@pytest.mark.parametrize("form", list(IM2COL_SOURCES))
@pytest.mark.parametrize("case", IM2COL_CASES, ids=str)
def test_conv2d_through_the_tma_im2col_mode(im2col_mods, case, form):
    N, H, W, C, F, K, S, P, D = case
    if form == "im2col" and C % 64:
        pytest.skip("im2col's flattened K steps: C a multiple of BK")
    g = torch.Generator(device="cuda").manual_seed(sum(case))
    x = torch.randn(N, H, W, C, device="cuda", generator=g).half()
    w = torch.randn(F, K, K, C, device="cuda", generator=g).half()
    want = Fn.conv2d(_nchw(x).float(), _nchw(w).float(), stride=S, padding=P, dilation=D).permute(0, 2, 3, 1)
    y = torch.full(want.shape, float("nan"), device="cuda", dtype=torch.float16)
    im2col_mods[form].conv2d(x, w, y, S=S, P=P, D=D, **({"BN": 64} if F <= 64 else {}))
    assert _err(y, want) < TOL["f16"]


def test_the_driver_encodes_the_im2col_map(im2col_mods):
    """The map of a 3 x 3 convolution over 56 x 56 x 256 (padding 1) and of a stride-2 one:
    the driver accepts both (else the kernel would run its producer's gather, right but slow)."""
    from tlc.runtime.tensormap import encode

    x = torch.zeros(64, 56, 56, 256, device="cuda", dtype=torch.float16)
    for S in (1, 2):
        kernel = im2col_mods["gather"].kernels["conv2d"].scheduled({"S": S, "P": 1}, "sm_90a")
        spec = kernel.warp_spec.tensor_maps[0]
        assert spec.im2col is not None and spec.param == "x"
        values = {"N": 64, "H": 56, "W": 56, "C": 256, "K": 3}
        assert encode(spec, x.data_ptr(), (64, 56, 56, 256) + tuple(values[s] for s in spec.im2col.symbols)) is not None
