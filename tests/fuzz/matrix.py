"""Programs that cross every dtype with every statement and operation, one small kernel per
pair, many kernels per file so that one nvcc run compiles them all (`scripts/fuzz --mode
matrix`).  Each kernel must build for both targets or get a diagnostic, and what builds must
compile with nvcc -Werror and run on the interpreter."""
from __future__ import annotations

DTYPES = ["f32", "f64", "f16", "bf16", "f8e4m3", "f8e5m2", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64",
          "bool"]
NUMERIC = [d for d in DTYPES if d != "bool"]
INTEGERS = ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"]
FLOATS = ["f32", "f64", "f16", "bf16"]


def _kernel(name: str, params: str, body: list[str]) -> str:
    lines = [f"@kernel", f"def {name}({params}, BLOCK: const = 64):", "    with grid(cdiv(N, BLOCK), threads=64) as bx:"]
    return "\n".join(lines + ["        " + b for b in body]) + "\n"


def copies() -> str:
    """Every dtype pair through global -> fragment, fragment -> shared -> fragment, -> global."""
    out = []
    for s in DTYPES:
        for d in DTYPES:
            out.append(_kernel(f"copy_{s}_{d}", f"x: {s}[N], y: {d}[N]", [
                f"t = fragment({d}[BLOCK])", f"u = shared({s}[BLOCK])", f"v = fragment({s}[BLOCK])",
                "copy(x[bx * BLOCK], t)", "copy(t, u)", "copy(u, v)", "copy(v, y[bx * BLOCK])"]))
    return "\n".join(out)


def fills() -> str:
    out = []
    for d in DTYPES:
        value = "True" if d == "bool" else "1" if d in INTEGERS else "1.5"
        out.append(_kernel(f"fill_{d}", f"y: {d}[N]", [
            f"t = fragment({d}[BLOCK])", f"s = shared({d}[BLOCK])", f"l = local({d}[2])", f"fill(t, {value})",
            f"fill(s, {value})", f"fill(l, {value})", "clear(l)", "for i in parallel(BLOCK):",
            "    t[i] = t[i] if s[i] == l[i % 2] else s[i]", "copy(t, y[bx * BLOCK])"]))
        # (a local buffer only written is nvcc's warning 550, "set but never used": FINDINGS.md)
    return "\n".join(out)


def operations() -> str:
    """Each operator and builtin on each dtype it types on, inside a parallel loop."""
    out = []
    ops = {"add": "a + b", "sub": "a - b", "mul": "a * b", "div": "a / b", "fdiv": "a // b", "mod": "a % b",
           "pow": "a ** b", "neg": "-a", "lt": "where(a < b, a, b)", "eq": "where(a == b, a, b)",
           "min": "min(a, b)", "max": "max(a, b)", "abs": "abs(a)", "where": "where(a > b, a, b)",
           "and": "a & b", "or": "a | b", "xor": "a ^ b", "shl": "a << b", "shr": "a >> b", "inv": "~a",
           "floor": "floor(a)", "ceil": "ceil(a)", "round": "round(a)", "ifexp": "a if a > b else b"}
    ops.update({f: f"{f}(a)" for f in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "fast_tanh",
                                        "sigmoid", "erf", "sin", "cos")})
    for d in NUMERIC:
        for op, e in ops.items():
            if d not in INTEGERS and op in ("and", "or", "xor", "shl", "shr", "inv"):
                continue  # T4: bit operations need integers
            out.append(_kernel(f"op_{op}_{d}", f"x: {d}[N], z: {d}[N], y: {d}[N]", [
                f"p = fragment({d}[BLOCK])", f"q = fragment({d}[BLOCK])", "copy(x[bx * BLOCK], p)",
                "copy(z[bx * BLOCK], q)", "for i in parallel(BLOCK):", "    a = p[i]", "    b = q[i]",
                f"    p[i] = {d}({e})", "copy(p, y[bx * BLOCK])"]))
    return "\n".join(out)


def casts() -> str:
    out = []
    for s in DTYPES:
        for d in DTYPES:
            out.append(_kernel(f"cast_{s}_{d}", f"x: {s}[N], y: {d}[N]", [
                f"p = fragment({s}[BLOCK])", f"q = fragment({d}[BLOCK])", "copy(x[bx * BLOCK], p)",
                "for i in parallel(BLOCK):", f"    q[i] = cast(p[i], {d}) if i > 3 else {d}(p[i])",
                "copy(q, y[bx * BLOCK])"]))
    return "\n".join(out)


PROGRAMS = {"copies": copies, "fills": fills, "operations": operations, "casts": casts}


def build_each(path: str, arch: str):
    """({kernel: the diagnostic's first line, or the exception's for an internal error},
    the .cu of every kernel that built) for the file at `path`, checked once."""
    import traceback

    from tlc.api import load
    from tlc.codegen import generate_file
    from tlc.diagnostics import DiagnosticError

    mod = load(path, target="cpu")
    refused, built = {}, []
    for name, k in mod.kernels.items():
        try:
            kernels = list(k.program({}, arch).kernels) if k.fn.kind == "tile_op" else [k.scheduled({}, arch)]
            generate_file(kernels, arch, sources=mod.program.sources, source_name=path)
            built += kernels
        except DiagnosticError as e:
            refused[name] = f"{e.diagnostics[0].code} {e.diagnostics[0].message}"
        except Exception:  # noqa: BLE001 - an internal error: the finding
            refused[name] = "INTERNAL " + traceback.format_exc().strip().splitlines()[-1]
    return refused, generate_file(built, arch, sources=mod.program.sources, source_name=path) if built else ""
