"""How deeply a parsed program nests, for E010 ("nested too deeply to compile").

The AST is built without recursion, but every later stage walks it recursively, so `parse`
refuses a program deeper than `MAX_DEPTH` levels, counted as Lark's parse tree of the language
would nest (a call adds three levels: the call, its argument list, the argument; a run of
`a + b - c` at one precedence level adds one).  That is the limit that a recursive walk of the
parse tree used to meet, ~490 levels under Python's default recursion limit.

The walk costs a pass over the tree, so `parse` runs it only when the file could be that deep:
one level takes at least one character of a logical line or one level of indentation.
"""
from __future__ import annotations

from ..diagnostics import Diagnostic, Span
from ..identity_memo import remembered_by_identity
from . import nodes as n

MAX_DEPTH = 493

_LEVEL = {"|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8, "+": 9, "-": 9,
          "*": 10, "/": 10, "//": 10, "%": 10, "@": 10}


def too_deep_at(module: n.Module, path: str, parenthesized=frozenset(), elifs=frozenset()) -> Diagnostic | None:
    """E010 when `module` nests deeper than `MAX_DEPTH`.  `parenthesized` holds the ids of the
    nodes written in parentheses (a left operand in parentheses is a level of its own), `elifs`
    those of the `If` nodes written as `elif` (siblings of their `if`, not nested in it)."""
    stack: list = [(module, 1)]
    push = stack.append
    while stack:
        x, d = stack.pop()
        if d > MAX_DEPTH:
            return Diagnostic("E010", "the program is nested too deeply to compile", Span(path, 1, 1, 1, 2),
                              "split the deepest expression into named intermediate values")
        if x is None:
            continue
        if isinstance(x, tuple):
            for y in x:
                push((y, d))
            continue
        if isinstance(x, n.BinOp):
            left = x.left
            same = (isinstance(left, n.BinOp) and left.op != "**" and id(left) not in parenthesized
                    and _LEVEL.get(left.op) == _LEVEL.get(x.op))
            push((left, d if same else d + 1))
            push((x.right, d + 1))
        elif isinstance(x, (n.Name, n.Constant)):
            continue
        elif isinstance(x, n.Call):
            push((x.func, d + 1))
            push((x.args, d + 3))
            push((tuple(k.value for k in x.keywords), d + 3))
        elif isinstance(x, (n.Subscript, n.TypeExpr)):
            push((getattr(x, "value", None), d + 1))
            push((x.indices if isinstance(x, n.Subscript) else x.dims, d + 2))
        elif isinstance(x, n.Slice):
            push(((x.lower, x.upper, x.step), d + 1))
        elif isinstance(x, n.Attribute):
            push((x.value, d + 1))
        elif isinstance(x, n.UnaryOp):
            push((x.operand, d + 1))
        elif isinstance(x, (n.Compare, n.BoolOp)):
            push((x.operands if isinstance(x, n.Compare) else x.values, d + 1))
        elif isinstance(x, n.IfExp):
            push(((x.test, x.body, x.orelse), d + 1))
        elif isinstance(x, (n.TupleExpr, n.ListExpr)):
            push((x.elts, d + 1))
        elif isinstance(x, n.Module):
            push((x.imports, d + 1))
            push((x.consts, d + 1))
            push((x.functions, d + 1))
        elif isinstance(x, n.FunctionDef):
            d += 1 if x.decorators else 0
            for dec in x.decorators:
                push((tuple(dec.args or ()) + tuple(k.value for k in dec.keywords), d + 3))
            push((tuple(p.annotation for p in x.params) + tuple(p.default for p in x.params), d + 3))
            push((x.returns, d + 1))
            push((x.body, d + 2))
        elif isinstance(x, n.ConstDecl):
            push(((x.annotation, x.value), d + 1))
        elif isinstance(x, n.If):
            push((x.test, d + 1))
            push((x.body, d + 2))
            while len(x.orelse) == 1 and id(x.orelse[0]) in elifs:  # if / elif_clause / suite
                x = x.orelse[0]
                push((x.test, d + 2))
                push((x.body, d + 3))
            push((x.orelse, d + 3))  # if / else_clause / suite
        elif isinstance(x, (n.For, n.While, n.With)):
            push((x.iter if isinstance(x, n.For) else x.test if isinstance(x, n.While) else x.context, d + 1))
            push((x.body, d + 2))
        elif isinstance(x, (n.ExprStmt, n.Return)):
            push((getattr(x, "expr", None) or getattr(x, "value", None), d + 1))
        elif isinstance(x, (n.Assign, n.AugAssign)):
            push(((x.target, x.value, getattr(x, "annotation", None)), d + 1))
    return None


# ---- the AST's own depth -------------------------------------------------------------------
# `MAX_DEPTH` bounds the parse; the checker bounds the AST that every later stage walks
# recursively (type checking, lowering, tile-op fusion, the IR verifier and printer, the code
# generator, the interpreter).  Those walks take up to ~5 Python frames a level of the AST
# (measured: an `if` nested in an `if` in type checking, `a + a` in a tile op's fusion), so
# `MAX_AST_DEPTH` levels need ~500 frames, half of Python's default recursion limit, and leave
# the rest to whoever calls tlc.  A left-associated run `a + b + c` is one level a term here.
MAX_AST_DEPTH = 100


_LEAVES = (str, int, float, bool)
# A node class's fields that can hold nodes (all but its span, type and name span), by class;
# None for a class that is not a dataclass (not a node)
_CHILD_FIELDS: dict = {}


