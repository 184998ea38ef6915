"""Attention written as whole tensors, scheduled as one flash kernel.

A tile op whose result is `softmax(g(q @ k.T), axis=1) @ v` (through casts: the probabilities
cast to v's dtype, the result to the declared one), with g element-wise over the scores and
scalars (a scale, a soft cap `c * tanh(s / c)`, a clamp), would be three kernels and two S x SK
temporaries under the fusion rules: a product, a softmax over whole rows, a product.  The online
softmax (FlashAttention) needs neither temporary: one block per BM query rows streams the keys
and values a block at a time, keeping a running row max and sum that rescale what came before.
`match_attention` recognises the form on the expression graph; `kernel_text` writes
std.attention's flash_fwd for it (the template flash_tile_op.tl.j2, g rendered in place of the
scores), which the tile-op scheduler (`tileops._attention`) checks inside the tile op's module,
so that g's names resolve as they did, and schedules as any kernel: on sm_90a the TMA ring and
warp-specialized wgmma consumers.  Stacks of matrices (q: T[B, H, S, D] with q @ k.mT) are the
grid's y and z.

The head dim is compiled in rounded up to a power of two (at least 16): the tiles past it read
zeros, which change neither product.  The probabilities are rounded to v's dtype before the
second product, unnormalized, and the row sum divides the output at the end (as FlashAttention
does), so the result differs from the three-kernel plan's by the rounding of the normalized
probabilities; a row whose scores are all -inf gives 0 (NumPy's softmax gives nan).  A g that
is the scores times a scalar (`split_score`) is folded into the exponent as flash_fwd folds its
scale, and a causal `tri` mask is applied to the blocks across the diagonal only: on the H200
the first form with a pass for g ran at 0.85 of flash_fwd (0.80 causal).
"""
from __future__ import annotations

from functools import lru_cache

from ...frozen import frozen
from ...parser import nodes as n
from ...typecheck.types import DTypeValue, ScalarType, TensorType
from .graph import Graph, TileOpError, builtin_call

SCORE = "scores_[i_, j_]"  # the template's element of the product


@frozen
class AttentionForm:
    """The tensors of `softmax(g(q @ k.T), axis=1) @ v` and g's expression (the softmax's
    argument, reading `product`)."""

    q: str
    k: str
    v: str
    product: object
    score: object
    scalars: tuple  # the tile op's scalar parameters g reads, in declaration order
    softmax: object = None  # the softmax node and the second product's, for the plan's text
    output: object = None


def _uncast(e):
    """`e` without the dtype casts around it."""
    while isinstance(e, n.Call) and isinstance(getattr(e.func, "ty", None), DTypeValue) and len(e.args) == 1:
        e = e.args[0]
    return e


def match_attention(graph: Graph) -> AttentionForm | None:
    """The attention form of the tile op's result, or None when it is something else."""
    root = graph.heavy(_uncast(graph.resolve(graph.root)))
    if root is None or root.kind != "matmul":
        return None
    v = graph.transposed_param(root.node.right)
    left = graph.resolve(root.node.left)
    soft = graph.heavy(_uncast(left))
    if v is None or v[1] or soft is None or soft.kind != "softmax" or soft.axis != len(graph.shape(soft.node)) - 1:
        return None
    score = soft.node.args[0]
    heavy = graph.frontier(score)
    if len(heavy) != 1 or heavy[0].kind != "matmul" or graph.leaves(score):
        return None  # g reads another tensor, a reduction or a second product
    product = heavy[0].node
    q, k = graph.transposed_param(product.left), graph.transposed_param(product.right)
    if q is None or q[1] or k is None or not k[1]:
        return None
    types = {name: graph.params[name].type for name in (q[0], k[0], v[0])}
    dtypes = {t.dtype for t in types.values()} | {graph.dtype(left)}
    if len(dtypes) != 1 or next(iter(dtypes)).name not in ("f16", "bf16"):
        return None
    dq, dk, dv = (graph.dims(types[name].shape) for name in (q[0], k[0], v[0]))
    if not 2 <= len(dq) <= 4 or dk != dv or len(dk) != len(dq) or dq[-1] != dk[-1] or \
            any(b not in (a, 1) for a, b in zip(dq[:-2], dk[:-2])):
        return None  # a value head dim other than the key's is not flash_fwd's, nor heads that differ
    used = _names(graph, score)
    scalars = tuple(p.name for p in graph.fn.params if p.role == "scalar" and p.name in used)
    try:
        render(graph, score, product)
    except TileOpError:
        return None  # g holds something the kernel cannot compute per element: the fusion plan does
    return AttentionForm(q[0], k[0], v[0], product, score, scalars, soft.node, root.node)


