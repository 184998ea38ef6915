"""The AST builder: Lark's LALR parser calls one method per grammar rule as it reduces (no parse
tree is built), and each method builds one node with its span.

Spans.  The parser keeps every token (`keep_all_tokens`), so a rule's span runs from its first
token to its last: the first and last child, a token or a node.  A node inside redundant
parentheses is the one case where a node and the source it came from differ: `(a)` is the node
`a` with a span on `a`, but a parent that starts or ends with it starts or ends at the
parenthesis.  That outer extent (also the extent of a binary operation whose outermost operand
is parenthesized: its span runs from operand to operand) is kept in `self._ext`, by node, for
the one parse.

Expressions arrive flat (`test`): operands, prefix operators and binary operators in source
order; `_group` applies Python's precedence (an operator-precedence parse, no recursion).

Errors that the grammar cannot express (a call as an assignment target, a parameter with no
type) are diagnostics with the construct's span.  They are recorded, not raised, because a
syntax error later in the file must win, as it does when the whole file is parsed first; the
first one in reduction order (children before parents, left to right) is raised at the end.
"""
from __future__ import annotations

import ast as pyast
import math
import warnings

from lark import Token

from ..diagnostics import Diagnostic, Span
from . import nodes as n


# The nodes built most often, through their fast constructors (every field, in order).
_Span = n.maker(Span)
_Name, _Constant, _BinOp, _Call = n.maker(n.Name), n.maker(n.Constant), n.maker(n.BinOp), n.maker(n.Call)
_Subscript, _Attribute, _UnaryOp = n.maker(n.Subscript), n.maker(n.Attribute), n.maker(n.UnaryOp)
_Assign, _ExprStmt, _Keyword = n.maker(n.Assign), n.maker(n.ExprStmt), n.maker(n.Keyword)


# ---- operators: binding power (Python's table, loosest first) ----------------------------------
_OR, _AND, _NOT, _CMP, _UNARY, _POW = 1, 2, 3, 4, 11, 12
_LEFT = {"|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8, "+": 9, "-": 9,
         "*": 10, "/": 10, "//": 10, "%": 10, "@": 10}
_BINARY = {**_LEFT, "<": _CMP, ">": _CMP, "==": _CMP, ">=": _CMP, "<=": _CMP, "!=": _CMP,
           "**": _POW, "and": _AND, "or": _OR}


class _Chain:
    """A comparison chain or a run of `and` / `or` being collected into one node."""

    __slots__ = ("kind", "ops", "items")

    def __init__(self, kind: int, ops: list, items: list):
        self.kind, self.ops, self.items = kind, ops, items


