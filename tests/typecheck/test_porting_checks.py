"""The checker on what a TileLang port brings (issue 20, items 3, 8 and 10): TileLang's names
for builtins (if_then_else, infinity, ceildiv), `buf.dtype`, clamp, reinterpret, max_value /
min_value, the thread index, tile-level atomics, `while`, and the performance hints.  Each
wrong use has its exact diagnostic; the right uses check clean."""
import pytest

from tlc.diagnostics import render_all
from tlc.driver import check_source

HEAD = ("@kernel\ndef k(A: f32[M, N], U: u32[M, N], H: f16[M, N], BM: const = 16):\n"
        "    with grid(cdiv(M, BM), threads=64) as bx:\n"
        "        acc = fragment(f32[BM, BM])\n"
        "        s = shared(f32[BM, BM])\n"
        "        loc = local(f32[4])\n")


def rendered(*body: str) -> str:
    src = HEAD + "".join("        " + line + "\n" for line in body)
    r = check_source(src, "t.tl")
    return render_all(r.diagnostics, r.sources)


CASES = {
    'E220': (
        ['x = reinterpret(1.5, f16)'],
        't.tl:7:13: error[E220]: reinterpret() keeps the bits, so both dtypes have one width: f32 is 32 bits, f16 is 16\n  |\n7 |         x = reinterpret(1.5, f16)\n  |             ^^^^^^^^^^^^^^^^^^^^^\n  = hint: to convert the value, write cast(x, f16); f32 reinterprets as i32, u32',
    ),
    'E220lit': (
        ['x = reinterpret(0x1FFFFFFFF, f32)'],
        't.tl:7:25: error[E220]: reinterpret() to f32 takes 32 bits; this literal does not fit in them\n  |\n7 |         x = reinterpret(0x1FFFFFFFF, f32)\n  |                         ^^^^^^^^^^^',
    ),
    'E221': (
        ['x = reinterpret(True, u8)'],
        "t.tl:7:25: error[E221]: reinterpret() does not take bool: a bool's bits are not a number's\n  |\n7 |         x = reinterpret(True, u8)\n  |                         ^^^^\n  = hint: compare instead: x != 0, or convert: u8(flag)",
    ),
    'E222': (
        ['t = get_thread_binding(1)'],
        't.tl:7:32: error[E222]: a tlc block has one dimension of threads; get_thread_binding(1) names another\n  |\n7 |         t = get_thread_binding(1)\n  |                                ^\n  = hint: write get_thread_binding() or thread_index(), 0 to threads - 1',
    ),
    'E223': (
        ['for i, j in parallel(BM, BM):', '    acc[i, j] = f32(thread_index())'],
        "t.tl:8:29: error[E223]: thread_index() is read outside parallel loops in a kernel's grid block; inside a parallel loop, which thread runs which index is the compiler's choice\n  |\n8 |             acc[i, j] = f32(thread_index())\n  |                             ^^^^^^^^^^^^^^\n  = hint: use the parallel loop's indices",
    ),
    'E224': (
        ['t = thread_index()', 'for i, j in parallel(BM, BM):', '    acc[i, j] = f32(t)'],
        "t.tl:9:29: error[E224]: 't' depends on the thread index, which a parallel loop does not see: which thread runs which index is the compiler's choice\n  |\n9 |             acc[i, j] = f32(t)\n  |                             ^\n  = hint: use the loop's indices, or compute the value outside thread-dependent code",
    ),
    'E225': (
        ['t = thread_index()', 'if t < 32:', '    copy(A[bx * BM, 0], s)'],
        "t.tl:9:13: error[E225]: copy(...) runs in all the block's threads together, but here it depends on the thread index\n  |\n9 |             copy(A[bx * BM, 0], s)\n  |             ^^^^^^^^^^^^^^^^^^^^^^\n  = hint: compute per thread with scalars and element stores; keep tile statements and parallel loops outside code that depends on thread_index()",
    ),
    'E225b': (
        ['t = thread_index()', 'copy(A[t, 0], s)'],
        "t.tl:8:9: error[E225]: copy(...) runs in all the block's threads together, but here it depends on the thread index\n  |\n8 |         copy(A[t, 0], s)\n  |         ^^^^^^^^^^^^^^^^\n  = hint: compute per thread with scalars and element stores; keep tile statements and parallel loops outside code that depends on thread_index()",
    ),
    'E226': (
        ['t = thread_index()', 'loc[0] = f32(t)'],
        "t.tl:8:9: error[E226]: a local buffer written in code that depends on the thread index: tlc models local buffers per parallel index, not per thread\n  |\n8 |         loc[0] = f32(t)\n  |         ^^^^^^^^^^^^^^^\n  = hint: keep the per-thread value in a scalar, or write it into a shared buffer at the thread's index",
    ),
    'E227': (
        ['gemm(s, s, acc, policy=GemmWarpPolicy.Diagonal)'],
        "t.tl:7:32: error[E227]: gemm policy must be GemmWarpPolicy.Square, .FullRow or .FullCol\n  |\n7 |         gemm(s, s, acc, policy=GemmWarpPolicy.Diagonal)\n  |                                ^^^^^^^^^^^^^^^^^^^^^^^\n  = hint: tlc accepts TileLang's warp policies and lays the warps out itself",
    ),
    'E228': (
        ['use_swizzle(0)'],
        't.tl:7:21: error[E228]: use_swizzle() needs panel_size, an integer from 1 to 65535, found 0\n  |\n7 |         use_swizzle(0)\n  |                     ^',
    ),
    'E228b': (
        ['for k in range(2):', '    use_swizzle(8)'],
        "t.tl:8:13: error[E228]: use_swizzle(...) is a hint for the whole kernel: it belongs at the top of the grid block\n  |\n8 |             use_swizzle(8)\n  |             ^^^^^^^^^^^^^^\n  = hint: move it directly under 'with grid(...)'",
    ),
    'E229': (
        ['atomic_add(A[bx * BM, 0], loc)'],
        't.tl:7:35: error[E229]: atomic_add of a tile adds a fragment or shared buffer, found local tensor f32[4]\n  |\n7 |         atomic_add(A[bx * BM, 0], loc)\n  |                                   ^^^',
    ),
    'E229b': (
        ['atomic_add(s, acc)', 'atomic_add(A[0:8, 0:8], acc)'],
        't.tl:8:9: error[E229]: atomic_add of a tile of shape f32[BM, BM] into a region of another shape\n  |\n8 |         atomic_add(A[0:8, 0:8], acc)\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^',
    ),
    'E033': (
        ['atomic_add(H[bx * BM, 0], acc)'],
        't.tl:7:35: error[E033]: cannot add f32 elements into a f16 tensor without a cast\n  |\n7 |         atomic_add(H[bx * BM, 0], acc)\n  |                                   ^^^\n  = hint: TileLang converts silently; tlc never narrows: copy the tile into a f16 fragment first, copy(acc, t), and update with t',
    ),
    'E060': (
        ['for i, j in parallel(BM, BM):', '    atomic_add(A[i, j], acc)'],
        "t.tl:8:13: error[E060]: atomic_add(...) of a whole tile works on tiles and cannot be inside a 'parallel' loop\n  |\n8 |             atomic_add(A[i, j], acc)\n  |             ^^^^^^^^^^^^^^^^^^^^^^^^\n  = hint: inside a parallel loop, update single elements: atomic_add(C[i, j], v)",
    ),
    'alias': (
        ['x = if_then_else(1.0, 2.0)', 'y = ceildiv(1.0, 2)', 'z = infinity(i32)'],
        't.tl:7:13: error[E034]: if_then_else() takes 3 arguments, 2 given\n  |\n7 |         x = if_then_else(1.0, 2.0)\n  |             ^^^^^^^^^^^^^^^^^^^^^^\n\nt.tl:8:13: error[E035]: ceildiv() divides integers, rounding up\n  |\n8 |         y = ceildiv(1.0, 2)\n  |             ^^^^^^^^^^^^^^^\n\nt.tl:9:22: error[E035]: infinity() takes a floating-point dtype, such as infinity(f32)\n  |\n9 |         z = infinity(i32)\n  |                      ^^^',
    ),
    'E228none': (
        ['use_swizzle(order="row")'],
        't.tl:7:9: error[E228]: use_swizzle() needs panel_size, an integer from 1 to 65535, found None\n  |\n7 |         use_swizzle(order="row")\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^',
    ),
    'E002dict': (
        ['x = {1: 2}'],
        "t.tl:7:13: error[E002]: unexpected '{'; expected one of '(', '+', '-', 'False', 'True', '[', 'not', '~', ...\n  |\n7 |         x = {1: 2}\n  |             ^",
    ),
    'E034annotate': (
        ['annotate_layout({s: 1}, 2)'],
        't.tl:7:9: error[E034]: annotate_layout() takes 1 argument, 2 given\n  |\n7 |         annotate_layout({s: 1}, 2)\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^',
    ),
    'E032dict': (
        ['copy({s: 1}, s)'],
        't.tl:7:14: error[E032]: this expression is not allowed here\n  |\n7 |         copy({s: 1}, s)\n  |              ^^^^^^',
    ),
    'E230': (
        ['a, b = bx, 1, 2'],
        't.tl:7:9: error[E230]: 2 names are assigned 3 values\n  |\n7 |         a, b = bx, 1, 2\n  |         ^^^^^^^^^^^^^^^\n  = hint: give one value per name: a, b = x, y',
    ),
    'E231': (
        ['a, b = 1, 2', 'a, b = b, a'],
        "t.tl:8:19: error[E231]: 'a' is assigned by this statement before this value reads it; Python reads every value first\n  |\n8 |         a, b = b, a\n  |                   ^\n  = hint: assign through a temporary in statements of their own, e.g. t = a; a = b; b = t",
    ),
    'E383shared': (
        ['atomic_add(s[0, 0], acc, order=(U[0, 0], 0))'],
        't.tl:7:34: error[E383]: atomic_add(..., order=) orders updates of a global tensor, not of a shared buffer\n  |\n7 |         atomic_add(s[0, 0], acc, order=(U[0, 0], 0))\n  |                                  ^^^^^^^^^^^^^^^^^^',
    ),
    'E383pair': (
        ['atomic_add(A[0, 0], acc, order=U[0, 0])'],
        "t.tl:7:34: error[E383]: atomic_add's order= is a pair: (counter element, turn)\n  |\n7 |         atomic_add(A[0, 0], acc, order=U[0, 0])\n  |                                  ^^^^^^^^^^^^^\n  = hint: order=(counts[b, h, row_block], turn), counts an i32 tensor that starts at 0",
    ),
    'E383element': (
        ['atomic_add(A[0, 0], acc, order=(U[0:1, 0], 0))'],
        "t.tl:7:41: error[E383]: atomic_add's order= counts in one element of a tensor: (counts[i, j], turn)\n  |\n7 |         atomic_add(A[0, 0], acc, order=(U[0:1, 0], 0))\n  |                                         ^^^^^^^^^",
    ),
    'E383i32': (
        ['atomic_add(A[0, 0], acc, order=(U[0, 0], 0))'],
        "t.tl:7:41: error[E383]: atomic_add's order= counts in an i32 element of a global tensor, not in an element of global tensor u32[M, N]\n  |\n7 |         atomic_add(A[0, 0], acc, order=(U[0, 0], 0))\n  |                                         ^^^^^^^",
    ),
    'E034order': (
        ['atomic_max(A[0, 0], acc, order=(U[0, 0], 0))'],
        "t.tl:7:34: error[E034]: atomic_max() has no argument 'order'\n  |\n7 |         atomic_max(A[0, 0], acc, order=(U[0, 0], 0))\n  |                                  ^^^^^^^^^^^^^^^^^^",
    ),
    'E229slices': (
        ['atomic_add(A[bx * BM:bx * BM + BM, 0], acc)'],
        "t.tl:7:9: error[E229]: atomic_add of a 2-D tile into a region of 2 dimensions, 1 of them sliced\n  |\n7 |         atomic_add(A[bx * BM:bx * BM + BM, 0], acc)\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  = hint: slice one dimension for each of the tile's, or give the region's origin: C[r, c]",
    ),
    'E227clear': (
        ['gemm(s, s, acc, clear_accum=2)'],
        't.tl:7:37: error[E227]: gemm clear_accum must be True or False, found 2\n  |\n7 |         gemm(s, s, acc, clear_accum=2)\n  |                                     ^',
    ),
    'E227kpack': (
        ['gemm(s, s, acc, k_pack=-1)'],
        't.tl:7:32: error[E227]: gemm k_pack must be a non-negative integer, found -1\n  |\n7 |         gemm(s, s, acc, k_pack=-1)\n  |                                ^^',
    ),
    'E034transpose': (
        ['gemm(s, s, acc, transpose_C=True)'],
        "t.tl:7:25: error[E034]: gemm() has no argument 'transpose_C'\n  |\n7 |         gemm(s, s, acc, transpose_C=True)\n  |                         ^^^^^^^^^^^^^^^^\n  = hint: it takes trans_a, trans_b, precision",
    ),
    'E034pipelined': (
        ['for k in pipelined(0, 4, 2):', '    pass'],
        't.tl:7:18: error[E034]: pipelined() takes 1 to 2 arguments, 3 given\n  |\n7 |         for k in pipelined(0, 4, 2):\n  |                  ^^^^^^^^^^^^^^^^^^',
    ),
    'E031num_stages': (
        ['for k in pipelined(0, 4, num_stages=9):', '    pass'],
        't.tl:7:45: error[E031]: stages must be an integer from 0 to 8, found 9\n  |\n7 |         for k in pipelined(0, 4, num_stages=9):\n  |                                             ^\n  = hint: 0 or 1 runs the loop without prefetching',
    ),
    'E042parallel': (
        ['for i, j in parallel(BM, BM):', '    while True:', '        break', '    continue'],
        "t.tl:10:13: error[E042]: 'continue' cannot leave a 'parallel' loop: its iterations run at once on different threads\n   |\n10 |             continue\n   |             ^^^^^^^^",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_wrong_uses_have_their_diagnostic(name):
    body, expected = CASES[name]
    assert rendered(*body) == expected


def test_the_ported_spellings_check():
    assert rendered(
        "t = thread_index()", "x = reinterpret(A[0, 0], u32)", "y = reinterpret(i32, 1.0)",
        "z = infinity(acc.dtype) + max_value(f16) + min_value(bf16)", "w = clamp(t, 0, 4) + ceildiv(t, 2)",
        "v = if_then_else(t > 2, 1.0, 2.0)", "c = cast(t, acc.dtype)", "g = get_thread_binding(0)",
        "gemm(s, s, acc, policy=GemmWarpPolicy.FullRow)", "gemm(s, s, acc, policy=\"Square\")",
        "gemm(s, s, acc, transpose_A=True, transpose_B=False, clear_accum=True, k_pack=2, wg_wait=1)",
        "use_swizzle(panel_size=4, order=\"column\")", "annotate_layout({s: make_swizzled_layout(s)})",
        "atomic_add(A[bx * BM, 0], acc)", "atomic_max(A[bx * BM:bx * BM + BM, 0:BM], s)",
        "while t < 3:", "    t += 1", "    if t == 2:", "        continue",
        "if t == 0:", "    U[0, 0] = x + u32(g)") == ""


def test_dtype_attributes_allocate_and_convert():
    src = ("@kernel\ndef k(A: T[M], T: dtype = f16):\n    with grid(1, threads=32) as bx:\n"
           "        acc = fragment(f32[32])\n        row = fragment(acc.dtype[4])\n        h = shared(A.dtype[8])\n"
           "        b = local(bx.dtype[2])\n        x = cast(1, h.dtype) + infinity(row.dtype)\n")
    r = check_source(src, "t.tl")
    assert r.ok, render_all(r.diagnostics, r.sources)
    body = r.program.function("k").body[0].body
    assert [(s.target.ty.scope, str(s.target.ty)) for s in body[1:4]] == [("fragment", "f32[4]"), ("shared", "f16[8]"),
                                                                       ("local", "i32[2]")]


def test_ceildiv_is_a_constant_where_a_size_must_be():
    assert rendered("f = fragment(f32[ceildiv(BM, 3)])") == ""


def test_while_outside_a_kernel_grid_and_break_in_it():
    src = ("def count(n: i32) -> i32:\n    i = 0\n    while True:\n        i += 1\n        if i >= n:\n"
           "            break\n    return i\n")
    assert render_all(check_source(src, "t.tl").diagnostics, {"t.tl": src}) == ""


def test_a_tile_op_has_no_while():
    src = "@tile_op\ndef f(x: f32[M]) -> f32[M]:\n    while True:\n        pass\n    return x\n"
    r = check_source(src, "t.tl")
    assert "error[E043]: a tile op body holds named intermediate results and one return" in render_all(r.diagnostics, r.sources)


ORDERED = ("@kernel\ndef k(A: f32[M, N], counts: i32[M], BM: const = 16):\n"
           "    with grid(cdiv(M, BM), threads=64) as bx:\n"
           "        acc = fragment(f32[BM, BM])\n"
           "        clear(acc)\n"
           "        atomic_add(A[0, 0], acc, order=(counts[0], {turn}))\n")


def test_an_ordered_atomic_add_checks_clean_and_its_turn_is_an_integer():
    r = check_source(ORDERED.format(turn="bx"), "t.tl")
    assert not r.diagnostics
    r = check_source(ORDERED.format(turn="0.5"), "t.tl")
    assert render_all(r.diagnostics, r.sources) == (
        "t.tl:6:52: error[E035]: atomic_add's turn must be an integer, found f32\n  |\n"
        "6 |         atomic_add(A[0, 0], acc, order=(counts[0], 0.5))\n  |                                                    ^^^")
