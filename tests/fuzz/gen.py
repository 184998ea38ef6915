"""A type-directed generator of valid `.tl` programs (LANGUAGE.md, tile-ops.md).

`generate(seed)` returns a `Program`: the source text and, for each kernel or tile op in it,
what is needed to run it (`KernelCase`: parameters with dtypes and shapes, the shape sizes,
the constants passed, and a recipe for the inputs).  Everything is drawn from one
`random.Random(seed)`, so a seed names a program.

Every expression is generated for a wanted dtype and only from parts whose typing rule
(typecheck/rules.py, T1-T10) gives that dtype, so a program the checker rejects is a bug of
the generator or of the checker: both are worth a look.  Values are kept in ranges where the
interpreter and the GPU should agree (no division by a value near 0, exponentials of bounded
arguments, integer arithmetic masked against overflow), so `diff` mode can compare them.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

import numpy as np

FLOATS = ("f32", "f16", "bf16", "f64")
LOAD_DTYPES = ("f32", "f16", "bf16", "f64", "f8e4m3", "f8e5m2", "i8", "u8", "i16", "i32", "i64", "u16", "u32")
INTS = ("i8", "u8", "i16", "i32", "i64", "u16", "u32", "u64")
STORE_FLOATS = ("f32", "f16", "bf16", "f64")


@dataclass
class Param:
    name: str
    role: str  # "tensor" | "scalar"
    dtype: str
    shape: tuple = ()  # symbols (str) or ints
    output: bool = False
    annot: str = ""  # the dtype as written, when it is a dtype parameter (T)


@dataclass
class KernelCase:
    name: str
    kind: str  # "kernel" | "tile_op"
    params: list
    constants: dict
    sizes: dict  # shape symbol -> size
    returns: tuple | None = None  # tile op: (dtype, shape)

    def inputs(self, seed: int = 0) -> list:
        """The positional arguments of a call: arrays (outputs zeroed) and scalars."""
        rng = np.random.default_rng(seed)
        from tlc.dtypes import lookup

        args = []
        for p in self.params:
            npdt = lookup(p.dtype).numpy()
            if p.role == "scalar":
                if p.dtype in FLOATS:
                    args.append(float(np.round(rng.uniform(-2, 2), 3)))
                elif p.dtype == "bool":
                    args.append(bool(rng.integers(0, 2)))
                else:
                    args.append(int(rng.integers(1, 7)))
                continue
            shape = tuple(self.sizes[d] if isinstance(d, str) else d for d in p.shape)
            if p.output:
                args.append(np.zeros(shape, dtype=npdt))
            elif p.dtype.startswith("f") or p.dtype == "bf16":
                args.append(rng.uniform(-2, 2, size=shape).astype(np.float32).astype(npdt))
            elif p.dtype.startswith("u"):
                args.append(rng.integers(0, 8, size=shape).astype(npdt))
            else:
                args.append(rng.integers(-8, 8, size=shape).astype(npdt))
        return args


@dataclass
class Program:
    seed: int
    source: str
    kernels: list = field(default_factory=list)


def _widens(src: str, dst: str) -> bool:
    from tlc.dtypes import can_widen, lookup

    return can_widen(lookup(src), lookup(dst))


# a value summed over many products: its last bits depend on the order of the sums (tensor
# cores against NumPy), so rounding it to a narrower float can land one ulp apart
ACCUMULATED = re.compile(r"\bacc\b|@|\btotal\b|acc_s")
# a value read from the inputs, not computed: truncating it into an integer is exact on both
# sides, where truncating a computed float turns its last ulp into a whole unit (seed 7492)
INPUT_VALUE = re.compile(r"(x\d+(_t)?(\[[^\]]*\])?|s\d+|bias_t\[j\])")
LITERAL_ONLY = re.compile(r"[\d\s()&|^+\-*%<>/]+")


def _float_bits(dt: str) -> int:
    return int(re.search(r"\d+", dt).group()) if dt != "bf16" else 16


def _int_range(dt: str) -> tuple[int, int]:
    bits = int(dt[1:])
    return (0, 2**bits - 1) if dt.startswith("u") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def _promote(a: str, b: str) -> str:
    from tlc.dtypes import lookup, promote

    return promote(lookup(a), lookup(b)).name


class Exprs:
    """Expressions of a wanted dtype over typed leaves (text, dtype)."""

    def __init__(self, rng: random.Random, leaves, int_leaves, bool_leaves=(), functions=(), consts=(),
                 tensors: bool = False, smooth: bool = False):
        self.r = rng
        self.smooth = smooth  # diff mode: no rounding or float comparison, which amplify ulps
        self.tensors = tensors  # tile op: values are tensors, so no `a if c else b`
        self.leaves = list(leaves)  # (text, dtype) of float or int values
        self.int_leaves = list(int_leaves) or [("1", "i32")]
        self.bool_leaves = list(bool_leaves)
        self.functions = list(functions)  # (name, arity) device functions f32 x ... -> f32
        self.consts = list(consts)  # module float constants

    def literal(self, dt: str) -> str:
        r = self.r
        if dt in INTS or dt == "i32":
            return str(r.choice([0, 1, 2, 3, 5, 7, 16, 127 if dt == "i8" else 255]))
        return r.choice(["0.5", "1.0", "2.0", "-1.5", "0.25", "3.0", "1e-3", "0.125", "-0.75", "1.5e1", "0.0"])

    def leaf(self, dt: str) -> str:
        r = self.r
        float_wanted = dt in FLOATS
        options = [(t, d) for t, d in self.leaves if (d in FLOATS) == float_wanted or not float_wanted]
        if self.smooth and not float_wanted:
            options = [(t, d) for t, d in options if d not in FLOATS or INPUT_VALUE.fullmatch(t)]
        if self.smooth and float_wanted:
            # no accumulated sum rounded to a narrower float: a function after it (cos) carries
            # the one-ulp difference of the sums' order past the tolerance (seed 4482)
            options = [(t, d) for t, d in options
                       if not (d in FLOATS and _float_bits(dt) < _float_bits(d) and ACCUMULATED.search(t))]
        if self.consts and float_wanted and r.random() < 0.1:
            c = r.choice(self.consts)  # a module constant is an f32, not a weak literal
            return c if dt in ("f32", "f64") else f"{dt}({c})"
        if not options or r.random() < 0.2:
            if not float_wanted and self.int_leaves and r.random() < 0.6:
                t, d = r.choice(self.int_leaves)
                return t if d == dt else f"{dt}({t})"
            return self.literal(dt)
        t, d = r.choice(options)
        if d == dt:
            return t
        if float_wanted and d in FLOATS and _promote(d, dt) == dt and r.random() < 0.5:
            # a narrower float meets a dt operand: the sum has dtype dt (T2)
            return f"({t} + {dt}({self.literal(dt)}))" if r.random() < 0.3 else f"({t} * {self.literal(dt)} + {dt}(0.0))" if d == "f32" and dt == "f32" else f"{dt}({t})"
        return r.choice([f"{dt}({t})", f"cast({t}, {dt})"])

    def float(self, dt: str, depth: int) -> str:
        r = self.r
        if depth <= 0 or r.random() < 0.25:
            return self.leaf(dt)
        d = depth - 1
        k = r.randrange(22)
        a = lambda: self.float(dt, d)  # noqa: E731
        if k < 5:
            return f"({a()} {r.choice(['+', '-', '*'])} {a()})"
        if k == 5:
            return f"({a()} / (abs({a()}) + 1.0))"
        if k == 6:
            return f"-{a()}"
        if k == 7:
            return f"{r.choice(['abs'] if self.smooth else ['abs', 'floor', 'ceil', 'round'])}({a()})"
        if k == 8:
            return f"{r.choice(['exp', 'exp2'])}(min({a()}, 4.0))"
        if k == 9:
            return f"{r.choice(['log', 'log2'])}(abs({a()}) + 1.0)"
        if k == 10:
            return r.choice([f"sqrt(abs({a()}))", f"rsqrt(abs({a()}) + 1.0)"])
        if k == 11:
            return f"{r.choice(['tanh', 'fast_tanh', 'sigmoid', 'erf', 'sin', 'cos'])}({a()})"
        if k == 12:
            return f"{r.choice(['min', 'max'])}({a()}, {a()})"
        if k == 13:
            return f"pow(abs({a()}) + 0.5, {r.choice(['2.0', '0.5', '1.5', '3.0'])})"
        if k == 14 and not self.smooth:
            return f"where({self.boolean(d)}, {a()}, {a()})"
        if k == 15 and not self.tensors and not self.smooth:
            return f"({a()} if {self.boolean(d)} else {a()})"
        if k == 16 and self.functions:
            name, arity = r.choice(self.functions)
            call = f"{name}({', '.join(self.float('f32', d) for _ in range(arity))})"
            return call if dt in ("f32", "f64") else f"{dt}({call})"
        if k == 17:
            return f"{dt}({self.integer('i32', d)})"
        if k == 18:
            return f"({a()} ** 2)"
        if k == 19 and dt != "f32":
            return f"{dt}({self.float('f32', d)})"
        if k == 20:
            return f"cast({self.float(r.choice(FLOATS), d)}, {dt})"
        return f"({a()} * {self.literal(dt)})"

    def integer(self, dt: str, depth: int) -> str:
        text = self._integer(dt, depth)
        if LITERAL_ONLY.fullmatch(text) and dt in INTS:
            # all literals: the checker folds it and refuses a value outside dt (E157), as it
            # should, so keep folds in range (`(1 & 255) - (16 & 255)` is not a u8)
            try:
                value = eval(text)  # noqa: S307 - digits and operators only (LITERAL_ONLY)
            except ZeroDivisionError:
                return self.literal(dt)
            lo, hi = _int_range(dt)
            if not lo <= value <= hi:
                return self.literal(dt)
        return text

    def _integer(self, dt: str, depth: int) -> str:
        r = self.r
        if depth <= 0 or r.random() < 0.3:
            return self.leaf(dt)
        d = depth - 1
        a = lambda: self.integer(dt, d)  # noqa: E731
        m = 127 if dt == "i8" else 255  # a mask against overflow, itself a literal of dt (FINDINGS.md 8)
        k = r.randrange(12)
        if k < 3:
            return f"(({a()} & {m}) {r.choice(['+', '-', '*'])} ({a()} & {m}))"
        if k == 3:
            return f"({a()} {r.choice(['//', '%'])} {r.choice([1, 2, 3, 7, 16])})"
        if k == 4:
            return f"({a()} {r.choice(['&', '|', '^'])} {a()})"
        if k == 5:
            return f"(({a()} & {m}) << {r.choice([0, 1, 3])})"
        if k == 6:
            return f"({a()} >> {r.choice([0, 1, 2])})"
        if k == 7:
            return f"{r.choice(['min', 'max'])}({a()}, {a()})"
        if k == 8:
            return f"cdiv({a()} & {m}, {r.choice([1, 4, 32])})"
        if k == 9:
            return f"where({self.boolean(d)}, {a()}, {a()})"
        if k == 10 and not self.smooth:
            return f"{dt}(floor({self.float('f32', d)}))"
        return f"abs({a()} & {m})" if dt not in ("u8", "u16", "u32", "u64") else a()

    def boolean(self, depth: int) -> str:
        r = self.r
        k = r.randrange(6)
        if self.bool_leaves and k == 0:
            return r.choice(self.bool_leaves)
        if depth > 0 and k == 1 and not self.tensors:
            return f"({self.boolean(depth - 1)} {r.choice(['and', 'or'])} {self.boolean(depth - 1)})"
        if depth > 0 and k == 2 and not self.tensors:
            return f"(not {self.boolean(depth - 1)})"
        if k == 3:
            return f"({self.integer('i32', max(depth - 1, 0))} {r.choice(['<', '<=', '==', '!=', '>', '>='])} {r.choice([0, 3, 100])})"
        if self.smooth:
            return f"({self.integer('i32', max(depth - 1, 0))} > {r.choice([0, 3, 100])})"
        return f"({self.float('f32', max(depth - 1, 0))} {r.choice(['<', '<=', '>', '>='])} {self.float('f32', max(depth - 1, 0))})"

    def value(self, dt: str, depth: int) -> str:
        return self.float(dt, depth) if dt in FLOATS else self.integer(dt, depth)


# ---- programs --------------------------------------------------------------------------------


class Builder:
    def __init__(self, seed: int, smooth: bool = False):
        self.seed = seed
        self.smooth = smooth
        self.r = random.Random(seed)
        self.lines: list[str] = []
        self.cases: list[KernelCase] = []
        self.functions: list[tuple[str, int]] = []
        self.consts: list[str] = []
        self.n_kernels = 0

    def emit(self, text: str = "") -> None:
        self.lines.append(text)

    def name(self, base: str) -> str:
        self.n_kernels += 1
        return f"{base}{self.n_kernels}"

    def exprs(self, leaves, ints, bools=(), tensors=False) -> Exprs:
        return Exprs(self.r, leaves, ints, bools, self.functions, self.consts, tensors, self.smooth)

    def depth(self) -> int:
        return self.r.choice([0, 1, 2, 2, 3, 3, 4])

    # -- module level --
    def module_prelude(self) -> None:
        r = self.r
        if r.random() < 0.3:
            which = r.sample(["gelu", "silu", "relu", "quick_gelu", "gelu_erf", "softplus", "gelu_precise"], r.randint(1, 2))
            self.emit(f"from std.math import {', '.join(which)}")
            self.functions += [(w, 1) for w in which]
        if r.random() < 0.4:
            self.emit(f"SCALE: const = {r.choice(['0.5', '1.25', '2.0', '-0.5'])}")
            self.consts.append("SCALE")
        for _ in range(r.choice([0, 0, 1, 2])):
            self.device_function()
        self.emit()

    def device_function(self) -> None:
        r = self.r
        name = f"fn{len(self.functions)}"
        arity = r.choice([1, 1, 2])
        args = ["a", "b"][:arity]
        e = self.exprs([(a, "f32") for a in args], [])
        body = []
        if r.random() < 0.3:  # a local, then used
            body.append(f"t = {e.float('f32', 2)}")
            e.leaves.append(("t", "f32"))
        if r.random() < 0.3:  # an early return
            body += [f"if {e.boolean(1)}:", f"    return {e.float('f32', 2)}"]
        body.append(f"return {e.float('f32', self.depth())}")
        self.emit(f"def {name}({', '.join(a + ': f32' for a in args)}) -> f32:")
        self.lines += ["    " + line for line in body] + [""]
        self.functions.append((name, arity))

    # -- kernels --
    def kernel(self) -> None:
        r = self.r
        pick = r.random()
        if pick < 0.22:
            self.elementwise_kernel()
        elif pick < 0.34:
            self.statement_kernel() if r.random() < 0.6 else self.dtype_kernel()
        elif pick < 0.50:
            self.gemm_kernel()
        elif pick < 0.70:
            self.reduction_kernel()
        else:
            self.tile_op()

    def _scalars(self, params: list, leaves: list, ints: list) -> None:
        r = self.r
        for i in range(r.choice([0, 1, 1, 2])):
            dt = r.choice(["f32", "f32", "i32", "f16", "f64"])
            p = Param(f"s{i}", "scalar", dt)
            params.append(p)
            (ints if dt == "i32" else leaves).append((p.name, dt))

    def emit_kernel(self, name, params, consts, grid, bind, threads, body, sizes) -> None:
        self.emit("@kernel")
        self.emit(f"def {name}({self._signature(params, consts)}):")
        self.emit(f"    with grid({grid}, threads={threads}) as {bind}:")
        for line in body:
            self.emit("        " + line)
        self.emit()
        self.cases.append(KernelCase(name, "kernel", params, self._pass_constants(consts), sizes))

    def _signature(self, params: list, constants: dict) -> str:
        parts = []
        for p in params:
            if p.role == "scalar":
                parts.append(f"{p.name}: {p.dtype}")
            else:
                parts.append(f"{p.name}: {p.annot or p.dtype}[{', '.join(str(d) for d in p.shape)}]")
        parts += [f"{k}: dtype = {v[1]}" if isinstance(v, tuple) else f"{k}: const = {v}" for k, v in constants.items()]
        return ", ".join(parts)

    def _pass_constants(self, constants: dict) -> dict:
        """Some constants are passed at the call, the others keep their defaults."""
        out = {}
        for k, v in constants.items():
            if isinstance(v, int) and not isinstance(v, bool) and self.r.random() < 0.2:
                out[k] = v
        return out

    def elementwise_kernel(self) -> None:
        r = self.r
        name = self.name("ew")
        two_d = r.random() < 0.5
        threads = r.choice([32, 64, 128, 128, 256])
        consts = {"BM": r.choice([1, 2, 4, 8, 16]), "BN": r.choice([32, 64, 128, 256])} if two_d else \
            {"BLOCK": r.choice([32, 64, 128, 256, 512, 1024])}
        shape = ("M", "N") if two_d else ("N",)
        sizes = {"M": r.choice([1, 3, 17, 64]), "N": r.choice([1, 5, 64, 100, 257, 1000])}
        n_in = r.choice([1, 2, 3])
        params = [Param(f"x{i}", "tensor", r.choice(LOAD_DTYPES), shape) for i in range(n_in)]
        out_dt = r.choice(STORE_FLOATS + ("i32", "i32", "i64", "u8", "i16", "u32"))
        bias = two_d and r.random() < 0.4
        if bias:
            params.append(Param("bias", "tensor", r.choice(FLOATS), ("N",)))
        params.append(Param("out", "tensor", out_dt, shape, output=True))
        leaves, ints = [], []
        self._scalars(params, leaves, ints)
        idx = "i, j" if two_d else "i"
        tile = "BM, BN" if two_d else "BLOCK"
        origin = "by * BM, bx * BN" if two_d else "bx * BLOCK"
        grid = "cdiv(N, BN), cdiv(M, BM)" if two_d else "cdiv(N, BLOCK)"
        bind = "(bx, by)" if two_d else "bx"
        body = []
        frags = []
        for p in params:
            if p.role != "tensor" or p.output or p.name == "bias":
                continue
            fdt = p.dtype if r.random() < 0.4 else r.choice(["f32", "f32", "f16", "f64", "i32"])
            via_shared = r.random() < 0.25
            fname = f"{p.name}_t"
            if via_shared:
                body.append(f"{fname}_s = shared({p.dtype}[{tile}])")
            body.append(f"{fname} = fragment({fdt}[{tile}])")
            frags.append((fname, fdt, p, via_shared))
            leaves_dt = fdt
            (ints if fdt in INTS else leaves).append((f"{fname}[{idx}]", leaves_dt))
        if bias:
            body.append(f"bias_t = fragment({params[n_in].dtype}[BN])")
            leaves.append(("bias_t[j]", params[n_in].dtype))
        out_frag_dt = out_dt if r.random() < 0.7 else r.choice(["f32", "f16"] if out_dt in FLOATS else ["i32"])
        body.append(f"res = fragment({out_frag_dt}[{tile}])")
        use_local = r.random() < 0.2
        if use_local:
            body.append("loc = local(f32[4])")
        for fname, fdt, p, via_shared in frags:
            if via_shared:
                body.append(f"copy({p.name}[{origin}], {fname}_s)")
                body.append(f"copy({fname}_s, {fname})")
            else:
                body.append(f"copy({p.name}[{origin}], {fname})")
        if bias:
            body.append("copy(bias[bx * BN], bias_t)")
        ints_loop = ints + [("i", "i32")] + ([("j", "i32")] if two_d else []) + [("bx", "i32")]
        if use_local:
            e0 = self.exprs([(t, d) for t, d in leaves if "[" not in t],
                            [(t, d) for t, d in ints if "[" not in t] + [("bx", "i32"), ("u", "i32")])
            body.append("for u in range(4):")
            body.append(f"    loc[u] = {e0.float('f32', 2)}")
            leaves = leaves + [("loc[i % 4]", "f32")]
        if r.random() < 0.3:
            e0 = self.exprs([(t, d) for t, d in leaves if "[" not in t], [(t, d) for t, d in ints if "[" not in t] + [("bx", "i32")])
            body.append(f"acc_s = {e0.float('f32', 2)}")
            leaves = leaves + [("acc_s", "f32")]
            if r.random() < 0.5:
                body.append("for q in range(3):")
                body.append(f"    acc_s = acc_s * 0.5 + {e0.float('f32', 1)}")
        e = self.exprs(leaves, ints_loop)
        body.append(f"for {idx} in parallel({tile}):")
        if r.random() < 0.3:
            body.append(f"    v = {e.value('f32', self.depth())}")
            e.leaves.append(("v", "f32"))
        if r.random() < 0.25:
            body.append(f"    if {e.boolean(1)}:")
            body.append(f"        res[{idx}] = {e.value(out_frag_dt, self.depth())}")
            body.append("    else:")
            body.append(f"        res[{idx}] = {e.value(out_frag_dt, 1)}")
        else:
            body.append(f"    res[{idx}] = {e.value(out_frag_dt, self.depth())}")
        if r.random() < 0.2:
            body.append(f"    res[{idx}] {r.choice(['+=', '-=', '*='])} {e.value(out_frag_dt, 1)}")
        body.append(f"copy(res, out[{origin}])")
        consts_all = dict(consts)
        self.emit_kernel(name, params, consts_all, grid, bind, threads, body, sizes)

    def statement_kernel(self) -> None:
        """Control flow and the statements around tiles: a dtype parameter, slices, shared
        staging, runtime loops with break/continue, if/elif/else around tile statements,
        fill/clear, sync, guarded element reads of global tensors, atomics, 3-D grids."""
        r = self.r
        name = self.name("st")
        dt = r.choice(["f32", "f16", "bf16", "f64"])
        consts = {"BM": r.choice([1, 2, 4, 8]), "BN": r.choice([16, 32, 64, 128]), "T": ("dtype", r.choice(FLOATS))}
        sizes = {"M": r.choice([1, 5, 16, 33]), "N": r.choice([1, 7, 64, 130])}
        params = [Param("x", "tensor", dt, ("M", "N"), annot="T"), Param("out", "tensor", dt, ("M", "N"), True, "T"),
                  Param("cnt", "tensor", "i32", (1,), True), Param("s0", "scalar", "f32"), Param("n0", "scalar", "i32")]
        threads = r.choice([32, 64, 128, 256])
        dims = r.choice([2, 2, 3])
        grid = "cdiv(N, BN), cdiv(M, BM)" + (", 1" if dims == 3 else "")
        bind = "(bx, by)" if dims == 2 else "(bx, by, bz)"
        if r.random() < 0.3:
            threads = f"{threads}, blocks_per_sm={r.choice([0, 1, 2, 4])}"
        sliced = r.random() < 0.5
        region = "x[by * BM:by * BM + BM, bx * BN:bx * BN + BN]" if sliced else "x[by * BM, bx * BN]"
        body = ["a = shared(T[BM, BN])", "f = fragment(f32[BM, BN])", "g = fragment(f32[BM])"]
        body += [f"copy({region}, a)", "copy(a, f)", "acc = 0.0"]
        loop = r.choice(["range(n0)", "range(1, n0 + 2, 2)", "unroll(4)", "range(3)"])
        body.append(f"for t in {loop}:")
        if r.random() < 0.5 and "unroll" not in loop:  # an unrolled loop's trip count is fixed (E042)
            body += ["    if t > 5:", "        break"]
        if r.random() < 0.5 and "unroll" not in loop:
            body += ["    if t % 2 == 1:", "        continue"]
        body.append(f"    acc {r.choice(['+=', '-=', '*='])} f32(t) * {r.choice(['0.5', 's0', '1.0'])}")
        e = self.exprs([("f[i, j]", "f32"), ("acc", "f32"), ("s0", "f32")], [("n0", "i32"), ("i", "i32"), ("j", "i32")])
        cond = r.choice(["s0 > 0.0", "n0 > 3", "acc >= 1.0", "bx == 0"])
        body += [f"if {cond}:", "    for i, j in parallel(BM, BN):", f"        f[i, j] = {e.float('f32', self.depth())}"]
        if r.random() < 0.5:
            body += ["elif n0 > 2:", f"    fill(f, {e.literal('f32')})"]
        body += ["else:", "    clear(f)" if r.random() < 0.5 else "    fill(f, acc)"]
        if r.random() < 0.3:
            body.append("sync()")
        body += [f"reduce_{r.choice(['sum', 'max', 'min', 'absmax'])}(f, g, dim=1)"]
        guard = "by * BM + i < M and bx * BN + j < N"
        body += ["for i, j in parallel(BM, BN):", f"    if {guard}:"]
        if r.random() < 0.5:
            body.append(f"        f[i, j] = f[i, j] + g[i] * 0.0 + f32(x[by * BM + i, bx * BN + j]) * {e.literal('f32')}")
        body.append("        atomic_add(cnt[0], 1)")
        body.append("copy(f, out[by * BM, bx * BN])")
        self.emit_kernel(name, params, consts, grid, bind, threads, body, sizes)

    def dtype_kernel(self) -> None:
        """The statements over many dtypes: a tile of dtype D loaded from a tensor of dtype S
        (a converting copy), filled, computed on in D (integer operations for integers), reduced
        (from registers or shared memory) into a wider dtype, and updated atomically."""
        r = self.r
        name = self.name("dt")
        src = r.choice(LOAD_DTYPES + ("bool",))
        d = r.choice(["f32", "f16", "bf16", "f64", "i32", "u32", "i8", "u8", "i16", "u16"])
        # (64-bit integer reductions and atomic max/min of 8- and 16-bit or f64 values are
        # E069 on the CUDA target: FINDINGS.md 7; left out so that every program builds)
        red_dt = {"f16": "f32", "bf16": "f32", "u32": "u32"}.get(d, d if d in ("f32", "f64", "i32") else "i32")
        sizes = {"M": r.choice([1, 6, 32]), "N": r.choice([3, 64, 100])}
        consts = {"BM": r.choice([2, 4, 8]), "BN": r.choice([16, 32, 64])}
        params = [Param("x", "tensor", src, ("M", "N")), Param("out", "tensor", d, ("M", "N"), output=True),
                  Param("rows", "tensor", red_dt, ("M",), output=True)]
        atomic_dt = r.choice(["f32", "i32", "u32", "f64", "u64", "f16", "bf16"])
        params.append(Param("acc", "tensor", atomic_dt, (1,), output=True))
        threads = r.choice([32, 64, 128])
        e = self.exprs([("t[i, j]", d)], [("i", "i32"), ("j", "i32")] + ([("t[i, j]", d)] if d in INTS else []))
        body = [f"t = fragment({d}[BM, BN])", f"red = fragment({red_dt}[BM])"]
        staged = r.random() < 0.3
        if staged:
            body.append(f"ts = shared({d}[BM, BN])")
        body += [f"fill(t, {e.literal(d)})" if r.random() < 0.3 else "clear(t)", "copy(x[by * BM, bx * BN], t)",
                 "for i, j in parallel(BM, BN):", f"    t[i, j] = {e.value(d, self.depth())}"]
        if staged:
            body += ["copy(t, ts)", f"reduce_{r.choice(['sum', 'max', 'min'])}(ts, red, dim=1)"]
        else:
            body.append(f"reduce_{r.choice(['sum', 'max', 'min', 'absmax'] if d not in ('u32', 'u64', 'u8') else ['sum', 'max', 'min'])}(t, red, dim=1)")
        atomic = r.choice(["atomic_add", "atomic_max", "atomic_min"] if atomic_dt in ("f32", "i32", "u32", "u64")
                          else ["atomic_add"])
        body += ["for i, j in parallel(BM, BN):", "    if by * BM + i < M and bx * BN + j < N:",
                 f"        {atomic}(acc[0], {atomic_dt}(t[i, j] {'> ' + e.literal(d) if r.random() < 0.5 else '!= ' + e.literal(d)}))",
                 "copy(t, out[by * BM, bx * BN])", "if bx == 0:", "    copy(red, rows[by * BM])"]
        self.emit_kernel(name, params, consts, "cdiv(N, BN), cdiv(M, BM)", "(bx, by)", threads, body, sizes)

    def gemm_kernel(self) -> None:
        r = self.r
        name = self.name("mm")
        kind = r.choice(["f16", "f16", "bf16", "f32", "tf32", "i8", "f8", "f64", "wide"])
        a_dt = {"tf32": "f32", "f8": "f8e4m3", "wide": r.choice(["i16", "i32", "i64", "u16", "u32", "u64"])}.get(kind, kind)
        b_dt = r.choice(["f8e4m3", "f8e5m2"]) if kind == "f8" else ("u8" if kind == "i8" and r.random() < 0.3 else a_dt)
        acc_dt = "i32" if kind in ("i8", "wide") else "f32"
        trans_b = r.random() < 0.4
        trans_a = not trans_b and r.random() < 0.2
        bm, bn, bk = r.choice([16, 32, 64, 128]), r.choice([16, 32, 64, 128]), r.choice([16, 32, 64])
        if kind in ("i8", "f8"):
            bk = r.choice([32, 64])
        threads = r.choice([32, 64, 128, 128, 256])
        stages = r.choice([1, 2, 3, 4])
        size = {"f32": 4, "tf32": 4, "f64": 8, "wide": 8}.get(kind, 1 if kind in ("i8", "f8") else 2)
        while stages > 1 and (bm + bn) * bk * size * stages > 160 * 1024:  # sm_80's shared memory (E070)
            stages -= 1
        loop = r.choice(["pipelined", "pipelined", "range", "unroll"])
        sizes = {"M": r.choice([16, 33, 64, 100]), "N": r.choice([16, 40, 64, 128]), "K": r.choice([16, 32, 48, 96, 130])}
        if loop == "unroll":
            sizes["K"] = bk * r.choice([1, 2])
        a_shape = ("K", "M") if trans_a else ("M", "K")
        b_shape = ("N", "K") if trans_b else ("K", "N")
        out_dt = r.choice(["f32", "f16", "bf16"]) if acc_dt == "f32" else r.choice(["i32", "f32"])
        params = [Param("A", "tensor", a_dt, a_shape), Param("B", "tensor", b_dt, b_shape)]
        bias = r.random() < 0.4 and acc_dt == "f32"
        if bias:
            params.append(Param("bias", "tensor", r.choice(["f32", "f16"]), ("N",)))
        params.append(Param("C", "tensor", out_dt, ("M", "N"), output=True))
        leaves, ints = [], []
        self._scalars(params, leaves, ints)
        consts = {"BM": bm, "BN": bn, "BK": bk}
        if loop == "pipelined":
            consts["STAGES"] = stages
        a_tile = "BK, BM" if trans_a else "BM, BK"
        b_tile = "BN, BK" if trans_b else "BK, BN"
        a_org = "k * BK, by * BM" if trans_a else "by * BM, k * BK"
        b_org = "bx * BN, k * BK" if trans_b else "k * BK, bx * BN"
        it = {"pipelined": "pipelined(cdiv(K, BK), stages=STAGES)", "range": "range(cdiv(K, BK))",
              "unroll": f"unroll({sizes['K'] // bk})"}[loop]
        flags = (", trans_a=True" if trans_a else "") + (", trans_b=True" if trans_b else "")
        if kind == "tf32" or (kind == "f32" and r.random() < 0.3):
            flags += f', precision="{"tf32" if kind == "tf32" else "ieee"}"'
        body = [f"As = shared({a_dt}[{a_tile}])", f"Bs = shared({b_dt}[{b_tile}])", f"acc = fragment({acc_dt}[BM, BN])"]
        if bias:
            body.append(f"bias_t = fragment({params[2].dtype}[BN])")
        staged_out = r.random() < 0.2
        if staged_out:
            body.append(f"Cs = shared({out_dt}[BM, BN])")
        body.append("clear(acc)" if r.random() < 0.8 else "fill(acc, 0)")
        body.append(f"for k in {it}:")
        body.append(f"    copy(A[{a_org}], As)")
        body.append(f"    copy(B[{b_org}], Bs)")
        body.append(f"    gemm(As, Bs, acc{flags})")
        epilogue = r.random() < 0.5
        if bias:
            body.append("copy(bias[bx * BN], bias_t)")
            leaves.append(("bias_t[j]", params[2].dtype))
        if epilogue or bias:
            leaves.append(("acc[i, j]", acc_dt)) if acc_dt == "f32" else ints.append(("acc[i, j]", "i32"))
            e = self.exprs(leaves, ints + [("i", "i32"), ("j", "i32")])
            body.append("for i, j in parallel(BM, BN):")
            body.append(f"    acc[i, j] = {e.value(acc_dt, self.depth())}")
        if staged_out:
            body.append("copy(acc, Cs)")
            body.append("copy(Cs, C[by * BM, bx * BN])")
        else:
            body.append("copy(acc, C[by * BM, bx * BN])")
        self.emit_kernel(name, params, consts, "cdiv(N, BN), cdiv(M, BM)", "(bx, by)", threads, body, sizes)

    def reduction_kernel(self) -> None:
        r = self.r
        name = self.name("red")
        op = r.choice(["sum", "max", "min", "absmax"])
        dim = r.choice([1, 1, 0])
        in_dt = r.choice(["f32", "f16", "bf16", "f64", "i32"])
        work_dt = "f32" if in_dt not in ("f64",) else "f64"
        bm, bn = r.choice([1, 2, 4, 8, 16]), r.choice([32, 64, 128, 256])
        if dim == 0:
            bm, bn = r.choice([8, 16, 32, 64]), r.choice([16, 32, 64])
        threads = r.choice([32, 64, 128, 256])
        sizes = {"M": r.choice([1, 4, 13, 64]), "N": r.choice([1, 31, 64, 200, 513])}
        out_dt = r.choice(["f32", "f64"]) if work_dt == "f32" else "f64"
        out_shape = ("M",) if dim == 1 else ("N",)
        params = [Param("x", "tensor", in_dt, ("M", "N")), Param("out", "tensor", out_dt, out_shape, output=True)]
        leaves, ints = [], []
        self._scalars(params, leaves, ints)
        identity = {"sum": "0.0", "absmax": "0.0", "max": f"-inf({work_dt})", "min": f"inf({work_dt})"}[op]
        combine = {"sum": "{a} + {b}", "absmax": "max({a}, {b})", "max": "max({a}, {b})", "min": "min({a}, {b})"}[op]
        red_len, red_tile = ("BM", "BN") if dim == 1 else ("BN", "BM")
        walk = "N" if dim == 1 else "M"
        origin = "bx * BM, t * BN" if dim == 1 else "t * BM, bx * BN"
        mask = "t * BN + j < N" if dim == 1 else "t * BM + i < M"
        consts = {"BM": bm, "BN": bn}
        e = self.exprs(leaves + [("tile[i, j]", work_dt)], ints + [("i", "i32"), ("j", "i32"), ("t", "i32")])
        keep = r.random() < 0.5  # clear=False accumulation instead of an explicit combine
        body = [f"tile = fragment({work_dt}[BM, BN])", f"part = fragment({work_dt}[{red_len}])",
                f"total = fragment({work_dt}[{red_len}])"]
        body.append(f"fill(total, {identity})" if identity != "0.0" or r.random() < 0.5 else "clear(total)")
        body.append(f"for t in range(cdiv({walk}, {red_tile})):")
        body.append(f"    copy(x[{origin}], tile)")
        body.append("    for i, j in parallel(BM, BN):")
        body.append(f"        tile[i, j] = where({mask}, {e.value(work_dt, self.depth())}, {identity})")
        if keep:
            body.append(f"    reduce_{op}(tile, total, dim={dim}, clear=False)")
        else:
            body.append(f"    reduce_{op}(tile, part, dim={dim})")
            body.append(f"    for i in parallel({red_len}):")
            body.append(f"        total[i] = {combine.format(a='total[i]', b='part[i]')}")
        e2 = self.exprs(leaves + [("total[i]", work_dt)], ints + [("i", "i32")])
        if r.random() < 0.5:
            body.append(f"for i in parallel({red_len}):")
            body.append(f"    total[i] = {e2.value(work_dt, 2)}")
        grid = "cdiv(M, BM)" if dim == 1 else "cdiv(N, BN)"
        body.append(f"copy(total, out[bx * {red_len}])")
        self.emit_kernel(name, params, consts, grid, "bx", threads, body, sizes)

    def tile_op(self) -> None:
        r = self.r
        name = self.name("op")
        form = r.choice(["ew", "ew", "matmul", "rows", "rows"])
        sizes = {"M": r.choice([1, 3, 16, 64]), "N": r.choice([1, 8, 64, 100, 300]), "K": r.choice([16, 32, 40, 128])}
        params, leaves = [], []
        if form == "matmul":
            dt = r.choice(["f16", "bf16", "f32"])
            trans = r.random() < 0.5
            params += [Param("x", "tensor", dt, ("M", "K")), Param("w", "tensor", dt, ("N", "K") if trans else ("K", "N"))]
            prod = "x @ w.T" if trans else "x @ w"
            leaves.append((f"({prod})", "f32"))
            ret_shape = ("M", "N")
        else:
            for i in range(r.choice([1, 2, 3])):
                shape = r.choice([("M", "N"), ("M", "N"), ("N",), ("M", 1)]) if i else ("M", "N")
                p = Param(f"x{i}", "tensor", r.choice(["f32", "f16", "bf16"]), shape)
                params.append(p)
                leaves.append((p.name, p.dtype))
            ret_shape = ("M", "N")
            if form == "ew" and r.random() < 0.2:  # a transposed parameter
                params.append(Param("xt", "tensor", r.choice(["f32", "f16"]), ("N", "M")))
                leaves.append(("xt.T", params[-1].dtype))
        if form != "matmul" or r.random() < 0.5:
            if form == "matmul" and r.random() < 0.7:
                p = Param("b", "tensor", r.choice(["f32", "f16"]), ("N",))
                params.append(p)
                leaves.append((p.name, p.dtype))
        scalars = []
        self._scalars(scalars, leaves, [])
        scalars = [s for s in scalars if s.dtype in FLOATS]
        leaves = [(t, d) for t, d in leaves if not t.startswith("s") or t in {s.name for s in scalars}]
        params += scalars
        e = self.exprs(leaves, [], tensors=True)
        body = []
        if r.random() < 0.4:
            body.append(f"t = {e.float('f32', 2)}")
            e.leaves.append(("t", "f32"))
        if form == "rows":
            x0 = params[0].name
            red = r.choice(["sum", "max", "min", "mean"])
            inner = r.choice([x0, x0, f"f32({x0}) * 0.5", f"exp({x0})", f"{x0} * {x0}", f"abs({x0})"])
            axis = 1 if r.random() < 0.8 else 0
            kind = r.choice(["softmax", "centred", "norm", "reduced", "reduced", "two"])
            if kind == "softmax":
                expr = f"softmax({inner}, axis={axis})"
            elif kind == "centred":
                expr = f"{x0} - {red}({inner}, axis={axis}, keepdims=True)"
            elif kind == "norm":  # a reduction reading another one (layernorm's passes)
                c = f"({x0} - mean({x0}, axis={axis}, keepdims=True))"
                expr = f"{c} * rsqrt(mean({c} * {c}, axis={axis}, keepdims=True) + 1e-5)"
            elif kind == "two":  # logsumexp: the reduced shape, a max then a sum
                m = f"max({x0}, axis=1, keepdims=True)"
                expr = f"log(sum(exp({x0} - {m}), axis=1, keepdims=True)) + {m}"
                ret_shape = ("M", 1)
            else:
                expr = f"{red}({inner}, axis={axis})"
                ret_shape = ("M",) if axis == 1 else ("N",)
            if kind in ("softmax", "centred", "norm") and len(params) > 1 and params[1].shape != ("M", 1) \
                    and r.random() < 0.5:
                expr = f"{expr} * {params[1].name}"  # another tensor in the row kernel's epilogue
            out = f"f32({expr})"
        else:
            out = e.float("f32", self.depth())
            if form == "matmul" and f"({'x @ w.T' if 'x @ w.T' in leaves[0][0] else 'x @ w'})" not in out:
                out = f"{leaves[0][0]} + {out}"
            if form == "ew" and not any(re.search(rf"\b{p.name}\b(?!\.T)", out) for p in params if p.shape == ("M", "N")):
                out = f"{params[0].name} + {out}"
        ret_dt = r.choice(["f32", "f16"]) if form != "rows" else "f32"
        if ret_dt != "f32":
            out = f"{ret_dt}({out})"
        fuse = r.random() < 0.15
        if fuse:
            self.emit("@fuse")
        self.emit("@tile_op")
        sig = self._signature(params, {})
        self.emit(f"def {name}({sig}) -> {ret_dt}[{', '.join(str(d) for d in ret_shape)}]:")
        for line in body:
            self.emit("    " + line)
        self.emit(f"    return {out}")
        self.emit()
        self.cases.append(KernelCase(name, "tile_op", params, {}, sizes, returns=(ret_dt, ret_shape)))


def generate(seed: int, kernels: int | None = None, smooth: bool = False) -> Program:
    """The program of `seed`: a prelude (imports, constants, device functions) and 1 to 3
    kernels or tile ops (`kernels` of them, if given).  `smooth` leaves out what turns an ulp
    of difference into a different result (floor, round, float comparisons), for diff mode."""
    b = Builder(seed, smooth)
    b.emit(f"# generated by tests/fuzz/gen.py, seed {seed}")
    b.module_prelude()
    for _ in range(kernels or b.r.choice([1, 1, 2, 3])):
        b.kernel()
    return Program(seed, "\n".join(b.lines) + "\n", b.cases)
