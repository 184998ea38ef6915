"""The tile IR: a kernel after constants and dtypes are bound, as small frozen dataclasses.

Owns the shape of the IR that the scheduler builds and that the interpreter and the code
generator read.  Does not own passes, checks (`verify.py`) or text (`printer.py`).

Conventions every consumer relies on:
- Every expression carries its result `dtype`; the scheduler inserts `Cast`s, so a `Store`,
  `Assign`, `LetScalar`, `Fill` or `Atomic` value already has the target's dtype.
- Names are strings resolved against the kernel: tensor and scalar params, shape symbols (i32),
  bound constants, block vars (i32), buffers, loop/parallel vars (i32) and `LetScalar`s.  A
  `LetScalar` is visible to the end of the statement list that holds it (C block scope).
- A `span` is optional, keyword-only, and never part of equality or hashing.
- Lists given to constructors are stored as tuples, so nodes stay hashable.
"""
from __future__ import annotations

from dataclasses import field, fields
from typing import Any, Union

from ..diagnostics import Span
from ..dtypes import I32, I64, DType
from ..frozen import frozen

Dim = Union[int, str, "DimExpr"]  # a tensor param's dimension: a literal size, a shape symbol's name, or an expression of them


def _span() -> Any:
    return field(default=None, compare=False, repr=False, kw_only=True)


class Node:
    """Base of every IR node: normalizes list fields to tuples after construction."""

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, list):
                object.__setattr__(self, f.name, tuple(v))


# ---- expressions ---------------------------------------------------------------------------

class Expr(Node):
    """Base of expressions; every subclass has a `dtype` field."""

    dtype: DType


ARITH_OPS = ("+", "-", "*", "/", "//", "%", "**", "min", "max")
BIT_OPS = ("<<", ">>", "&", "|", "^")
COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=")
LOGIC_OPS = ("and", "or")
BINARY_OPS = ARITH_OPS + BIT_OPS + COMPARE_OPS + LOGIC_OPS
UNARY_OPS = ("-", "~", "not")
# math builtins and their arity; `where` is `Select`, `min`/`max` are binary ops
MATH_FUNCS = {**{f: 1 for f in ("exp", "exp2", "log", "log2", "log1p", "sqrt", "rsqrt", "tanh", "fast_tanh",
                                "sigmoid", "erf", "sin", "cos", "tan", "atan", "asinh", "atanh", "asin", "acos", "acosh", "expm1", "abs",
                                "floor", "ceil",
                                "round")}, "pow": 2,
              "fmod": 2,
              # atan2(y, x): the angle of the point (x, y), C's atan2
              "atan2": 2,
              # internal (no builtin of the language): 2^x where the result's precision allows the
              # hardware approximation (a 16-bit softmax); the interpreter computes it exactly
              "fast_exp2": 1,
              # internal: log2(x) where the result's precision allows the hardware's (MUFU.LG2,
              # a polynomial near 1: relative error below 2^-20); the interpreter's is exact
              "fast_log2": 1,
              # internal: log(1 + x) so, with a polynomial of x itself near 0
              "fast_log1p": 1,
              # internal: atan, tan and erf where the result's precision allows a short polynomial
              # and the hardware's reciprocal and 2^x (tl::fast_atan, ...: relative error below
              # 2^-17); the interpreter's are exact
              "fast_atan": 1, "fast_tan": 1, "fast_erf": 1, "fast_asinh": 1, "fast_atanh": 1,
              "fast_asin": 1, "fast_acos": 1, "fast_acosh": 1, "fast_acosh_near": 1,  # (an f16 argument: no check for x^2's overflow)
              "fast_asinh_near": 1,
              # internal: atan2 where the result's precision allows (tl::fast_atan2: atan's
              # polynomial of min / max, no division; fast_atan2_near of two f16 arguments)
              "fast_atan2": 2, "fast_atan2_near": 2,
              "fast_expm1": 1,
              # internal: fast_tan of an argument below 2^17 in magnitude (an f16 value), which
              # needs no check for tanf's range
              "fast_tan_near": 1,
              # internal: sin and cos where the result's precision allows (tl::fast_sin, fast_cos:
              # a reduction by pi and one polynomial, no branch; relative error below 2^-19), and
              # their forms for an argument below 2^17 in magnitude (an f16 value)
              "fast_sin": 1, "fast_cos": 1, "fast_sin_near": 1, "fast_cos_near": 1,
              # internal: a ** b as 2^(b log2 |a|) by the hardware, powf's special values kept
              "fast_pow": 2, "fast_pow_near": 2,  # (an f16 base: no subnormal, lg2.approx.ftz)
              # the same values, powf's special cases behind one rarely taken branch (fast_math.py's
              # RARE_POW_SPECIALS)
              "fast_pow_rare": 2, "fast_pow_near_rare": 2,
              # internal: a / b where the quotient's precision allows the hardware's full-range
              # approximate division (div.full.f32: 2 ulp, no branch); the interpreter divides
              "fast_div": 2,
              # internal: the same of an f16 divisor (never subnormal in f32, at most 65504): a
              # times the hardware's reciprocal of b (rcp.approx.ftz.f32, 1 ulp), no range check
              "fast_div_near": 2,
              # internal: the square root by the hardware's approximation (sqrt.approx.f32: a few
              # ulp, no branch) where the result's precision allows it; the interpreter's is exact
              "fast_sqrt": 1,
              # TileLang's reinterpret: the argument's bits as the result's dtype, of the same width
              "bitcast": 1,
              # the thread's index in its block, 0 to threads - 1 (TileLang's get_thread_binding)
              "thread_index": 0,
              # internal: the blocks the launch runs along x (gridDim.x), which a kernel whose
              # launch runs fewer blocks than its grid counts walks by (schedule/pipeline_rows.py)
              "grid_blocks": 0}


