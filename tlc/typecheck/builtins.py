"""The names the language provides, grouped by how they are used."""
from ..dtypes import lookup

MATH_FLOAT = frozenset({"exp", "exp2", "log", "log2", "log1p", "sqrt", "rsqrt", "tanh", "fast_tanh", "fast_exp2", "sigmoid",
                        "erf", "sin", "cos", "tan", "atan", "asinh",
                        "atanh", "asin", "acos", "acosh", "expm1"})
MATH_SAME = frozenset({"abs", "floor", "ceil", "round"})
TILE_STATEMENTS = frozenset({"copy", "gemm", "fill", "clear", "reduce_sum", "reduce_max", "reduce_min",
                             "reduce_absmax", "atomic_add", "atomic_max", "atomic_min", "sync", "print",
                             "device_assert", "cumsum", "cumprod", "cummax", "cummin", "im2col"})
ALLOCATORS = frozenset({"shared", "fragment", "local"})
LOOPS = frozenset({"range", "unroll", "pipelined", "parallel", "persistent"})
REDUCTIONS_TILE_OP = frozenset({"sum", "mean", "softmax"})
# whole tensors a tile op builds from its sizes alone: NumPy's tri(N, M, k), j <= i + k
TENSORS_TILE_OP = frozenset({"tri"})
DECORATORS = frozenset({"kernel", "tile_op", "fuse", "autotune"})
# TileLang's names for builtins tlc spells otherwise: the same function under both names
ALIASES = {"if_then_else": "where", "infinity": "inf", "ceildiv": "cdiv"}
# builtins a TileLang port reaches for, checked in porting.py
PORTING_BUILTINS = frozenset(ALIASES) | frozenset({"reinterpret", "max_value", "min_value", "thread_index",
                                                   "get_thread_binding"})
# performance hints: statements at the top of a grid block, honoured or noted as ignored (porting.py)
HINTS = frozenset({"use_swizzle", "annotate_layout"})
# a tensor parameter seen with another shape (views.py); assigned to a name, never a value
VIEWS = frozenset({"view"})
# every name above that code can mention, and min, max, ...
BUILTIN_VALUES = (MATH_FLOAT | MATH_SAME | frozenset({"min", "max", "clamp", "pow", "fmod", "atan2", "where", "cdiv", "cast", "inf"})
                  | REDUCTIONS_TILE_OP | TENSORS_TILE_OP | TILE_STATEMENTS | ALLOCATORS | LOOPS | PORTING_BUILTINS | HINTS | VIEWS | {"grid"})


def is_language_name(name: str) -> bool:
    """A name the language gives a meaning in code: a statement, loop, allocator, builtin
    function or dtype."""
    return name in BUILTIN_VALUES or lookup(name) is not None
