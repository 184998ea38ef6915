"""Lark tree -> AST.  One method per grammar rule; each builds one node with its span.

Errors that the grammar cannot express (a call as an assignment target, a parameter with no
type) are raised here as diagnostics with the construct's span.
"""
from __future__ import annotations

import ast as pyast
import warnings
from dataclasses import replace

from lark import Token, Transformer, Tree, v_args

from ..diagnostics import Diagnostic, Span
from . import nodes as n


class SyntaxDiagnostic(Exception):
    def __init__(self, diagnostic: Diagnostic):
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def _flatten(items):
    """Children of a statement list: inlined rules leave nested lists and None placeholders."""
    out = []
    for it in items:
        if it is None:
            continue
        if isinstance(it, list):
            out.extend(_flatten(it))
        else:
            out.append(it)
    return out


@v_args(meta=True)
class ToAst(Transformer):
    def __init__(self, path: str):
        super().__init__(visit_tokens=False)
        self.path = path

    # ---- helpers -----------------------------------------------------------------------
    def _span(self, meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.path, 1, 1, 1, 2)
        return Span(self.path, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tok_span(self, tok: Token) -> Span:
        return Span(self.path, tok.line, tok.column, tok.end_line, tok.end_column)

    def _error(self, code: str, message: str, span: Span, hint: str | None = None):
        raise SyntaxDiagnostic(Diagnostic(code, message, span, hint))

    def to_type(self, e) -> n.TypeExpr:
        """A type annotation is parsed as an expression, then read as a type here."""
        if isinstance(e, n.Name):
            return n.TypeExpr(e.id, None, span=e.span)
        if isinstance(e, n.Subscript) and isinstance(e.value, n.Name):
            for d in e.indices:
                if isinstance(d, n.Slice):
                    self._error("E005", "a tensor dimension cannot be a slice", d.span)
            return n.TypeExpr(e.value.id, e.indices, span=e.span)
        self._error("E005", "expected a type such as 'f32', 'const', 'dtype' or 'f16[M, K]'", e.span)

    # ---- module --------------------------------------------------------------------------
    def start(self, meta, items):
        items = _flatten(items)
        imports = tuple(i for i in items if isinstance(i, n.Import))
        consts = tuple(i for i in items if isinstance(i, n.ConstDecl))
        funcs = tuple(i for i in items if isinstance(i, n.FunctionDef))
        return n.Module(self.path, imports, consts, funcs, span=self._span(meta))

    def import_stmt(self, meta, items):
        level, module = items[0]
        return n.Import(module, level, tuple(items[1:]), span=self._span(meta))

    def module_path(self, meta, items):
        level = sum(1 for i in items if isinstance(i, Tree) or i == "rel_dot")
        names = [str(i) for i in items if isinstance(i, Token)]
        return (level, ".".join(names))

    def rel_dot(self, meta, items):
        return "rel_dot"

    def import_name(self, meta, items):
        alias = str(items[1]) if len(items) > 1 and items[1] is not None else None
        return n.ImportName(str(items[0]), alias, span=self._span(meta))

    def const_decl(self, meta, items):
        name, annot, value = items
        ty = self.to_type(annot) if annot is not None else None
        return n.ConstDecl(str(name), ty, value, span=self._span(meta))

    # ---- functions -------------------------------------------------------------------------
    def decorated(self, meta, items):
        *decorators, func = items
        return replace(func, decorators=tuple(decorators), span=self._span(meta))

    def decorator(self, meta, items):
        name, arguments = items
        args, kws = arguments if arguments is not None else (None, ())
        return n.Decorator(name, args, kws, span=self._span(meta))

    def decorator_args(self, meta, items):
        return items[0] if items[0] is not None else ((), ())

    def dotted_name(self, meta, items):
        return ".".join(str(i) for i in items)

    def funcdef(self, meta, items):
        name, params, returns, body = items
        return n.FunctionDef(str(name), tuple(params or ()),
                             self.to_type(returns) if returns is not None else None,
                             body, span=self._span(meta), name_span=self._tok_span(name))

    def parameters(self, meta, items):
        return [p for p in items if p is not None]

    def param(self, meta, items):
        name, annot, default = items
        span = self._span(meta)
        if annot is None:
            self._error("E006", f"parameter '{name}' needs a type", span,
                        hint=f"write '{name}: f32', '{name}: f16[M, K]', '{name}: const = 64' or '{name}: dtype = f16'")
        return n.Param(str(name), self.to_type(annot), default, span=span)

    def suite(self, meta, items):
        return tuple(_flatten(items))

    def nested_def(self, meta, items):
        f = items[0]
        self._error("E007", f"function '{f.name}' is defined inside another function", f.name_span,
                    hint="define device functions, kernels and tile ops at the top level of the file")

    # ---- statements ------------------------------------------------------------------------
    def _target(self, e, op: str = "="):
        if isinstance(e, (n.Name, n.Subscript)):
            return e
        self._error("E008", "cannot assign to this expression", e.span,
                    hint=f"the left side of '{op}' must be a name or an element such as 'x[i, j]'")

    def expr_stmt(self, meta, items):
        return n.ExprStmt(items[0], span=self._span(meta))

    def assign(self, meta, items):
        return n.Assign(self._target(items[0]), items[1], None, span=self._span(meta))

    def annassign(self, meta, items):
        target = items[0]
        if not isinstance(target, n.Name):
            self._error("E008", "only a plain name can have a type annotation", target.span)
        return n.Assign(target, items[2], self.to_type(items[1]), span=self._span(meta))

    def augassign(self, meta, items):
        target, op, value = items
        return n.AugAssign(self._target(target, str(op)), str(op)[:-1], value, span=self._span(meta))

    def pass_stmt(self, meta, items):
        return n.Pass(span=self._span(meta))

    def break_stmt(self, meta, items):
        return n.Break(span=self._span(meta))

    def continue_stmt(self, meta, items):
        return n.Continue(span=self._span(meta))

    def return_stmt(self, meta, items):
        return n.Return(items[0], span=self._span(meta))

    def if_stmt(self, meta, items):
        test, body, *rest = items
        orelse = rest[-1] if rest and rest[-1] is not None else ()
        for elif_test, elif_body, elif_span in reversed(rest[:-1]):
            orelse = (n.If(elif_test, elif_body, orelse, span=elif_span),)
        return n.If(test, body, orelse, span=self._span(meta))

    def elif_clause(self, meta, items):
        return (items[0], items[1], self._span(meta))

    def else_clause(self, meta, items):
        return items[0]

    def for_stmt(self, meta, items):
        *names, it, body = items
        targets = tuple(n.Name(str(t), span=self._tok_span(t)) for t in names)
        return n.For(targets, it, body, span=self._span(meta))

    def with_stmt(self, meta, items):
        ctx, *names, body = items
        targets = tuple(n.Name(str(t), span=self._tok_span(t)) for t in names)
        return n.With(ctx, targets, body, span=self._span(meta))

    # ---- expressions -----------------------------------------------------------------------
    def name(self, meta, items):
        return n.Name(str(items[0]), span=self._span(meta))

    def int_lit(self, meta, items):
        return n.Constant(int(str(items[0]).replace("_", ""), 0), span=self._span(meta))

    def float_lit(self, meta, items):
        return n.Constant(float(str(items[0]).replace("_", "")), span=self._span(meta))

    def str_lit(self, meta, items):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                value = pyast.literal_eval(str(items[0]))
            except (ValueError, SyntaxError):
                self._error("E002", "invalid escape sequence in string", self._span(meta))
        return n.Constant(value, span=self._span(meta))

    def true_lit(self, meta, items):
        return n.Constant(True, span=self._span(meta))

    def false_lit(self, meta, items):
        return n.Constant(False, span=self._span(meta))

    def tuple(self, meta, items):
        return n.TupleExpr(tuple(i for i in items if i is not None), span=self._span(meta))

    def list(self, meta, items):
        return n.ListExpr(tuple(i for i in items if i is not None), span=self._span(meta))

    def ternary(self, meta, items):
        body, test, orelse = items
        return n.IfExp(test, body, orelse, span=self._span(meta))

    def or_test(self, meta, items):
        return n.BoolOp("or", tuple(items), span=self._span(meta))

    def and_test(self, meta, items):
        return n.BoolOp("and", tuple(items), span=self._span(meta))

    def not_op(self, meta, items):
        return n.UnaryOp("not", items[0], span=self._span(meta))

    def comparison(self, meta, items):
        operands, ops = items[0::2], items[1::2]
        return n.Compare(tuple(str(o) for o in ops), tuple(operands), span=self._span(meta))

    def _left_assoc(self, items):
        left = items[0]
        for op, right in zip(items[1::2], items[2::2]):
            left = n.BinOp(str(op), left, right, span=left.span.to(right.span))
        return left

    def _binary_with_op(op):
        def method(self, meta, items):
            left = items[0]
            for right in items[1:]:
                left = n.BinOp(op, left, right, span=left.span.to(right.span))
            return left
        return method

    bit_or = _binary_with_op("|")
    bit_xor = _binary_with_op("^")
    bit_and = _binary_with_op("&")

    def shift(self, meta, items):
        return self._left_assoc(items)

    arith = shift
    term = shift

    def unary(self, meta, items):
        op, operand = items
        return n.UnaryOp(str(op), operand, span=self._span(meta))

    def power(self, meta, items):
        return n.BinOp("**", items[0], items[1], span=self._span(meta))

    def call(self, meta, items):
        func, arguments = items
        args, kws = arguments if arguments is not None else ((), ())
        return n.Call(func, args, kws, span=self._span(meta))

    def arguments(self, meta, items):
        args, kws = [], []
        for value, kw_name, span in items:
            if kw_name is None:
                if kws:
                    self._error("E009", "a positional argument cannot follow a keyword argument", value.span)
                args.append(value)
            else:
                if any(k.name == kw_name for k in kws):
                    self._error("E009", f"keyword argument '{kw_name}' is given twice", span)
                kws.append(n.Keyword(kw_name, value, span=span))
        return tuple(args), tuple(kws)

    def argument(self, meta, items):
        first, value = items
        if value is None:
            return (first, None, self._span(meta))
        if not isinstance(first, n.Name):
            self._error("E009", "the name before '=' in a call must be a plain name", first.span,
                        hint="to compare, write '=='")
        return (value, first.id, self._span(meta))

    def subscript(self, meta, items):
        value, indices = items
        return n.Subscript(value, tuple(indices), span=self._span(meta))

    def subscripts(self, meta, items):
        return [i for i in items if i is not None]

    def slice(self, meta, items):
        lower, upper, step = (items + [None, None, None])[:3]
        return n.Slice(lower, upper, step, span=self._span(meta))

    def attribute(self, meta, items):
        value, attr = items
        return n.Attribute(value, str(attr), span=self._span(meta))

