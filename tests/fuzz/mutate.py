"""Mutations of the examples and the std sources (stdlib/*.tl), token-level and aware of
the program's structure, extending tests/test_fuzz.py's: literals swapped for extreme ones,
names renamed consistently (so the program stays valid) to C/CUDA reserved words, dtypes
swapped, expressions nested deeply, huge constants, hostile comments (\\r, \\, form feeds,
`*/`, `??/`, non-ASCII).  `mutate(seed)` -> (the source's name, the mutated text)."""
from __future__ import annotations

import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "examples").glob("*.tl")) + sorted((ROOT / "stdlib").glob("*.tl"))
TEXTS = {f"{p.parent.name}/{p.name}": p.read_text(encoding="utf-8") for p in SOURCES}

RESERVED = ["int", "float", "half", "double", "char", "void", "class", "template", "namespace", "struct", "union",
            "register", "volatile", "auto", "new", "delete", "this", "typename", "operator", "static", "extern",
            "inline", "switch", "case", "default", "goto", "sizeof", "signed", "unsigned", "long", "short",
            "stream", "INFINITY", "NAN", "NULL", "EOF", "expf", "powf", "exp2f", "sqrtf", "tanhf", "malloc", "size_t",
            "int32_t", "uint8_t", "cudaStream_t", "threadIdx", "blockIdx", "blockDim", "warpSize", "__syncthreads",
            "main", "std", "half2", "nv_bfloat16", "launch_matmul", "tl", "dim3", "__shared__", "asm", "printf",
            "int_", "half_", "x_", "_", "__x", "i", "bx", "A", "T", "N", "acc", "ä", "x\u00e9", "\u65e5\u672c"]
NAMES = ["x", "A", "B", "C", "acc", "As", "bx", "by", "i", "j", "k", "M", "N", "K", "BM", "BK", "T", "f32", "f16",
         "i32", "const", "dtype", "parallel", "range", "copy", "gemm", "fragment", "shared", "exp", "gelu", "matmul"]
EXTREME = ["0", "-1", "1", "2", "3", "7", "-0.0", "0.0", "1e308", "1e-320", "-1e30", "3.4e38", "65504.0", "2147483647",
           "2147483648", "-2147483648", "4294967296", "9223372036854775807", "9223372036854775808", "2 ** 31",
           "2 ** 40", "2 ** 63", "(1 << 62)", "10 ** 30", "0x7fffffff", "0xffffffff", "1_000_000", "4097", "65536",
           "100000000", "True", "False", "-(2 ** 31)", "1 // 0", "1 % 0", "cdiv(1, 0)", "(-5)", "9" * 40, "9" * 5000,
           "1e-45", "1.0e400", "0.1", "255", "256", "-128"]
DTYPES = ["f16", "bf16", "f32", "f64", "i8", "u8", "i16", "i32", "i64", "u32", "u64", "bool", "f8e4m3", "f8e5m2"]
COMMENTS = ["# ends in a backslash \\", "# cr\r#define ys xs", "# form\ffeed", "# */ closes", "# ??/", "# \u00fcber \u65e5\u672c",
            "# \\\r\n", "#\r", "# \t\v", "# \u2028 line separator", "# \x00", "# \ufeff bom", "# \" ' `"]
TOKENS = [" + 1", " * 0", " - x", "(", ")", "[", "]", ",", ":", " if x else ", "\\\n", "\t", ";", "@", ".T", " ** 2",
          " // 0", " % 0", "[0]", "[:, 0]", "[0:1]", "not ", " and ", " or ", " << 40", " >> 70", "..."]

WORD = re.compile(r"\b[A-Za-z_]\w*\b")
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d*)?(?:e-?\d+)?\b")
KEYWORDS = {"def", "return", "for", "in", "if", "elif", "else", "with", "as", "from", "import", "and", "or", "not",
            "pass", "break", "continue", "True", "False", "None", "kernel", "tile_op", "fuse", "autotune", "const",
            "dtype", "grid", "threads"}


