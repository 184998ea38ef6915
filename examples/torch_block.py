"""A small transformer block (pre-norm, causal multi-head attention, SwiGLU MLP) whose every
computation is a tlc operator, run under torch.compile(fullgraph=True) and checked against the
same block in eager PyTorch.

    python examples/torch_block.py                  # on the GPU when there is one, else the CPU
    python examples/torch_block.py --device cpu     # tlc's cpu target; small sizes
    python examples/torch_block.py --bench          # and the time per block: eager PyTorch, the tlc
                                                    # operators eagerly, compiled, in CUDA graphs

The operators come from the standard library through `tlc.torch.op` (README, "Calling tlc from
PyTorch"): std.nn's rms_norm and softmax, std.gemm's matmul_nt (x @ W.T) and matmul_batched,
std.nn_layers' swiglu, std.elementwise's add, add_row and mul_scalar.  PyTorch keeps only the
views, transposes and copies between them, which torch.compile fuses.  tlc has no std.attention
yet: attention is written out of the gemm, mask and softmax operators.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

import torch

import tlc
import tlc.torch

_OPS: dict = {}


def ops(cpu_target: str | None = None) -> dict:
    """The block's operators, registered once per process (namespace `tlc_block`)."""
    if not _OPS:
        nn, gemm = tlc.load("std.nn"), tlc.load("std.gemm")
        layers, ew = tlc.load("std.nn_layers"), tlc.load("std.elementwise")
        op = tlc.torch.op
        _OPS.update(
            rms_norm=op("tlc_block::rms_norm", nn.rms_norm, outputs="y", cpu_target=cpu_target),
            softmax=op("tlc_block::softmax", nn.softmax, outputs="y", cpu_target=cpu_target),
            linear=op("tlc_block::linear", gemm.matmul_nt, outputs="C", cpu_target=cpu_target),
            bmm=op("tlc_block::bmm", gemm.matmul_batched, outputs="C", cpu_target=cpu_target),
            swiglu=op("tlc_block::swiglu", layers.swiglu, outputs="y", cpu_target=cpu_target),
            add=op("tlc_block::add", ew.add, cpu_target=cpu_target),
            add_row=op("tlc_block::add_row", ew.add_row, cpu_target=cpu_target),
            scale=op("tlc_block::mul_scalar", ew.mul_scalar, cpu_target=cpu_target),
        )
    return _OPS


@dataclass
class Weights:
    norm1: torch.Tensor  # [D]
    wqkv: torch.Tensor  # [3D, D]: q, k, v projections stacked
    wo: torch.Tensor  # [D, D]
    norm2: torch.Tensor  # [D]
    w_gate_up: torch.Tensor  # [2F, D]: the gate rows, then the up rows
    w_down: torch.Tensor  # [D, F]
    heads: int


def weights(d: int, f: int, heads: int, dtype, device, seed: int = 0) -> Weights:
    g = torch.Generator().manual_seed(seed)

    def w(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g) * scale).to(dtype=dtype, device=device)

    return Weights(1 + w(d, scale=0.1), w(3 * d, d, scale=d ** -0.5), w(d, d, scale=d ** -0.5),
                   1 + w(d, scale=0.1), w(2 * f, d, scale=d ** -0.5), w(d, f, scale=f ** -0.5), heads)


def causal_mask(s: int, dtype, device) -> torch.Tensor:
    """[S * S]: 0 on and below the diagonal, -inf above (one head's scores, flattened)."""
    return torch.full((s, s), float("-inf"), dtype=dtype, device=device).triu(1).reshape(-1)


def tlc_block(x: torch.Tensor, p: Weights, mask: torch.Tensor) -> torch.Tensor:
    """The block on tlc operators; x: [S, D]."""
    o = ops()
    s, d = x.shape
    h, dh = p.heads, d // p.heads
    a = o["rms_norm"](x, p.norm1, 1e-6)
    qkv = o["linear"](a, p.wqkv).view(s, 3, h, dh).permute(1, 2, 0, 3)  # [3, H, S, Dh]
    q, k, v = qkv[0].contiguous(), qkv[1].transpose(1, 2).contiguous(), qkv[2].contiguous()
    scores = o["scale"](o["bmm"](q, k).view(h, s * s), 1.0 / math.sqrt(dh))
    probs = o["softmax"](o["add_row"](scores, mask).view(h * s, s)).view(h, s, s)
    attn = o["bmm"](probs, v).permute(1, 0, 2).reshape(s, d)  # [S, D]
    x = o["add"](x, o["linear"](attn, p.wo))
    a = o["rms_norm"](x, p.norm2, 1e-6)
    gate_up = o["linear"](a, p.w_gate_up)  # [S, 2F]
    hidden = o["swiglu"](gate_up.view(s, 2, -1))
    return o["add"](x, o["linear"](hidden, p.w_down))


