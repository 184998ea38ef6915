"""A large fragment scaled in place by a row vector: skipped where the warp's factors are all 1.

Owns one decision of the CUDA generator: whether a `parallel` loop is an online softmax's
rescale of its accumulator,

    for i, j in parallel(BM, DV):
        acc[i, j] *= rescale[i]          # or acc[i, j] = rescale[i] * acc[i, j]

an f32 fragment of at least `MIN_REGS` registers a thread multiplied in place by an f32 row
vector.  Its factor is exp(old max - new max): exactly 1 for every row whose maximum did not
grow, which after the first key blocks is most rows (row r's maximum grows at block k with
probability about 1/k for keys in random order).  The loop is then written under a warp vote,

    bool tl_any = false;
    for (slot of rescale it holds) tl_any |= rescale[slot] != 1.0f;
    if (__any_sync(__activemask(), tl_any)) { the loop }

so that a warp whose rows all keep their maximum issues none of its multiplies (128 FMUL a
thread a key block in std.attention's mla_decode, 64 in flash_fwd at D = 128).  The values are
unchanged, bit for bit: x * 1.0f is x for every float, NaN included (a NaN factor is not 1 and
multiplies).  The vote reads every slot the vector holds, a superset of those the loop reads.
"""
from __future__ import annotations

from .. import ir
from .cnames import c_name

MIN_REGS = 128  # elements a thread of the scaled fragment (mla_decode; flash_fwd at D = 128 holds 64: not yet timed)


def unit_row_scale(p: ir.Parallel, buffers: dict, threads: int) -> str | None:
    """The row vector's name where loop `p` is `F[i, j] = F[i, j] * v[i]` (either order) of an
    f32 fragment F of >= MIN_REGS elements a thread and an f32 fragment v, else None."""
    if len(p.vars) != 2 or len(p.body) != 1 or not isinstance(p.body[0], ir.Store):
        return None
    s = p.body[0]
    i, j = p.vars
    f = buffers.get(s.name)
    if f is None or f.scope != "fragment" or f.dtype.name != "f32" or len(f.shape) != 2:
        return None
    if not _is_index(s.indices, (i, j)) or not isinstance(s.value, ir.BinOp) or s.value.op != "*":
        return None
    elements = 1
    for d in f.shape:
        elements *= d
    if elements // max(threads, 1) < MIN_REGS:
        return None
    for own, row in ((s.value.a, s.value.b), (s.value.b, s.value.a)):
        if not (isinstance(own, ir.Load) and own.name == s.name and _is_index(own.indices, (i, j))):
            continue
        if not (isinstance(row, ir.Load) and _is_index(row.indices, (i,))):
            continue
        v = buffers.get(row.name)
        if v is not None and v.scope == "fragment" and v.dtype.name == "f32" and len(v.shape) == 1 \
                and row.name != s.name:
            return row.name
    return None


def _is_index(indices, names) -> bool:
    return len(indices) == len(names) and all(isinstance(x, ir.Var) and x.name == n for x, n in zip(indices, names))


def vote_open(gen, name: str) -> None:
    """Opens the warp's vote on row vector `name` (gen: the CUDA generator); vote_close ends it."""
    info = gen.fragment(name)
    gen.emit(f"{{  // {name}: skipped by a warp whose factors are all 1 (codegen/unit_scale.py)")
    gen.indent += 1
    gen.emit("bool tl_any = false;")
    gen.emit("#pragma unroll")
    gen.emit(f"for (int tl_r = 0; tl_r < {info.regs}; ++tl_r) "
             f"tl_any |= {info.c_layout}::valid(threadIdx.x, tl_r) && {c_name(name)}[tl_r] != 1.0f;")
    gen.emit("if (__any_sync(__activemask(), tl_any)) {")
    gen.indent += 1


def vote_close(gen) -> None:
    gen.indent -= 1
    gen.emit("}")
    gen.indent -= 1
    gen.emit("}")