class ToAst:
    """Grammar-rule callbacks for `Lark(..., transformer=ToAst())`: Lark calls the attribute
    named like each rule (or its alias), so no other attribute may share a rule's name; rules
    without a method (`_stmt`, ...) are inlined into their parent.  One instance serves every
    parse (the parser is built once); `begin` / `end` bracket one parse, under the caller's lock."""

    def __init__(self, path: str = "<string>"):
        self.begin(path)

    def begin(self, path: str) -> None:
        self.path = path
        self._ext: dict[int, tuple] = {}  # id(node) -> (node, line, col, end_line, end_col)
        self.parenthesized: set[int] = set()  # ids of nodes in parentheses (kept alive by _ext)
        self.elifs: set[int] = set()  # ids of the If nodes written as `elif` (for depth.py)
        self.error: Diagnostic | None = None

    def end(self) -> None:
        self._ext = {}
        self.parenthesized = set()
        self.elifs = set()

    # ---- helpers -----------------------------------------------------------------------
    def _fail(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        if self.error is None:
            self.error = Diagnostic(code, message, span, hint)

    def _start(self, x) -> tuple[int, int]:
        """Where the source of a child begins: a token, or a node with its parentheses."""
        if x.__class__ is Token:
            return x.line, x.column
        e = self._ext.get(id(x))
        if e is not None and e[0] is x:
            return e[1], e[2]
        s = x.span
        return s.line, s.col

    def _end(self, x) -> tuple[int, int]:
        if x.__class__ is Token:
            return x.end_line, x.end_column
        e = self._ext.get(id(x))
        if e is not None and e[0] is x:
            return e[3], e[4]
        s = x.span
        return s.end_line, s.end_col

    def _between(self, first, last) -> Span:
        """The span from the start of child `first` to the end of child `last`."""
        return _Span(self.path, *self._start(first), *self._end(last))

    def _tok_span(self, tok: Token) -> Span:
        return _Span(self.path, tok.line, tok.column, tok.end_line, tok.end_column)

    def to_type(self, e) -> n.TypeExpr:
        """A type annotation is parsed as an expression, then read as a type here."""
        if isinstance(e, n.Name):
            return n.TypeExpr(e.id, None, span=e.span)
        if isinstance(e, n.Subscript) and isinstance(e.value, n.Name):
            for d in e.indices:
                if isinstance(d, n.Slice):
                    self._fail("E005", "a tensor dimension cannot be a slice", d.span)
                    break
            return n.TypeExpr(e.value.id, e.indices, span=e.span)
        self._fail("E005", "expected a type such as 'f32', 'const', 'dtype' or 'f16[M, K]'", e.span)
        return n.TypeExpr("?", None, span=e.span)

    # ---- module --------------------------------------------------------------------------
    def start(self, c):
        if not c:
            return n.Module(self.path, (), (), (), span=Span(self.path, 1, 1, 1, 2))
        items = [x for x in c if x.__class__ is not Token]
        imports = tuple(i for i in items if isinstance(i, n.Import))
        consts = tuple(i for i in items if isinstance(i, n.ConstDecl))
        funcs = tuple(i for i in items if isinstance(i, n.FunctionDef))
        return n.Module(self.path, imports, consts, funcs, span=self._between(c[0], c[-1]))

    def import_stmt(self, c):
        level, module = c[1]
        names = tuple(x for x in c[3:] if x.__class__ is not Token)
        return n.Import(module, level, names, span=self._between(c[0], c[-1]))

    def module_path(self, c):
        level = sum(1 for x in c if x is _REL_DOT)
        names = [str(x) for x in c if x.__class__ is Token and x.type == "NAME"]
        return (level, ".".join(names))

    def rel_dot(self, c):
        return _REL_DOT

    def import_name(self, c):
        alias = str(c[2]) if len(c) > 2 else None
        return n.ImportName(str(c[0]), alias, span=self._between(c[0], c[-1]))

    def const_decl(self, c):
        name, _, annot, _, value, _ = c
        ty = self.to_type(annot) if annot is not None else None
        return n.ConstDecl(str(name), ty, value, span=self._between(c[0], c[-1]))

    # ---- functions -------------------------------------------------------------------------
    def decorated(self, c):
        *decorators, func = c
        return n.replace(func, decorators=tuple(decorators), span=self._between(c[0], func))

    def decorator(self, c):
        _, name, arguments, _ = c
        args, kws = arguments if arguments is not None else (None, ())
        return n.Decorator(name, args, kws, span=self._between(c[0], c[-1]))

    def decorator_args(self, c):
        return c[1] if c[1] is not None else ((), ())

    def dotted_name(self, c):
        return ".".join(str(x) for x in c if x.type == "NAME")

    def funcdef(self, c):
        _, name, _, params, _, _, returns, _, (body, end_line, end_col) = c
        return n.FunctionDef(str(name), tuple(params or ()),
                             self.to_type(returns) if returns is not None else None,
                             body, span=Span(self.path, c[0].line, c[0].column, end_line, end_col),
                             name_span=self._tok_span(name))

    def parameters(self, c):
        return [x for x in c if x.__class__ is not Token]

    def param(self, c):
        name, _, annot, _, default = c
        last = default if default is not None else annot if annot is not None else name
        span = self._between(name, last)
        if annot is None:
            self._fail("E006", f"parameter '{name}' needs a type", span,
                       hint=f"write '{name}: f32', '{name}: f16[M, K]', '{name}: const = 64' or '{name}: dtype = f16'")
            return n.Param(str(name), None, default, span=span)
        return n.Param(str(name), self.to_type(annot), default, span=span)

    def suite(self, c):
        """(statements, end line, end column): the end is that of the block's last token."""
        last = c[-1]
        stmts = []
        for x in c:
            if x.__class__ is tuple:  # a tuple assignment's statements
                stmts.extend(x)
            elif x.__class__ is not Token and x is not None:
                stmts.append(x)
        return tuple(stmts), last.end_line, last.end_column

    def nested_def(self, c):
        f = c[0]
        self._fail("E007", f"function '{f.name}' is defined inside another function", f.name_span,
                   hint="define device functions, kernels and tile ops at the top level of the file")
        return None

    # ---- statements ------------------------------------------------------------------------
    def _target(self, e, op: str = "="):
        if not isinstance(e, (n.Name, n.Subscript)):
            self._fail("E008", "cannot assign to this expression", e.span,
                       hint=f"the left side of '{op}' must be a name or an element such as 'x[i, j]'")
        return e

    def expr_stmt(self, c):
        e = c[0]
        return _ExprStmt(e, self._between(e, e))

    def assign(self, c):
        target, _, value = c
        if target.__class__ is not n.Name and target.__class__ is not n.Subscript:
            self._target(target)
        return _Assign(target, value, None, self._between(target, value))

    def tuple_assign(self, c):
        """`a, b = x, y` as `a = x` then `b = y`: exact while no value reads a name assigned
        before it in the statement (Python reads every value first), E231 otherwise."""
        eq = next(i for i, x in enumerate(c) if x.__class__ is Token and x.value == "=")
        targets = [x for x in c[:eq] if x.__class__ is not Token]
        values = [x for x in c[eq + 1:] if x.__class__ is not Token]
        if len(values) == 1 and isinstance(values[0], n.TupleExpr):
            values = list(values[0].elts)
        span = self._between(c[0], c[-1])
        if len(values) != len(targets):
            self._fail("E230", f"{len(targets)} names are assigned {len(values)} value{'s' * (len(values) != 1)}", span,
                       hint="give one value per name: a, b = x, y")
            return None
        for t in targets:
            self._target(t)
        for i, value in enumerate(values):
            early = next((t for t in targets[:i] if _mentions(value, _base_name(t))), None)
            if early is not None:
                self._fail("E231", f"'{_base_name(early)}' is assigned by this statement before this value reads it; "
                           "Python reads every value first", value.span,
                           hint="assign through a temporary in statements of their own, e.g. t = a; a = b; b = t")
                return None
        return tuple(_Assign(t, v, None, self._between(t, v)) for t, v in zip(targets, values))

    def annassign(self, c):
        target, _, annot, _, value = c
        if not isinstance(target, n.Name):
            self._fail("E008", "only a plain name can have a type annotation", target.span)
        return n.Assign(target, value, self.to_type(annot), span=self._between(target, value))

    def augassign(self, c):
        target, op, value = c
        return n.AugAssign(self._target(target, str(op)), str(op)[:-1], value,
                           span=self._between(target, value))

    def pass_stmt(self, c):
        return n.Pass(span=self._tok_span(c[0]))

    def break_stmt(self, c):
        return n.Break(span=self._tok_span(c[0]))

    def continue_stmt(self, c):
        return n.Continue(span=self._tok_span(c[0]))

    def return_stmt(self, c):
        kw, value = c
        return n.Return(value, span=self._between(kw, value if value is not None else kw))

    def if_stmt(self, c):
        kw, test, _, (body, end_line, end_col), *rest = c
        else_clause = rest.pop()
        orelse = ()
        if else_clause is not None:
            orelse, end_line, end_col = else_clause
        for elif_test, elif_body, elif_span in reversed(rest):
            orelse = (n.If(elif_test, elif_body, orelse, span=elif_span),)
            self.elifs.add(id(orelse[0]))
        if rest and else_clause is None:
            end_line, end_col = rest[-1][2].end_line, rest[-1][2].end_col
        return n.If(test, body, orelse, span=Span(self.path, kw.line, kw.column, end_line, end_col))

    def elif_clause(self, c):
        kw, test, _, (body, end_line, end_col) = c
        return (test, body, Span(self.path, kw.line, kw.column, end_line, end_col))

    def else_clause(self, c):
        return c[2]

    def _targets_of(self, c, stop: str):
        targets = []
        for x in c:
            if x.__class__ is Token:
                if x.type == "NAME":
                    targets.append(n.Name(str(x), span=self._tok_span(x)))
                elif x.type == stop:
                    break
        return tuple(targets)

    def for_stmt(self, c):
        kw, *_, it, _, (body, end_line, end_col) = c
        return n.For(self._targets_of(c[1:], "IN"), it, body,
                     span=Span(self.path, kw.line, kw.column, end_line, end_col))

    def while_stmt(self, c):
        kw, test, _, (body, end_line, end_col) = c
        return n.While(test, body, span=Span(self.path, kw.line, kw.column, end_line, end_col))

    def with_stmt(self, c):
        kw, ctx, _, *_, (body, end_line, end_col) = c
        return n.With(ctx, self._targets_of(c[3:], "COLON"), body,
                      span=Span(self.path, kw.line, kw.column, end_line, end_col))

    # ---- expressions -----------------------------------------------------------------------
    def name(self, c):
        t = c[0]
        return _Name(t.value, _Span(self.path, t.line, t.column, t.end_line, t.end_column), None)

    def int_lit(self, c):
        t = c[0]
        span = _Span(self.path, t.line, t.column, t.end_line, t.end_column)
        value = _int_literal(t.value.replace("_", ""))
        if value is None:
            self._fail("E151", "integer literal too large: the largest is 18446744073709551615 (2**64 - 1)", span,
                       "generated code holds an integer constant in 64 bits (i64 or u64)")
            value = 0
        return _Constant(value, span, None)

    def float_lit(self, c):
        t = c[0]
        span = _Span(self.path, t.line, t.column, t.end_line, t.end_column)
        value = float(t.value.replace("_", ""))  # any length; no digit limit, unlike int()
        if math.isinf(value):
            self._fail("E152", "float literal too large: the largest f64 is about 1.8e308", span,
                       "write inf(f32) for an infinity")
            value = 0.0
        return _Constant(value, span, None)

    def str_lit(self, c):
        t = c[0]
        span = self._tok_span(t)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                value = pyast.literal_eval(t.value)
            except (ValueError, SyntaxError):
                self._fail("E002", "invalid escape sequence in string", span)
                value = ""
        return n.Constant(value, span=span)

    def true_lit(self, c):
        return n.Constant(True, span=self._tok_span(c[0]))

    def false_lit(self, c):
        return n.Constant(False, span=self._tok_span(c[0]))

    def paren(self, c):
        """`( test )`: the node itself; its extent now includes the parentheses."""
        lpar, e, rpar = c
        self._ext[id(e)] = (e, lpar.line, lpar.column, rpar.end_line, rpar.end_column)
        self.parenthesized.add(id(e))
        return e

    def tuple(self, c):
        return n.TupleExpr(tuple(x for x in c if x.__class__ is not Token),
                           span=self._between(c[0], c[-1]))

    def list(self, c):
        return n.ListExpr(tuple(x for x in c if x.__class__ is not Token and x is not None),
                          span=self._between(c[0], c[-1]))

    def dict_argument(self, c):
        items = [x for x in c if x.__class__ is tuple]
        return (n.DictExpr(tuple(k for k, _ in items), tuple(v for _, v in items), span=self._between(c[0], c[-1])),
                None, None)

    def dict_item(self, c):
        return (c[0], c[-1])

    def test(self, c):
        """A flat run of operands and operators (two or more items)."""
        if len(c) == 3:
            left, op, right = c
            if op.__class__ is Token and left.__class__ is not Token and op.value in _LEFT:
                return self._binop(op.value, left, right)
        return self._group(c)

    def ternary(self, c):
        i = next(k for k, x in enumerate(c) if x.__class__ is Token and x.type == "IF")
        j = next(k for k in range(i + 1, len(c)) if c[k].__class__ is Token and c[k].type == "ELSE")
        body = c[0] if i == 1 else self._group(c[:i])
        test = c[i + 1] if j == i + 2 else self._group(c[i + 1:j])
        orelse = c[-1]
        return n.IfExp(test, body, orelse, span=self._between(c[0], orelse))

    def _binop(self, op: str, left, right):
        """`left op right` for a left-associative operator: the span runs from operand to
        operand; the extent, when it differs, from parenthesis to parenthesis."""
        ls, rs = left.span, right.span
        node = _BinOp(op, left, right, _Span(self.path, ls.line, ls.col, rs.end_line, rs.end_col), None)
        ext = self._ext
        if ext:
            start, end = self._start(left), self._end(right)
            if start != (ls.line, ls.col) or end != (rs.end_line, rs.end_col):
                ext[id(node)] = (node, *start, *end)
        return node

    def _done(self, x):
        """A finished operand: a collected chain becomes its Compare or BoolOp node."""
        if x.__class__ is not _Chain:
            return x
        first, last = x.items[0], x.items[-1]
        span = self._between(first, last)
        if x.kind == _CMP:
            return n.Compare(tuple(x.ops), tuple(x.items), span=span)
        return n.BoolOp("and" if x.kind == _AND else "or", tuple(x.items), span=span)

    def _apply(self, vals: list, power: int, tok: Token) -> None:
        """Apply the operator `tok` (binding power `power`) to the operands on top of `vals`."""
        done = self._done
        if power == _NOT or power == _UNARY:
            operand = done(vals.pop())
            vals.append(_UnaryOp(tok.value, operand,
                                 _Span(self.path, tok.line, tok.column, *self._end(operand)), None))
            return
        right = done(vals.pop())
        left = vals.pop()
        if power == _POW:
            left = done(left)
            vals.append(n.BinOp("**", left, right, span=self._between(left, right)))
        elif power <= _CMP:
            if left.__class__ is _Chain and left.kind == power:
                left.items.append(right)
            else:
                left = _Chain(power, [], [done(left), right])
            if power == _CMP:
                left.ops.append(tok.value)
            vals.append(left)
        else:
            vals.append(self._binop(tok.value, done(left), right))

    def _group(self, c):
        """Operator precedence over a flat run: operands (nodes) and operator tokens.  A token
        right after an operand is a binary operator; any other is a prefix (`not`, `-`, ...)."""
        vals: list = []
        ops: list = []  # (binding power, token)
        apply = self._apply
        prev_operand = False
        for x in c:
            if x.__class__ is not Token:
                vals.append(x)
                prev_operand = True
                continue
            if not prev_operand:  # a prefix operator
                ops.append((_NOT if x.type == "NOT" else _UNARY, x))
                continue
            power = _BINARY[x.value]
            # `**` is right-associative: nothing binds tighter, so nothing is applied before it.
            while ops and ops[-1][0] >= power and power != _POW:
                apply(vals, *ops.pop())
            ops.append((power, x))
            prev_operand = False
        while ops:
            apply(vals, *ops.pop())
        return self._done(vals[0])

    def call(self, c):
        func, _, arguments, rpar = c
        args, kws = arguments if arguments is not None else ((), ())
        return _Call(func, args, kws, self._between(func, rpar), None)

    def arguments(self, c):
        args, kws = [], []
        for x in c:
            if x.__class__ is Token:
                continue
            value, kw_name, span = x
            if kw_name is None:
                if kws:
                    self._fail("E009", "a positional argument cannot follow a keyword argument", value.span)
                args.append(value)
            else:
                if any(k.name == kw_name for k in kws):
                    self._fail("E009", f"keyword argument '{kw_name}' is given twice", span)
                kws.append(_Keyword(kw_name, value, span))
        return tuple(args), tuple(kws)

    def argument(self, c):
        first, _, value = c
        if value is None:
            return (first, None, None)
        span = self._between(first, value)
        if not isinstance(first, n.Name):
            self._fail("E009", "the name before '=' in a call must be a plain name", first.span,
                       hint="to compare, write '=='")
            return (value, None, span)
        return (value, first.id, span)

    def subscript(self, c):
        value, _, indices, rsqb = c
        return _Subscript(value, indices, self._between(value, rsqb), None)

    def subscripts(self, c):
        return tuple(x for x in c if x.__class__ is not Token)

    def slice(self, c):
        lower, colon, upper, colon2, step = c
        parts = [x for x in c if x is not None]
        return n.Slice(lower, upper, step, span=self._between(parts[0], parts[-1]))

    def attribute(self, c):
        value, _, attr = c
        return _Attribute(value, attr.value, self._between(value, attr), None)


_REL_DOT = object()


_U64_DIGITS = (len(str(2**64 - 1)), len(f"{2**64 - 1:x}"))


def _int_literal(text: str) -> int | None:
    """The value of a decimal or hexadecimal literal (underscores removed), or None when it is
    beyond the largest u64; the digits are counted first, so no literal is too long for int()."""
    hexadecimal = text[:2] in ("0x", "0X")
    digits = text[2:].lstrip("0") if hexadecimal else text
    if len(digits) > _U64_DIGITS[hexadecimal]:
        return None
    value = int(digits or "0", 16 if hexadecimal else 10)
    return value if value <= 2**64 - 1 else None


def _base_name(target) -> str | None:
    """The name a tuple assignment's target writes: `a`, or `A` of `A[i]`."""
    while isinstance(target, n.Subscript):
        target = target.value
    return target.id if isinstance(target, n.Name) else None


def _mentions(node, name) -> bool:
    """Whether the expression `node` reads the name `name`."""
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, n.Name) and x.id == name:
            return True
        if isinstance(x, tuple):
            stack.extend(x)
        elif hasattr(type(x), "__slots__"):
            stack.extend(getattr(x, f) for f in type(x).__slots__ if f not in ("span", "ty"))
    return False