def eager_block(x: torch.Tensor, p: Weights, mask: torch.Tensor, f32: bool = True) -> torch.Tensor:
    """The same block in eager PyTorch, in f32 (or, with f32=False, in the inputs' dtype)."""
    cast = (lambda t: t.float()) if f32 else (lambda t: t)
    x, f = cast(x), {k: cast(v) for k, v in vars(p).items() if isinstance(v, torch.Tensor)}
    s, d = x.shape
    h, dh = p.heads, d // p.heads
    a = torch.nn.functional.rms_norm(x, (d,), f["norm1"], 1e-6)
    q, k, v = (a @ f["wqkv"].T).view(s, 3, h, dh).permute(1, 2, 0, 3)
    scores = q @ k.transpose(1, 2) / math.sqrt(dh) + cast(mask).view(s, s)
    attn = (scores.softmax(-1) @ v).permute(1, 0, 2).reshape(s, d)
    x = x + attn @ f["wo"].T
    a = torch.nn.functional.rms_norm(x, (d,), f["norm2"], 1e-6)
    gate, up = (a @ f["w_gate_up"].T).chunk(2, dim=-1)
    return x + (torch.nn.functional.silu(gate) * up) @ f["w_down"].T


def check(device: str = "cuda", s: int = 64, d: int = 256, heads: int = 4, f: int = 512,
          dtype=torch.float16, cpu_target: str | None = None, backend: str = "inductor") -> dict:
    """Run the block eagerly on tlc operators and compiled with fullgraph=True; the largest
    absolute errors against eager PyTorch and the graph breaks torch.compile saw."""
    ops(cpu_target)
    p = weights(d, f, heads, dtype, device)
    x = torch.randn(s, d, generator=torch.Generator().manual_seed(1)).to(dtype=dtype, device=device)
    mask = causal_mask(s, dtype, device)
    want = eager_block(x, p, mask)
    got_eager = tlc_block(x, p, mask)
    explained = torch._dynamo.explain(tlc_block)(x, p, mask)
    compiled = torch.compile(tlc_block, fullgraph=True, backend=backend)
    got_compiled = compiled(x, p, mask)
    return {"eager_error": float((got_eager.float() - want).abs().max()),
            "compiled_error": float((got_compiled.float() - want).abs().max()),
            "scale": float(want.abs().max()), "graph_breaks": explained.graph_break_count,
            "graphs": explained.graph_count}


def timings(s: int = 64, d: int = 256, heads: int = 4, f: int = 512, dtype=torch.float16) -> dict:
    """Milliseconds per block on the GPU (CUDA events, the median of 20 runs of 20 calls):
    eager PyTorch in `dtype`, the tlc operators eagerly, compiled, and compiled into CUDA graphs."""
    p, mask = weights(d, f, heads, dtype, "cuda"), causal_mask(s, dtype, "cuda")
    x = torch.randn(s, d, dtype=dtype, device="cuda")
    contenders = {"eager PyTorch": lambda: eager_block(x, p, mask, f32=False),
                  "tlc operators": lambda: tlc_block(x, p, mask),
                  "tlc, torch.compile": torch.compile(lambda: tlc_block(x, p, mask), fullgraph=True),
                  "tlc, torch.compile reduce-overhead": torch.compile(lambda: tlc_block(x, p, mask), fullgraph=True,
                                                                     mode="reduce-overhead")}
    out = {}
    for name, fn in contenders.items():
        for _ in range(5):
            fn()
        runs = []
        for _ in range(20):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(20):
                fn()
            end.record()
            end.synchronize()
            runs.append(start.elapsed_time(end) / 20)
        out[name] = sorted(runs)[len(runs) // 2]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--cpu-target", choices=("cpp", "interp"), default=None)
    ap.add_argument("--bench", action="store_true", help="also time the block (GPU)")
    args = ap.parse_args(argv)
    if args.bench and args.device == "cuda":
        for name, ms in timings().items():
            print(f"{name:36} {ms * 1000:8.1f} us per block")
    if args.device == "cuda":
        r = check("cuda")
    else:  # the interpreter or the C++ target: a smaller block, in f32
        r = check("cpu", s=16, d=64, heads=2, f=128, dtype=torch.float32, cpu_target=args.cpu_target)
    print(f"largest error against eager PyTorch: {r['eager_error']:.3g} (tlc ops), {r['compiled_error']:.3g} "
          f"(torch.compile, fullgraph=True; {r['graph_breaks']} graph breaks); outputs up to {r['scale']:.3g}")
    tol = 0.05 * r["scale"] if args.device == "cuda" else 1e-3 * r["scale"]
    return 0 if r["graph_breaks"] == 0 and max(r["eager_error"], r["compiled_error"]) <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