@frozen
class Const(Expr):
    value: Any  # int, float or bool; normalized to the Python type of `dtype`'s kind
    dtype: DType
    span: Span | None = _span()

    def __post_init__(self) -> None:
        kind = self.dtype.kind
        conv = float if kind == "float" else bool if kind == "bool" else int
        object.__setattr__(self, "value", conv(self.value))


@frozen
class Var(Expr):
    name: str
    dtype: DType
    span: Span | None = _span()


@frozen
class BinOp(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: DType
    span: Span | None = _span()


@frozen
class UnaryOp(Expr):
    op: str
    x: Expr
    dtype: DType
    span: Span | None = _span()


@frozen
class Call(Expr):
    fn: str
    args: tuple[Expr, ...]
    dtype: DType
    span: Span | None = _span()


@frozen
class Cast(Expr):
    x: Expr
    dtype: DType
    span: Span | None = _span()


@frozen
class Select(Expr):
    """`a if cond else b` / `where(cond, a, b)`."""

    cond: Expr
    a: Expr
    b: Expr
    dtype: DType
    span: Span | None = _span()


@frozen
class Load(Expr):
    """One element of a tensor param or buffer; out-of-range indices read 0."""

    name: str
    indices: tuple[Expr, ...]
    dtype: DType
    span: Span | None = _span()


# ---- copy operands -------------------------------------------------------------------------

@frozen
class BufferRef(Node):
    """A whole shared, fragment or local buffer."""

    name: str
    span: Span | None = _span()


@frozen
class Region(Node):
    """The box `offsets .. offsets + extents` of a tensor param or buffer (same rank), or of a
    view of a tensor param: `dims` then gives the view's dimensions (i32 expressions), the
    tensor's memory read row-major in that shape (schedule/views.py); None: the tensor's own."""

    name: str
    offsets: tuple[Expr, ...]
    extents: tuple[int, ...]
    span: Span | None = _span()
    dims: tuple | None = None


CopyOperand = Union[BufferRef, Region]


# ---- statements ----------------------------------------------------------------------------

class Stmt(Node):
    """Base of statements."""


@frozen
class Copy(Stmt):
    """Element-wise copy with dtype conversion; extents with their 1s dropped must agree."""

    src: CopyOperand
    dst: CopyOperand
    span: Span | None = _span()
    # > 0: one of a batch of copies from global memory into fragments, consecutive statements
    # with the same number, whose loads are all issued before the first is converted
    # (schedule/batch_loads.py); 0: on its own
    batch: int = 0
    # a gather's copy from a tensor whose tile an index chose: its loads ask the L2 to keep the
    # lines (an evict_last policy), since other blocks may choose the same rows (l2_policy.py)
    keep_l2: bool = False


@frozen
class Gemm(Stmt):
    """`c += op(a) @ op(b)`; `a`, `b` shared or fragment buffers, `c` a fragment.  `precision`
    "tf32" multiplies f32 operands truncated to tf32 (what the tensor cores read); "ieee" exactly."""

    a: str
    b: str
    c: str
    trans_a: bool = False
    trans_b: bool = False
    precision: str = "ieee"
    span: Span | None = _span()


@frozen
class Fill(Stmt):
    buffer: str
    value: Expr
    span: Span | None = _span()
    # a clear made by the next statement's wgmma gemm, its first K step's scale-d 0, rather than
    # by instructions (schedule/scale_d_clears.py): 1 reading the registers the last gemm left,
    # 2 only writing them; 3 (a clear before a ring) by its carried gemm's first iteration;
    # 0: instructions
    scale_d: int = 0


REDUCE_KINDS = ("sum", "max", "min", "absmax")


@frozen
class Reduce(Stmt):
    """`dst = reduce(src, dim)`, combined with dst's old values when `clear` is False.

    `dst` has `src`'s shape without `dim`; a rank-1 `src` reduces into a `[1]` buffer."""

    kind: str
    src: str
    dst: str
    dim: int = 1
    clear: bool = True
    span: Span | None = _span()


SCAN_KINDS = ("sum", "prod", "max", "min")


@frozen
class Scan(Stmt):
    """`dst` = the inclusive scan of `src` along `dim` by `kind` (sum: cumsum, prod: cumprod,
    max: cummax, min: cummin), from the last index down when `reverse`.  Both are shared buffers
    of one shape, possibly the same buffer, or one fragment scanned in place along its last
    dimension, in its registers (schedule/cumsum.py, schedule/scan_registers.py); the results
    accumulate in `dst`'s dtype, 16- and 8-bit floats in f32."""

    kind: str
    src: str
    dst: str
    dim: int
    reverse: bool = False
    span: Span | None = _span()


ATOMIC_KINDS = ("add", "max", "min", "turn_wait", "turn_done")


@frozen
class Atomic(Stmt):
    """Atomic update of one element of a global tensor or shared buffer; outside a `Parallel`
    it happens once per block, inside it once per index.  The turn kinds (outside a `Parallel`,
    on an i32 element of a global tensor: `atomic_add(..., order=)`'s) order the block's updates
    that lie between them: "turn_wait" waits until the element reads at least `value` (acquire)
    with the block's threads after it, "turn_done" adds 1 (release) once every thread of the
    block is past its updates."""

    kind: str
    name: str
    indices: tuple[Expr, ...]
    value: Expr
    span: Span | None = _span()
    # an add whose lanes of one warp at one address add once, the value times their count
    # (schedule/atomic_groups.py: a shared histogram's counts of data-chosen bins)
    grouped: bool = False


@frozen
class Sync(Stmt):
    span: Span | None = _span()


@frozen
class Print(Stmt):
    """C printf (`%d %f %.3e ...`, checked by `tlc.print_format`); once per block, or once per index inside a `Parallel`,
    where `per_thread` must be True (and False everywhere else)."""

    fmt: str
    args: tuple[Expr, ...]
    per_thread: bool = False
    span: Span | None = _span()


@frozen
class Assert(Print):
    """device_assert: where `cond` is false, a failure is recorded with `fmt` formatted over
    `args` (tlc/device_assert.py); a Print in all else (per block, or per index in a `Parallel`)."""

    cond: Expr | None = None


@frozen
class LetScalar(Stmt):
    """Declares a per-thread scalar, visible to the end of the enclosing statement list."""

    name: str
    dtype: DType
    value: Expr
    span: Span | None = _span()


@frozen
class Assign(Stmt):
    name: str
    value: Expr
    span: Span | None = _span()


@frozen
class Store(Stmt):
    """One element of a tensor param or buffer; out-of-range stores are skipped."""

    name: str
    indices: tuple[Expr, ...]
    value: Expr
    span: Span | None = _span()


LOOP_KINDS = ("serial", "unroll", "pipelined", "while")  # while: serial, its body opens with the test


@frozen
class For(Stmt):
    """`for var in range(start, stop, step)`; `stages` matters only when `kind` is pipelined."""

    var: str
    start: Expr
    stop: Expr
    step: Expr
    kind: str
    stages: int
    body: tuple[Stmt, ...]
    span: Span | None = _span()
    # The scheduler's (schedule/last_stage.py): the staged buffers that code after a pipelined
    # loop uses, which then hold the last iteration's tile (its ring copies that stage into
    # the first once drained; an empty loop leaves them as they were)
    keep_last_stage: tuple[str, ...] = ()


@frozen
class Parallel(Stmt):
    """Each index of `extents` once, spread over the block's threads; vars are i32."""

    vars: tuple[str, ...]
    extents: tuple[int, ...]
    body: tuple[Stmt, ...]
    span: Span | None = _span()
    # The scheduler's (schedule/layout_infer.py), opaque here: the layout the iterations are
    # spread by, and the fragments that go through shared memory around the loop (name,
    # written?) because the loop reads them in another layout.
    layout: Any = None
    exchange: tuple[tuple[str, bool], ...] = ()
    # Copies of fragments the loop writes, out to global memory: they mean what the same copies
    # right after the loop mean, and run a run of the loop's layout at a time, as the loop
    # finishes each (schedule/fold_stores.py).
    stores: tuple = ()
    # The loop is `im2col`'s lowering (schedule/im2col.py): what it gathers as one box of the
    # TMA's im2col mode (`Im2colTile`), which sm_90a's warp specialization may load it by; the
    # loop itself says what it computes.
    im2col: Any = None


@frozen
class Im2colTile(Node):
    """A shared tile a loop fills as one box of the TMA's im2col mode loads it: row i is output
    pixel m0 + i of the flattened (batch, out_h, out_w) of a convolution over image `img`
    ([N, H, W, C]), its columns consecutive channels of one input pixel.  The pixels' windows'
    top-left corners are `lower + stride * (oh, ow)` (w then h), `out` (w, h: Exprs of shape
    symbols and constants) pixels a row and rows an image; the tile reads the input at the
    first pixel's corner and channel `coords` (c, w, h, n, innermost first) shifted by
    `offsets` (w, h: the kernel position times the dilation, never negative), the pixels
    outside the image reading 0.  `columns`: 0 when a channel past C reads 0 (a tile of one
    kernel position: the TMA's bounds do it), else the tile's columns, which lie in one kernel
    position only where C is a multiple of them (im2col's flattened columns: the host checks)."""

    img: str
    lower: tuple  # int: w, h
    stride: tuple  # int: w, h
    out: tuple  # Expr: w, h
    coords: tuple  # Expr: c, w, h, n
    offsets: tuple  # Expr: w, h
    columns: int = 0


@frozen
class If(Stmt):
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()
    span: Span | None = _span()


@frozen
class Break(Stmt):
    span: Span | None = _span()


@frozen
class Continue(Stmt):
    span: Span | None = _span()


# ---- kernel --------------------------------------------------------------------------------

@frozen
class DimExpr(Node):
    """A tensor param's dimension computed from shape symbols and constants (`K // 2`,
    `cdiv(K, 128)`): `expr` reads the symbols as i32 `Var`s, `text` is as written.  Every
    symbol in it is bound by a plain dimension; a launch checks the array's size against it."""

    text: str
    expr: Expr
    # the kernel argument that holds its value, computed once by the launch (the C launcher, the
    # Python binders, the interpreter's), where schedule/host_dims.py hoists it: a `tl_dim<i>`
    # name no .tl identifier becomes in C; "" where the kernel computes `expr` itself.  Not part of
    # equality: the same dimension however it reaches the kernel (a tensor map's size, a slot of
    # the launch's values, are found by it)
    arg: str = field(default="", compare=False)

    def __str__(self) -> str:
        return self.text


def host_dims(params) -> tuple[DimExpr, ...]:
    """The dimension expressions among `params`' shapes that the launch computes and passes
    (`DimExpr.arg`), one per argument, in the order of their arguments: the kernel's last."""
    seen: dict[str, DimExpr] = {}
    for p in params:
        for d in p.shape:
            if isinstance(d, DimExpr) and d.arg:
                seen.setdefault(d.arg, d)
    return tuple(seen.values())


@frozen
class Param(Node):
    """A kernel parameter: a global tensor (`shape` of ints and shape symbols) or a scalar."""

    name: str
    kind: str  # "tensor" | "scalar"
    dtype: DType
    shape: tuple[Dim, ...] = ()
    span: Span | None = _span()


BUFFER_SCOPES = ("shared", "fragment", "local")


@frozen
class Buffer(Node):
    """A block-level buffer; `layout` and `smem_offset` are the scheduler's, opaque here."""

    name: str
    scope: str
    dtype: DType
    shape: tuple[int, ...]
    layout: Any = None
    smem_offset: int | None = None
    span: Span | None = _span()


@frozen
class Kernel(Node):
    name: str
    params: tuple[Param, ...]
    grid: tuple[Expr, ...]  # 1 to 3 extents, x first
    block_vars: tuple[str, ...]  # one name per grid dimension, i32
    threads: int
    buffers: tuple[Buffer, ...]
    body: tuple[Stmt, ...]
    constants: tuple[tuple[str, Any], ...] = ()  # bound values: int, float, bool or DType
    smem_bytes: int = 0
    min_blocks: int = 0  # blocks per SM to ask ptxas for (__launch_bounds__); 0: codegen/occupancy.py decides
    # grid(dequant_ring=True): a ring that warp specialization refuses may be planned as a
    # dequantizing TMA ring (schedule/dequant_ring.py), as its DEQUANT_RING switch does for all
    dequant_ring: bool = False
    # grid(persistent_tiles=True): the grid made persistent where its ring keeps its deferred
    # gemm, its consumers' copies before the ring the producer's tile loads (schedule/warpspec.py),
    # as its GRID_TILE_LOADS switch does for all
    persistent_tiles: bool = False
    wide_symbols: tuple[str, ...] = ()  # shape symbols that are i64, not i32 (a flat view's element count)
    # shape symbols compiled in as constants, (name, size) in order of first appearance: the
    # params' dims hold the size; a launch checks it (LANGUAGE.md section 1)
    specialized: tuple[tuple[str, int], ...] = ()
    # shape symbols compiled as sizes other than 1 (`SYMBOL == 1` false: CheckedFunction.ones),
    # still passed at run time; a launch checks it
    not_one: tuple[str, ...] = ()
    # of a kernel with several grids, each scheduled into its own Kernel and launched in order:
    # (the @kernel's name, this grid's index, how many grids); () for a kernel of one grid
    grid_of: tuple = ()
    workspaces: tuple[str, ...] = ()  # the tensor params that are alloc_global workspaces (the last ones)
    # the schedule's warp specialization (schedule/warpspec.py): an ir.WarpSpecialization, or None
    warp_spec: Any = None
    notes: tuple[str, ...] = ()  # what the scheduler chose in the author's stead (schedule/fit.py), for --emit ir
    # the grid of the author's persistent walk (schedule/persistent_grid.py): warp specialization
    # may make it persistent with the consumers' copies before the ring as tile loads
    persistent_walk: bool = False
    # the grid's x extent counts rows, and a launch runs at most as many blocks as the GPU holds
    # at once, each walking rows by grid_blocks() (schedule/pipeline_rows.py)
    launch_fill: bool = False
    # the grid's x launched in reverse (x = gridDim.x - 1 - blockIdx.x): its blocks' loops grow
    # with x, so the longest start first (schedule/grid_order.py)
    heavy_first: bool = False
    span: Span | None = _span()

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def buffer(self, name: str) -> Buffer | None:
        return next((b for b in self.buffers if b.name == name), None)

    def symbol_dtype(self, name: str) -> DType:
        """A shape symbol's dtype: i32, or i64 for the counts that can pass 2^31."""
        return I64 if name in self.wide_symbols else I32

    def shape_symbols(self) -> tuple[str, ...]:
        """The shape symbols in order of first appearance among the tensor params."""
        seen: dict[str, None] = {}
        for p in self.params:
            for d in p.shape:
                if isinstance(d, str):
                    seen.setdefault(d)
        return tuple(seen)
