"""Tuning constants must not change what a kernel computes: every kernel of the examples and the
std sources, at its defaults and with one or two of its tile, thread and stage constants set to
another value (odd sizes, 1, past the defaults), on the same random inputs at random small sizes
(0 among them: an empty tensor, which a kernel must refuse with a diagnostic or run).
The defaults run on the interpreter; the variant on the interpreter or, one case in four, on the
cpu target's C++ (`target="cpp"`).  A variant the compiler refuses with a diagnostic (E153: too
many registers, E050: threads) is an answer; a result that differs is a bug of the scheduler, the
generated code or the kernel (std.reduce prod's tree dropped a column of an odd tile).

`case(seed)` -> Case; `run(case)` -> (status, detail): ok, skip (no tuning constant), base-diag
(the defaults refuse these inputs: a std kernel's own check), variant-diag (a diagnostic of the
variant's constants), variant-error (a launch error of the variant only: to triage), mismatch.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "stdlib").glob("*.tl")) + sorted((ROOT / "examples").glob("*.tl"))
TESTED = json.loads((ROOT / "stdlib" / "tested.json").read_text())

# constants that choose how a kernel runs, not what it computes
TUNING = {"BM", "BN", "BK", "BC", "BD", "BH", "BL", "BQ", "BR", "BKV", "BLOCK", "BLOCKS", "CBLOCKS", "CM", "CN",
          "CTHREADS", "KV_STAGES", "KV_THREADS", "RB", "RM", "RN", "SPLIT", "SPLITS", "STAGES", "THREADS", "stages"}
# ... except in these kernels, where they are the block sizes of what they compute
MEANING = {"sliding_window_mask": {"BM", "BN"}, "flash_fwd_sparse": {"BM", "BN"}, "moe_align_block_size": {"BLOCK"}}
TILES = [1, 2, 3, 4, 8, 16, 17, 32, 48, 64, 96, 128, 256]
THREADS = [1, 31, 32, 33, 64, 96, 128, 160, 256, 512, 1024]
STAGES = [0, 1, 2, 3, 4, 5, 8]
SIZES = [0, 1, 2, 3, 5, 8, 16, 17, 33, 64, 100]  # 0: empty tensors (a conv's dy 0 wide read lanes at index 0)
SMALL_SIZES = [1, 2, 3, 5, 8]  # for kernels of more than three symbols (broadcasts of rank 4)
TOLERANCE = 2e-2  # of the largest finite value at the defaults: sums in another order, f16 outputs


@dataclass(frozen=True)
class Case:
    path: str
    kernel: str
    dtypes: dict
    variant: dict
    sizes: dict
    target: str  # the variant's: "cpu" (the interpreter) or "cpp"
    seed: int

    def describe(self) -> str:
        return (f"{Path(self.path).name} {self.kernel} {self.dtypes} variant {self.variant} on {self.target}, "
                f"sizes {self.sizes}, seed {self.seed}")


def _value(r: random.Random, name: str) -> int:
    if "THREADS" in name:
        return r.choice(THREADS)
    if "stages" in name.lower():
        return r.choice(STAGES)
    return r.choice(TILES)


def case(seed: int, sources=SOURCES) -> Case | None:
    """The case of `seed`, or None when the kernel drawn has no tuning constant."""
    import tlc

    r = random.Random(seed)
    path = r.choice(sources)
    mod = tlc.load(str(path), target="cpu")
    names = sorted(n for n, k in mod.kernels.items() if k.fn.kind == "kernel")
    if not names:
        return None
    name = r.choice(names)
    fn = mod.kernels[name].fn
    dtypes = {}
    for p in fn.params:
        if p.role == "dtype" and p.name == "T":  # the data's dtype: f32 where tested, else a tested one
            tested = TESTED.get(f"std.{Path(path).stem}", {}).get("ops", {}).get(name, [])
            dtypes["T"] = "f32" if "f32" in tested or not tested else r.choice(tested)
    tunable = [p.name for p in fn.params if p.role == "const" and p.name in TUNING - MEANING.get(name, set())
               and isinstance(p.value, int) and not isinstance(p.value, bool)]
    if not tunable:
        return None
    variant = {n: _value(r, n) for n in r.sample(tunable, min(len(tunable), r.choice([1, 1, 2])))}
    pool = SMALL_SIZES if len(fn.shape_symbols) > 3 else SIZES
    sizes = {s: r.choice(pool) for s in fn.shape_symbols}
    if "H" in sizes and "HK" in sizes:  # std.attention's GQA: H query heads, a multiple of HK (FINDINGS 35)
        sizes["H"] = sizes["HK"] * r.choice([1, 2, 3])
    return Case(str(path), name, dtypes, variant, sizes, "cpp" if r.random() < 0.25 else "cpu", seed)


def _run(c: Case, constants: dict, target: str) -> dict:
    """The arrays after one call of the kernel on inputs drawn from the case's seed."""
    import numpy as np

    import tlc
    from tlc import inputs
    from tlc.schedule import bind_constants

    mod = tlc.load(c.path, target=target)
    k = getattr(mod, c.kernel)
    fn = bind_constants(mod.program, k.fn, constants)
    scalars = {p.name: "1" if p.type.dtype.is_int else "0.5" for p in fn.runtime_params
               if p.role == "scalar" and not p.has_default}
    values = inputs.prepare(fn, scalars, {s: str(v) for s, v in c.sizes.items() if s in fn.shape_symbols}, c.seed)
    for name, v in values.items():  # integers are indices, counts, lengths: 0 and 1 fit all of them
        if isinstance(v, np.ndarray) and v.dtype.kind in "iu":
            values[name] = (np.abs(v) % 2).astype(v.dtype)
    with np.errstate(all="ignore"):
        k(**values, **constants)
    return {n: v for n, v in values.items() if isinstance(v, np.ndarray)}


def difference(want, have) -> str:
    """'' when `have` is `want` within TOLERANCE of want's largest finite value, else where not."""
    import numpy as np

    a, b = np.asarray(want, np.float64), np.asarray(have, np.float64)
    finite = np.where(np.isfinite(a), np.abs(a), 0)
    scale = float(finite.max(initial=0))  # products of many normals are all far below 1
    # 1e-6: the rounding of values that cancelled (compress_int4's err = x - dequantized x, whose
    # elements are an f32 ulp of x: 6e-8 at the defaults, 4.5e-8 on the cpu target at BM = 3)
    close = np.isclose(a, b, rtol=TOLERANCE, atol=TOLERANCE * scale + 1e-6, equal_nan=True)
    if close.all():
        return ""
    i = tuple(int(x) for x in np.argwhere(~close)[0])
    return f"{int((~close).sum())} of {a.size} differ; at {i}: {a[i]!r} at the defaults, {b[i]!r} in the variant"


def run(c: Case | None) -> tuple[str, str]:
    from tlc.diagnostics import DiagnosticError, TlcError

    if c is None:
        return "skip", ""
    try:
        base = _run(c, c.dtypes, "cpu")
    except TlcError as e:
        return "base-diag", str(e)[:1000]
    try:
        variant = _run(c, {**c.dtypes, **c.variant}, c.target)
    except DiagnosticError as e:
        return "variant-diag", str(e)[:1000]
    except TlcError as e:
        return "variant-error", f"{c.describe()}: {e}"[:2000]
    for name, want in base.items():
        if want.shape == variant[name].shape:
            bad = difference(want, variant[name])
            if bad:
                return "mismatch", f"{c.describe()}: '{name}': {bad}"
    return "ok", ""
