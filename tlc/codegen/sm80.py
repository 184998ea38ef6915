"""The sm_80 generator (the sm_80 and sm_89 targets; sm_90a's base): tile IR -> the body of one CUDA kernel.

Dispatches on the IR statement class; each statement becomes a few lines that mostly call
`tl::` primitives (templates/tl/*.cuh) with the decisions made here: which primitive, with
which layout, vector width and swizzle.  Copies are in `copies.py`, a fragment's exchanges
through shared memory in `exchanges.py`, reductions in
`reductions.py`, loads read before parallel loops in `hoist.py`, shared reads a run at a time
in `shared_runs.py`; this file holds the kernel
frame, control flow, parallel loops, gemm and element access.
"""
from __future__ import annotations

from dataclasses import replace

from .. import device_assert, ir, primitives, print_format, targets
from ..frozen import record
from ..ir.per_thread import per_thread_statements
from ..ir.stepped_loops import constant, stays_in_i32
from ..ir.walk import assigned_scalars
from ..ir.nodes import DimExpr
from ..schedule.layout import (Blocked, MmaAccumulator, Replicated, held_whole, parallel_layout, register_in_loop,
                               uniform_register)
from ..schedule import gather_rows
from ..schedule.one_warpgroup import statement_threads
from ..schedule.operand_layout import mma_register_a_layouts
from ..schedule.smem import SharedLayout
from ..schedule.tensor_cores import tensor_core_op
from ..targets import Target
from .atomic_pairs import AtomicPairGen
from .store_pairs import StorePairGen
from .byte_words import ByteWordGen
from .cexpr import CExprs, CodegenError, cvt
from .cnames import c_bool, c_name, c_string, c_type, comment_text, compute_type, literal
from .copies import CopyGen
from .exchanges import ExchangeGen
from .half_pairs import HalfPairGen
from .hoist import HoistGen
from .occupancy import min_blocks
from .ranges import SignHints, grid_sizes, provably_within, scalar_ranges, size_ranges, stepped_loop_ranges
from .reductions import ReduceGen
from .scans import ScanGen
from .shared_runs import SharedRunGen
from .turns import TurnGen

# one warpgroup's guards test a warp index ptxas sees uniform in the warp (Sm80.threads_below);
# off until the H200 has timed it (bench/queue/C_mla_variants.sh's uniform and unicarry rows)
UNIFORM_GUARDS = False
# a range() loop whose step is not a constant 1 or -1 and whose stop the sizes do not prove keeps
# its i32 counter in range (ir/stepped_loops.stays_in_i32) counts in 64 bits, as the cpu target's
# does, so its last step cannot wrap (a grid-stride loop's bounds read a block index, which no
# launch check sees: runtime/loop_bounds.py); off until the H200 has timed a grid-stride kernel
# with it (bench/queue/R_wide_counter.sh).  In std it changes conv2d's persistent tile loop at its
# config rules alone (sm_80 rule1 C=3,K=7 then spills 84 bytes)
WIDE_STEPPED_COUNTER = False


@record
class FragmentInfo:
    c_layout: str  # the C type of its layout, e.g. tl_layout_acc
    regs: str      # C expression: its register count


