"""The statements of a scheduled kernel as the C++ of one block (the cpu target).

Owns the decisions: a block runs as one call, its statements in order; a `Parallel` is a nest
of loops, its innermost marked free of loop-carried dependences (its indices are the GPU's
threads, independent by the language's rules), so the compiler vectorizes it; every buffer is
a flat array in the block's scratch, a local buffer that a parallel loop touches a private copy
per index (as the interpreter lifts it); element loads and stores check their bounds unless
the shapes prove them (out of range reads 0, writes nothing, as LANGUAGE.md says); whole-tile
operations call the header's templates (templates/cpp/tl_cpu.h) with the shapes and
accumulator types decided here, the interpreter's (tlc/interp/tiles.py).  A construct this
target does not generate raises `Unsupported`, which the caller turns into E345.
"""
from __future__ import annotations

import math
from dataclasses import replace

from ... import ir
from ...dtypes import DType
from ..cexpr import CExprs, cvt
from ..cnames import c_bool, c_name, c_type, compute_type, literal
from ..ranges import provably_within, stepped_loop_ranges
from ...ir.stepped_loops import constant, stays_in_i32


class Unsupported(Exception):
    """A construct the cpu target does not generate yet; `what` completes "the cpu target
    does not generate ... yet"."""

    def __init__(self, what: str, span=None):
        super().__init__(what)
        self.what, self.span = what, span


_REDUCE_KIND = {"sum": 0, "max": 1, "min": 2, "absmax": 3}
WHILE_LIMIT = 1 << 20  # the interpreter's (interp/machine.py): a while loop that runs longer stops the kernel
_ATOMIC_OP = {"add": 0, "max": 1, "min": 2}
_SCAN_KIND = {"sum": 0, "prod": 1, "max": 2, "min": 3}
# f32 math whose tl_cpu.h form is as precise as libm's and, being no call, vectorizes in a loop
_VECTOR_F32 = {"exp": "tl::fast_exp", "exp2": "tl::fast_exp2", "log": "tl::fast_log", "log2": "tl::fast_log2",
               "tanh": "tl::fast_tanh"}


def _constant_step(s: ir.For) -> bool:
    return isinstance(s.step, ir.Const) and s.step.value != 0


def accumulator(dt: DType) -> str:
    """The C type gemm and reduce_sum accumulate `dt` in (interp.numerics.accumulate_dtype)."""
    if dt.is_float:
        return "double" if dt.bits == 64 else "float"
    return "long long" if dt.bits > 16 else "int"


def extremum_type(dt: DType) -> str:
    """The C type max, min and absmax reduce `dt` in: f32 for narrower floats, else its own."""
    return "float" if dt.is_float and dt.bits < 32 else c_type(dt)