def _defined_names(text: str) -> list[str]:
    """Names the program defines: parameters, assignment targets, loop variables, functions."""
    names = set(re.findall(r"(\w+)\s*:\s*(?:const|dtype|[A-Za-z]\w*\[|f\d+|i\d+|u\d+|bool)", text))
    names |= set(re.findall(r"^\s*(\w+)\s*=", text, re.M))
    names |= set(re.findall(r"\bfor\s+(\w+)(?:\s*,\s*(\w+))?", text)[0] if re.search(r"\bfor\s+\w", text) else ())
    names |= set(re.findall(r"\bdef\s+(\w+)", text))
    names |= set(re.findall(r"\bas\s+\(?(\w+)", text))
    return sorted(n for n in names if n and n not in KEYWORDS)


def _rename_everywhere(text: str, old: str, new: str) -> str:
    return re.sub(rf"\b{re.escape(old)}\b", lambda m: new, text)


def _mutate_once(r: random.Random, text: str) -> str:
    lines = text.split("\n")
    i = r.randrange(len(lines))
    kind = r.choice(["delete", "duplicate", "swap", "insert", "indent", "dedent", "rename_one",
                     "rename_all", "rename_all", "reserved_all", "reserved_all", "literal", "literal", "literal",
                     "dtype_all", "nest", "long_expr", "comment", "comment", "const_default", "non_ascii"])
    if kind == "delete" and len(lines) > 1:
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    elif kind == "swap":
        j = r.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "insert":
        col = r.randint(0, len(lines[i]))
        lines[i] = lines[i][:col] + r.choice(TOKENS) + lines[i][col:]
    elif kind == "indent":
        lines[i] = r.choice([" ", "    ", "\t", "  \t"]) + lines[i]
    elif kind == "dedent":
        lines[i] = lines[i][r.randint(1, 4):]
    elif kind == "rename_one":
        words = list(WORD.finditer(lines[i]))
        if words:
            w = r.choice(words)
            lines[i] = lines[i][:w.start()] + r.choice(NAMES + RESERVED) + lines[i][w.end():]
    elif kind in ("rename_all", "reserved_all"):
        names = _defined_names(text)
        if names:
            old = r.choice(names)
            new = r.choice(RESERVED if kind == "reserved_all" else NAMES + [old + "_", "_" + old, old.upper()])
            return _rename_everywhere(text, old, new)
    elif kind == "literal":
        nums = list(NUMBER.finditer(text))
        if nums:
            m = r.choice(nums)
            return text[:m.start()] + r.choice(EXTREME) + text[m.end():]
    elif kind == "dtype_all":
        present = [d for d in DTYPES if re.search(rf"\b{d}\b", text)]
        if present:
            return _rename_everywhere(text, r.choice(present), r.choice(DTYPES))
    elif kind == "nest":
        m = re.search(r"=\s*(.+)$", lines[i])
        if m and ":" not in m.group(1)[-1:]:
            depth = r.choice([2, 10, 60, 200, 400, 1000])
            lines[i] = lines[i][:m.start(1)] + "(" * depth + m.group(1) + ")" * depth
    elif kind == "long_expr":
        m = re.search(r"=\s*(.+)$", lines[i])
        if m and ":" not in m.group(1)[-1:]:
            terms = r.choice([10, 100, 260, 600, 2000])
            lines[i] = lines[i][:m.start(1)] + m.group(1) + r.choice([" + 0", " * 1", " - 0.0"]) * terms
    elif kind == "comment":
        col = len(lines[i])
        if r.random() < 0.5:
            lines[i] = lines[i] + "  " + r.choice(COMMENTS)
        else:
            indent = re.match(r"\s*", lines[i]).group(0)
            lines.insert(i, indent + r.choice(COMMENTS))
        del col
    elif kind == "const_default":
        consts = list(re.finditer(r"(\w+\s*:\s*const\s*=\s*)([^,)\n]+)", text))
        if consts:
            m = r.choice(consts)
            return text[:m.start(2)] + r.choice(EXTREME) + text[m.end(2):]
    elif kind == "non_ascii":
        col = r.randint(0, len(lines[i]))
        lines[i] = lines[i][:col] + r.choice(["\u00e9", "\u65e5", "\u200b", "\ufeff", "\u2028", "\x0c", "\r", "\x00",
                                              "\U0001f600", "\u0391"]) + lines[i][col:]
    return "\n".join(lines)


