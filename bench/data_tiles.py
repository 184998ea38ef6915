"""Tile constants of the data-movement kernels (std.data, std.broadcast, embedding, topk) at
bench/ops.py's shapes against PyTorch eager, for choosing their defaults: one process on the
GPU, every variant and PyTorch timed alternately per kernel (tlc.timing.compare: L2 flushed,
median), after checking each variant's output equal to PyTorch's (a wrong one is reported and
never timed).

Why: on the H200 these kernels ran at 0.13-0.73 of copy bandwidth (gpu-results b1), where the
element-wise tile ops reach 0.99.  Their tiles give each thread 8 elements (one 16-byte vector
of each operand in flight) after a prologue of divisions, and a block's loads in flight are its
tile's bytes: a variant with more elements a thread (fewer THREADS, or a larger tile) says
whether that is what they lack: the defaults are now 16 elements a thread (THREADS = 128 for
tiles of 2048; embedding 64 for 1024), the element-wise tile ops' shape, each beside the old
256.  Not yet measured (the session's device calls ran out).

    python bench/data_tiles.py [--only bc.add,tril] [--ms 5] [--variants 2]
    python bench/data_tiles.py --dry-run     # no GPU: every variant on the interpreter, small shapes
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tlc  # noqa: E402

PERM = dict(T="f16", P0=0, P1=2, P2=1, P3=3)


def groups(torch, device: str, full: bool) -> list:
    """(name, module, kernel, arguments, PyTorch's result as a function, the position of the
    kernel's output among its arguments, the variants' constants) of each kernel, at the ops
    rows' shapes (2^27 f16 elements) or, not `full`, small ones."""
    m, n = (16384, 8192) if full else (64, 512)
    F = torch.nn.functional

    def r(*s):
        return torch.randn(*s, device=device).to(torch.float16)

    def empty(*s, dtype=torch.float16):
        return torch.empty(*s, device=device, dtype=dtype)

    a, b = r(4, 4, m // 16, n), r(1, 4, 1, n)  # a bias per head, as the std.broadcast rows
    c, wa, wb = torch.rand(4, 4, m // 16, n, device=device) < 0.5, r(1, 4, 1, n), r(4, 1, m // 16, 1)
    x, ca, cb = r(m, n), r(m, n // 2), r(m, n // 2)
    ids = torch.randint(0, m, (m,), device=device)
    rx, px, qx = r(m // 2, n // 2), r(m, n - 8), r(8, m // 8, n // 64, 64)
    gx, gi = r(m, n, 1), torch.randint(0, n, (m, n, 1), device=device)
    tx = torch.randn(m // 4, n * 4, device=device)
    ix = x.view(1, m, n)
    return [
        ("bc.add", "std.broadcast", "add", (a, b, empty(a.shape)), lambda: a + b, 2,
         [{}, dict(THREADS=256), dict(THREADS=64), dict(BN=8192, THREADS=256)]),
        ("bc.where", "std.broadcast", "where", (c, wa, wb, empty(c.shape)), lambda: torch.where(c, wa, wb), 3,
         [{}, dict(THREADS=256), dict(THREADS=64)]),
        ("tril", "std.data", "tril", (x, empty(x.shape), 5), lambda: torch.tril(x, 5), 1,
         [{}, dict(THREADS=256), dict(THREADS=64), dict(BM=32)]),
        ("index_select", "std.data", "index_select", (ix, ids, empty(ix.shape)), lambda: torch.index_select(ix, 1, ids),
         2, [{}, dict(BC=4096), dict(BC=8192, THREADS=256), dict(BC=8192, THREADS=512), dict(THREADS=256),
             dict(THREADS=64)]),
        ("embedding", "std.nn_layers", "embedding", (x, ids, empty(x.shape)), lambda: F.embedding(ids, x), 2,
         [{}, dict(THREADS=128), dict(THREADS=32), dict(BD=4096, THREADS=128)]),
        ("concat", "std.data", "concat", (ca, cb, empty(m, n)), lambda: torch.cat([ca, cb], 1), 2,
         [{}, dict(THREADS=256), dict(THREADS=64)]),
        ("repeat", "std.data", "repeat", (rx, empty(m, n)), lambda: rx.repeat(2, 2), 1,
         [{}, dict(THREADS=128, BLOCKS=8), dict(THREADS=64, BLOCKS=8)]),
        ("gather", "std.data", "gather", (gx, gi, empty(gx.shape)), lambda: torch.gather(gx, 1, gi), 2,
         # a whole row of x (8192) a block: its gathers hit the block's L1 (random reads of a row
         # spread over 4 blocks fetched the row's sectors into 4 SMs)
         [{}, dict(BLOCK=8192, THREADS=1024), dict(BLOCK=4096, THREADS=512), dict(BLOCK=4096)]),
        ("pad", "std.data", "pad", (px, empty(m + 2, n), 1, 3, -1.5), lambda: F.pad(px, (3, 5, 1, 1), value=-1.5), 1,
         [{}, dict(THREADS=256)]),
        ("permute", "std.data", "permute", (qx, empty(8, n // 64, m // 8, 64)),
         lambda: qx.permute(0, 2, 1, 3).contiguous(), 1,
         [dict(PERM, BR=32, BC=64), dict(PERM, BR=32, BC=64, THREADS=256), dict(PERM, BR=32, BC=64, THREADS=64)]),
        ("topk", "std.reduce", "topk", (tx, torch.empty(m // 4, 64, device=device),
                                        torch.empty(m // 4, 64, device=device, dtype=torch.int32)),
         lambda: torch.topk(tx, 64).values, 1,
         [{}, dict(BN=2048, SEG=1024), dict(THREADS=128), dict(BN=2048, SEG=1024, THREADS=512), dict(BN=1024, SEG=256)]),
    ]


def label(constants: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in constants.items() if k not in PERM) or "default"


def dry_run(only: list | None) -> list[str]:
    """Every variant on the interpreter at the small shapes against PyTorch on the CPU; the
    failures, as lines."""
    import numpy as np
    import torch

    mods, failures = {}, []
    for name, mod, kernel, args, ref, at, variants in groups(torch, "cpu", False):
        if only and name not in only:
            continue
        want = ref().numpy()
        for constants in variants:
            host = [t.numpy().copy() if torch.is_tensor(t) else t for t in args]
            try:
                getattr(mods.setdefault(mod, tlc.load(mod, target="cpu")), kernel)(*host, **constants)
                if not np.array_equal(host[at], want):
                    failures.append(f"{name} {label(constants)}: differs from PyTorch's")
            except Exception as e:  # noqa: BLE001 - every variant's failure is reported
                failures.append(f"{name} {label(constants)}: {type(e).__name__}: {str(e)[:300]}")
    return failures


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="Comma-separated kernel names (bc.add, tril, ...).")
    ap.add_argument("--ms", type=float, default=5.0, help="Milliseconds each contender is timed for.")
    ap.add_argument("--variants", type=int, help="Only the first N variants of each kernel (the default first).")
    ap.add_argument("--dry-run", action="store_true", help="Check every variant on the interpreter (no GPU).")
    args = ap.parse_args(argv)
    only = args.only.split(",") if args.only else None
    if args.dry_run:
        failures = dry_run(only)
        for line in failures:
            print("!!", line)
        return 1 if failures else 0
    import torch

    from tlc.kernel import CallError
    from tlc.timing import compare

    mods = {}
    for name, mod, kernel, tensors, ref, at, variants in groups(torch, "cuda", True):
        if only and name not in only:
            continue
        fn, out = getattr(mods.setdefault(mod, tlc.load(mod, target="cuda")), kernel), tensors[at]
        want = ref()
        nbytes = sum(t.numel() * t.element_size() for t in tensors if torch.is_tensor(t))
        contenders = {"torch": ref}
        for constants in variants[:args.variants]:
            try:
                run = fn.launcher(*tensors, **constants)
            except CallError:  # several grids: the call (its host work hidden by compare's delay)
                run = lambda c=constants: fn(*tensors, **c)  # noqa: E731
            out.fill_(float("nan") if out.is_floating_point() else 0)
            run()
            if not torch.equal(out, want):
                print(f"!! {name} {label(constants)}: differs from PyTorch's, not timed", flush=True)
                continue
            contenders[label(constants)] = run
        ms = compare(contenders, min_ms=args.ms, warmup_ms=args.ms)
        for key, t in ms.items():
            print(f"{name:<13} {key:<26} {t * 1e3:8.1f} us {nbytes / t / 1e6:7.0f} GB/s  "
                  f"{ms['torch'] / t:5.2f}x torch", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
