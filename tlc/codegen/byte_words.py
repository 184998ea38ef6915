"""A parallel loop over fragments of 1-byte elements (bool, u8, i8), four registers at a time as
32-bit words.

Owns one decision of the CUDA generator: whether a `parallel` loop's body is bytewise logic that
one 32-bit operation computes for four elements at once, and its C.  Element by element, nvcc
holds each byte in a register of its own: a vector load's words are split into bytes, a bool is
tested (`!= 0`) and set to 0 or 1, and the results are packed into words again for the store
(std.elementwise's logical_and on (16384, 8192) bool, sm_90a, the runtime's TL_WHOLE_RUNS
build: 640 SASS instructions, 383 on the whole-tile path, 12.0 an element).  As words, the
whole-tile path is the copy's loads and stores and one LOP3 a word: 133 and 89, 2.8 an element,
where a copy of one bool tensor takes 2.3 (templates/tl/layout.cuh's copies of 1-byte fragments
move their bytes as they are, so that no path splits a word).

The loop qualifies when its layout is blocked with runs of a multiple of 4 registers (a word
never spans two runs, so the run's validity is the word's), and its body is only stores into
1-byte fragments at the loop's own register of values that are *word* expressions:
  - a load of a 1-byte fragment at the loop's own register, a constant of a 1-byte type;
  - for bools (bytes 0 or 1, as NumPy and PyTorch store them): `not`, `and`/`&`, `or`/`|`,
    `!=`/`^`, `==`, and `where(c, a, b)`;
  - for u8 and i8: `~`, `&`, `|`, `^`, and `where(c, a, b)` of a bool c;
  - a cast of a bool to u8 or i8 (0 or 1), or of a value to its own type.
Each store reads the fragments' words as they are at that point (the body's order is kept).
Anything else, and the loop stays the scalar one (nothing else changes what the generator
writes).  The values are the scalar loop's, bit for bit.

A body that is the one store `out[j] = where(c[j], a[j], b[j])` of 16-bit fragments out, a, b
and a bool fragment c (std.elementwise's and std.broadcast's where of f16 and bf16) is computed
four registers at a time too (`tl::select_halves4`, also in a run loop's runs: shared_runs.py):
c's word and two words of each of a and b, each word's mask its two bools spread to its halves
and times 0xff.  Element by element, ptxas held each bool and each half in a register of its
own: std.broadcast.where at 32 elements a thread took 111 registers on sm_90a in the
TL_WHOLE_RUNS build (4 blocks an SM; 0.61 of copy on the H200), 77 as words.
"""
from __future__ import annotations

from .. import ir
from ..schedule.layout import Blocked
from .cexpr import CodegenError
from .cnames import c_name

_BYTE_TYPES = ("bool", "u8", "i8")
HALF_SELECT = "four registers at a time: where of 16-bit values by bools, as 32-bit words (codegen/byte_words.py)"
_ONES = 0x01010101
_BOOL_OPS = {"and": "&", "&": "&", "or": "|", "|": "|", "!=": "^", "^": "^"}
_INT_OPS = {"&": "&", "|": "|", "^": "^"}


def _is_byte(dtype) -> bool:
    return dtype.name in _BYTE_TYPES


def _word_const(c: ir.Const) -> str:
    byte = int(c.value) & 0xFF
    return f"0x{byte * _ONES:08x}u"


