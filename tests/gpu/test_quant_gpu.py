"""std.quant on the GPU: tests/stdlib/test_quant.py's table (every operator, input dtype and
quantized dtype, dynamic and static scales, NaN and infinities in the inputs) at larger ragged
shapes with the default tiles, exactly against the NumPy references (the compressor's error
within an f32 unit: the GPU fuses v - q * s into one FMA); and int8 / f8 per-token quantization
against PyTorch's own conversions on the GPU's tensors."""
import pathlib
import sys
import zlib

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the table
from quant_kit import OPS, QUANT_PATH, check_compress  # noqa: E402

pytestmark = pytest.mark.gpu


def shapes(name: str):
    """(shape, consts): the default tiles, ragged edges (a row longer than one 8192 tile, odd N,
    last groups and blocks cut short), and the 32-wide groups; N = 8192 takes the build for
    whole runs, with config.json's sm_90a tiles (quantize_per_token, dequantize_per_channel)."""
    if "per_token" in name:
        return [((333, 5001), {}), ((5, 20001), {}), ((130, 8192), {})]
    if "per_channel" in name:
        return [((1000, 3001), {}), ((77, 8192), {})]
    if "per_tensor" in name:
        return [((1000, 3001), {})]
    if "per_block" in name:
        return [((300, 1001), {}), ((129, 128), {})]
    if "mx" in name:
        return [((500, 4099), {})]
    return [((500, 4097), {}), ((77, 1001), {"G": 32}), ((64, 4096), {"G": 64})]


@pytest.fixture(scope="module")
def mod():
    return tlc.load(QUANT_PATH, target="cuda")


@pytest.mark.parametrize("qname", ["int8", "float8_e4m3fn", "float8_e5m2"])
def test_per_token_against_pytorch(mod, qname):
    """quantize_per_token on CUDA tensors against PyTorch computing the definition: scale =
    amax / QMAX, q = (x * (QMAX / amax)).round() (int8) or clamped and converted (f8); a row
    of zeros is zeros (session 15's H200 run: two such rows, where the reference had NaN)."""
    import torch

    q = getattr(torch, qname)
    x = torch.randn(1024, 4096, device="cuda", dtype=torch.bfloat16) * torch.rand(1024, 1, device="cuda",
                                                                                     dtype=torch.bfloat16) * 100
    x[160] = 0  # a row of zeros, which bf16's rand also makes now and then
    # qmax a GPU tensor: PyTorch divides by a Python number as a product with its reciprocal
    qmax = torch.tensor(127.0 if q == torch.int8 else torch.finfo(q).max, device="cuda")
    amax = x.float().abs().amax(dim=1, keepdim=True)
    # a row of zeros (bf16's rand gives a few) quantizes to zeros with scale 0, not to 0 * inf
    v = x.float() * torch.where(amax > 0, qmax / amax, 0.0)
    want = v.round().clamp(-128, 127).to(q) if q == torch.int8 else torch.clamp(v, -qmax, qmax).to(q)
    got, s = torch.empty_like(want), torch.empty(1024, device="cuda")
    mod.quantize_per_token(x, got, s)
    assert torch.equal(s, (amax / qmax).reshape(-1))
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))
    y = torch.empty_like(x)
    mod.dequantize_per_token(got, s, y)
    assert torch.equal(y, (got.float() * s[:, None]).to(torch.bfloat16))


@pytest.mark.parametrize("op,dtype", [pytest.param(op, d, id=f"{op.name}-{d}") for op in OPS for d in op.dtypes])
def test_against_numpy(mod, op, dtype):
    for shape, consts in shapes(op.name):
        rng = np.random.default_rng(zlib.crc32(op.name.encode()) + shape[0])
        if op.name == "compress_int4":
            with np.errstate(all="ignore"):
                check_compress(mod, rng, dtype, shape, consts, exact=False)
        else:
            op.check(mod, rng, dtype, shape, consts)