def _child_fields(cls):
    fields = getattr(cls, "__dataclass_fields__", None)
    found = _CHILD_FIELDS[cls] = None if fields is None else \
        tuple(name for name in fields if name not in ("span", "ty", "name_span"))
    return found


# the AST is immutable and parse() hands a text's AST out again: a std module each program
# imports is walked once a process (the walk was ~14% of checking std.gemm again)
@remembered_by_identity(keep=4096)
def ast_depth(root) -> tuple[int, object]:
    """(the number of nested AST nodes on the longest path from `root` down, and where that
    path first passes `MAX_AST_DEPTH`, or None: the outermost expression on it when the
    expression nests more than the statements around it, else the innermost statement)."""
    deepest = _depth(root)
    # the common case: no culprit to find
    return (deepest, None) if deepest <= MAX_AST_DEPTH else _depth_and_culprit(root)


def _depth(root) -> int:
    """`ast_depth`'s depth alone, by the same walk (every type check of a function makes it)."""
    deepest = 0
    stack: list = [(root, 1)]
    pop, push, fields_of = stack.pop, stack.append, _CHILD_FIELDS.get
    while stack:
        x, d = pop()
        if isinstance(x, tuple):
            for y in x:
                push((y, d))
            continue
        cls = x.__class__
        fields = fields_of(cls, False)
        if fields is False:
            fields = _child_fields(cls)
        if fields is None:
            continue
        if d > deepest:
            deepest = d
        d += 1
        for name in fields:
            child = getattr(x, name)
            if child.__class__ is tuple:
                for y in child:
                    push((y, d))
            elif child is not None and not isinstance(child, _LEAVES):
                push((child, d))
    return deepest


def _depth_and_culprit(root) -> tuple[int, object]:
    deepest, culprit = 0, None
    stack: list = [(root, 1, root, None, 0)]
    push = stack.append
    while stack:
        x, d, stmt, expr, expr_d = stack.pop()
        if isinstance(x, tuple):
            for y in x:
                push((y, d, stmt, expr, expr_d))
            continue
        fields = getattr(type(x), "__dataclass_fields__", None)
        if fields is None:
            continue
        if not _is_expr(x):
            stmt, expr = x, None
        elif expr is None:
            expr, expr_d = x, d
        if d > deepest:
            deepest = d
            if d == MAX_AST_DEPTH + 1:
                culprit = expr if expr is not None and d - expr_d >= expr_d else stmt
        for name in fields:
            if name not in ("span", "ty", "name_span"):
                child = getattr(x, name)
                if child is not None and not isinstance(child, (str, int, float, bool)):
                    push((child, d + 1, stmt, expr, expr_d))
    return deepest, culprit


def report_too_deep(bag, culprit, substituted: bool = False) -> None:
    """E155 into `bag` (a `DiagnosticBag`) for the part `ast_depth` (or, `substituted`,
    `substituted_depth`) found too deep."""
    expression = _is_expr(culprit)
    when = " once the values it uses are substituted into it, as fusion does" if substituted else ""
    bag.error("E155", f"this {'expression' if expression else 'statement'} nests more than {MAX_AST_DEPTH} "
              f"levels deep{when}, more than the compiler allows", culprit.span,
              "compute part of it in another @tile_op" if substituted else
              "split it into named intermediate values" if expression else "move the inner part into a device function")


_EXPRESSIONS = (n.Name, n.Constant, n.BinOp, n.UnaryOp, n.BoolOp, n.Compare, n.IfExp, n.Keyword, n.Call,
                n.Slice, n.Subscript, n.Attribute, n.TupleExpr, n.ListExpr, n.TypeExpr)


def _is_expr(x) -> bool:
    return isinstance(x, _EXPRESSIONS)


def substituted_depth(fn: n.FunctionDef) -> tuple[int, object]:
    """Like `ast_depth` for the expressions of a @tile_op's body with each local value replaced
    by the expression that computes it, as fusion does (`t1 = x + x; t2 = t1 + x; ...` is one
    expression in the fused kernel): (the deepest, the expression that passes MAX_AST_DEPTH or
    None)."""
    known: dict[str, int] = {}
    deepest = 0
    for s in fn.body:
        value = getattr(s, "value", None) or getattr(s, "expr", None)
        if value is None:
            continue
        d = _depth_with(value, known)
        deepest = max(deepest, d)
        if d > MAX_AST_DEPTH:
            return deepest, value
        target = getattr(s, "target", None)
        if isinstance(target, n.Name):  # `t += v` is `t = t + v`
            known[target.id] = max(d, known.get(target.id, 1)) + 1 if isinstance(s, n.AugAssign) else d
    return deepest, None


def _depth_with(e, known: dict) -> int:
    """Nested nodes on the longest path down from `e`, a local's name counting as its value."""
    deepest = 0
    stack: list = [(e, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, tuple):
            stack.extend((y, d) for y in x)
            continue
        fields = getattr(type(x), "__dataclass_fields__", None)
        if fields is None:
            continue
        if isinstance(x, n.Name) and x.id in known:
            d += known[x.id] - 1
        deepest = max(deepest, d)
        for name in fields:
            if name not in ("span", "ty", "name_span"):
                child = getattr(x, name)
                if child is not None and not isinstance(child, (str, int, float, bool)):
                    stack.append((child, d + 1))
    return deepest
