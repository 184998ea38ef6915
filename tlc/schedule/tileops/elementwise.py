"""An element-wise group as a kernel: each block computes one tile of the result in a `parallel`
loop, the tensors of the result's shape copied into fragments first (16-byte runs where the
code generator can), the broadcast ones loaded element by element (they are small and cached).

A tensor read transposed (x.T) is copied along its rows into a shared tile and read down its
columns from there, in square block tiles (rules.TRANSPOSE_TILE), as a transpose kernel stages
it: read element by element down x's columns, x.T moved 0.37 of the copy bandwidth on the H200.

When every tensor the expression reads has the result's shape and nothing is transposed, the
tensors are viewed as flat vectors (`NUMEL` elements): no 2-D tile edge to handle, the longest
contiguous runs.  The launch passes 1-D views of the same memory.  `NUMEL` is an i64, and a
tile's first element is computed in 64 bits: a tensor of [M, N] can hold more than 2^31
elements while M and N each fit an i32.
"""
from __future__ import annotations

from dataclasses import replace

from ... import ir
from ...dtypes import I64
from ...parser import nodes as n
from ..lower import cast
from .build import KernelBuilder, add, cdiv, i32, mul, var
from .graph import children
from .rules import DEFAULT_RULES, Rules, elementwise_tiles

FLAT = "NUMEL"


def elementwise_kernel(b: KernelBuilder, sizes: dict, rules: Rules = DEFAULT_RULES) -> tuple[ir.Kernel, bool]:
    """(the kernel, whether its tensors are flat views)."""
    g, root, dest = b.g, b.group.root, b.group.dest
    shape = g.shape(root)
    read = [name for name in b.tensors if name != dest and _reads(b, name)]
    # flat views drop the shape's symbols, so an expression that reads one as a value (`x * N`)
    # keeps the 2-D form, where they are the kernel's parameters
    flat = (len(shape) == 2 and all(b.tensors[t][1] == shape for t in read) and not _transposes(g, root)
            and not _reads_symbol(g, root, {d for d in shape if isinstance(d, str)}))
    dtypes = [b.tensors[t][0] for t in read] + [b.tensors[dest][0]]
    if flat:
        symbol = b.fresh(FLAT)
        b.tensors = {t: (dt, (symbol,) if t in read + [dest] else s) for t, (dt, s) in b.tensors.items()}
        dims = (symbol,)
        sizes = {**sizes, symbol: _numel(shape, sizes)}
    else:
        dims = shape
    # a tensor read transposed (x.T) goes through a shared tile of square block tiles: copied
    # along its rows, read down its columns (the result's rows)
    staged = len(dims) == 2 and _transposes(g, root)
    tiles = elementwise_tiles(len(dims), dims, sizes, dtypes, rules, transposed=staged)
    rank = 1 if flat else len(dims)
    vars_, block_vars = tuple(b.fresh(v) for v in ("i", "j")[:rank]), tuple(b.fresh(v) for v in ("bx", "by")[:rank])
    if flat:
        origin = (mul(ir.Cast(var(block_vars[0]), I64), ir.Const(tiles.shape[0], I64)),)
        grid = (cdiv(ir.Var(symbol, I64), tiles.shape[0]),)
    elif rank == 1:
        origin = (mul(var(block_vars[0]), i32(tiles.shape[0])),)
        grid = (cdiv(b.dim(dims[0]), tiles.shape[0]),)
    else:
        bx, by = block_vars
        origin = (mul(var(by), i32(tiles.shape[0])), mul(var(bx), i32(tiles.shape[1])))
        grid = (cdiv(b.dim(dims[1]), tiles.shape[1]), cdiv(b.dim(dims[0]), tiles.shape[0]))
    local = tuple(var(v) for v in vars_)
    here = tuple(add(o, x) for o, x in zip(origin, local))
    canonical = here * len(shape) if flat else here
    frags: dict[str, str] = {}
    shared: dict[str, str] = {}  # tensors read transposed: their shared tiles

    def leaf(name):
        dtype = b.tensors[name][0]

        def load(idx):
            if g_shape(name) == shape and tuple(idx) == canonical:
                if name not in frags:
                    frags[name] = b.buffer(f"{name}_tile", "fragment", dtype, tiles.shape)
                return ir.Load(frags[name], local, dtype)
            if staged and g_shape(name) == shape[::-1] and tuple(idx) == canonical[::-1]:
                if name not in shared:
                    shared[name] = b.buffer(f"{name}_t", "shared", dtype, tiles.shape[::-1])
                return ir.Load(shared[name], local[::-1], dtype)
            return ir.Load(name, tuple(idx), dtype)
        return load

    def g_shape(name):
        return shape if flat and b.tensors[name][1] == dims else b.tensors[name][1]

    for node, temp in b.part.temps.items():
        if temp != dest:
            b.lower.leaves[node] = leaf(temp)
    for p in g.fn.tensor_params:
        b.lower.leaves[p.name] = leaf(p.name)
    pre, value = b.lower.element(root, canonical, shape)
    out_dt = b.tensors[dest][0]
    out = b.buffer(f"{dest}_tile", "fragment", out_dt, tiles.shape)
    body = [ir.Copy(ir.Region(name, origin[::-1], tiles.shape[::-1]), ir.BufferRef(t)) for name, t in shared.items()]
    body += [ir.Copy(ir.Region(name, origin, tiles.shape), ir.BufferRef(f)) for name, f in frags.items()]
    body.append(ir.Parallel(vars_, tiles.shape, tuple(pre) + (ir.Store(out, local, cast(value, out_dt)),)))
    body.append(ir.Copy(ir.BufferRef(out), ir.Region(dest, origin, tiles.shape)))
    kernel = b.kernel(grid, block_vars, tiles.threads, tuple(body), tiles.min_blocks, (symbol,) if flat else ())
    if shared:
        note = ", ".join(f"{name}.T through the shared tile {t}" for name, t in shared.items())
        kernel = replace(kernel, notes=kernel.notes + (f"{note} (read along its rows, square block tiles)",))
    return kernel, flat


def _reads(b: KernelBuilder, name: str) -> bool:
    g, root = b.g, b.group.root
    if name in g.leaves(root):
        return True
    return any(b.part.temps.get(h.node) == name for h in g.frontier(root))


def _transposes(g, e) -> bool:
    e = g.resolve(e)
    if g.heavy(e) is not None:
        return False
    if isinstance(e, n.Attribute) and e.attr == "T":
        return True
    return any(_transposes(g, c) for c in children(e))


def _reads_symbol(g, e, symbols: set) -> bool:
    e = g.resolve(e)
    if g.heavy(e) is not None:
        return False
    if isinstance(e, n.Name):
        return e.id in symbols
    return any(_reads_symbol(g, c, symbols) for c in children(e))


def _numel(shape, sizes) -> int | None:
    total = 1
    for d in shape:
        v = d if isinstance(d, int) else sizes.get(d)
        if v is None:
            return None
        total *= v
    return total
