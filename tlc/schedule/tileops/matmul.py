"""A matmul group as a kernel: std.gemm's structure (LANGUAGE.md section 2's matmul) with the
group's element-wise expression as its epilogue.

Each block computes a BM x BN tile of the product: shared tiles of both operands, `for k in
pipelined(...)` copying global -> shared and calling `gemm`, then a `parallel` loop over the f32
accumulator that applies the epilogue in registers (bias, activation, scaling, residual, cast;
other tensors are read element by element at the tile's coordinates), then one copy to global.
The loop is exactly std.gemm's, so the code generator's fast paths for it (wgmma on sm_90a,
TMA and warp specialization as they arrive) apply unchanged.  The tile sizes are std.gemm's for
the same transposes (`std_gemm_config`).
"""
from __future__ import annotations

from functools import lru_cache

from ... import ir
from ...dtypes import BOOL, gemm_operands_agree
from ..lower import cast
from .build import KernelBuilder, add, cdiv, i32, mul, var
from .graph import TileOpError
from .rules import MatmulTiles, matmul_tiles

# which std.gemm kernel has the same operand layouts: (A transposed, B transposed) -> name
STD_GEMM_KERNEL = {(False, False): "matmul", (False, True): "matmul_nt", (True, False): "matmul_tn",
                   (True, True): "matmul_tn"}


@lru_cache(maxsize=None)
def std_gemm_config(kernel: str) -> tuple:
    """The constants std.gemm's `kernel` runs with by default, as ((name, value), ...)."""
    from ...driver import check_file

    result = check_file("std.gemm")
    fn = result.program.function(kernel)
    return tuple((p.name, p.value) for p in fn.params if p.role == "const")


def tiles_for(b: KernelBuilder, smem_limit: int, sizes: dict) -> MatmulTiles:
    """std.gemm's configuration for the product's transposes: the one its config.json records
    for the target, the shape bucket and the dtype when there is one, else its defaults."""
    from ...config_table import choose, rules_for
    from ...driver import resolve_path

    (a, ta), (bb, tb) = b.group.operands
    kernel = STD_GEMM_KERNEL[(ta, tb)]
    m, n = b.g.shape(b.group.matmul.node)
    dtype, shape = operand_type(b, 0)
    k = shape[0 if ta else 1]
    known = {name: sizes[d] for name, d in (("M", m), ("N", n), ("K", k)) if isinstance(d, str) and d in sizes}
    known.update({name: d for name, d in (("M", m), ("N", n), ("K", k)) if isinstance(d, int)})
    recorded = choose(rules_for(resolve_path("std.gemm"), kernel), b.target, known, {"T": dtype.name})
    config = {**dict(std_gemm_config(kernel)), **recorded}
    source = f"std.gemm {kernel}, {'config.json' if recorded else 'defaults'}"
    return matmul_tiles(config, source, dtype, smem_limit)


def operand_type(b: KernelBuilder, side: int) -> tuple:
    """(dtype, shape) of the matmul's left (0) or right (1) operand as the kernel reads it: the
    tensor's, or the computed expression's."""
    node = b.group.computed[side]
    if node is not None:
        return b.g.dtype(node), b.g.shape(node)
    return b.tensors[b.group.operands[side][0]]


def operand_tile(b: KernelBuilder, side: int, buf: str, origin: tuple, tile: tuple):
    """The statement that fills shared tile `buf` at `origin` of the operand: a copy of the
    tensor's tile, or (a computed operand, rule 1b of fusion.py) a parallel loop that evaluates
    the expression at each element and stores it converted to the tile's dtype; outside the
    operand it stores 0, since the expression of the zeros a load returns there need not be 0
    (exp, a bias) and the product would add it in."""
    node = b.group.computed[side]
    if node is None:
        name = b.group.operands[side][0]
        return ir.Copy(ir.Region(name, origin, tile), ir.BufferRef(buf))
    shape = b.g.shape(node)
    i, j = b.fresh("i"), b.fresh("j")
    at = (add(origin[0], var(i)), add(origin[1], var(j)))
    pre, value = b.lower.element(node, at, shape)
    tile_dt = b.buffers[buf].dtype
    inside = ir.BinOp("and", ir.BinOp("<", at[0], b.dim(shape[0]), BOOL), ir.BinOp("<", at[1], b.dim(shape[1]), BOOL),
                      BOOL)
    value = ir.Select(inside, cast(value, tile_dt), ir.Const(0, tile_dt), tile_dt)
    return ir.Parallel((i, j), tile, tuple(pre) + (ir.Store(buf, (var(i), var(j)), value),))


