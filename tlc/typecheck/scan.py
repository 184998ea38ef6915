"""`cumsum(src, dst=None, dim=0, reverse=False)`: TileLang's `T.cumsum`, the inclusive prefix sum
of a shared or fragment tile along one dimension, into `dst` (`src` itself when left out); and
`cumprod`, `cummax` and `cummin`, its products, running maxima and running minima, the same way.

The arguments follow TileLang's signature, by position or by name; `src` and `dst` are
buffers or regions of them (of the buffer's rank, a single index an extent of 1); `dim` and
`reverse` are constants (the scan's shape is compiled in).  `dst` has `src`'s shape and a dtype that holds
`src`'s values (the sums are accumulated in `dst`'s dtype, 16- and 8-bit floats in f32).
The checker hands the lowering one spelling: `cumsum(src, dst, dim=D, reverse=R)` (or cumprod, ...)."""
from __future__ import annotations

from ..parser import nodes as n
from ..parser.nodes import replace
from . import rules
from .types import FRAGMENT, SHARED, ScalarType, TensorType, describe, format_dim

PARAMS = ("src", "dst", "dim", "reverse")
DEFAULTS = {"dim": 0, "reverse": False}
_SIGNATURE = "cumsum(src, dst=None, dim=0, reverse=False)"
_VERB = {"cumsum": "adds", "cumprod": "multiplies", "cummax": "compares", "cummin": "compares"}


def _signature(name: str) -> str:
    """"TileLang's signature: cumsum(...)", or the same one under another scan's name."""
    return f"TileLang's signature: {_SIGNATURE}" if name == "cumsum" else \
        f"its signature (cumsum's): {_SIGNATURE.replace('cumsum', name)}"


class ScanChecker:
    def _cumsum(self, call: n.Call, name: str):
        given = self._scan_arguments(call, name)
        if given is None:
            return None
        src = self._scanned(given["src"], name, "source")
        dst = self._scanned(given["dst"], name, "destination") if "dst" in given else src
        values = {}
        for opt in ("dim", "reverse"):
            values[opt] = self._scan_option(given[opt], opt, name) if opt in given else DEFAULTS[opt]
        if src is None or dst is None or None in values.values():
            return None
        s, d = src.ty, dst.ty
        dim = values["dim"]
        if not -s.rank <= dim < s.rank:
            self.error("E297", f"dim={dim} is out of range for the {s.rank}-D tile {s}", given["dim"].span,
                       f"dim counts from 0 to {s.rank - 1}, or from -1 (the last) to {-s.rank}")
            return None
        if [self.dim_value(x) for x in s.shape] != [self.dim_value(x) for x in d.shape]:
            self.error("E295", f"{name}() writes a tile of its source's shape {self._shape_text(s.shape)} into the "
                       f"destination, which is {self._shape_text(d.shape)}", given["dst"].span)
            return None
        if not rules.assignable(ScalarType(s.dtype), d.dtype):
            self.error("E033", f"{name}() of {s.dtype} values cannot be stored into {d.dtype} without losing precision",
                       given["dst"].span, f"TileLang converts silently, tlc never narrows on a store: scan into a "
                       f"buffer of a dtype that holds {s.dtype}, then copy it into the {d.dtype} one (copy converts)")
            return None
        keywords = (n.Keyword("dim", n.Constant(dim % s.rank, span=call.span), span=call.span),
                    n.Keyword("reverse", n.Constant(values["reverse"], span=call.span), span=call.span))
        return replace(call, args=(src, dst), keywords=keywords)

    _cumprod = _cummax = _cummin = _cumsum

    def _scan_arguments(self, call: n.Call, name: str) -> dict | None:
        """The arguments by parameter name, positional ones first (E034 for too many or an
        unknown name, E292 for one given twice)."""
        if len(call.args) > len(PARAMS):
            self.error("E034", f"{name}() takes 1 to 4 arguments, {len(call.args)} given", call.span,
                       _signature(name))
            return None
        given = dict(zip(PARAMS, call.args))
        for k in call.keywords:
            if k.name not in PARAMS:
                self.error("E034", f"{name}() has no argument '{k.name}'", k.span, f"it takes {', '.join(PARAMS)}")
                return None
            if k.name in given:
                self.error("E292", f"{name}() gets {k.name} twice: by position and as {k.name}=", k.span,
                           f"give it once; {_signature(name)}")
                return None
            given[k.name] = k.value
        if "src" not in given:
            self.error("E034", f"{name}() needs the tile it scans: {_signature(name).split(': ', 1)[1]}", call.span)
            return None
        return given

    def _scanned(self, e, name: str, role: str):
        """A shared or fragment buffer, or a region of one (`g[i * C:(i + 1) * C]`, TileLang's
        BufferRegion: a single index is an extent of 1, the rank stays the buffer's), typed;
        or None after E293 (another kind of operand) or E296 (bool)."""
        region = isinstance(e, n.Subscript) and isinstance(e.value, n.Name)
        t = self._operand(e, f"{role} of {name}()") if region else self.expr(e)
        if t is None or t.ty is None:
            return None
        if not ((region or isinstance(e, n.Name)) and isinstance(t.ty, TensorType) and t.ty.scope in (SHARED, FRAGMENT)):
            found = f"a region of the {describe(t.value.ty)}" if region else describe(t.ty)
            self.error("E293", f"the {role} of {name}() must be a shared or fragment buffer or a region of one, found "
                       f"{found}", e.span, "copy the tile into a shared(...) or fragment(...) buffer first")
            return None
        if t.ty.dtype.is_bool:
            self.error("E296", f"{name}() {_VERB[name]} numbers; '{(e.value if region else e).id}' holds bool", e.span,
                       "cast the tile to an integer dtype first")
            return None
        if region:  # a single index: one element of its dimension
            shape = tuple(n.Constant(1, span=i.span) if d is None else d for i, d in zip(t.indices, t.ty.shape))
            t = replace(t, ty=replace(t.ty, shape=shape))
        return t

    def _shape_text(self, shape) -> str:
        """`[16, BN]`: a region's extents by value, a buffer's dimensions as written."""
        return "[" + ", ".join(str(v) if (v := self.dim_value(d)) is not None and not isinstance(d, n.Name) else format_dim(d)
                               for d in shape) + "]"

    def _scan_option(self, e, opt: str, name: str):
        """The value of `dim` (a constant integer) or `reverse` (a constant bool), or None after
        E031 (not a constant), E297 or E298 (a constant of another kind)."""
        v = self.const_value(e, f"the {opt} of {name}()")
        if v is None:
            return None
        if opt == "dim" and isinstance(v, int) and not isinstance(v, bool) or opt == "reverse" and isinstance(v, bool):
            return v
        if opt == "dim":
            self.error("E297", f"the dim of {name}() must be an integer, found {v!r}", e.span,
                       "write a literal such as 1 or -1 (counted from the last), or a const parameter")
        else:
            self.error("E298", f"the reverse of {name}() must be True or False, found {v!r}", e.span)
        return None