class ByteWordGen:
    """Mixed into the sm_80 generator (sm80.py's parallel_loop asks `word_loop` first)."""

    def word_loop(self, p: ir.Parallel, layout, alias: str) -> bool:
        """Emit `p` four registers at a time (the module's docstring), or nothing and False."""
        select = self.half_select(p, layout)
        if select is not None:
            self.emit(f"// {HALF_SELECT}")
            self.emit("#pragma unroll")
            self.emit(f"for (int tl_w = 0; tl_w < {alias}::REGS / 4; ++tl_w) {{")
            self.emit(f"  if ({alias}::valid(threadIdx.x, 4 * tl_w)) {self.half_select_call(select, '4 * tl_w')}")
            self.emit("}")
            return True
        plan = self.word_plan(p, layout)
        if plan is None:
            return False
        self.emit("// four registers at a time: 32-bit words of bytes (codegen/byte_words.py)")
        self.emit("#pragma unroll")
        self.emit(f"for (int tl_w = 0; tl_w < {alias}::REGS / 4; ++tl_w) {{")
        self.indent += 1
        self.emit(f"if (!{alias}::valid(threadIdx.x, 4 * tl_w)) continue;")
        for name, value in plan:
            self.emit(f"tl::set_bytes_word({c_name(name)}, tl_w, {value});")
        self.indent -= 1
        self.emit("}")
        return True

    def half_select(self, p: ir.Parallel, layout) -> tuple | None:
        """(out, c, a, b) where `p`'s body is the one store `out[j] = where(c[j], a[j], b[j])`: out,
        a and b fragments of one 16-bit type and c of bools, each at the loop's own register, in a
        blocked layout of runs of a multiple of 4 registers; else None."""
        if not isinstance(layout, Blocked) or layout.vec % 4 != 0 or len(p.body) != 1:
            return None
        s = p.body[0]
        if not isinstance(s, ir.Store) or not isinstance(s.value, ir.Select):
            return None
        out = self.buffers.get(s.name)
        e = s.value
        if out is None or out.dtype.itemsize != 2 or e.dtype != out.dtype or e.cond.dtype.name != "bool":
            return None
        args = (e.cond, e.a, e.b)
        if not all(isinstance(x, ir.Load) and self.word_fragment_of(x.name, x.indices, layout, x.dtype.itemsize)
                   for x in args) or not self.word_fragment_of(s.name, s.indices, layout, 2):
            return None
        if e.a.dtype != out.dtype or e.b.dtype != out.dtype:
            return None
        return (s.name, *(x.name for x in args))

    def half_select_call(self, select: tuple, r: str) -> str:
        """The C statement of `half_select`'s store for registers r .. r + 3."""
        return f"tl::select_halves4({', '.join(c_name(n) for n in select)}, {r});"

    def word_plan(self, p: ir.Parallel, layout) -> list | None:
        """[(fragment, C word of its value)] for each store of `p`'s body, or None."""
        if not isinstance(layout, Blocked) or layout.vec % 4 != 0 or not p.body:
            return None
        plan = []
        for s in p.body:
            if not isinstance(s, ir.Store) or not self.word_fragment(s.name, s.indices, layout):
                return None
            value = self.word(s.value, layout)
            if value is None or s.value.dtype != self.buffers[s.name].dtype:
                return None
            plan.append((s.name, value))
        return plan

    def word_fragment(self, name: str, indices, layout) -> bool:
        """Whether `name[indices]` is a 1-byte fragment's element in the loop's own register."""
        return self.word_fragment_of(name, indices, layout, 1) and _is_byte(self.buffers[name].dtype)

    def word_fragment_of(self, name: str, indices, layout, size: int) -> bool:
        """Whether `name[indices]` is an element of a fragment of `size`-byte elements in the
        loop's own register."""
        b = self.buffers.get(name)
        if b is None or b.scope != "fragment" or b.dtype.itemsize != size or b.layout != layout \
                or name in self.exchanged:
            return False
        try:
            return self.register(name, indices, None) == "tl_r"
        except CodegenError:
            return False

    def word(self, e: ir.Expr, layout) -> str | None:
        """The C of `e` for the loop's four elements as a word (byte i element i), or None."""
        if not _is_byte(e.dtype):
            return None
        boolean = e.dtype.name == "bool"
        if isinstance(e, ir.Const):
            return _word_const(e)
        if isinstance(e, ir.Load):
            if not self.word_fragment(e.name, e.indices, layout):
                return None
            return f"tl::bytes_word({c_name(e.name)}, tl_w)"
        if isinstance(e, ir.Cast):
            if e.x.dtype == e.dtype or e.x.dtype.name == "bool":
                return self.word(e.x, layout)
            return None
        if isinstance(e, ir.UnaryOp):
            x = self.word(e.x, layout)
            if x is None or e.x.dtype != e.dtype:
                return None
            if boolean and e.op == "not":
                return f"({x} ^ 0x{_ONES:08x}u)"
            if not boolean and e.op == "~":
                return f"(~{x})"
            return None
        if isinstance(e, ir.BinOp):
            if e.a.dtype != e.b.dtype or not _is_byte(e.a.dtype):
                return None
            a, b = self.word(e.a, layout), self.word(e.b, layout)
            if a is None or b is None:
                return None
            if boolean and e.a.dtype.name == "bool":
                if e.op == "==":
                    return f"(~({a} ^ {b}) & 0x{_ONES:08x}u)"
                op = _BOOL_OPS.get(e.op)
            else:
                op = _INT_OPS.get(e.op) if e.a.dtype == e.dtype else None
            return None if op is None else f"({a} {op} {b})"
        if isinstance(e, ir.Select):
            if e.cond.dtype.name != "bool" or e.a.dtype != e.dtype or e.b.dtype != e.dtype:
                return None
            c, a, b = self.word(e.cond, layout), self.word(e.a, layout), self.word(e.b, layout)
            if c is None or a is None or b is None:
                return None
            if boolean and e.a == e.cond:  # where(c, c, b): c or b
                return f"({c} | {b})"
            if boolean and e.b == e.cond:  # where(c, a, c): c and a
                return f"({c} & {a})"
            return f"tl::select_bytes({c}, {a}, {b})"
        return None