class BlockEmitter(CExprs):
    native_16 = False  # C++ has no __hadd: 16-bit floats compute through float (cexpr.py)

    def __init__(self, kernel: ir.Kernel):
        self.k = kernel
        self.lines: list[str] = []
        self.depth = 1
        self.known: dict[str, tuple[int, int]] = {}  # integer ranges of loop indices
        self._sizes: dict | None = None  # integer ranges of the sizes and the scalars of them (_stays_in_i32)
        self.renamed: dict[str, str] = {}  # a local buffer's private copy inside a parallel loop
        self.scopes: list[set] = [set()]
        self.stops: list[tuple] = []  # the block returns k where the k-th (from 1) stopped it: (why, the loop)
        self.assert_sites: tuple = ()  # device_assert.sites of the kernel, once it has an assert
        self.lanes: list[tuple[str, int]] = []  # the enclosing parallel loops' variables and extents
        self.counter = 0
        self.constants = {n: v for n, v in kernel.constants if not isinstance(v, DType)}
        self.buffers = {b.name: b for b in kernel.buffers}
        self.params = {p.name: p for p in kernel.params}

    # ---- output -------------------------------------------------------------------------------

    def out(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"tl_{stem}{self.counter}"

    def emit(self, body) -> str:
        self.block(body)
        return "\n".join(self.lines)

    def block(self, body) -> None:
        for s in body:
            method = getattr(self, "s_" + type(s).__name__, None)
            if method is None:
                raise Unsupported(f"the statement {type(s).__name__}", getattr(s, "span", None))
            method(s)

    def nested(self, body) -> None:
        self.depth += 1
        self.scopes.append(set())
        self.block(body)
        self.scopes.pop()
        self.depth -= 1

    def declared(self, name: str) -> bool:
        return any(name in s for s in self.scopes)

    # ---- arrays -------------------------------------------------------------------------------

    def dims(self, name: str) -> list:
        """A tensor's or buffer's dimensions: ints, or C expressions of the shape symbols."""
        if name in self.buffers:
            return list(self.buffers[name].shape)
        out = []
        for d in self.params[name].shape:
            # a dimension expression: the argument the launch computed (schedule/host_dims.py), or computed here
            out.append(d if isinstance(d, int) else c_name(d) if isinstance(d, str) else d.arg or self.expr(d.expr))
        return out

    def array(self, name: str) -> str:
        return self.renamed.get(name) or c_name(name)

    def dtype(self, name: str) -> DType:
        return self.buffers[name].dtype if name in self.buffers else self.params[name].dtype

    def linear(self, indices: list[str], dims: list) -> str:
        """The row-major element offset (64-bit) of `indices` in an array of `dims`."""
        text = f"static_cast<long long>({indices[0]})"
        for i, d in zip(indices[1:], dims[1:]):
            text = f"({text} * {d} + {i})"
        return text

    def inside(self, indices: list[str], dims: list) -> str:
        return " && ".join(f"({i}) >= 0 && ({i}) < {d}" for i, d in zip(indices, dims)) or "true"

    def element(self, name: str, index_exprs) -> tuple[str, str | None]:
        """(the element's C lvalue, its bounds test or None where the shapes prove it)."""
        dims = self.dims(name)
        idx = [self.expr(i) for i in index_exprs]
        at = f"{self.array(name)}[{self.linear(idx, dims)}]"
        if provably_within(index_exprs, dims, self.known):
            return at, None
        return at, self.inside(idx, dims)

    # ---- expressions --------------------------------------------------------------------------

    def expr_Var(self, e: ir.Var) -> str:
        if e.name in self.constants and not self.declared(e.name):
            return literal(self.constants[e.name], e.dtype)
        return c_name(e.name)

    def expr_Call(self, e: ir.Call) -> str:
        if e.fn == "thread_index":
            raise Unsupported("thread_index() (a block runs as one CPU thread, its parallel loops as loops)", e.span)
        if e.fn == "grid_blocks":  # schedule/pipeline_rows.py leaves host targets' kernels as written
            raise Unsupported("grid_blocks() (a kernel scheduled for a GPU's persistent launch)", e.span)
        if e.fn in _VECTOR_F32 and compute_type(e.dtype).name == "f32":
            return cvt(f"{_VECTOR_F32[e.fn]}({self._in(e.args[0], compute_type(e.dtype))})", compute_type(e.dtype), e.dtype)
        return super().expr_Call(e)

    def load(self, e: ir.Load) -> str:
        at, test = self.element(e.name, e.indices)
        if test is None:
            return at
        return f"(({test}) ? {at} : static_cast<{c_type(self.dtype(e.name))}>(0))"

    # ---- statements ---------------------------------------------------------------------------

    def s_Sync(self, s: ir.Sync) -> None:
        pass  # a block's statements run in order

    def s_LetScalar(self, s: ir.LetScalar) -> None:
        self.out(f"{c_type(s.dtype)} {c_name(s.name)} = {self._in(s.value, s.dtype)};")
        self.scopes[-1].add(s.name)

    def s_Assign(self, s: ir.Assign) -> None:
        self.out(f"{c_name(s.name)} = {self.expr(s.value)};")

    def s_Store(self, s: ir.Store) -> None:
        at, test = self.element(s.name, s.indices)
        value = self._in(s.value, self.dtype(s.name))
        self.out(f"{at} = {value};" if test is None else f"if ({test}) {at} = {value};")

    def s_Fill(self, s: ir.Fill) -> None:
        b = self.buffers[s.buffer]
        v = self.fresh("v")
        self.out(f"{{ const {c_type(b.dtype)} {v} = {self._in(s.value, b.dtype)};")
        self.out(f"  for (int tl_i = 0; tl_i < {math.prod(b.shape)}; ++tl_i) {self.array(b.name)}[tl_i] = {v}; }}")

    def s_If(self, s: ir.If) -> None:
        self.out(f"if ({self.expr(s.cond)}) {{")
        self.nested(s.then)
        if s.orelse:
            self.out("} else {")
            self.nested(s.orelse)
        self.out("}")

    def s_Break(self, s: ir.Break) -> None:
        self.out("break;")

    def s_Continue(self, s: ir.Continue) -> None:
        self.out("continue;")

    def s_For(self, s: ir.For) -> None:
        t = c_type(s.start.dtype)
        stop = self.fresh("stop")
        var = c_name(s.var)
        self.out(f"{{ const {t} {stop} = {self._in(s.stop, s.start.dtype)};")
        # a stepped loop counts in 64 bits, its i32 variable read from that counter: the last step
        # of an i32 counter near 2**31 wrapped (-fwrapv) and the loop never ended, where the
        # interpreter's range ends (bounds a launch knows are refused there: runtime/loop_bounds.py)
        stepped = s.kind != "while" and constant(s.step) not in (1, -1) and not self._stays_in_i32(s)
        counter = self.fresh("k") if stepped else var
        if _constant_step(s):
            step = self._in(s.step, s.start.dtype)
            test = f"{counter} {'<' if s.step.value > 0 else '>'} {stop}"
        else:  # its sign chosen at run time; 0 stops the kernel with the interpreter's error
            step = self.fresh("step")
            self.out(f"const {t} {step} = {self._in(s.step, s.start.dtype)};")
            self.stops.append(("step 0", s))
            self.out(f"if ({step} == 0) return {len(self.stops)};")
            test = f"({step} > 0 ? {counter} < {stop} : {counter} > {stop})"
        if stepped:
            self.out(f"for (long long {counter} = {self.expr(s.start)}; {test}; {counter} += {step}) {{")
            self.out(f"  const {t} {var} = static_cast<{t}>({counter});")
        else:
            self.out(f"for ({t} {var} = {self.expr(s.start)}; {test}; {var} += {step}) {{")
        saved = self.known.get(s.var)
        lo, hi = (s.start, s.stop) if not _constant_step(s) or s.step.value > 0 else (s.stop, s.start)
        if _constant_step(s) and isinstance(lo, ir.Const) and isinstance(hi, ir.Const):
            self.known[s.var] = (int(lo.value), int(hi.value) - 1) if s.step.value > 0 else (int(lo.value) + 1, int(hi.value))
        else:
            self.known.pop(s.var, None)
        self.scopes[-1].add(s.var)
        if s.kind == "while":  # stopped where the interpreter stops it: the block returns the loop's number
            self.stops.append(("while", s))
            self.out(f"  if ({var} == {WHILE_LIMIT}) return {len(self.stops)};")
        self.nested(s.body)
        if saved is not None:
            self.known[s.var] = saved
        self.out("} }")

    def _stays_in_i32(self, s: ir.For) -> bool:
        """`stepped_loops.stays_in_i32` at the sizes' ranges, the scalars' computed from them
        and the enclosing loops' variables'."""
        if self._sizes is None:
            self._sizes = stepped_loop_ranges(self.k)
        return stays_in_i32(s, {**self._sizes, **self.known})

    def s_Parallel(self, s: ir.Parallel) -> None:
        self.out("{")
        for depth, (v, n) in enumerate(zip(s.vars, s.extents)):
            if depth == len(s.vars) - 1:
                self.out("#pragma omp simd" if self._simd_ok(s.body) else "#pragma GCC ivdep")
            self.out(f"for (int {c_name(v)} = 0; {c_name(v)} < {n}; ++{c_name(v)}) {{")
            self.known[v] = (0, n - 1)
            self.scopes[-1].add(v)
            self.lanes.append((v, n))
        self.depth += 1
        saved = dict(self.renamed)
        for name in sorted(self._locals_in(s)):  # a private copy per index, as the interpreter's
            b = self.buffers[name]
            private = self.fresh("p")
            self.out(f"{c_type(b.dtype)} {private}[{math.prod(b.shape)}];")
            self.out(f"std::memcpy({private}, {self.array(name)}, sizeof({private}));")
            self.renamed[name] = private
        self.depth -= 1
        self.nested(s.body)
        self.renamed = saved
        for v in s.vars:
            self.known.pop(v, None)
        del self.lanes[len(self.lanes) - len(s.vars):]
        self.out("}" * len(s.vars) + " }")
        self.nested(s.stores)  # copies folded into the loop (none on this target) mean copies after it

    @staticmethod
    def _simd_ok(body, in_loop: bool = False) -> bool:
        """Whether a parallel loop's innermost loop may be an OpenMP simd loop, which g++
        vectorizes where `ivdep` alone leaves the selects of inlined calls as branches: a body
        that cannot leave it (no device_assert, while loop or loop of a step known at run time,
        which return from the block; no break of its own) and takes no atomic (OpenMP's inside
        a simd loop is refused) and no parallel loop (the language nests none; a pass that did
        would nest simd loops)."""
        for x in body:
            if isinstance(x, (ir.Assert, ir.Atomic)) or (isinstance(x, ir.Break) and not in_loop):
                return False
            if isinstance(x, ir.For) and (x.kind == "while" or not _constant_step(x)
                                          or not BlockEmitter._simd_ok(x.body, True)):
                return False
            if isinstance(x, ir.If) and not (BlockEmitter._simd_ok(x.then, in_loop)
                                             and BlockEmitter._simd_ok(x.orelse, in_loop)):
                return False
            if isinstance(x, ir.Parallel):  # its own simd loop would be nested in this one
                return False
        return True

    def _locals_in(self, s: ir.Parallel) -> set:
        from ...ir.walk import loads, statement_exprs, statements

        touched = set()
        for x in statements(s.body):
            for f in ("name", "buffer"):
                if isinstance(getattr(x, f, None), str):
                    touched.add(getattr(x, f))
            for e in statement_exprs(x):
                touched.update(ld.name for ld in loads(e))
        return {n for n in touched if n in self.buffers and self.buffers[n].scope == "local"}

    def s_Atomic(self, s: ir.Atomic) -> None:
        if s.kind == "turn_wait":
            return  # blocks run one after another on the host: their updates land in block order
        if s.kind == "turn_done":
            s = replace(s, kind="add")
        dt = self.dtype(s.name)
        at, test = self.element(s.name, s.indices)
        call = f"tl::atomic_update<{_ATOMIC_OP[s.kind]}, {c_type(dt)}>(&{at}, {self._in(s.value, dt)});"
        self.out(call if test is None else f"if ({test}) {call}")

    def s_Print(self, s: ir.Print) -> None:
        raise Unsupported("print (its lines would come in another order than on the GPU)", s.span)

    def s_Assert(self, s: ir.Assert) -> None:
        """The GPU's failure record (device_assert.decode reads it): the site, the block, the
        parallel loop's index in C order as the thread; the block stops there."""
        from ... import device_assert

        if not self.assert_sites:
            self.assert_sites = device_assert.sites(self.k.body)
        args = []
        for a in s.args:
            wide = "double" if a.dtype.is_float else "unsigned long long" if a.dtype.kind in ("uint", "bool") else "long long"
            args.append(f", static_cast<{wide}>({self._in(a, compute_type(a.dtype))})")
        site = self.assert_sites.index(device_assert.site_of(s))
        lane = "0"
        for v, n in self.lanes:
            lane = f"({lane}) * {n} + {c_name(v)}"
        self.out(f"if (!({self.expr(s.cond)})) {{ tl::assert_fail(tl_record, {site}u, tl_bx, tl_by, tl_bz, {lane}"
                 f"{''.join(args)}); return -1; }}")

    def s_Gemm(self, s: ir.Gemm) -> None:
        a, b, c = (self.buffers[x] for x in (s.a, s.b, s.c))
        m, n = c.shape
        k = a.shape[0] if s.trans_a else a.shape[1]
        w = accumulator(a.dtype)
        self.out(f"tl::gemm<{c_type(a.dtype)}, {c_type(b.dtype)}, {c_type(c.dtype)}, {w}, {m}, {n}, {k}, "
                 f"{c_bool(s.trans_a)}, {c_bool(s.trans_b)}, {c_bool(s.precision == 'tf32')}>"
                 f"({self.array(s.a)}, {self.array(s.b)}, {self.array(s.c)});")

    def s_Reduce(self, s: ir.Reduce) -> None:
        src, dst = self.buffers[s.src], self.buffers[s.dst]
        shape = src.shape
        outer, inner = math.prod(shape[:s.dim]), math.prod(shape[s.dim + 1:])
        w = accumulator(src.dtype) if s.kind == "sum" else extremum_type(src.dtype)
        self.out(f"tl::reduce<{_REDUCE_KIND[s.kind]}, {c_bool(s.clear)}, {w}>({self.array(s.src)}, "
                 f"{self.array(s.dst)}, {outer}, {shape[s.dim]}, {inner});")

    def s_Scan(self, s: ir.Scan) -> None:
        src, dst = self.buffers[s.src], self.buffers[s.dst]
        shape = src.shape
        outer, inner = math.prod(shape[:s.dim]), math.prod(shape[s.dim + 1:])
        extremum = s.kind in ("max", "min")
        acc = "double" if dst.dtype.is_float else \
            "long long" if extremum and dst.dtype.kind == "int" else "unsigned long long"
        self.out(f"tl::cumsum<{_SCAN_KIND[s.kind]}, {c_bool(s.reverse)}, {acc}>({self.array(s.src)}, {self.array(s.dst)}, "
                 f"{outer}, {shape[s.dim]}, {inner});")

    def s_Copy(self, s: ir.Copy) -> None:
        src, dst = self._side(s.src), self._side(s.dst)
        ext_s = [e for e in src["extents"] if e != 1]
        ext_d = [e for e in dst["extents"] if e != 1]
        if ext_s != ext_d:
            raise Unsupported(f"a copy of extents {src['extents']} into {dst['extents']}", s.span)
        ts, td = c_type(self.dtype(s.src.name)), c_type(self.dtype(s.dst.name))
        r = len(ext_s)
        if r == 0:
            self.out(f"tl::copy_one<{ts}, {td}>({self.array(s.src.name)}, {self._base(src)}, {self._ok(src, [])}, "
                     f"{self.array(s.dst.name)}, {self._base(dst)}, {self._ok(dst, [])});")
            return
        names = []
        self.out("{")
        for side, stem in ((src, "s"), (dst, "d")):
            name = self.fresh(stem)
            names.append(name)
            moving = [i for i, e in enumerate(side["extents"]) if e != 1]
            strides = self._strides(side["dims"])
            offsets, dims = side["offsets"], side["dims"]
            lo = ", ".join(f"-({offsets[i]})" for i in moving)
            hi = ", ".join(f"{dims[i]} - ({offsets[i]})" for i in moving)
            self.out(f"  const tl::Side<{r}> {name} = {{{self._base(side)}, "
                     f"{{{', '.join(strides[i] for i in moving)}}}, {{{lo}}}, {{{hi}}}, {self._ok(side, moving)}}};")
        ext = self.fresh("e")
        self.out(f"  const long long {ext}[{r}] = {{{', '.join(map(str, ext_s))}}};")
        self.out(f"  tl::copy<{ts}, {td}, {r}>({self.array(s.src.name)}, {names[0]}, {self.array(s.dst.name)}, "
                 f"{names[1]}, {ext});")
        self.out("}")

    def _side(self, o) -> dict:
        dims = self.dims(o.name)
        if isinstance(o, ir.Region) and o.dims is not None:  # a view of the tensor (schedule/views.py)
            dims = [f"({self.expr(d)})" for d in o.dims]
        if isinstance(o, ir.BufferRef):
            return {"dims": dims, "offsets": ["0"] * len(dims), "extents": list(self.buffers[o.name].shape)}
        return {"dims": dims, "offsets": [f"static_cast<long long>({self.expr(x)})" for x in o.offsets],
                "extents": list(o.extents)}

    @staticmethod
    def _strides(dims: list) -> list:
        out, stride = [], "1LL"
        for d in reversed(dims):
            out.append(stride)
            stride = f"{stride} * {d}"
        return out[::-1]

    def _base(self, side: dict) -> str:
        strides = self._strides(side["dims"])
        return " + ".join(f"({o}) * {st}" for o, st in zip(side["offsets"], strides)) or "0"

    @staticmethod
    def _ok(side: dict, moving: list) -> str:
        tests = [f"({o}) >= 0 && ({o}) < {d}" for i, (o, d) in enumerate(zip(side["offsets"], side["dims"]))
                 if i not in moving]
        return " && ".join(tests) or "true"