def _walk(graph: Graph, e):
    """e and its operands at every depth, each resolved (the graph's names followed)."""
    e = graph.resolve(e)
    yield e
    for f in getattr(e, "__dataclass_fields__", ()):
        if f not in ("span", "ty"):
            value = getattr(e, f)
            for c in value if isinstance(value, tuple) else (value,):
                if hasattr(c, "__dataclass_fields__"):
                    yield from _walk(graph, c)


def _names(graph: Graph, e) -> set:
    return {x.id for x in _walk(graph, e) if isinstance(x, n.Name)}


def render(graph: Graph, e, product, symbols: dict | None = None) -> str:
    """g as .tl text in the generated kernel: the product's element `SCORE`, intermediates
    written out, the tile op's constants and dtype parameters as their bound values, its shape
    symbols as the kernel's (`symbols`), `tri(S, SK, k)` as the comparison of the element's
    key and query positions."""
    symbols = symbols if symbols is not None else kernel_symbols(graph, product)
    e_res = graph.resolve(e)
    if e_res == product:
        return SCORE
    e = e_res
    r = lambda x: render(graph, x, product, symbols)  # noqa: E731
    if builtin_call(e) == "tri":
        if graph.shape(e) != graph.shape(product)[-2:]:
            _refuse(graph, e)
        return f"(kb_ * BN_ + j_ <= bx_ * BM_ + i_ + {r(e.args[2])})"
    if isinstance(e, n.Name) and e.id in graph.symbols:
        return symbols[e.id] if e.id in symbols else _refuse(graph, e)
    if isinstance(e, n.Name):
        if isinstance(e.ty, DTypeValue):
            return e.ty.dtype.name
        p = graph.params.get(e.id)
        if p is not None and p.role == "const":
            return repr(graph.fn.constants[e.id])
        return e.id  # a scalar parameter (a parameter of the kernel), a module constant
    if isinstance(e, n.Constant):
        if isinstance(e.value, bool) or not isinstance(e.value, float):
            return repr(e.value)
        return repr(e.value) if e.value == e.value and abs(e.value) != float("inf") else _refuse(graph, e)
    if isinstance(e, n.BinOp):
        return f"({r(e.left)} {e.op} {r(e.right)})"
    if isinstance(e, n.UnaryOp):
        return f"({e.op}{' ' if e.op == 'not' else ''}{r(e.operand)})"
    if isinstance(e, n.BoolOp):
        return "(" + f" {e.op} ".join(r(x) for x in e.values) + ")"
    if isinstance(e, n.Compare):
        parts = [r(e.operands[0])]
        for op, x in zip(e.ops, e.operands[1:]):
            parts += [op, r(x)]
        return "(" + " ".join(parts) + ")"
    if isinstance(e, n.IfExp):
        return f"({r(e.body)} if {r(e.test)} else {r(e.orelse)})"
    if isinstance(e, n.Call) and isinstance(e.func, n.Name):
        args = [r(a) for a in e.args]
        args += [f"{kw.name}={r(kw.value)}" for kw in e.keywords]
        return f"{render_callee(e.func)}({', '.join(args)})"
    return _refuse(graph, e)


LEAD = ("B_", "H_")  # the generated kernel's names of the leading dimensions (batch, heads)


def kernel_symbols(graph: Graph, product) -> dict:
    """The tile op's shape symbols as the generated kernel names them: q's leading dimensions
    B_ and H_ (the last ones), its rows S_, its head dim D_, k's rows SK_."""
    dq, dk = graph.shape(product.left), graph.shape(graph.resolve(product.right).value)  # k of k.T, k.mT
    named = list(zip(dq[:-2], LEAD[len(LEAD) - len(dq) + 2:])) + [(dq[-2], "S_"), (dk[-2], "SK_"), (dq[-1], "D_")]
    return {sym: name for sym, name in named if isinstance(sym, str)}


def causal_offset(graph: Graph, form: AttentionForm):
    """k of a score written `where(tri(S, SK, k), x, -inf(...))` (every key past query i + k
    masked): the keys of blocks past a query block's last row + k need not be read at all."""
    e = _uncast(graph.resolve(form.score))
    if builtin_call(e) != "where":
        return None
    cond, _, other = (graph.resolve(a) for a in e.args)
    if builtin_call(cond) != "tri" or not (isinstance(other, n.UnaryOp) and other.op == "-"
                                           and builtin_call(graph.resolve(other.operand)) == "inf"):
        return None
    return cond.args[2]


