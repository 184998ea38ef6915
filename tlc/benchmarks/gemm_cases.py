"""The contenders of bench/gemm.py for one precision and shape: random inputs, an exact-enough
reference, the vendor library's calls and std.gemm's, each a `Contender` that writes its output
tensor.  Needs PyTorch and a GPU.

Precisions and their kernels (std.gemm's names and signatures are fixed by issue #5):
- f16, bf16: `matmul` (A[M,K] @ B[K,N]) vs torch.matmul, and the linear layout A[M,K] @ W[N,K].T
  through `matmul_nt` vs F.linear; skinny shapes add `matmul_skinny` and its split-K;
- tf32: `matmul_tf32` vs torch.matmul(a, b.T) with TF32 allowed;
- f8: `matmul_f8` (per-tensor scales, bf16 out) vs torch._scaled_mm;
- f8bs: `matmul_f8_blockscaled` (scales per 1x128 block of A, 128x128 block of B) vs
  torch._scaled_mm with block-wise scales where this PyTorch has them;
- i8: `matmul_i8` (i32 out) vs torch._int_mm;
decode shapes (M <= 128) of tf32, f8, f8bs and i8 add their skinny kernel (`matmul_skinny_tf32`,
...: C.T = W @ A.T on the same arguments) against the same vendor call.
"""
from __future__ import annotations

from dataclasses import field

from ..frozen import record

PRECISIONS = ("f16", "bf16", "tf32", "f8", "f8bs", "i8")
STD_KERNEL = {"tf32": "matmul_tf32", "f8": "matmul_f8", "f8bs": "matmul_f8_blockscaled", "i8": "matmul_i8"}
SKINNY_KERNEL = {p: k.replace("matmul_", "matmul_skinny_") for p, k in STD_KERNEL.items()}
# Every element of an output must be within ULPS units of UNIT's precision of the reference
# (tlc.timing.tolerance; atol against the reference's RMS): the output's rounding (half a unit),
# f8's about-14-bit accumulation, f32's in another order; tf32's operands rounded or truncated
# (std.gemm truncates: biased, about 0.7 units of the value, plus about 0.4 units of the RMS at
# random, 6 sigma at the extremes of 6.7e7 elements) get 8.  i8 (int32 out) is exact.  A wrong
# tile or element is off by far more.
UNIT = {"f16": "float16", "bf16": "bfloat16", "tf32": "tf32", "f8": "bfloat16", "f8bs": "bfloat16", "i8": "int32"}
ULPS = {"tf32": 8}  # else 4
# bytes of an element of A, B and C per precision (block scales not counted: K/128 of A's rows)
ELEMENT_BYTES = {"f16": (2, 2, 2), "bf16": (2, 2, 2), "tf32": (4, 4, 4), "f8": (1, 1, 2), "f8bs": (1, 1, 2),
                 "i8": (1, 1, 4)}


def bytes_moved(precision: str, shape) -> int:
    """A and B read once, C written once: the least any gemm of `shape` moves."""
    M, N, K = shape
    a, b, c = ELEMENT_BYTES[precision]
    return M * K * a + N * K * b + M * N * c

SKINNY_SWEEP = [dict(BM=16, BN=64, BK=128, stages=6, THREADS=128), dict(BM=16, BN=64, BK=128, stages=8, THREADS=128),
                dict(BM=16, BN=32, BK=128, stages=8, THREADS=128), dict(BM=16, BN=32, BK=256, stages=3, THREADS=128),
                dict(BM=16, BN=32, BK=128, stages=6, THREADS=64),
                dict(BM=16, BN=128, BK=128, stages=4, THREADS=256)]  # extra f16 configurations for M <= 16
# extra configurations of the other skinny kernels for M <= 16, the K step in bytes (BK = KBYTES /
# the element size; the block-scaled kernel's step is one 128-byte scale block)
SKINNY_PRECISION_SWEEP = [dict(BN=64, KBYTES=128, stages=8, THREADS=128), dict(BN=64, KBYTES=256, stages=4, THREADS=128),
                          dict(BN=64, KBYTES=512, stages=3, THREADS=128), dict(BN=128, KBYTES=256, stages=4, THREADS=256),
                          dict(BN=128, KBYTES=128, stages=6, THREADS=256)]


@record
class Contender:
    label: str
    run: object                 # one call (a split-K: both launches)
    out: object                 # the tensor it writes
    vs: str | None = None       # the vendor contender it is compared with; None: it is a vendor
    kernel: str | None = None   # the std kernel whose constants and SASS are reported
    args: tuple = ()
    consts: dict = field(default_factory=dict)