class Sm80(CExprs, CopyGen, ExchangeGen, ReduceGen, ScanGen, HoistGen, SharedRunGen, HalfPairGen, ByteWordGen,
           AtomicPairGen, StorePairGen, TurnGen):
    arch = "sm_80"
    primitive_files = primitives.SM80  # templates/tl/*.cuh its kernels inline

    def after_async_copies(self) -> None:
        """A hook after a pipelined loop's copies have landed (sm_90a fences them)."""

    def __init__(self, kernel: ir.Kernel, sources: dict | None = None, line_directives: bool = True,
                 target: Target | None = None):
        self.target = target or targets.get(self.arch)  # its limits and features (tlc.targets)
        self.k = kernel
        self.sources = sources or {}
        self.line_directives = line_directives
        self.params = {p.name: p for p in kernel.params}
        self.buffers = {b.name: b for b in kernel.buffers}
        self.lines: list[str] = []
        self.indent = 1
        self.ranges: dict[str, tuple[int, int]] = {}
        self.scalar_ranges: dict[str, tuple[int, int]] = {}  # ranges.scalar_ranges of the kernel
        self.reg_index: dict[str, str] = {}  # inside a parallel loop: fragment -> its register expression
        self.loop_layout = None
        self.loop_extents: tuple = ()
        self.smem_base: dict[str, str] = {}
        self.in_parallel = False
        self.scratch_bytes = 0
        self.red_stride = 0  # bytes of each of the two scratch arrays of reductions (reductions.py)
        self.layout_types: dict = {}  # layout object -> C alias
        self.preamble: list[str] = []
        self.assert_sites: tuple = ()  # device_assert.sites of the kernel, once it has one
        self.last_line = None
        self.exchanged: dict[str, str] = {}  # fragment -> its shared scratch, inside a parallel loop
        self.hoisted: dict = {}  # inside a parallel loop: a load read before it -> the C that holds it
        self.hoist_names = 0  # hoisted values declared so far (names stay unique in the kernel)
        self.row_hoisted: dict = {}  # inside a parallel loop: a row scalar computed before it -> its C

    # ---- output ------------------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)

    def mark(self, node) -> None:
        """The .tl line above each statement's code: a comment, and a #line directive."""
        span = getattr(node, "span", None)
        if span is None or (span.file, span.line) == self.last_line:
            return
        self.last_line = (span.file, span.line)
        text = self.sources.get(span.file, "").split("\n")
        src = text[span.line - 1].strip() if 0 < span.line <= len(text) else ""
        if src:  # escaped: no .tl text ends the comment, continues it onto the code or adds a line
            self.emit(f"// {span.line}: {comment_text(src[:150])}")
        if self.line_directives:
            self.lines.append(f"#line {span.line} {c_string(span.file)}")

    # ---- the kernel --------------------------------------------------------------------------
    def generate(self) -> dict:
        k = self.k
        for i, v in enumerate(k.block_vars):
            self.ranges[v] = (0, 2**31 - 1)
        self.ranges.update(size_ranges(k))  # the sizes a grid extent is a multiple of: from 1 (below)
        # scalars whose every value has a range (a digit `d = i32(k >> 8 & 255)`): the elements
        # they index need no bounds check
        self.scalar_ranges = scalar_ranges(k.body, self.ranges)
        self.ranges.update(self.scalar_ranges)
        self.sign_hints = SignHints.of(k, self.ranges)
        for b in k.buffers:
            if b.scope == "fragment":
                self.fragment(b.name)
        self.per_thread = per_thread_statements(k.body)
        self.kernel_body(k.body)
        body = self.lines
        self.lines = []
        for i, v in enumerate(k.block_vars):
            if i == 0 and k.heavy_first:  # the longest blocks first (schedule/grid_order.py)
                self.emit(f"const int {c_name(v)} = gridDim.x - 1 - blockIdx.x;  // launched heaviest first")
            else:
                self.emit(f"const int {c_name(v)} = blockIdx.{'xyz'[i]};")
            self.emit(f"(void){c_name(v)};")
        if getattr(self, "uniform_warp", False):  # (threads_below)
            self.emit("const int tl_warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 32, 0);"
                      "  // the thread's warp, uniform in it as ptxas sees it")
        if guarded := grid_sizes(k):  # what size_ranges knows; never taken where the arrays are real
            self.emit(f"if ({' || '.join(f'{c_name(s)} < 1' for s in guarded)}) return;  // no block runs with one 0")
        for b in k.buffers:
            self.declare_buffer(b)
        if self.red_stride:  # the two scratch arrays of reductions (reductions.py: ReduceGen.scratch)
            self.scratch_bytes = max(self.scratch_bytes, self.red_base() - self.k.smem_bytes + 2 * self.red_stride)
            self.emit(f"constexpr int TL_RED_STRIDE = {self.red_stride};")
            self.emit("int tl_red_phase = 0;")
        # assumed_sizes: the shape sizes NVRTC may take as not negative (kernel.cu.j2, under
        # __CUDACC_RTC__): the runtime passes the sizes of real arrays (a C launcher's caller may
        # pass anything, so nvcc's build is left as it was).  nvcc then drops the sign fixups of
        # `//` and `%` by a size and the bounds checks a size's sign decides: flash_decode's
        # combining grid indexes part_o[b, r // SQ, r % SQ] (1,416 -> 1,048 SASS instructions)
        return {"body": self.lines + body, "preamble": self.preamble, "smem_bytes": self.smem_total(),
                "min_blocks": min_blocks(k, k.threads, self.target),
                "assumed_sizes": [c_name(s) for s in k.shape_symbols()]}

    def smem_total(self) -> int:
        return self.k.smem_bytes + self.scratch_bytes

    def declare_buffer(self, b: ir.Buffer) -> None:
        t = c_type(b.dtype)
        name = c_name(b.name)
        if b.scope == "shared":
            self.emit(f"{t}* {name} = reinterpret_cast<{t}*>(tl_smem + {b.smem_offset});")
        elif b.scope == "fragment":
            info = self.fragment(b.name)
            self.emit(f"{t} {name}[{info.regs}];  // fragment {list(b.shape)}: {b.layout}")
        else:
            size = 1
            for d in b.shape:
                size *= d
            self.emit(f"{t} {name}[{size}];")

    # ---- layouts -----------------------------------------------------------------------------
    def c_layout(self, layout) -> str:
        """A C alias for a Python layout object (tl::Blocked / tl::MmaAcc)."""
        if layout in self.layout_types:
            return self.layout_types[layout]
        if isinstance(layout, Replicated):
            base = layout.base
            if len(getattr(base, "shape", ())) not in (1, 2) or len(layout.dropped) != 1:
                raise CodegenError(f"no C layout for {layout}", self.k.span)
            text = f"tl::Kept<{self.c_layout(base)}, {layout.keep}>"
        elif isinstance(layout, MmaAccumulator):
            bands = ", true" if layout.wgmma_bands else ", false, true" if layout.wgmma_columns else ""
            text = f"tl::MmaAcc<{layout.shape[0]}, {layout.shape[1]}, {layout.warps_m}, {layout.warps_n}{bands}>"
        elif isinstance(layout, Blocked):
            shape = layout.shape
            if len(shape) > 2:
                raise CodegenError(f"fragments and parallel loops of rank {len(shape)} are not supported by the "
                                   f"CUDA target yet (rank 1 and 2 are)", self.k.span)
            rows, cols = (1, shape[0]) if len(shape) == 1 else shape
            text = f"tl::Blocked<{rows}, {cols}, {layout.threads}, {layout.vec}>"
        else:
            raise CodegenError(f"no C layout for {layout}", self.k.span)
        # Named per kernel: a file that holds several kernels holds all their aliases.
        alias = f"tl_{c_name(self.k.name)}_layout_{len(self.layout_types)}"
        self.layout_types[layout] = alias
        self.preamble.append(f"using {alias} = {text};")
        return alias

    def fragment(self, name: str) -> FragmentInfo:
        b = self.buffers[name]
        if b.layout is None:
            raise CodegenError(f"the fragment '{name}' has no layout", b.span)
        alias = self.c_layout(b.layout)
        return FragmentInfo(alias, f"{alias}::REGS")

    # ---- statements --------------------------------------------------------------------------
    def block(self, stmts) -> None:
        if getattr(self, "in_consumer_loop", False) and self.consumer_block(stmts):
            return  # (a check, not an override: a frame more per nesting would lower the bound)
        early = self.hoist_early(stmts)
        for run in self.runs(stmts):
            if len(run) >= 2:
                self.copy_batch(run)  # copies.py
            else:
                self.stmt(run[0])
        for x in early:
            self.hoisted.pop(x, None)

    def consumer_block(self, stmts) -> bool:
        """Whether the target emitted `stmts`, a block inside a warp-specialized ring's consumer
        loop, its own way (sm90.py: the body's gemms waited for where needed)."""
        return False

    @staticmethod
    def runs(stmts) -> list:
        """`stmts` in order as runs: the copies of one batch together, every other statement alone."""
        out, i = [], 0
        while i < len(stmts):
            batch = getattr(stmts[i], "batch", 0)
            j = i + 1
            while batch and j < len(stmts) and getattr(stmts[j], "batch", 0) == batch:
                j += 1
            out.append(stmts[i:j])
            i = j
        return out

    def kernel_body(self, stmts) -> None:
        """The kernel's top-level statements (a target with a loop around them overrides this,
        not `block`: a frame more per nesting would lower the bound)."""
        self.block(stmts)

    def stmt(self, s) -> None:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise CodegenError(f"no C for the IR statement {type(s).__name__}", getattr(s, "span", None))
        self.mark(s)
        self.current = s
        owners = self.owner_threads(s)
        if owners < self.k.threads:  # fragments one warpgroup holds (schedule/one_warpgroup.py): its work alone
            self.emit(f"if ({self.threads_below(owners)}) {{  // fragments of threads 0..{owners - 1} alone")
            self.indent += 1
        if not self.stmt_wrapped(s, method):  # (a check, not an override, as in block)
            method(s)
        if owners < self.k.threads:
            self.indent -= 1
            self.emit("}")

    def threads_below(self, n: int) -> str:
        """The C condition of a thread among the block's first `n` (one warpgroup's statements:
        schedule/one_warpgroup.py).  With UNIFORM_GUARDS and whole warps, the thread's warp as
        its lane 0 broadcasts it (`tl_warp`), a value ptxas knows is the same across the warp: the
        guard then never splits a warp, and the shuffles of the statements inside need no
        divergence test (a BRA.DIV ahead of mla_decode's row maxima, with WARPSYNCs that ptxas
        schedules nothing across), where `threadIdx.x < n`, as it sees it, may."""
        if UNIFORM_GUARDS and n % 32 == 0:
            self.uniform_warp = True
            return f"tl_warp < {n // 32}"
        return f"threadIdx.x < {n}"

    def owner_threads(self, s) -> int:
        """The threads that run statement `s`: where it computes on fragments of one warpgroup
        alone (one_warpgroup.py), their holders; else the block's.  A loop that exchanges such
        fragments runs in its own layout's threads, the exchange's writes guarded apart."""
        return statement_threads(s, self.k, self.buffers)

    def stmt_wrapped(self, s, method) -> bool:
        """Whether the target emitted `s` (by calling `method` inside C of its own)."""
        return False

    def once_per_block(self) -> str:
        """Outside parallel loops a store, atomic or print happens once per block; in a loop
        over a replicated fragment, once per element (by its canonical replica); where the thread
        index reaches it (ir/per_thread.py), once per thread."""
        if not self.in_parallel:
            if id(getattr(self, "current", None)) in self.per_thread:
                return ""
            return "if (threadIdx.x == 0) "
        if isinstance(self.loop_layout, Replicated):
            return f"if ({self.c_layout(self.loop_layout)}::canonical(threadIdx.x, tl_r)) "
        return ""

    def stmt_LetScalar(self, s: ir.LetScalar) -> None:
        if s.name in self.row_hoisted:  # computed before the parallel loop, once per row (hoist.py)
            self.emit(f"const {c_type(s.dtype)} {c_name(s.name)} = {self.row_hoisted[s.name]};")
            return
        self.emit(f"{c_type(s.dtype)} {c_name(s.name)} = {self._in(s.value, s.dtype)};")

    def stmt_Assign(self, s: ir.Assign) -> None:
        self.emit(f"{c_name(s.name)} = {self.expr(s.value)};")

    def stmt_Sync(self, s) -> None:
        self.emit("__syncthreads();")

    def stmt_Break(self, s) -> None:
        self.emit("break;")

    def stmt_Continue(self, s) -> None:
        self.emit("continue;")

    def stmt_If(self, s: ir.If) -> None:
        self.emit(f"if ({self.expr(s.cond)}) {{")
        self.nested(s.then)
        if s.orelse:
            self.emit("} else {")
            self.nested(s.orelse)
        self.emit("}")

    def nested(self, stmts) -> None:
        self.indent += 1
        self.block(stmts)
        self.indent -= 1

    def stmt_For(self, s: ir.For) -> None:
        upward = isinstance(s.start, ir.Const) and isinstance(s.step, ir.Const) and s.step.value > 0
        hints = getattr(self, "sign_hints", None)
        if hints is None:
            self.for_loop(s)
            return
        outer = hints.loops.get(s.var)  # the loop's variable from its start up (tl::nonneg's proofs)
        hints.loops[s.var] = (int(s.start.value), None) if upward else (None, None)
        try:
            self.for_loop(s)
        finally:
            if outer is None:
                hints.loops.pop(s.var, None)
            else:
                hints.loops[s.var] = outer

    def for_loop(self, s: ir.For) -> None:
        if s.kind == "pipelined" and s.stages > 1 and self.pipeline(s):
            return
        var = c_name(s.var)
        start, stop, step = self.expr(s.start), self.expr(s.stop), self.expr(s.step)
        # range()'s stop is evaluated once, before the first iteration, as the interpreter and the
        # cpu target do: a body that assigns a variable of the stop does not move it, and a stop
        # computed by a division (cdiv of two sizes) is not computed again each iteration, which
        # nvcc did not hoist (std.data.repeat's two loops: an integer division per 16-byte store)
        hoisted = not isinstance(s.stop, ir.Const) and (
            not isinstance(s.stop, ir.Var) or s.stop.name in assigned_scalars(s.body))
        if hoisted:
            self.emit(f"{{ const auto tl_stop_{var} = {stop};")
            stop = f"tl_stop_{var}"
        positive = isinstance(s.step, ir.Const) and s.step.value > 0
        negative = isinstance(s.step, ir.Const) and s.step.value < 0

        def test(counter: str) -> str:
            return f"{counter} < {stop}" if positive else f"{counter} > {stop}" if negative else \
                f"({step} > 0 ? {counter} < {stop} : {counter} > {stop})"
        if isinstance(s.start, ir.Const) and isinstance(s.stop, ir.Const) and positive:
            self.ranges[s.var] = (int(s.start.value), int(s.stop.value) - 1)
        if s.kind == "unroll":
            self.emit("#pragma unroll")
        if WIDE_STEPPED_COUNTER and s.kind == "serial" and constant(s.step) not in (1, -1) and \
                not stays_in_i32(s, {**self._stepped_known(), **self.ranges}):
            # the cpu target's 64-bit counter (codegen/cpp/emit.py), the i32 variable read from it:
            # an i32 counter's last step past 2**31 is undefined, where the loop ends in Python
            counter = f"tl_k_{var}"
            self.emit(f"for (long long {counter} = {start}; {test(counter)}; {counter} += {step}) {{")
            self.emit(f"  const int {var} = static_cast<int>({counter});")
        else:
            self.emit(f"for (int {var} = {start}; {test(var)}; {var} += {step}) {{")
        self.nested(s.body)
        self.emit("} }" if hoisted else "}")
        self.unbind_range(s.var)

    def _stepped_known(self) -> dict:
        """The ranges the cpu target proves its stepped loops with (codegen/cpp/emit.py
        _stays_in_i32): every size's, and the scalars' computed from them."""
        if getattr(self, "_stepped_sizes", None) is None:
            self._stepped_sizes = stepped_loop_ranges(self.k)
        return self._stepped_sizes

    def stmt_Print(self, s: ir.Print) -> None:
        """Each value passed as the C type its conversion is written for (tlc.print_format)."""
        args = []
        for a in s.args:
            value = self.expr(a)
            if a.dtype.is_float:  # 16- and 8-bit floats go through float
                value = cvt(value, a.dtype, compute_type(a.dtype))
            args.append(f"static_cast<{print_format.c_cast(a.dtype)}>({value})")
        fmt = print_format.c_format(s.fmt, tuple(a.dtype for a in s.args))
        fmt = c_string(print_format.as_line(fmt))
        self.emit(f'{self.once_per_block()}printf({fmt}{"".join(", " + a for a in args)});')

    def stmt_Assert(self, s: ir.Assert) -> None:
        """The failure record of tl/assert.cuh, its site an index of device_assert.sites."""
        if not self.assert_sites:
            self.assert_sites = device_assert.sites(self.k.body)
            self.preamble += device_assert.record_lines(c_name(self.k.name))
        args = []
        for a in s.args:
            value = self.expr(a)
            wide = "double" if a.dtype.is_float else "unsigned long long" if a.dtype.kind in ("uint", "bool") else "long long"
            if a.dtype.is_float:
                value = cvt(value, a.dtype, compute_type(a.dtype))
            args.append(f"static_cast<{wide}>({value})")
        site = self.assert_sites.index(device_assert.site_of(s))
        self.emit(f"{self.once_per_block()}if (!({self.expr(s.cond)})) "
                  f"tl::assert_fail({device_assert.RECORD_SYMBOL}, {site}u{''.join(', ' + a for a in args)});")

    # ---- element access ----------------------------------------------------------------------
    def tensor_dims(self, name: str) -> list:
        p = self.params.get(name)
        if p is not None:
            return list(p.shape)
        return list(self.buffers[name].shape)

    def unbind_range(self, var: str) -> None:
        """A loop's variable goes out of scope: its name is the scalar's again, if one has it."""
        self.ranges.pop(var, None)
        if var in self.scalar_ranges:
            self.ranges[var] = self.scalar_ranges[var]

    def dim_text(self, d) -> str:
        if isinstance(d, DimExpr):  # K // 2 of shape symbols: the launch checked the array against it
            return d.arg or f"({self.expr(d.expr)})"  # (or computed and passed it: schedule/host_dims.py)
        return str(d) if isinstance(d, int) else c_name(d)

    def global_offset(self, name: str, indices) -> str:
        dims = self.tensor_dims(name)
        text = f"static_cast<long long>({self.expr(indices[0])})"
        for i, d in zip(indices[1:], dims[1:]):
            text = f"({text} * {self.dim_text(d)} + {self.expr(i)})"
        return text

    def bounds(self, name: str, indices) -> str | None:
        dims = self.tensor_dims(name)
        if provably_within(indices, dims, self.ranges):
            return None
        parts = []
        for i, d in zip(indices, dims):
            x = self.expr(i)
            parts.append(f"{x} >= 0 && {x} < {self.dim_text(d)}")
        return " && ".join(parts)

    def element(self, name: str, indices, span) -> str:
        """The C lvalue of one element of a tensor parameter or buffer."""
        if name in self.params:
            return f"{c_name(name)}[{self.global_offset(name, indices)}]"
        b = self.buffers[name]
        if b.scope == "fragment" and name in self.exchanged:
            flat = self.expr(indices[0])
            for i, d in zip(indices[1:], b.shape[1:]):
                flat = f"({flat} * {d} + {self.expr(i)})"
            return f"{self.exchanged[name]}[{flat}]"
        if b.scope == "fragment":
            return f"{c_name(name)}[{self.register(name, indices, span)}]"
        if b.scope == "shared":
            return f"{self.smem_pointer(name)}[{self.smem_index(b, [self.expr(i) for i in indices])}]"
        flat = self.expr(indices[0])
        for i, d in zip(indices[1:], b.shape[1:]):
            flat = f"({flat} * {d} + {self.expr(i)})"
        return f"{c_name(name)}[{flat}]"

    def smem_pointer(self, name: str) -> str:
        return self.smem_base.get(name, c_name(name))

    def smem_index(self, b: ir.Buffer, idx: list[str]) -> str:
        """The element offset of `b[idx]` in its shared layout (tl::smem_index), viewing the
        buffer as 2-D: its last dimension the columns, the others flattened into rows."""
        lay = b.layout
        if len(b.shape) == 1:
            rows, cols, r, c = 1, b.shape[0], "0", idx[0]
        else:
            r = idx[0]
            for i, d in zip(idx[1:-1], b.shape[1:-1]):
                r = f"({r} * {d} + {i})"
            rows, cols, c = _prod(b.shape[:-1]), b.shape[-1], idx[-1]
        return f"tl::smem_index<{c_type(b.dtype)}, {rows}, {cols}, {lay.pad}, {lay.swizzle_bytes}>({r}, {c})"

    def register(self, name: str, indices, span) -> str:
        """The register of the fragment element `name[indices]`: inside a parallel loop, as
        the loop's layout relates to the fragment's (schedule.layout.register_in_loop); outside,
        the one every thread holds it in (a replicated fragment read as a scalar)."""
        b = self.buffers[name]
        if not self.in_parallel:
            index = tuple(i.value if isinstance(i, ir.Const) else None for i in indices)
            if None in index and held_whole(b.layout):  # element i in register i (guarded: indexed_fragment)
                return self.expr(indices[0])
            if None in index and b.shape == (1,):  # the one element, wherever every thread holds it
                index = (0,)
            reg = None if None in index else uniform_register(b.layout, index, self.k.threads)
            if reg is None:
                raise CodegenError(f"the fragment '{name}' is indexed outside a parallel loop", span)
            return str(reg)
        names = [i.name if isinstance(i, ir.Var) else None for i in indices]
        loop_vars = list(self.loop_vars)
        how = register_in_loop(b.layout, indices, self.loop_layout, loop_vars, self.loop_extents)
        if how == "own":
            return "tl_r"
        if how == "scalar":  # one element every thread holds
            return "0"
        if how == "uniform":  # an element every thread holds in one register
            return str(uniform_register(b.layout, tuple(i.value for i in indices), self.k.threads))
        if how == "whole":  # a fragment every thread holds whole: element i in register i
            return self.expr(indices[0])
        if how == "slot":  # the replica in this thread's slot of the loop's register (as the loop's own would be)
            return f"{self.c_layout(Replicated(self.loop_layout, b.layout.dropped))}::slot(tl_r)"
        raise CodegenError(
            f"the fragment '{name}' is indexed as {name}[{', '.join(str(n) for n in names)}] in a parallel loop over "
            f"({', '.join(loop_vars)}) whose threads hold other elements; an exchange through shared memory is "
            "not generated yet: index it by the loop's own variables", span)

    def indexed_fragment(self, b: ir.Buffer, indices) -> bool:
        """Whether the register of `b[indices]` is computed from a run-time index (a fragment
        held whole, or of one element, outside a parallel loop or in one over another layout):
        then an index outside the fragment reads 0 and writes nothing, as on the interpreter."""
        if all(isinstance(i, ir.Const) for i in indices):
            return False
        if not self.in_parallel:
            return True
        return register_in_loop(b.layout, indices, self.loop_layout, list(self.loop_vars), self.loop_extents) == "whole"

    def load(self, e: ir.Load) -> str:
        if e in self.hoisted:
            return self.hoisted[e]
        zero = literal(0, e.dtype)
        lvalue = self.element(e.name, e.indices, e.span)
        b = self.buffers.get(e.name)
        if b is not None and b.scope == "fragment" and e.name not in self.exchanged:
            check = self.bounds(e.name, e.indices) if self.indexed_fragment(b, e.indices) else None
            return lvalue if check is None else f"(({check}) ? {lvalue} : {zero})"
        check = self.bounds(e.name, e.indices)
        return lvalue if check is None else f"(({check}) ? {lvalue} : {zero})"

    def stmt_Store(self, s: ir.Store) -> None:
        if self.run_writes and s in self.run_writes:  # into a run's registers (shared_runs.py)
            self.emit(f"{self.run_writes[s]}[tl_e] = {self.expr(s.value)};")
            return
        b = self.buffers.get(s.name)
        lvalue = self.element(s.name, s.indices, s.span)
        value = self.expr(s.value)
        if b is not None and b.scope == "fragment" and s.name not in self.exchanged:
            check = self.bounds(s.name, s.indices) if self.indexed_fragment(b, s.indices) else None
            self.emit(f"{f'if ({check}) ' if check else ''}{lvalue} = {value};")
            return
        check = self.bounds(s.name, s.indices)
        guard = "" if b is not None and b.scope in ("local", "fragment") else self.once_per_block()
        cond = f"if ({check}) " if check else ""
        self.emit(f"{guard}{cond}{lvalue} = {value};")

    def block_barrier(self) -> str:
        """The barrier of every thread that runs the statement being emitted (a warp-specialized
        kernel's consumers meet at one of their own)."""
        return "__syncthreads();"

    def stmt_Atomic(self, s: ir.Atomic) -> None:
        if s.kind in ("turn_wait", "turn_done"):  # atomic_add(..., order=): once per block, around its updates
            self.turn_stmt(s)  # turns.py
            return
        dt = s.value.dtype
        target = f"&{self.element(s.name, s.indices, s.span)}"
        value = self.expr(s.value)
        if s.grouped:  # schedule/atomic_groups.py: a warp's lanes at one address add once
            call = f"tl::atomic_add_grouped({target}, {value})"
        elif s.kind == "add" and dt.name == "i64":
            # CUDA has no atomicAdd of long long; two's complement adds alike unsigned
            call = (f"atomicAdd(reinterpret_cast<unsigned long long*>({target}), "
                    f"static_cast<unsigned long long>({value}))")
        elif s.kind == "add" and dt.name in ("f32", "f64", "f16", "bf16", "i32", "u32", "u64"):
            call = f"atomicAdd({target}, {value})"
        elif dt.name == "f32":
            call = f"tl::atomic_{s.kind}_f32({target}, {value})"
        elif dt.is_int and dt.bits in (32, 64):
            call = f"atomic{s.kind.capitalize()}({target}, {value})"
        else:
            raise CodegenError(f"atomic_{s.kind} on {dt} is not supported by the CUDA target", s.span)
        check = self.bounds(s.name, s.indices)
        cond = f"if ({check}) " if check else ""
        self.emit(f"{self.once_per_block()}{cond}{call};")

    def stmt_Fill(self, s: ir.Fill) -> None:
        b = self.buffers[s.buffer]
        value = self._in(s.value, b.dtype)
        name = c_name(b.name)
        if b.scope == "fragment":
            info = self.fragment(b.name)
            self.emit("#pragma unroll")
            self.emit(f"for (int tl_r = 0; tl_r < {info.regs}; ++tl_r) {name}[tl_r] = {value};")
        elif b.scope == "shared":
            size = _prod(b.shape)
            cols = b.shape[-1]
            idx = self.smem_index(b, [f"(tl_i / {cols})"] * (len(b.shape) - 1) + [f"(tl_i % {cols})"]) \
                if len(b.shape) > 1 else self.smem_index(b, ["tl_i"])
            if len(b.shape) > 2:
                raise CodegenError("fill() of a shared buffer of rank > 2 is not supported by the CUDA target yet", s.span)
            self.emit(f"for (int tl_i = threadIdx.x; tl_i < {size}; tl_i += {self.k.threads}) "
                      f"{self.smem_pointer(b.name)}[{idx}] = {value};")
        else:
            self.emit(f"for (int tl_i = 0; tl_i < {_prod(b.shape)}; ++tl_i) {name}[tl_i] = {value};")

    # ---- parallel loops ----------------------------------------------------------------------
    def stmt_Parallel(self, p: ir.Parallel) -> None:
        scatter = gather_rows.row_scatter(p, self.params, self.buffers)
        if scatter is not None:  # a shared tile's rows to rows of a tensor, in 16-byte vectors
            self.scatter_rows(scatter)
            return
        layout = parallel_layout(p, self.k)
        exchange = dict(p.exchange) if p.layout is not None else self.exchange_plan(p, layout)
        if exchange:
            self.exchange_in(exchange, p)
        self.parallel_loop(p, layout)
        if exchange:
            self.exchange_out(exchange, p)

    def parallel_loop(self, p: ir.Parallel, layout) -> None:
        alias = self.c_layout(layout)
        self.emit(f"// parallel ({', '.join(p.vars)}) over {list(p.extents)}: {layout}")
        if len(p.vars) > 2:
            raise CodegenError("parallel loops over more than 2 dimensions are not supported by the CUDA target yet",
                               p.span)
        for v, n in zip(p.vars, p.extents):
            self.ranges[v] = (0, n - 1)
        hoisted = self.hoist_loads(p, layout, alias)
        row_lets = self.hoist_row_lets(p, layout, alias)
        runs = self.shared_run_reads(p, layout)
        writes = self.shared_run_writes(p, layout)
        saved = (self.in_parallel, self.loop_layout, getattr(self, "loop_vars", ()), self.loop_extents)
        self.in_parallel, self.loop_layout, self.loop_vars, self.loop_extents = True, layout, p.vars, p.extents
        if runs or writes or p.stores:
            self.run_loop(p, layout, alias, runs, writes)  # shared_runs.py
        elif self.pair_loop(p, layout, alias) or self.cast_pair_loop(p, layout, alias):  # half_pairs.py
            pass
        elif not hoisted and not row_lets and self.atomic_pair_loop(p, layout, alias):  # atomic_pairs.py
            pass
        elif not hoisted and not row_lets and self.store_pair_loop(p, layout, alias):  # store_pairs.py
            pass
        elif not hoisted and not row_lets and self.word_loop(p, layout, alias):  # byte_words.py
            pass
        else:
            self.emit("#pragma unroll")
            self.emit(f"for (int tl_r = 0; tl_r < {alias}::REGS; ++tl_r) {{")
            self.indent += 1
            self.declare_loop_vars(p, alias, "tl_r", void=False)
            self.emit(f"if (!{alias}::valid(threadIdx.x, tl_r)) continue;")
            self.block(p.body)
            self.indent -= 1
            self.emit("}")
        for v in p.vars:
            self.unbind_range(v)
        for x in hoisted:
            self.hoisted.pop(x, None)
        for name in row_lets:
            self.row_hoisted.pop(name, None)
        self.in_parallel, self.loop_layout, self.loop_vars, self.loop_extents = saved

    # ---- gemm --------------------------------------------------------------------------------
    def stmt_Gemm(self, g: ir.Gemm) -> None:
        a, b, c = self.buffers[g.a], self.buffers[g.b], self.buffers[g.c]
        if b.scope != "shared":
            raise CodegenError("gemm with a fragment B operand is not supported by the CUDA target yet; "
                               "copy the operand into shared memory", g.span)
        if a.scope == "fragment":
            self.gemm_fragment_a(g)
            return
        self.gemm_shared(g, a)

    def gemm_fragment_a(self, g: ir.Gemm) -> None:
        """A fragment A in the register layout mma reads (schedule/operand_layout.py) goes to the
        tensor cores from the registers; in any other layout, through shared memory."""
        a, b, c = self.buffers[g.a], self.buffers[g.b], self.buffers[g.c]
        if mma_register_a_layouts(g, self.buffers, self.k.threads) == (a.layout, c.layout):
            m, k = a.shape
            lay_b = b.layout
            self.emit(f"tl::gemm_mma_sm80_rs<{c_type(a.dtype)}, {m}, {c.shape[1]}, {k}, {self.k.threads // 32}, "
                      f"{c_bool(g.trans_b)}, {b.shape[0]}, {b.shape[1]}, {lay_b.pad}, {lay_b.swizzle_bytes}>"
                      f"({c_name(g.a)}, {self.smem_pointer(g.b)}, {c_name(g.c)});")
            return
        self.gemm_staged_a(g)

    def gemm_staged_a(self, g: ir.Gemm) -> None:
        """The fallback for a fragment A in another layout: stored to a scratch tile after the
        planned shared memory (unpadded, unswizzled), then the shared-memory gemm."""
        a = self.buffers[g.a]
        t = c_type(a.dtype)
        ptr = f"reinterpret_cast<{t}*>(tl_smem + {self.k.smem_bytes})"
        info = self.fragment(g.a)
        self.emit(f"// {g.a} is not in the layout mma reads A from registers in: staged through shared memory")
        self.emit("__syncthreads();  // the scratch tile may still be read")
        self.emit(f"tl::copy_f2s<{info.c_layout}, {t}, {t}, {a.shape[0]}, {a.shape[1]}, 0, 0>({ptr}, {c_name(g.a)});")
        self.emit("__syncthreads();")
        self.scratch_bytes = max(self.scratch_bytes, -(-(_prod(a.shape) * a.dtype.itemsize) // 128) * 128)
        self.smem_base[g.a] = ptr
        try:
            self.gemm_shared(g, replace(a, scope="shared", layout=SharedLayout()))
        finally:
            del self.smem_base[g.a]
        self.emit("__syncthreads();  // before the scratch is written again (reductions, exchanges)")

    def gemm_shared(self, g: ir.Gemm, a: ir.Buffer) -> None:
        """The gemm with A (given: it may be a staged fragment) and B in shared memory."""
        b, c = self.buffers[g.b], self.buffers[g.c]
        m, k = (a.shape[1], a.shape[0]) if g.trans_a else a.shape
        n = b.shape[0] if g.trans_b else b.shape[1]
        lay_a, lay_b = a.layout, b.layout
        operand_args = (f"{a.shape[0]}, {a.shape[1]}, {lay_a.pad}, {lay_a.swizzle_bytes}, "
                        f"{b.shape[0]}, {b.shape[1]}, {lay_b.pad}, {lay_b.swizzle_bytes}")
        pa, pb = self.smem_pointer(g.a), self.smem_pointer(g.b)
        acc = c_name(g.c)
        tf32 = g.precision == "tf32"
        if self.mma_ok(g, a, b, c, k):
            lay = c.layout
            # B's type and the flags only where they differ from the defaults (A's type, off):
            # f8 operands take the target's f8 mma where it has one (sm_89), else go through f16.
            f8_mma = self.target.f8_mma and tensor_core_op(a.dtype, b.dtype, c.dtype, g.precision).is_f8
            extra = f", {c_type(b.dtype)}, {c_bool(tf32)}" if tf32 or f8_mma or b.dtype != a.dtype else ""
            extra += ", true" if f8_mma else ""
            self.emit(f"tl::gemm_mma_sm80<{c_type(a.dtype)}, {m}, {n}, {k}, {lay.warps_m}, {lay.warps_n}, "
                      f"{c_bool(g.trans_a)}, {c_bool(g.trans_b)}, {operand_args}{extra}>({pa}, {pb}, {acc});")
            return
        if isinstance(c.layout, Replicated):
            raise CodegenError(f"the gemm accumulator '{g.c}' has a replicated layout", g.span)
        info = self.fragment(g.c)
        self.emit(f"tl::gemm_simt<{info.c_layout}, {c_type(a.dtype)}, {c_type(b.dtype)}, {c_type(c.dtype)}, {k}, "
                  f"{c_bool(g.trans_a)}, {c_bool(g.trans_b)}, {operand_args}{', true' if tf32 else ''}>({pa}, {pb}, {acc});")

    def mma_ok(self, g: ir.Gemm, a: ir.Buffer, b: ir.Buffer, c: ir.Buffer, k: int) -> bool:
        """mma.sync takes what `tensor_cores.tensor_core_op` allows (on sm_80: f16/bf16, f8
        through f16, s8, f32 in tf32 precision), an accumulator in the mma layout, whole
        instructions of K, operands other than 16-bit ones K-major, and operand rows that
        ldmatrix can address (16-byte aligned)."""
        op = tensor_core_op(a.dtype, b.dtype, c.dtype, g.precision)
        if op is None or (op.acc_ptx == "s32" and (op.a_ptx, op.b_ptx) != ("s8", "s8")):
            return False
        if op.k_major_only and (g.trans_a or not g.trans_b):
            return False
        if not isinstance(c.layout, MmaAccumulator) or c.layout.wgmma_bands or c.layout.wgmma_columns or k % op.k:
            return False
        for buf in (a, b):
            row_bytes = (buf.shape[1] + buf.layout.pad) * buf.dtype.itemsize
            if row_bytes % 16:
                return False
        return True


def _prod(shape) -> int:
    out = 1
    for d in shape:
        out *= d
    return out
