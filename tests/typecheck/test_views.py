"""The checker on views of tensor parameters (`view(x, f16[M * N])`, TileLang's `T.Tensor(shape,
dtype, x.data)`) and im2col (TileLang's `T.im2col`), issue 20 item 8: each wrong use has its
exact diagnostic (E300 to E308, and the general ones where they apply); the right uses, keyword
arguments and a view of a view among them, check clean."""
import pytest

from tlc.diagnostics import render_all
from tlc.driver import check_source

HEAD = ("@kernel\ndef k(A: f32[M, N], X: f16[B, H, W, C], O: f32[M * N], BM: const = 16):\n"
        "    with grid(cdiv(M, BM), threads=64) as bx:\n"
        "        s = shared(f16[BM, BM])\n"
        "        f = fragment(f32[BM, BM])\n")


def rendered(*body: str) -> str:
    src = HEAD + "".join("        " + line + "\n" for line in body)
    r = check_source(src, "t.tl")
    return render_all(r.diagnostics, r.sources)


CASES = {
    'E300': (
        ['v = view(A, f32[M, M])'],
        "t.tl:6:21: error[E300]: a view has as many elements as its tensor: 'A' (f32[M, N]) has M * N, the view (f32[M, M]) M * M\n  |\n6 |         v = view(A, f32[M, M])\n  |                     ^^^^^^^^^\n  = hint: a view reads the same memory row-major with another shape; counts equal only for some sizes are not accepted",
    ),
    'E301region': (
        ['v = view(A[0:4, :], f32[4 * N])'],
        "t.tl:6:18: error[E301]: a view is of a whole tensor; the region 'A[...]' is not contiguous in memory\n  |\n6 |         v = view(A[0:4, :], f32[4 * N])\n  |                  ^^^^^^^^^\n  = hint: view 'A' itself and index the view",
    ),
    'E301buffer': (
        ['v = view(s, f16[BM * BM])'],
        "t.tl:6:18: error[E301]: view() takes a tensor parameter, whose memory is row-major; 's' is shared tensor f16[BM, BM]\n  |\n6 |         v = view(s, f16[BM * BM])\n  |                  ^\n  = hint: a buffer's layout is the compiler's, not row-major: allocate it with the shape you index",
    ),
    'E301scalar': (
        ['v = view(BM, f32[4])'],
        "t.tl:6:18: error[E301]: view() takes a tensor parameter, whose memory is row-major; 'BM' is i32\n  |\n6 |         v = view(BM, f32[4])\n  |                  ^^",
    ),
    'E302expr': (
        ['copy(view(A, f32[M * N])[0], f)'],
        "t.tl:6:14: error[E302]: view(...) names a tensor: assign it to a name, 'x_flat = view(x, f16[M * N])'\n  |\n6 |         copy(view(A, f32[M * N])[0], f)\n  |              ^^^^^^^^^^^^^^^^^^^",
    ),
    'E302spec': (
        ['v = view(A, M * N)'],
        "t.tl:6:21: error[E302]: view()'s second argument is the view's type, such as f16[M * N]\n  |\n6 |         v = view(A, M * N)\n  |                     ^^^^^",
    ),
    'E302notdtype': (
        ['v = view(A, BM[M * N])'],
        "t.tl:6:21: error[E302]: 'BM' is not a dtype; view()'s second argument is a type such as f16[M * N]\n  |\n6 |         v = view(A, BM[M * N])\n  |                     ^^",
    ),
    'E302loop': (
        ['for i in range(2):', '    v = view(A, f32[M * N])'],
        't.tl:7:17: error[E302]: a view is declared at the top of a kernel or of its grid block\n  |\n7 |             v = view(A, f32[M * N])\n  |                 ^^^^^^^^^^^^^^^^^^^',
    ),
    'E303': (
        ['v = view(A, f16[M * N])'],
        "t.tl:6:21: error[E303]: a view keeps the element type: 'A' is f32, the view f16\n  |\n6 |         v = view(A, f16[M * N])\n  |                     ^^^\n  = hint: TileLang's T.Tensor(shape, dtype, x.data) may read the bytes as another type; tlc does not: view it as f32[...] and convert the elements (cast(), reinterpret())",
    ),
    'E304': (
        ['v = view(A, f32[bx, M * N])'],
        "t.tl:6:25: error[E304]: a view's dimensions are built from constants and shape symbols; 'bx' is a block index\n  |\n6 |         v = view(A, f32[bx, M * N])\n  |                         ^^",
    ),
    'E304zero': (
        ['v = view(A, f32[0, M * N])'],
        "t.tl:6:25: error[E304]: a view's dimension must be a positive integer, found 0\n  |\n6 |         v = view(A, f32[0, M * N])\n  |                         ^",
    ),
    'E034view': (
        ['v = view(A)'],
        "t.tl:6:13: error[E034]: view() takes 2 arguments, the tensor and the view's type, 1 given\n  |\n6 |         v = view(A)\n  |             ^^^^^^^\n  = hint: write view(x, f16[M * N])",
    ),
    'E025view': (
        ['v = view(A, f32[M * N])', 'v = view(A, f32[N, M])'],
        "t.tl:7:9: error[E025]: 'v' is already defined as a tensor view\n  |\n7 |         v = view(A, f32[N, M])\n  |         ^",
    ),
    'E025': (
        ['s2 = 1', 's2 = view(A, f32[M * N])'],
        "t.tl:7:9: error[E025]: 's2' is already defined as a variable\n  |\n7 |         s2 = view(A, f32[M * N])\n  |         ^^",
    ),
    'E305': (
        ['im2col(A, s, bx, 0, 3, 1, 1, 1)'],
        't.tl:6:16: error[E305]: im2col reads an image in global memory, (batch, height, width, channels); found global tensor f32[M, N]\n  |\n6 |         im2col(A, s, bx, 0, 3, 1, 1, 1)\n  |                ^\n  = hint: pass the whole NHWC tensor parameter (or a 4-D view of one)',
    ),
    'E306': (
        ['im2col(X, A, bx, 0, 3, 1, 1, 1)'],
        't.tl:6:19: error[E306]: im2col writes a 2-D shared or fragment buffer (pixels x kernel-channels); found global tensor f32[M, N]\n  |\n6 |         im2col(X, A, bx, 0, 3, 1, 1, 1)\n  |                   ^',
    ),
    'E307': (
        ['im2col(X, f, bx, 0, 3, 1, 1, 1)'],
        "t.tl:6:9: error[E307]: im2col copies without converting: 'X' is f16, 'f' f32\n  |\n6 |         im2col(X, f, bx, 0, 3, 1, 1, 1)\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  = hint: allocate 'f' as f16, then copy it into a buffer of f32",
    ),
    'E308stride': (
        ['im2col(X, s, bx, 0, 3, 0, 1, 1)'],
        "t.tl:6:32: error[E308]: im2col's stride must be at least 1, found 0\n  |\n6 |         im2col(X, s, bx, 0, 3, 0, 1, 1)\n  |                                ^",
    ),
    'E308pad': (
        ['im2col(X, s, bx, 0, 3, 1, 1, -1)'],
        "t.tl:6:38: error[E308]: im2col's pad must be zero or more, found -1\n  |\n6 |         im2col(X, s, bx, 0, 3, 1, 1, -1)\n  |                                      ^^",
    ),
    'E308kernel': (
        ['im2col(X, s, bx, 0, 0, 1, 1, 1)'],
        "t.tl:6:29: error[E308]: im2col's kernel size must be at least 1, found 0\n  |\n6 |         im2col(X, s, bx, 0, 0, 1, 1, 1)\n  |                             ^",
    ),
    'E031stride': (
        ['im2col(X, s, bx, 0, 3, bx, 1, 1)'],
        "t.tl:6:32: error[E031]: im2col's stride must be a compile-time constant; 'bx' is not a constant\n  |\n6 |         im2col(X, s, bx, 0, 3, bx, 1, 1)\n  |                                ^^\n  = hint: use a literal, a module constant or a 'const' parameter",
    ),
    'E034im2col': (
        ['im2col(X, s, bx, 0, 3)'],
        't.tl:6:9: error[E034]: im2col() takes 8 arguments (img, col, nhw_step, c_step, kernel, stride, dilation, pad), 5 given\n  |\n6 |         im2col(X, s, bx, 0, 3)\n  |         ^^^^^^^^^^^^^^^^^^^^^^',
    ),
    'E034kw': (
        ['im2col(X, s, bx, 0, 3, 1, 1, padding=1)'],
        "t.tl:6:38: error[E034]: im2col() has no argument 'padding'\n  |\n6 |         im2col(X, s, bx, 0, 3, 1, 1, padding=1)\n  |                                      ^^^^^^^^^\n  = hint: it takes img, col, nhw_step, c_step, kernel, stride, dilation, pad",
    ),
    'E060': (
        ['for i, j in parallel(BM, BM):', '    im2col(X, s, bx, 0, 3, 1, 1, 1)'],
        "t.tl:7:13: error[E060]: im2col(...) works on whole tiles and cannot be inside a 'parallel' loop\n  |\n7 |             im2col(X, s, bx, 0, 3, 1, 1, 1)\n  |             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  = hint: inside a parallel loop, read and write single elements",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_wrong_use_has_its_diagnostic(case):
    body, expected = CASES[case]
    assert rendered(*body) == expected


def test_views_and_im2col_written_as_tilelang_does_check_clean():
    assert rendered("im2col(X, s, nhw_step=bx, c_step=0, kernel=3, stride=1, dilation=1, pad=1)",
                    "v = view(O, f32[N, M])", "w = view(v, f32[M, N])", "copy(w[bx * BM, 0], f)") == ""


def test_a_count_equal_through_names_assigned_before_is_accepted():
    """OH, (H + 2 * P - 3) // S + 1, is assigned once: N * OH * W is the count of X."""
    src = ("@kernel\ndef k(X: f16[N, (H + 2 * P - 3) // S + 1, W], Y: f16[H], P: const = 1, S: const = 2):\n"
           "    OH = (H + 2 * P - 3) // S + 1\n"
           "    with grid(1, threads=64) as bx:\n"
           "        v = view(X, f16[N * OH * W])\n")
    r = check_source(src, "t.tl")
    assert render_all(r.diagnostics, r.sources) == ""


def test_a_device_function_named_view_is_called_as_written():
    """view is the builtin only where nothing of the module's takes the name."""
    src = ("def view(x: f32) -> f32:\n    return x * 2.0\n\n\n@kernel\ndef k(A: f32[N]):\n"
           "    with grid(1, threads=32) as bx:\n        y = view(1.0)\n        for i in parallel(32):\n"
           "            A[i] = y\n")
    r = check_source(src, "t.tl")
    assert render_all(r.diagnostics, r.sources) == ""