EXPRESSION_NODES = ("Name", "Constant", "BinOp", "UnaryOp", "BoolOp", "Compare", "IfExp", "Call", "Subscript",
                    "Attribute")
WRAPS = ["({e})", "-({e})", "not ({e})", "cast({e}, f16)", "f32({e})", "i32({e})", "({e}).T", "({e})[0]",
         "({e}) @ ({e})", "sum({e}, axis=1)", "where({e}, {e}, {e})", "({e}) if ({e}) else ({e})", "exp({e})",
         "({e}) ** ({e})", "({e}) // 0", "({e}) << 63", "cdiv({e}, {e})", "max({e})", "inf({e})", "{e}.x", "{e}(1)",
         "[{e}]", "({e}, {e})", "shared({e})", "({e})[1:0]"]
_PARSED: dict = {}


def _nodes(node, out: list) -> list:
    """Every parsed node under `node` with a span (dataclass fields, tuples), walked with a
    stack: a mutant may nest deeper than Python's recursion limit."""
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(reversed(x))
        elif hasattr(x, "__dataclass_fields__"):
            if getattr(x, "span", None) is not None:
                out.append(x)
            stack.extend(getattr(x, f) for f in reversed(x.__dataclass_fields__) if f != "span")
    return out


def _structured(r: random.Random, text: str) -> str | None:
    """A mutation at a parsed expression or statement: an expression replaced by another of the
    program's, wrapped in an operation that may not type, or made a literal; a statement
    wrapped in a block (if, for, parallel, grid) or copied elsewhere.  None when the text does
    not parse (a mutant of a mutant) or nothing fits."""
    from tlc.diagnostics import DiagnosticError
    from tlc.parser import parse

    if text not in _PARSED:
        try:
            _PARSED[text] = _nodes(parse(text, "m.tl"), [])
        except DiagnosticError:
            _PARSED[text] = []
        if len(_PARSED) > 64:
            _PARSED.pop(next(iter(_PARSED)))
    nodes = [x for x in _PARSED[text] if x.span.line == x.span.end_line]
    lines = text.split("\n")
    exprs = [x for x in nodes if type(x).__name__ in EXPRESSION_NODES]
    stmts = [x for x in nodes if type(x).__name__ in ("Assign", "AugAssign", "ExprStmt")]
    if not exprs:
        return None

    def source(x) -> str:
        return lines[x.span.line - 1][x.span.col - 1:x.span.end_col - 1]

    if stmts and r.random() < 0.3:
        st = r.choice(stmts)
        i = st.span.line - 1
        indent = re.match(r"\s*", lines[i]).group(0)
        head = r.choice(["if True:", "if False:", "for _q in range(2):", "for _q in parallel(4):",
                         "for _q in pipelined(2, stages=2):", "for _q in unroll(3):", "with grid(1, threads=32) as _b:",
                         "else:", "def _f(a: f32) -> f32:"])
        if r.random() < 0.3:  # the statement copied to another place instead
            j = r.randrange(len(lines))
            lines.insert(j, re.match(r"\s*", lines[j]).group(0) + lines[i].strip())
        else:
            lines[i:i + 1] = [indent + head, indent + "    " + lines[i].strip()]
        return "\n".join(lines)
    x = r.choice(exprs)
    i, a, b = x.span.line - 1, x.span.col - 1, x.span.end_col - 1
    k = r.random()
    if k < 0.35:
        new = source(r.choice(exprs))
    elif k < 0.75:
        new = r.choice(WRAPS).format(e=source(x))
    else:
        new = r.choice(EXTREME)
    lines[i] = lines[i][:a] + new + lines[i][b:]
    return "\n".join(lines)


def mutate(seed: int) -> tuple[str, str]:
    """(the source mutated, its text after 1 to 4 mutations), all drawn from `seed`."""
    r = random.Random(seed)
    name = r.choice(sorted(TEXTS))
    text = TEXTS[name]
    for _ in range(r.choice([1, 1, 2, 3, 4])):
        text = (r.random() < 0.4 and _structured(r, text)) or _mutate_once(r, text)
    return name, text