def matmul_kernel(b: KernelBuilder, tiles: MatmulTiles) -> ir.Kernel:
    g, mm, root, dest = b.g, b.group.matmul, b.group.root, b.group.dest
    (a, ta), (bb, tb) = b.group.operands
    (dta, sa), (dtb, _) = operand_type(b, 0), operand_type(b, 1)
    if not gemm_operands_agree(dta, dtb):
        raise TileOpError(f"'{g.text(mm.node)}' multiplies {dta} by {dtb}; the operands of '@' need one dtype",
                          mm.node.span, f"convert one of them, e.g. {dta}(...)")
    m, n = g.shape(mm.node)
    k_dim = sa[0] if ta else sa[1]
    BM, BN, BK = tiles.BM, tiles.BN, tiles.BK
    As = b.buffer("As", "shared", dta, (BK, BM) if ta else (BM, BK))
    Bs = b.buffer("Bs", "shared", dtb, (BN, BK) if tb else (BK, BN))
    acc_dt = g.dtype(mm.node)
    acc = b.buffer("acc", "fragment", acc_dt, (BM, BN))
    block_vars = (b.fresh("bx"), b.fresh("by"))
    bx, by, k = var(block_vars[0]), var(block_vars[1]), var(b.fresh("k"))
    rows, cols, ks = mul(by, i32(BM)), mul(bx, i32(BN)), mul(k, i32(BK))
    left = operand_tile(b, 0, As, (ks, rows) if ta else (rows, ks), (BK, BM) if ta else (BM, BK))
    right = operand_tile(b, 1, Bs, (cols, ks) if tb else (ks, cols), (BN, BK) if tb else (BK, BN))
    # copies first: a pipelined loop prefetches its leading copies, and a computed tile is not one
    tiles_in = sorted((left, right), key=lambda s: not isinstance(s, ir.Copy))
    loop = (*tiles_in, ir.Gemm(As, Bs, acc, ta, tb))
    body = [ir.Fill(acc, ir.Const(0, acc_dt)),
            ir.For(k.name, i32(0), cdiv(b.dim(k_dim), BK), i32(1), "pipelined", tiles.stages, loop)]
    if g.resolve(root) != mm.node:
        i, j = b.fresh("i"), b.fresh("j")
        local = (var(i), var(j))
        here = (add(rows, local[0]), add(cols, local[1]))
        text = g.text(mm.node)

        def product(idx):
            if tuple(idx) != here:
                raise TileOpError(f"the epilogue of '{text}' reads the product transposed; name the product and "
                                  "transpose the names it feeds", mm.node.span)
            return ir.Load(acc, local, acc_dt)

        b.lower.leaves[mm.node] = product
        pre, value = b.lower.element(root, here, (m, n))
        if isinstance(value, ir.Cast) and value.dtype == b.tensors[dest][0] and value.x.dtype == acc_dt:
            value = value.x  # the store to `dest` rounds to its dtype once; rounding here too costs two conversions
        body.append(ir.Parallel((i, j), (BM, BN), tuple(pre) + (ir.Store(acc, local, cast(value, acc_dt)),)))
    body.append(ir.Copy(ir.BufferRef(acc), ir.Region(dest, (rows, cols), (BM, BN))))
    grid = (cdiv(b.dim(n), BN), cdiv(b.dim(m), BM))
    return b.kernel(grid, block_vars, tiles.THREADS, tuple(body))
