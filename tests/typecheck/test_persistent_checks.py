"""The checker on persistent(domain, wave_size, index, group_size=8), TileLang's T.Persistent:
each wrong use has its exact diagnostic (E270 to E273 its own, E034/E035/E020 the general
ones); the right uses, break and continue included, check clean."""
import pytest

from tlc.diagnostics import render_all
from tlc.driver import check_source

HEAD = ("@kernel\ndef k(O: i32[M, N], S: const = 4, x: f32 = 1.0):\n"
        "    with grid(S, threads=32) as b:\n")


def rendered(*body: str, head: str = HEAD) -> str:
    src = head + "".join("        " + line + "\n" for line in body)
    r = check_source(src, "t.tl")
    return render_all(r.diagnostics, r.sources)


CASES = {
    'E270': (
        ['for i in persistent(M, S, b):', '    O[i, 0] = 1'],
        "t.tl:4:29: error[E270]: the first argument of persistent(...) is the list of tile counts, one per index\n  |\n4 |         for i in persistent(M, S, b):\n  |                             ^\n  = hint: write persistent([ceildiv(M, BM), ceildiv(N, BN)], sm_num, block_id), as TileLang's T.Persistent",
    ),
    'E270tuple': (
        ['for i, j in persistent((M, N), S, b):', '    O[i, j] = 1'],
        "t.tl:4:32: error[E270]: the first argument of persistent(...) is the list of tile counts, one per index\n  |\n4 |         for i, j in persistent((M, N), S, b):\n  |                                ^^^^^^\n  = hint: write persistent([ceildiv(M, BM), ceildiv(N, BN)], sm_num, block_id), as TileLang's T.Persistent",
    ),
    'E270empty': (
        ['for i in persistent([], S, b):', '    O[i, 0] = 1'],
        "t.tl:4:29: error[E270]: the first argument of persistent(...) is the list of tile counts, one per index\n  |\n4 |         for i in persistent([], S, b):\n  |                             ^^\n  = hint: write persistent([ceildiv(M, BM), ceildiv(N, BN)], sm_num, block_id), as TileLang's T.Persistent",
    ),
    'E271': (
        ['for i in persistent([M, N], S, b):', '    O[i, 0] = 1'],
        't.tl:4:9: error[E271]: persistent(...) over 2 tile counts gives 2 indices; found 1 name\n  |\n4 |         for i in persistent([M, N], S, b):\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^',
    ),
    'E271one': (
        ['for i, j in persistent([M], S, b):', '    O[i, j] = 1'],
        't.tl:4:9: error[E271]: persistent(...) over 1 tile count gives 1 index; found 2 names\n  |\n4 |         for i, j in persistent([M], S, b):\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^',
    ),
    'E271twice': (
        ['for i, i in persistent([M, N], S, b):', '    O[i, 0] = 1'],
        "t.tl:4:16: error[E271]: persistent(...) names the index 'i' twice\n  |\n4 |         for i, i in persistent([M, N], S, b):\n  |                ^",
    ),
    'E272wave': (
        ['for i, j in persistent([M, N], 0, b):', '    O[i, j] = 1'],
        't.tl:4:40: error[E272]: the wave size of persistent(...) must be a positive integer, found 0\n  |\n4 |         for i, j in persistent([M, N], 0, b):\n  |                                        ^',
    ),
    'E272group': (
        ['for i, j in persistent([M, N], S, b, group_size=0):', '    O[i, j] = 1'],
        't.tl:4:57: error[E272]: the group size of persistent(...) must be a positive integer, found 0\n  |\n4 |         for i, j in persistent([M, N], S, b, group_size=0):\n  |                                                         ^\n  = hint: TileLang clamps it to 1; write group_size=1 to walk the tiles in order',
    ),
    'E272count': (
        ['for i, j in persistent([M, -1], S, b):', '    O[i, j] = 1'],
        't.tl:4:36: error[E272]: a tile count of persistent(...) must be a non-negative integer, found -1\n  |\n4 |         for i, j in persistent([M, -1], S, b):\n  |                                    ^^',
    ),
    'E272index': (
        ['for i, j in persistent([M, N], S, -1):', '    O[i, j] = 1'],
        't.tl:4:43: error[E272]: the index of persistent(...) must be a non-negative integer, found -1\n  |\n4 |         for i, j in persistent([M, N], S, -1):\n  |                                           ^^',
    ),
    'E273': (
        ['for p in parallel(4):', '    for i, j in persistent([M, N], S, b):', '        O[i, j] = 1'],
        't.tl:5:25: error[E273]: a persistent loop cannot be inside a parallel loop\n  |\n5 |             for i, j in persistent([M, N], S, b):\n  |                         ^^^^^^^^^^^^^^^^^^^^^^^^',
    ),
    'E034': (
        ['for i, j in persistent([M, N], S):', '    O[i, j] = 1'],
        't.tl:4:21: error[E034]: persistent() takes 3 to 4 arguments, 2 given\n  |\n4 |         for i, j in persistent([M, N], S):\n  |                     ^^^^^^^^^^^^^^^^^^^^^',
    ),
    'E034kw': (
        ['for i, j in persistent([M, N], S, b, groups=2):', '    O[i, j] = 1'],
        "t.tl:4:46: error[E034]: persistent() has no argument 'groups'\n  |\n4 |         for i, j in persistent([M, N], S, b, groups=2):\n  |                                              ^^^^^^^^\n  = hint: it takes group_size",
    ),
    'E034twice': (
        ['for i, j in persistent([M, N], S, b, 4, group_size=2):', '    O[i, j] = 1'],
        't.tl:4:49: error[E034]: persistent() is given group_size twice\n  |\n4 |         for i, j in persistent([M, N], S, b, 4, group_size=2):\n  |                                                 ^^^^^^^^^^^^',
    ),
    'E035': (
        ['for i, j in persistent([M, N], x, b):', '    O[i, j] = 1'],
        't.tl:4:40: error[E035]: the wave size of persistent(...) must be an integer, found f32\n  |\n4 |         for i, j in persistent([M, N], x, b):\n  |                                        ^',
    ),
    'E035alone': (  # regression: a float constant was E035, then E272 again for the same argument
        ['for i, j in persistent([M, N], S, b, group_size=1.5):', '    O[i, j] = 1'],
        't.tl:4:57: error[E035]: the group size of persistent(...) must be an integer, found f32\n  |\n4 |         for i, j in persistent([M, N], S, b, group_size=1.5):\n  |                                                         ^^^',
    ),
    'E020': (
        ['for i, j in persistent([M, N], S, b):', '    O[i, j] = 1', 'O[i, 0] = 2'],
        "t.tl:6:11: error[E020]: unknown name 'i'\n  |\n6 |         O[i, 0] = 2\n  |           ^\n  = hint: 'i' is the variable of a loop above; a loop variable exists only inside its loop",
    ),
}