@record
class Case:
    precision: str
    shape: tuple                # (M, N, K)
    ref: object                 # float32 (float64 for i8) reference
    bytes_moved: int            # A + B + C once: the memory-bound floor
    contenders: list
    notes: list = field(default_factory=list)  # what could not be run, said loudly


def build(torch, mod, precision: str, shape: tuple, seed: int, *, sweep: bool = False, sms: int = 132) -> Case:
    M, N, K = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    dev = "cuda"

    def randn(*s, dtype=torch.float32):
        return torch.randn(*s, device=dev, generator=g, dtype=torch.float32).to(dtype)

    torch.backends.cuda.matmul.allow_tf32 = False
    case = Case(precision, shape, None, bytes_moved(precision, shape), [])
    add = case.contenders.append
    missing = [k for k in _std_names(precision, M) if k not in mod.kernels]
    for k in missing:
        case.notes.append(f"MISSING: std.gemm has no kernel '{k}'")

    def std_call(label, name, args, out, vs, **consts):
        if name in mod.kernels:
            k = getattr(mod, name)
            add(Contender(label, lambda: k(*args, **consts), out, vs, name, args, consts))

    if precision in ("f16", "bf16"):
        dt = torch.float16 if precision == "f16" else torch.bfloat16
        A, W = randn(M, K, dtype=dt), randn(N, K, dtype=dt)
        case.ref = A.float() @ W.float().T
        out = lambda: torch.empty(M, N, device=dev, dtype=dt)  # noqa: E731
        add(Contender("F.linear", lambda: torch.nn.functional.linear(A, W), None))
        std_call("std.matmul_nt", "matmul_nt", (A, W, out()), None, "F.linear")
        if M <= 128:
            std_call("std.matmul_skinny", "matmul_skinny", (A, W, out()), None, "F.linear")
            S = max(1, -(-2 * sms // -(-N // 64)))  # about two blocks per SM (one 64-row tile of W each)
            P, C = torch.empty(S, M, N, device=dev), out()
            ks, kr = mod.matmul_skinny_splitk, mod.splitk_reduce
            add(Contender(f"std.matmul_skinny_splitk S={S}", lambda: (ks(A, W, P), kr(P, C)), C,
                                             "F.linear", "matmul_skinny_splitk", (A, W, P), {}))
            for cfg in SKINNY_SWEEP if sweep and M <= 16 else ():
                std_call("std.matmul_skinny " + ",".join(f"{k}={v}" for k, v in cfg.items()), "matmul_skinny",
                         (A, W, out()), None, "F.linear", **cfg)
        else:
            B = W.T.contiguous()
            add(Contender("torch.matmul", lambda: torch.matmul(A, B), None))
            std_call("std.matmul", "matmul", (A, B, out()), None, "torch.matmul")
            if M * N <= 1024 * 1024:  # few output tiles: split K
                P, C = torch.empty(8, M, N, device=dev), out()
                km, kr = mod.matmul_splitk, mod.splitk_reduce
                add(Contender("std.matmul_splitk S=8", lambda: (km(A, B, P), kr(P, C)), C, "torch.matmul",
                              "matmul_splitk", (A, B, P), {}))
    elif precision == "tf32":
        A, B = randn(M, K), randn(N, K)
        case.ref = A @ B.T

        def tf32_matmul():
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                return torch.matmul(A, B.T)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = False

        add(Contender("torch.matmul tf32", tf32_matmul, None))
        std_call("std.matmul_tf32", "matmul_tf32", (A, B, torch.empty(M, N, device=dev)), None, "torch.matmul tf32")
    elif precision in ("f8", "f8bs"):
        f8 = torch.float8_e4m3fn
        A, B = randn(M, K, dtype=f8), randn(N, K, dtype=f8)
        C = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
        if precision == "f8":
            sa, sb = 0.75, 1.25
            case.ref = (A.float() * sa) @ (B.float() * sb).T
            ta, tb = (torch.tensor(s, device=dev) for s in (sa, sb))
            add(Contender("torch._scaled_mm", lambda: torch._scaled_mm(A, B.t(), scale_a=ta, scale_b=tb,
                                                                       out_dtype=torch.bfloat16), None))
            std_call("std.matmul_f8", "matmul_f8", (A, B, C, sa, sb), None, "torch._scaled_mm")
        else:
            kb = -(-K // 128)
            SA = torch.rand(M, kb, device=dev, generator=g) + 0.5
            SB = torch.rand(-(-N // 128), kb, device=dev, generator=g) + 0.5
            deq_a = A.float() * SA.repeat_interleave(128, 1)[:, :K]
            deq_b = B.float() * SB.repeat_interleave(128, 0)[:N].repeat_interleave(128, 1)[:, :K]
            case.ref = deq_a @ deq_b.T
            vendor = _blockscaled_vendor(torch, A, B, SA, SB, case.ref)
            if isinstance(vendor, str):
                case.notes.append(f"vendor unavailable: torch._scaled_mm with block-wise scales: {vendor}")
                vs = None
            else:
                add(Contender("torch._scaled_mm blockwise", vendor, None))
                vs = "torch._scaled_mm blockwise"
            std_call("std.matmul_f8_blockscaled", "matmul_f8_blockscaled", (A, B, C, SA, SB), None, vs)
    elif precision == "i8":
        A = torch.randint(-128, 128, (M, K), device=dev, generator=g, dtype=torch.int8)
        B = torch.randint(-128, 128, (N, K), device=dev, generator=g, dtype=torch.int8)
        case.ref = A.double() @ B.double().T
        try:
            torch._int_mm(A[:32], B[:32].t())
            add(Contender("torch._int_mm", lambda: torch._int_mm(A, B.t()), None))
            vs = "torch._int_mm"
        except RuntimeError as e:
            case.notes.append(f"vendor unavailable: torch._int_mm: {str(e).splitlines()[0][:160]}")
            vs = None
        if vs and M <= 16:
            case.contenders.pop()  # cuBLASLt's int8 GEMM takes M > 16 only
            case.notes.append("vendor unavailable: torch._int_mm needs M > 16")
            vs = None
        std_call("std.matmul_i8", "matmul_i8", (A, B, torch.empty(M, N, device=dev, dtype=torch.int32)), None, vs)
    else:
        raise ValueError(f"unknown precision {precision}; choose from {', '.join(PRECISIONS)}")
    # (f16/bf16 have their own skinny rows above: no vendor call may pass for the square kernel)
    square = next((c for c in case.contenders if precision in STD_KERNEL and c.kernel == STD_KERNEL[precision]), None)
    if M <= 128 and square is not None:  # the decode kernel: the square kernel's arguments, its own output
        skinny = SKINNY_KERNEL[precision]
        for cfg in [{}] + (SKINNY_PRECISION_SWEEP if sweep and M <= 16 else []):
            consts = _skinny_constants(precision, cfg)
            if consts is not None:
                args = square.args[:2] + (torch.empty_like(square.args[2]),) + square.args[3:]
                label = f"std.{skinny} " + ",".join(f"{k}={v}" for k, v in consts.items())
                std_call(label.strip(), skinny, args, None, square.vs, **consts)
    for c in case.contenders:  # std calls write the output they were given
        if c.out is None and c.kernel is not None:
            c.out = c.args[2]
    return case


def _std_names(precision: str, M: int) -> list:
    if precision in ("f16", "bf16"):
        return ["matmul_nt"] + (["matmul_skinny", "matmul_skinny_splitk", "splitk_reduce"] if M <= 128 else ["matmul"])
    return [STD_KERNEL[precision]] + ([SKINNY_KERNEL[precision]] if M <= 128 else [])


def _skinny_constants(precision: str, cfg: dict) -> dict | None:
    """A SKINNY_PRECISION_SWEEP entry as the kernel's constants (BM = 16); None where it does
    not apply (the block-scaled kernel's K step is fixed); {} stays {} (config.json's)."""
    if not cfg:
        return {}
    consts = {"BM": 16, **{k: v for k, v in cfg.items() if k != "KBYTES"}}
    if precision == "f8bs":
        return consts if cfg["KBYTES"] == 128 else None
    return {**consts, "BK": cfg["KBYTES"] // (4 if precision == "tf32" else 1)}


def _blockscaled_vendor(torch, A, B, SA, SB, ref):
    """A call of torch._scaled_mm with DeepSeek-style block scales (1x128 for A, 128x128 for
    B) that this PyTorch accepts and that computes `ref`; else the reason as a string."""
    SA_colmajor = SA.t().contiguous().t()  # made once: the timed call holds no copy of its own
    tries = [lambda: torch._scaled_mm(A, B.t(), scale_a=SA, scale_b=SB.t(), out_dtype=torch.bfloat16),
             lambda: torch._scaled_mm(A, B.t(), scale_a=SA_colmajor, scale_b=SB.t(), out_dtype=torch.bfloat16)]
    why = "no form accepted"
    for f in tries:
        try:
            out = f()
            err = float((out.float() - ref).norm() / ref.norm())
            if err < 1e-2:
                return f
            why = f"a form ran but its relative error is {err:.2g}"
        except (RuntimeError, TypeError, ValueError) as e:
            why = str(e).splitlines()[0][:160]
    return why