def split_score(graph: Graph, form: AttentionForm):
    """(g without its causal mask, c) where g is `product * c` (or `c * product`, `product / c`,
    the product alone: c = 1) with c free of the product, so that the kernel folds c into the
    exponent (flash_fwd's one FFMA an element); (g without its mask, None) otherwise."""
    core = graph.resolve(form.score)
    if causal_offset(graph, form) is not None:
        core = graph.resolve(_uncast(core).args[1])
    bare = _uncast(core)
    if bare == form.product:
        return core, None, "1.0"
    if isinstance(bare, n.BinOp) and bare.op in ("*", "/"):
        left, right = (_uncast(graph.resolve(x)) for x in (bare.left, bare.right))
        if left == form.product and not _reads(graph, bare.right, form.product):
            c = render(graph, bare.right, form.product)
            return core, None, c if bare.op == "*" else f"(1.0 / {c})"
        if bare.op == "*" and right == form.product and not _reads(graph, bare.left, form.product):
            return core, None, render(graph, bare.left, form.product)
    return core, render(graph, core, form.product), None


def _reads(graph: Graph, e, node) -> bool:
    """Whether `node` is among e's operands, at any depth."""
    return any(x == node for x in _walk(graph, e))


def render_callee(f: n.Name) -> str:
    return f.ty.dtype.name if isinstance(f.ty, DTypeValue) else f.id


def _refuse(graph: Graph, e):
    raise TileOpError(f"'{graph.text(e)}' cannot be written into the flash kernel of this attention", e.span,
                      "compute it into a scalar parameter, or write the scores without it")


def head_dim(graph: Graph, form: AttentionForm, sizes: dict) -> int:
    """The head dim the kernel compiles in: the size, rounded up to a power of two, at least 16."""
    d = graph.dims(graph.params[form.q].type.shape)[-1]
    size = d if isinstance(d, int) else sizes.get(d)
    if size is None:  # E240, as a kernel's compiled-in shape symbol: `tlc check` passes it by
        from ...diagnostics import Diagnostic, DiagnosticError

        raise DiagnosticError([Diagnostic("E240", f"the head dim '{d}' of '{form.q}' must be known to schedule this "
                                          "attention (it is compiled in)", graph.params[form.q].span,
                                          f"give it: --shape {d}=SIZE (a call binds it from its arrays)")],
                              graph.sources)
    return max(16, 1 << (int(size) - 1).bit_length())


def flash_tiles(dp: int, target: str) -> dict:
    """std.attention's flash_fwd tiles for head dim `dp`: on sm_90a 128 x 128 in three stages
    (64 keys in two at 256), elsewhere (mma.sync holds more of a tile in registers) 64 keys."""
    if target == "sm_90a":
        return dict(bm=128, bn=64 if dp > 128 else 128, stages=2 if dp > 128 else 3, threads=256)
    return dict(bm=128 if dp <= 128 else 64, bn=64 if dp <= 128 else 32, stages=3 if dp <= 128 else 2, threads=256)


@lru_cache(maxsize=1)
def _template():
    import jinja2

    from ...package_data import templates

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates()), keep_trailing_newline=True)
    return env.get_template("flash_tile_op.tl.j2")


def kernel_text(graph: Graph, form: AttentionForm, name: str, out: str, dp: int, target: str) -> str:
    """The generated kernel's .tl text."""
    scalars = [dict(name=s, dtype=_scalar_dtype(graph.params[s].type)) for s in form.scalars]
    q_dtype = graph.params[form.q].type.dtype.name
    offset = causal_offset(graph, form)
    _, score, scale = split_score(graph, form)
    dq, dk = (graph.dims(graph.params[x].type.shape) for x in (form.q, form.k))
    lead = LEAD[len(LEAD) - len(dq) + 2:]
    # a key head dimension of 1 under the queries' H: every query head reads the one (MQA)
    k_lead = ["1" if b == 1 and a != 1 else name for a, b, name in zip(dq[:-2], dk[:-2], lead)]
    index = [x.lower() for x in lead]  # the grid's y and z: h_, b_
    return _template().render(name=name, q=form.q, k=form.k, v=form.v, out=out, scalars=scalars, dtype=q_dtype,
                              q_dims=", ".join([*lead, "S_", "D_"]), k_dims=", ".join([*k_lead, "SK_", "D_"]),
                              grid_dims="".join(f"{x}, " for x in reversed(lead)),
                              grid_vars="(" + ", ".join(["bx_", *reversed(index)]) + ")" if lead else "bx_",
                              q_at="".join(f"{x}, " for x in index),
                              k_at="".join(f"{'0' if d == '1' else x}, " for d, x in zip(k_lead, index)),
                              out_dtype=graph.out_dtype.name, dp=dp, score=score, scale=scale,
                              causal=None if offset is None else render(graph, offset, form.product),
                              **flash_tiles(dp, target))


def _scalar_dtype(t) -> str:
    return t.dtype.name if isinstance(t, (ScalarType, TensorType)) else str(t)