@pytest.mark.parametrize("code", CASES)
def test_wrong_uses(code):
    body, want = CASES[code]
    assert rendered(*body) == want


def test_outside_the_grid():
    src = "@kernel\ndef k(O: i32[M, N], S: const = 4):\n    for i, j in persistent([M, N], S, 0):\n        O[i, j] = 1\n"
    r = check_source(src, "t.tl")
    assert render_all(r.diagnostics, r.sources).startswith(
        "t.tl:3:17: error[E273]: persistent(...) walks tiles with the blocks of a grid and belongs inside a kernel's "
        "grid block\n  |\n3 |     for i, j in persistent([M, N], S, 0):\n  |                 ^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "  = hint: write 'with grid(sm_num) as block_id:' around it")


@pytest.mark.parametrize("body", [
    ['for i, j in persistent([cdiv(M, 16), cdiv(N, 16)], S, b):', '    O[i, j] = 1'],
    ['for i, j in persistent([M, N], S, b, 2):', '    if i > 2:', '        break', '    if j == 0:', '        continue',
     '    O[i, j] = 1'],
    ['for t in persistent([M], 2 * S, b + S, group_size=M):', '    O[t, 0] = t'],
    ['for i, j in persistent([M, N], S, b):', '    O[i, j] = 1', 'for i, j in persistent([M, N], S, b):',
     '    O[i, j] = 2'],
])
def test_right_uses_check_clean(body):
    assert rendered(*body) == ""
