"""Whether the compiler may give a tile constant another value than its default without
changing what the program computes.  schedule/fit.py does so twice: it shrinks default tiles
that overrun shared memory, and it grows a default K tile to the 128-byte rows wgmma takes.

Both are sound only where the constant is a tile's extent and nothing else: the program then
covers the same elements whatever the tile.  That is the case when every use of the constant
`C` is one of
- a dimension of a `shared(...)`, `fragment(...)` or `local(...)` buffer (`shared(f16[BM, BK])`);
- the extent of an element loop (`parallel(BM, BN)`, `range(BK)`), whose index walks a tile;
- `cdiv(X, C)` as the one argument of a tile loop (`pipelined(cdiv(K, BK))`, from 0) or as a
  grid extent (`grid(cdiv(N, BN))`): the loop or block index then counts tiles of `C`;
- `v * C` where `v` is such a tile index, or a sum of them and integers (`(k + 1) * BK`, a
  slice's end), and a tile index appears nowhere else.
Anything else ties the program's meaning to the value: a loop from `k0` to `k1` counted in K
tiles (TileLang's `T.Pipelined(k0, k1)`), a parameter shaped `K // block_K` (a block-sparse
mask), `by` used alone as an output row.  Such a constant keeps the value it was given.
"""
from __future__ import annotations

import dataclasses

from ..parser import nodes as n

BUFFERS = {"shared", "fragment", "local"}
TILE_LOOPS = {"range", "pipelined", "serial", "unroll"}
ELEMENT_LOOPS = {"parallel", "range", "serial", "unroll", "vectorized"}
CDIV = {"cdiv", "ceildiv"}


def _uses(x):
    return ast_nodes(x, targets=False)


def retileable(fn: n.FunctionDef, name: str) -> bool:
    """Whether every use of the constant `name` in `fn` is one a tile's extent may have (above)."""
    allowed: set[int] = set()  # id() of the Name nodes whose use is a tile's extent
    tile_indices: set[str] = set()
    for x in _uses(fn.body):
        if isinstance(x, n.Call) and _callee(x) in BUFFERS and x.args and isinstance(x.args[0], n.Subscript):
            allowed.update(id(d) for d in x.args[0].indices if _is(d, name))
        elif isinstance(x, n.For) and isinstance(x.iter, n.Call):
            loop = _callee(x.iter)
            if loop in ELEMENT_LOOPS:
                allowed.update(id(a) for a in x.iter.args if _is(a, name))
            if loop in TILE_LOOPS and len(x.iter.args) == 1 and len(x.targets) == 1 and _cdiv_by(x.iter.args[0], name):
                allowed.add(id(x.iter.args[0].args[1]))
                tile_indices.add(x.targets[0].id)
        elif isinstance(x, n.With) and isinstance(x.context, n.Call) and _callee(x.context) == "grid":
            for target, extent in zip(x.targets, x.context.args):
                if _cdiv_by(extent, name):
                    allowed.add(id(extent.args[1]))
                    tile_indices.add(target.id)
    for x in _uses(fn.body):
        if isinstance(x, n.BinOp) and x.op == "*":
            for count, size in ((x.left, x.right), (x.right, x.left)):
                indices = _tile_count(count, tile_indices)
                if _is(size, name) and indices:
                    allowed.update((id(size), *map(id, indices)))
    params = any(_is(x, name) for p in fn.params for x in _uses(p.annotation))
    return not params and all(id(x) in allowed for x in _uses(fn.body)
                              if _is(x, name) or (isinstance(x, n.Name) and x.id in tile_indices))


def _tile_count(x, tile_indices: set[str]) -> list | None:
    """The tile-index Names of `x` when it is tile indices and integers joined by + and -
    (a count of tiles), else None."""
    if isinstance(x, n.Name):
        return [x] if x.id in tile_indices else None
    if isinstance(x, n.Constant):
        return [] if isinstance(x.value, int) and not isinstance(x.value, bool) else None
    if isinstance(x, n.BinOp) and x.op in "+-":
        left, right = _tile_count(x.left, tile_indices), _tile_count(x.right, tile_indices)
        return None if left is None or right is None else left + right
    return None


def _cdiv_by(x, name: str) -> bool:
    return isinstance(x, n.Call) and _callee(x) in CDIV and len(x.args) == 2 and _is(x.args[1], name)


def _callee(call: n.Call) -> str | None:
    return call.func.id if isinstance(call.func, n.Name) else None


def _is(x, name: str) -> bool:
    return isinstance(x, n.Name) and x.id == name


def ast_nodes(x, targets: bool = True):
    """Every AST node under `x` (itself included); with targets=False, For/With targets left
    out (they bind names, not use them)."""
    if isinstance(x, tuple):
        for y in x:
            yield from ast_nodes(y, targets)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        yield x
        for f in dataclasses.fields(x):
            if f.name in ("span", "ty") or (not targets and f.name == "targets" and isinstance(x, (n.For, n.With))):
                continue
            yield from ast_nodes(getattr(x, f.name), targets)
