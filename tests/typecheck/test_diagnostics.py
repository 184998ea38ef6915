"""Every type-checking diagnostic, pinned to its exact rendered text (file:line:col, code,
message, source line, caret, hint).  One case per error class; a case's name starts with its code."""
from pathlib import Path

import pytest

from tlc.driver import check_source
from diagnostic_kit import rendered

ROOT = Path(__file__).resolve().parents[2]


def kernel_body(*lines: str) -> str:
    """A kernel with a 2-D tensor A, C, a scalar n and a constant BM, around `lines`."""
    head = ("@kernel\ndef k(A: f32[M, N], C: f32[M, N], n: i32, BM: const = 64):\n"
            "    with grid(cdiv(M, BM), threads=128) as bx:\n")
    return head + "".join("        " + line + "\n" for line in lines)


CASES = {
    'E020_unknown_name': (
        kernel_body('x = valeu + 1'),
        "t.tl:4:13: error[E020]: unknown name 'valeu'\n  |\n4 |         x = valeu + 1\n  |             ^^^^^",
    ),
    'E020_did_you_mean': (
        kernel_body('s = shared(f32[BM, 8])', 'clear(ss)'),
        "t.tl:5:15: error[E020]: unknown name 'ss'\n  |\n5 |         clear(ss)\n  |               ^^\n  = hint: did you mean 's'?",
    ),
    'E021_unknown_type': (
        'def f(x: f17) -> f32:\n    return 1.0\n',
        "t.tl:1:10: error[E021]: unknown type 'f17'\n  |\n1 | def f(x: f17) -> f32:\n  |          ^^^\n  = hint: did you mean 'f16'?",
    ),
    'E022_unknown_decorator': (
        '@kernal\ndef k(A: f32[N]):\n    pass\n',
        "t.tl:1:1: error[E022]: unknown decorator '@kernal'\n  |\n1 | @kernal\n  | ^^^^^^^\n  = hint: did you mean 'kernel'?",
    ),
    'E023_fuse_without_tile_op': (
        '@fuse\n@kernel\ndef k(A: f32[N]):\n    with grid(1, threads=32) as bx:\n        pass\n',
        "t.tl:1:1: error[E023]: '@fuse' applies to a @tile_op\n  |\n1 | @fuse\n  | ^^^^^\n  = hint: add @tile_op below @fuse",
    ),
    'E023_kernel_and_tile_op': (
        '@kernel\n@tile_op\ndef k(A: f32[N]) -> f32[N]:\n    return A\n',
        "t.tl:3:5: error[E023]: 'k' cannot be both a @kernel and a @tile_op\n  |\n3 | def k(A: f32[N]) -> f32[N]:\n  |     ^",
    ),
    'E024_autotune_not_const': (
        '@autotune(BX=[64, 128])\n@kernel\ndef k(A: f32[N], BM: const = 64):\n    with grid(1, threads=32) as bx:\n        pass\n',
        "t.tl:1:11: error[E024]: @autotune names 'BX', which is not a 'const' parameter of 'k'\n  |\n1 | @autotune(BX=[64, 128])\n  |           ^^^^^^^^^^^^",
    ),
    'E024_autotune_not_list': (
        '@autotune(BM=64)\n@kernel\ndef k(A: f32[N], BM: const = 64):\n    with grid(1, threads=32) as bx:\n        pass\n',
        "t.tl:1:14: error[E024]: @autotune's 'BM' must be a non-empty list of constants, e.g. [64, 128]\n  |\n1 | @autotune(BM=64)\n  |              ^^",
    ),
    'E025_duplicate_function': (
        'def f(x: f32) -> f32:\n    return x\n\ndef f(x: f32) -> f32:\n    return x\n',
        "t.tl:4:5: error[E025]: 'f' is already defined in this file\n  |\n4 | def f(x: f32) -> f32:\n  |     ^",
    ),
    'E025_duplicate_param': (
        'def f(x: f32, x: f32) -> f32:\n    return x\n',
        "t.tl:1:15: error[E025]: parameter 'x' is given twice\n  |\n1 | def f(x: f32, x: f32) -> f32:\n  |               ^^^^^^",
    ),
    'E026_no_such_std_module': (
        'from std.nothing import x\n',
        "t.tl:1:1: error[E026]: the standard library has no module 'std.nothing'\n  |\n1 | from std.nothing import x\n  | ^^^^^^^^^^^^^^^^^^^^^^^^^\n  = hint: it has: " + ", ".join(f"std.{m.stem}" for m in sorted((ROOT / "stdlib").glob("*.tl"))),
    ),
    'E026_absolute_import': (
        'from common import gelu\n',
        "t.tl:1:1: error[E026]: cannot import 'common': a module is either 'std.NAME' or relative, '.NAME'\n  |\n1 | from common import gelu\n  | ^^^^^^^^^^^^^^^^^^^^^^^\n  = hint: for a file beside this one, write 'from .common import ...'",
    ),
    'E028_missing_name': (
        'from std.math import gelx\n',
        "t.tl:1:22: error[E028]: module 'std.math' has no 'gelx'\n  |\n1 | from std.math import gelx\n  |                      ^^^^\n  = hint: did you mean 'gelu'?",
    ),
    'E029_no_grid': (
        '@kernel\ndef k(A: f32[N]):\n    pass\n',
        "t.tl:2:5: error[E029]: the kernel 'k' has no grid\n  |\n2 | def k(A: f32[N]):\n  |     ^\n  = hint: its body is one 'with grid(...) as (bx, by):' block",
    ),
    'E029_grid_in_grid': (
        '@kernel\ndef k(A: f32[N]):\n    with grid(1, threads=32) as bx:\n        with grid(1, threads=32) as by:\n            pass\n',
        "t.tl:4:14: error[E029]: a grid opens at the top of a kernel's body, not inside another block\n  |\n4 |         with grid(1, threads=32) as by:\n  |              ^^^^^^^^^^^^^^^^^^^\n  = hint: a kernel's grids run one after another: write them one below the other",
    ),
    'E029_statement_outside_grid': (
        '@kernel\ndef k(A: f32[N]):\n    for i in range(2):\n        pass\n    with grid(1, threads=32) as bx:\n        pass\n',
        "t.tl:3:5: error[E029]: statements of a kernel go inside its 'with grid(...)' block\n  |\n3 |     for i in range(2):\n  |     ^^^^^^^^^^^^^^^^^^",
    ),
    'E029_grid_in_device_fn': (
        'def f(x: f32) -> f32:\n    with grid(1, threads=32) as bx:\n        pass\n    return x\n',
        't.tl:2:10: error[E029]: a grid belongs to a @kernel; device functions and tile ops run inside one\n  |\n2 |     with grid(1, threads=32) as bx:\n  |          ^^^^^^^^^^^^^^^^^^^',
    ),
    'E290_alloc_in_parallel': (
        kernel_body('for i in parallel(4):', '    s = shared(f32[BM])'),
        "t.tl:5:17: error[E290]: shared(...) cannot be inside a 'parallel' loop: its iterations run at once on different threads, and a buffer belongs to the whole block\n  |\n5 |             s = shared(f32[BM])\n  |                 ^^^^^^^^^^^^^^^\n  = hint: allocate it before the loop (TileLang hoists every allocation to the top of the kernel)",
    ),
    'E030_alloc_not_assigned': (
        kernel_body('shared(f32[BM])'),
        "t.tl:4:9: error[E030]: shared(...) allocates a buffer; assign it to a name: 'buf = shared(...)'\n  |\n4 |         shared(f32[BM])\n  |         ^^^^^^^^^^^^^^^",
    ),
    'E031_nonconst_shape': (
        kernel_body('s = shared(f32[n, 4])'),
        "t.tl:4:24: error[E031]: a buffer dimension must be a compile-time constant; 'n' is not a constant\n  |\n4 |         s = shared(f32[n, 4])\n  |                        ^\n  = hint: use a literal, a module constant or a 'const' parameter",
    ),
    'E031_nonconst_stages': (
        kernel_body('for k in pipelined(n, stages=n):', '    pass'),
        "t.tl:4:38: error[E031]: stages must be a compile-time constant; 'n' is not a constant\n  |\n4 |         for k in pipelined(n, stages=n):\n  |                                      ^\n  = hint: use a literal, a module constant or a 'const' parameter",
    ),
    'E031_module_const': (
        'X: const = N + 1\n',
        "t.tl:1:12: error[E031]: the value of 'X' must be a compile-time constant; 'N' is not a constant\n  |\n1 | X: const = N + 1\n  |            ^",
    ),
    'E032_tensor_arith_in_kernel': (
        kernel_body('x = A + 1.0'),
        "t.tl:4:13: error[E032]: 'A' is a global tensor f32[M, N], not a value\n  |\n4 |         x = A + 1.0\n  |             ^\n  = hint: index its elements, e.g. inside a 'parallel' loop",
    ),
    'E032_bitop_on_float': (
        kernel_body('x = 1.5 & 3'),
        "t.tl:4:13: error[E032]: operator '&' is not defined for f32 and i32\n  |\n4 |         x = 1.5 & 3\n  |             ^^^^^^^\n  = hint: bit operations need integers",
    ),
    'E033_narrowing_store': (
        '@kernel\ndef k(A: f16[N], B: f32[N]):\n    with grid(1, threads=32) as bx:\n        A[bx] = B[bx]\n',
        "t.tl:4:17: error[E033]: cannot store f32 into an element of 'A' of type f16 without a cast\n  |\n4 |         A[bx] = B[bx]\n  |                 ^^^^^\n  = hint: write f16(...) or cast(..., f16) to convert explicitly",
    ),
    'E033_float_into_int': (
        kernel_body('i = 0', 'i = 0.5'),
        "t.tl:5:13: error[E033]: cannot store f32 into 'i' of type i32 without a cast\n  |\n5 |         i = 0.5\n  |             ^^^\n  = hint: write i32(...) or cast(..., i32) to convert explicitly",
    ),
    'E034_wrong_arity': (
        kernel_body('x = exp(1.0, 2.0)'),
        't.tl:4:13: error[E034]: exp() takes 1 argument, 2 given\n  |\n4 |         x = exp(1.0, 2.0)\n  |             ^^^^^^^^^^^^^',
    ),
    'E034_unknown_keyword': (
        kernel_body('s = shared(f32[BM, 8])', 't = shared(f32[BM])', 'reduce_sum(s, t, axis=1)'),
        "t.tl:6:26: error[E034]: reduce_sum() has no argument 'axis'\n  |\n6 |         reduce_sum(s, t, axis=1)\n  |                          ^^^^^^\n  = hint: it takes dim, clear",
    ),
    'E034_statement_as_value': (
        kernel_body('x = copy(A, A)'),
        't.tl:4:13: error[E034]: copy(...) is a statement and has no value\n  |\n4 |         x = copy(A, A)\n  |             ^^^^^^^^^^',
    ),
    'E035_cast_needs_dtype': (
        kernel_body('x = cast(1.0, 3)'),
        't.tl:4:23: error[E035]: the second argument of cast() must be a dtype, found i32\n  |\n4 |         x = cast(1.0, 3)\n  |                       ^',
    ),
    'E035_device_arg_type': (
        'def g(x: f16) -> f16:\n    return x\n\ndef f(y: f32) -> f32:\n    return g(y)\n',
        "t.tl:5:14: error[E035]: argument 'x' of g() is f16, but f32 was given\n  |\n5 |     return g(y)\n  |              ^\n  = hint: convert it with f16(...)",
    ),
    'E265_global_to_global_without_a_region': (
        kernel_body('copy(A, C)'),
        "t.tl:4:9: error[E265]: a copy from global to global memory takes the tile's size from a region with slices, and neither side has one\n  |\n4 |         copy(A, C)\n  |         ^^^^^^^^^^\n  = hint: each block copies its region: copy(A[bx * BM:(bx + 1) * BM, :], B[bx * BM:(bx + 1) * BM, :])",
    ),
    'E036_shape_mismatch': (
        kernel_body('s = shared(f32[BM, 8])', 't = shared(f32[BM, 16])', 'copy(s, t)'),
        't.tl:6:9: error[E036]: copy between tiles of different shapes: [BM, 8] and [BM, 16]\n  |\n6 |         copy(s, t)\n  |         ^^^^^^^^^^',
    ),
    'E037_gemm_global_operand': (
        kernel_body('f = fragment(f32[BM, BM])', 'gemm(A, A, f)'),
        't.tl:5:14: error[E037]: gemm operand a must be a shared or fragment buffer, found global tensor f32[M, N]\n  |\n5 |         gemm(A, A, f)\n  |              ^\n  = hint: copy global tiles into shared(...) first',
    ),
    'E037_gemm_inner_dims': (
        kernel_body('a = shared(f16[BM, 32])', 'b = shared(f16[16, BM])', 'c = fragment(f32[BM, BM])', 'gemm(a, b, c)'),
        't.tl:7:9: error[E037]: gemm inner dimensions differ: a is [BM, 32] and b is [16, BM]\n  |\n7 |         gemm(a, b, c)\n  |         ^^^^^^^^^^^^^\n  = hint: a is [M, K] and b is [K, N]; pass trans_a=True or trans_b=True for transposed operands',
    ),
    'E037_gemm_acc_shape': (
        kernel_body('a = shared(f16[BM, 32])', 'b = shared(f16[32, 32])', 'c = fragment(f32[BM, BM])', 'gemm(a, b, c)'),
        't.tl:7:9: error[E037]: gemm accumulator c is f32[BM, BM], but a @ b is [64, 32]\n  |\n7 |         gemm(a, b, c)\n  |         ^^^^^^^^^^^^^',
    ),
    'E038_reduce_shape': (
        kernel_body('f = fragment(f32[BM, 32])', 'm = fragment(f32[32])', 'reduce_max(f, m, dim=1)'),
        't.tl:6:9: error[E038]: reduce_max of f32[BM, 32] along dim 1 gives [BM], but the destination is f32[32]\n  |\n6 |         reduce_max(f, m, dim=1)\n  |         ^^^^^^^^^^^^^^^^^^^^^^^',
    ),
    'E038_reduce_dim_range': (
        kernel_body('f = fragment(f32[BM, 32])', 'm = fragment(f32[BM])', 'reduce_max(f, m, dim=2)'),
        't.tl:6:30: error[E038]: dim=2 is out of range for the 2-D tile f32[BM, 32]\n  |\n6 |         reduce_max(f, m, dim=2)\n  |                              ^',
    ),
    'E039_wrong_rank_index': (
        kernel_body('x = A[bx]'),
        "t.tl:4:13: error[E039]: 'A' has 2 dimensions but is indexed with 1\n  |\n4 |         x = A[bx]\n  |             ^^^^^",
    ),
    'E039_index_scalar': (
        kernel_body('x = n[0]'),
        "t.tl:4:13: error[E039]: 'n' is i32 and cannot be indexed\n  |\n4 |         x = n[0]\n  |             ^^^^",
    ),
    'E040_return_type': (
        'def f(x: f32) -> i32:\n    return x\n',
        "t.tl:2:12: error[E040]: 'f' returns i32 but this is f32\n  |\n2 |     return x\n  |            ^\n  = hint: write i32(...) to convert",
    ),
    'E040_missing_return': (
        'def f(x: f32) -> f32:\n    if x > 0.0:\n        return x\n',
        "t.tl:1:5: error[E040]: 'f' can reach its end without returning a value\n  |\n1 | def f(x: f32) -> f32:\n  |     ^",
    ),
    'E041_return_in_kernel': (
        kernel_body('return'),
        "t.tl:4:9: error[E041]: 'return' is not allowed in a kernel\n  |\n4 |         return\n  |         ^^^^^^",
    ),
    'E042_break_outside_loop': (
        kernel_body('break'),
        "t.tl:4:9: error[E042]: 'break' outside a loop\n  |\n4 |         break\n  |         ^^^^^",
    ),
    'E042_break_in_parallel': (
        kernel_body('f = fragment(f32[BM])', 'for i in parallel(BM):', '    break'),
        "t.tl:6:13: error[E042]: 'break' cannot leave a 'parallel' loop: its iterations run at once on different threads\n  |\n6 |             break\n  |             ^^^^^",
    ),
    'E043_tile_op_narrowing': (
        '@tile_op\ndef t(a: f16[M, K], b: f16[K, N]) -> f16[M, N]:\n    return a @ b\n',
        "t.tl:3:12: error[E043]: 't' returns f16 but this is f32; narrowing needs a cast\n  |\n3 |     return a @ b\n  |            ^^^^^\n  = hint: write f16(...)",
    ),
    'E043_tile_op_shape': (
        '@tile_op\ndef t(a: f32[M, K]) -> f32[M, K]:\n    return sum(a, axis=1)\n',
        "t.tl:3:12: error[E043]: 't' returns f32[M, K] but this has shape [M]\n  |\n3 |     return sum(a, axis=1)\n  |            ^^^^^^^^^^^^^^",
    ),
    'E044_dim_not_symbol': (
        '@tile_op\ndef t(a: f32[N], b: f32[N + 1]) -> f32[N]:\n    return a\n',
        "t.tl:2:25: error[E044]: 'N' is not a constant, so it cannot be part of a dimension expression\n  |\n2 | def t(a: f32[N], b: f32[N + 1]) -> f32[N]:\n  |                         ^\n  = hint: a tile op's shape symbol stands alone as a whole dimension; a kernel's may be part of an expression (K // 2)",
    ),
    'E045_dtype_no_default': (
        '@kernel\ndef k(A: f32[N], T: dtype):\n    with grid(1, threads=32) as bx:\n        pass\n',
        "t.tl:2:18: error[E045]: the dtype parameter 'T' has no default and no tensor parameter binds it\n  |\n2 | def k(A: f32[N], T: dtype):\n  |                  ^^^^^^^^\n  = hint: give it a default: T: dtype = f16",
    ),
    'E047_not_a_loop': (
        kernel_body('for i in n:', '    pass'),
        't.tl:4:18: error[E047]: a for loop runs over range(...), unroll(...), pipelined(...), parallel(...) or persistent(...)\n  |\n4 |         for i in n:\n  |                  ^',
    ),
    'E047_parallel_targets': (
        kernel_body('for i in parallel(BM, 4):', '    pass'),
        't.tl:4:9: error[E047]: parallel(...) over 2 dimensions gives 2 indices; found 1 name\n  |\n4 |         for i in parallel(BM, 4):\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^^',
    ),
    'E048_assign_param': (
        kernel_body('n = 3'),
        "t.tl:4:9: error[E048]: cannot assign to the scalar parameter 'n'\n  |\n4 |         n = 3\n  |         ^\n  = hint: assign to a new name instead",
    ),
    'E048_assign_const': (
        kernel_body('BM = 3'),
        "t.tl:4:9: error[E048]: cannot assign to the constant 'BM'\n  |\n4 |         BM = 3\n  |         ^^\n  = hint: assign to a new name instead",
    ),
    'E049_with_not_grid': (
        '@kernel\ndef k(A: f32[N]):\n    with open(1) as f:\n        pass\n',
        "t.tl:3:10: error[E049]: 'with' only opens a grid: 'with grid(gx, gy, threads=128) as (bx, by):'\n  |\n3 |     with open(1) as f:\n  |          ^^^^^^^",
    ),
    'E050_unknown_grid_argument': (
        '@kernel\ndef k(A: f32[N]):\n    with grid(1, threads=64, block=2) as bx:\n        pass\n',
        "t.tl:3:30: error[E050]: grid() has no argument 'block'\n  |\n3 |     with grid(1, threads=64, block=2) as bx:\n"
        "  |                              ^^^^^^^\n  = hint: it takes the grid dimensions, threads=, blocks_per_sm=, dequant_ring= and persistent_tiles=",
    ),
    'E050_threads_range': (
        '@kernel\ndef k(A: f32[N]):\n    with grid(1, threads=2048) as bx:\n        pass\n',
        "t.tl:3:26: error[E050]: threads must be an integer from 1 to 1024, found 2048\n  |\n"
        "3 |     with grid(1, threads=2048) as bx:\n  |                          ^^^^",
    ),
    'E050_blocks_per_sm_range': (
        '@kernel\ndef k(A: f32[N]):\n    with grid(1, threads=64, blocks_per_sm=40) as bx:\n        pass\n',
        "t.tl:3:44: error[E050]: blocks_per_sm must be an integer from 0 to 32, found 40\n  |\n"
        "3 |     with grid(1, threads=64, blocks_per_sm=40) as bx:\n  |                                            ^^\n"
        "  = hint: 0 lets the compiler choose",
    ),
    'E050_dequant_ring_not_bool': (
        '@kernel\ndef k(A: f32[N]):\n    with grid(1, threads=64, dequant_ring=2) as bx:\n        pass\n',
        "t.tl:3:43: error[E050]: dequant_ring must be True or False, found 2\n  |\n"
        "3 |     with grid(1, threads=64, dequant_ring=2) as bx:\n  |                                           ^",
    ),
    'E050_persistent_tiles_not_bool': (
        '@kernel\ndef k(A: f32[N]):\n    with grid(1, threads=64, persistent_tiles=1) as bx:\n        pass\n',
        "t.tl:3:47: error[E050]: persistent_tiles must be True or False, found 1\n  |\n"
        "3 |     with grid(1, threads=64, persistent_tiles=1) as bx:\n  |                                               ^",
    ),
    'E050_block_index_count': (
        '@kernel\ndef k(A: f32[N]):\n    with grid(1, 2, threads=64) as bx:\n        pass\n',
        't.tl:3:5: error[E050]: the grid has 2 dimensions but 1 block index is named\n  |\n3 |     with grid(1, 2, threads=64) as bx:\n  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^',
    ),
    'E051_const_without_default': (
        '@kernel\ndef k(A: f32[N], BM: const):\n    with grid(1, threads=32) as bx:\n        pass\n',
        "t.tl:2:18: error[E051]: the constant 'BM' needs a default value\n  |\n2 | def k(A: f32[N], BM: const):\n  |                  ^^^^^^^^^\n  = hint: write BM: const = 128",
    ),
    'E053_print_format': (
        kernel_body('print("%d and %f", bx)'),
        't.tl:4:9: error[E053]: the format has 2 placeholders but 1 value is given\n  |\n4 |         print("%d and %f", bx)\n  |         ^^^^^^^^^^^^^^^^^^^^^^',
    ),
    'E054_atomic_fragment': (
        kernel_body('f = fragment(f32[BM])', 'for i in parallel(BM):', '    atomic_add(f[i], 1.0)'),
        't.tl:6:24: error[E054]: atomic_add updates an element of a global or shared tensor, not of a fragment buffer\n  |\n6 |             atomic_add(f[i], 1.0)\n  |                        ^^^^',
    ),
    'E055_call_kernel': (
        '@kernel\ndef k(A: f32[N]):\n    with grid(1, threads=32) as bx:\n        pass\n\ndef f(x: f32) -> f32:\n    k(x)\n    return x\n',
        't.tl:7:5: error[E055]: a kernel cannot be called from .tl code\n  |\n7 |     k(x)\n  |     ^^^^\n  = hint: kernels and tile ops are launched from Python or the CLI; share code through device functions',
    ),
    'E056_recursion': (
        'def f(x: f32) -> f32:\n    return f(x - 1.0)\n',
        't.tl:2:12: error[E056]: device functions are inlined and cannot call themselves: f -> f\n  |\n2 |     return f(x - 1.0)\n  |            ^^^^^^^^^^',
    ),
    'E057_broadcast': (
        '@tile_op\ndef t(a: f32[M, K], b: f32[N]) -> f32[M, K]:\n    return a + b\n',
        't.tl:3:12: error[E057]: shapes [M, K] and [N] do not broadcast\n  |\n3 |     return a + b\n  |            ^^^^^\n  = hint: dimensions must be equal, or one of them 1',
    ),
    'E058_matmul_rank': (
        '@tile_op\ndef t(a: f32[M, K], b: f32[K]) -> f32[M, K]:\n    return a @ b\n',
        "t.tl:3:12: error[E058]: '@' needs two matrices, found f32[M, K] and f32[K]\n  |\n3 |     return a @ b\n  |            ^^^^^",
    ),
    'E060_copy_in_device_fn': (
        'def f(x: f32) -> f32:\n    sync()\n    return x\n',
        "t.tl:2:5: error[E060]: sync(...) is only allowed inside a kernel's grid block\n  |\n2 |     sync()\n  |     ^^^^^^",
    ),
    'E060_copy_in_parallel': (
        kernel_body('s = shared(f32[BM])', 'for i in parallel(BM):', '    clear(s)'),
        "t.tl:6:13: error[E060]: clear(...) works on whole tiles and cannot be inside a 'parallel' loop\n  |\n6 |             clear(s)\n  |             ^^^^^^^^\n  = hint: inside a parallel loop, read and write single elements",
    ),
    'E061_nonpositive_buffer': (
        kernel_body('s = shared(f32[BM - 64])'),
        't.tl:4:24: error[E061]: a buffer dimension must be a positive integer, found 0\n  |\n4 |         s = shared(f32[BM - 64])\n  |                        ^^^^^^^',
    ),
    'E062_device_tensor_param': (
        'def f(x: f32[N]) -> f32:\n    return 1.0\n',
        't.tl:1:7: error[E062]: device function parameters are scalars; pass elements, not tensors\n  |\n1 | def f(x: f32[N]) -> f32:\n  |       ^^^^^^^^^',
    ),
    'E063_useless_expression': (
        kernel_body('bx + 1'),
        't.tl:4:9: error[E063]: this expression is computed and thrown away\n  |\n4 |         bx + 1\n  |         ^^^^^^\n  = hint: assign it to a name, or remove it',
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_diagnostic_text(name):
    src, expected = CASES[name]
    assert rendered(src) == expected


def test_at_least_twenty_distinct_codes():
    codes = {name.split("_")[0] for name in CASES}
    assert len(codes) >= 20, codes


def test_case_names_match_their_first_code():
    for name, (src, _) in CASES.items():
        r = check_source(src, "t.tl")
        assert r.diagnostics[0].code == name.split("_")[0], name
