"""The names the language provides, grouped by how they are used."""

MATH_FLOAT = frozenset({"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "fast_tanh", "sigmoid", "erf",
                        "sin", "cos"})
MATH_SAME = frozenset({"abs", "floor", "ceil", "round"})
TILE_STATEMENTS = frozenset({"copy", "gemm", "fill", "clear", "reduce_sum", "reduce_max", "reduce_min",
                             "reduce_absmax", "atomic_add", "atomic_max", "atomic_min", "sync", "print"})
ALLOCATORS = frozenset({"shared", "fragment", "local"})
LOOPS = frozenset({"range", "unroll", "pipelined", "parallel"})
REDUCTIONS_TILE_OP = frozenset({"sum", "mean", "softmax"})
DECORATORS = frozenset({"kernel", "tile_op", "fuse", "autotune"})
