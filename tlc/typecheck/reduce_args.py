"""The options of a tile reduction, `reduce_sum(src, dst, dim=1, clear=True)` and its siblings:
TileLang's `T.reduce_sum(buffer, out, dim=-1, clear=True)` takes dim and clear by position or
by name, and so does tlc.  The checker hands the lowering one spelling, keywords, whichever
the source used."""
from __future__ import annotations

from ..parser import nodes as n
from ..parser.nodes import replace
from . import consteval

OPTIONS = ("dim", "clear")  # the order in which they follow src and dst
DEFAULTS = {"dim": -1, "clear": True}  # TileLang's: the last dimension
_ORDINAL = {"dim": "third", "clear": "fourth"}


def reduce_options(checker, call: n.Call, name: str):
    """`call` with its options as keywords, and their values {"dim": int, "clear": bool}; or
    None after reporting why not (E262 an option given twice, E263 a dim that is not a
    constant integer, E264 a clear that is not a constant bool)."""
    given = {opt: arg for opt, arg in zip(OPTIONS, call.args[2:])}
    keywords = []
    for k in call.keywords:
        if k.name in given:
            by_position, by_name = ("1", "dim=1") if k.name == "dim" else ("1, False", "dim=1, clear=False")
            checker.error("E262", f"{name}() gets {k.name} twice: as its {_ORDINAL[k.name]} argument and as {k.name}=",
                          k.span, f"give it once: {name}(src, dst, {by_position}) or {name}(src, dst, {by_name})")
            return None
        given[k.name] = k.value
        keywords.append(k)
    values = {}
    for opt in OPTIONS:
        if opt not in given:
            values[opt] = DEFAULTS[opt]
            continue
        v = _constant(checker, given[opt], opt, name)
        if v is None:
            return None
        values[opt] = v
    keywords += [n.Keyword(opt, arg, span=arg.span) for opt, arg in zip(OPTIONS, call.args[2:])]
    return replace(call, args=call.args[:2], keywords=tuple(keywords)), values


def _constant(checker, e, opt: str, name: str):
    """The value of option `opt`, a constant of the right kind, or None after reporting."""
    v, why = consteval.option(checker.bag, e, checker.consts, int if opt == "dim" else bool)
    if why is None:
        return v
    if opt == "dim":
        checker.error("E263", f"the dim of {name}() must be a constant integer; {why}", e.span,
                      "the dimension reduced fixes the destination's shape, so it is known when the kernel is "
                      "compiled: write a literal such as 1 or -1 (counted from the last), or a const parameter")
    else:
        checker.error("E264", f"the clear of {name}() must be a constant True or False; {why}", e.span,
                      "clear=True (the default) overwrites the destination; clear=False combines the reduction "
                      "with the values it holds")
    return None
