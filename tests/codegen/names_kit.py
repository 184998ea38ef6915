"""Programs whose names are C's: every name a .tl program chooses (kernel, tensor, shape symbol,
scalars, block and loop variables, locals) drawn from the names that C, CUDA, the headers and the
generated code own, their `_`-suffixed twins and their C spellings, for the compile test
(test_names_compile.py) and the interpreter-against-GPU test (test_names_gpu.py).

The kernel is a chain in which every local reads the one before it and a scalar of its own, with
a different constant each: any two names that meet in C change the result."""
from __future__ import annotations

import functools

from tlc.codegen.cnames import _GENERATOR, _KEYWORDS, c_name, reserved

# The issue's own (#16), then keywords, the generator's names, CUDA types, macros, libm.
NAMED = """half half_ int int_ INFINITY stream launch_k expf powf exp2f rsqrtf fmaxf NAN NULL EOF HUGE_VAL
dim3 int4 float2 uint3 char4 double2 longlong2 nv_bfloat16 cudaStream_t cudaError_t cudaSuccess malloc size_t
int32_t uint64_t printf threadIdx blockIdx warpSize assert memcpy stdout errno gamma y0 tl dims strides box
TL_PRIMITIVES tl_r tl_grid tl_smem launch_ a__b x_0_1k_ max min abs sqrt float double signed""".split()

# The repro (#16) with {t} = "xs", {a} = "half_", {b} = "half": a tensor, a scalar, a local.
ONE_SCALAR = """
@kernel
def k({t}: f32[N], {a}: f32):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            g = bx * 128 + i
            if g < N:
                {b} = {t}[g] * 2.0
                {t}[g] = {b} + {a}
"""

# The other cases in one file: `int` beside `int_`, a local `expf` beside a call of expf(),
# a scalar `stream`, a tensor `INFINITY`, a kernel `K` beside a kernel and a scalar `launch_K`;
# and names that are not ASCII (C spells them with hex escapes), `ﬁ` and `fi` two of them.
REGRESSIONS = """
@kernel
def K(xs: f32[N], launch_K: f32, half_: f32, int_: f32, stream: f32):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            g = bx * 128 + i
            if g < N:
                half = xs[g] * 2.0
                int = half + half_
                expf = exp(int * 0.01)
                xs[g] = expf + int_ + launch_K + stream

@kernel
def launch_K(INFINITY: f32[N], K: f32):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            g = bx * 128 + i
            if g < N:
                INFINITY[g] = INFINITY[g] * K

@kernel
def ünïcode(α: f32[N], ﬁ: f32, fi: f32):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            g = bx * 128 + i
            if g < N:
                名前 = α[g] * ﬁ
                α[g] = 名前 + fi
"""

# A device function's scalars, inlined, are `<function>_<k>_<name>`: here a user's name already
# (`twice_0_x`), and its local `result` was the name of the inlined call's result too.
INLINED = """
def twice(x: f32) -> f32:
    result = x * 2.0
    return result + 1.0

@kernel
def k(xs: f32[N], ys: f32[N]):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            g = bx * 128 + i
            if g < N:
                twice_0_x = xs[g] + 100.0
                ys[g] = twice(xs[g]) + twice_0_x
"""

FIXED = {"N", "g", "i", "bx", "k", "xs", "s", "v"}  # names the tests write themselves
TL_KEYWORDS = set("and as break continue def elif else for from if import in not or pass return while with True False".split())


@functools.lru_cache(maxsize=1)
def pool() -> tuple[str, ...]:
    """Candidate names: the named ones, every C++ keyword and generator name, one in 25 of the
    header-declared ones, each with its `_` twin and its C spelling; those a .tl program can
    use as a name (all but its keywords)."""
    listed = sorted(reserved() - set(_KEYWORDS.split()) - set(_GENERATOR.split()))
    base = NAMED + _KEYWORDS.split() + _GENERATOR.split() + listed[::25]
    names = dict.fromkeys(x for n in base for x in (n, n + "_", c_name(n)))
    return tuple(n for n in names if n not in FIXED | TL_KEYWORDS)


def program(kernel: str, tensor: str, size: str, block: str, lane: str, index: str, scalars, locals_) -> str:
    """A kernel over a 1-D f32 tensor: locals[j] = locals[j-1] * 0.5..0.9 + scalars[j % len]
    (the first from the tensor, the second through exp()), the last stored back; the factors
    below 1 keep the values finite."""
    lines = [f"{locals_[0]} = {tensor}[{index}] * 2.0"]
    for j, name in enumerate(locals_[1:], 1):
        prev = locals_[j - 1]
        value = f"exp({prev} * 0.01)" if j == 1 else f"{prev} * 0.{5 + j % 5}"
        lines.append(f"{name} = {value} + {scalars[j % len(scalars)]}")
    lines.append(f"{tensor}[{index}] = {locals_[-1]} + {scalars[0]}")
    body = "".join(f"                {x}\n" for x in lines)
    params = "".join(f", {s}: f32" for s in scalars)
    return (f"@kernel\ndef {kernel}({tensor}: f32[{size}]{params}):\n"
            f"    with grid(cdiv({size}, 128), threads=128) as {block}:\n"
            f"        for {lane} in parallel(128):\n"
            f"            {index} = {block} * 128 + {lane}\n"
            f"            if {index} < {size}:\n{body}")


def from_names(names: list[str]) -> tuple[str, str, int]:
    """(source, kernel name, number of scalars) of the program with `names` (distinct, at least
    8) in the roles kernel, tensor, size, block, lane, index, then scalars and locals."""
    kernel, tensor, size, block, lane, index, *rest = names
    half = max(1, len(rest) // 2)
    scalars, locals_ = rest[:half], rest[half:] or ["v"]
    return program(kernel, tensor, size, block, lane, index, scalars, locals_), kernel, len(scalars)

