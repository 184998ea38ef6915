"""Pathological inputs (issue #16): constants too large to fold, literals of any length,
absurd sizes given with -D or as keyword constants, fragments no thread can hold, and
programs nested deeper than the compiler walks.  Each is a diagnostic with an exact text and
exit status 1, through `tlc check`, `tlc build` and the Python API, never a traceback, a
MemoryError or a hang; and a program at the nesting bound goes through every stage.

Every case runs in a forked child with a 10 s wall-clock limit and a 4 GiB address-space
limit, so that a regression fails here instead of hanging or taking the machine's memory.
"""
from __future__ import annotations

import functools
import multiprocessing
import resource
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tlc
from tlc import cli
from tlc.parser.depth import MAX_AST_DEPTH

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
WALL_S = 10
MEMORY = 4 << 30


def _child(conn, fn, args):
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    try:
        conn.send(("ok", fn(*args)))
    except BaseException:  # noqa: BLE001 - whatever it is, the parent reports it
        conn.send(("raised", traceback.format_exc()))


def guarded(fn, *args):
    """`fn(*args)` in a forked child, within `WALL_S` seconds and `MEMORY` bytes."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args))
    proc.start()
    child.close()
    ready = parent.poll(WALL_S)
    if not ready:
        proc.kill()
        proc.join()
        pytest.fail(f"still running after {WALL_S} s")
    status, value = parent.recv()
    proc.join()
    if status != "ok":
        pytest.fail(value)
    return value


def cli_run(*args):
    r = CliRunner().invoke(cli.main, list(args))
    return r.exit_code, r.stdout, r.stderr


def api_error(path, kernel, constants):
    """The rendered error of generating `kernel` of `path` with `constants` (no GPU needed)."""
    k = getattr(tlc.load(path, target="cpu"), kernel)
    try:
        k.cuda_source(**constants)
    except tlc.DiagnosticError as e:
        return str(e)
    return None


def kernel_with(line: str, before: str = "") -> str:
    return (f"{before}@kernel\ndef k(x: f32[N], out: f32[N], BLOCK: const = 128):\n"
            "    with grid(cdiv(N, BLOCK), threads=128) as bx:\n"
            "        xs = fragment(f32[BLOCK])\n"
            "        copy(x[bx * BLOCK], xs)\n"
            f"{line}\n"
            "        copy(xs, out[bx * BLOCK])\n")


LONG = "1" * 4301
RANGE_HINT = "  = hint: a compile-time integer lies between -2**63 and 2**64 - 1, the range of i64 and u64\n"


def too_large(line: int, col: int, text: str, width: int) -> str:
    """E150 as rendered for `width` characters from `col` of line `line`, which reads `text`."""
    return (f"p.tl:{line}:{col}: error[E150]: constant too large: this value does not fit in 64 bits\n"
            f"  |\n{line} | {text}\n  | {' ' * (col - 1)}{'^' * width}\n" + RANGE_HINT)


# (name, .tl text, the rendered diagnostic `tlc check` prints before its summary)
CHECK_CASES = [
    ("shift", kernel_with("        ys = fragment(f32[(1 << (1 << 62))])"),
     too_large(6, 28, "        ys = fragment(f32[(1 << (1 << 62))])", 13)),
    ("power", kernel_with("", "X: const = 9 ** 9 ** 9\n\n"),
     too_large(1, 12, "X: const = 9 ** 9 ** 9", 11)),
    ("power of a const parameter", kernel_with("        ys = fragment(f32[BLOCK ** 40])"),
     too_large(6, 27, "        ys = fragment(f32[BLOCK ** 40])", 11)),
    ("a u64 and one more", kernel_with("", "X: const = 18446744073709551615 + 1\n\n"),
     too_large(1, 12, "X: const = 18446744073709551615 + 1", 24)),
    ("float overflow", kernel_with("", "X: const = 1e300 * 1e300\n\n"),
     too_large(1, 12, "X: const = 1e300 * 1e300", 13)),
    ("4301 digits", kernel_with("", f"X: const = {LONG}\n\n"),
     "p.tl:1:12: error[E151]: integer literal too large: the largest is 18446744073709551615 (2**64 - 1)\n"
     "  |\n"
     f"1 | X: const = {LONG[:109]}...\n"
     f"  |            {'^' * 112}\n"
     "  = hint: generated code holds an integer constant in 64 bits (i64 or u64)\n"),
    ("hex", kernel_with("", "X: const = 0x1_0000_0000_0000_0000\n\n"),
     "p.tl:1:12: error[E151]: integer literal too large: the largest is 18446744073709551615 (2**64 - 1)\n"
     "  |\n"
     "1 | X: const = 0x1_0000_0000_0000_0000\n"
     "  |            ^^^^^^^^^^^^^^^^^^^^^^^\n"
     "  = hint: generated code holds an integer constant in 64 bits (i64 or u64)\n"),
    ("float exponent", kernel_with("", "X: const = 1e99999999999999999999\n\n"),
     "p.tl:1:12: error[E152]: float literal too large: the largest f64 is about 1.8e308\n"
     "  |\n"
     "1 | X: const = 1e99999999999999999999\n"
     "  |            ^^^^^^^^^^^^^^^^^^^^^^\n"
     "  = hint: write inf(f32) for an infinity\n"),
    ("unroll", kernel_with("        for t in unroll(1000000000):\n            for i in parallel(BLOCK):\n"
                           "                xs[i] = xs[i] + 1.0"),
     "p.tl:6:25: error[E154]: unroll(1000000000) copies its body 1000000000 times, more than the 1024 "
     "the compiler allows\n"
     "  |\n"
     "6 |         for t in unroll(1000000000):\n"
     "  |                         ^^^^^^^^^^\n"
     "  = hint: use range() for a long loop\n"),
    # the loop variable is an i32: the code wrapped 2**40 to 0 and ran no iteration, silently
    ("range bound", kernel_with("        for t in range(1 << 40):\n            for i in parallel(BLOCK):\n"
                                "                xs[i] = xs[i] + 1.0"),
     "p.tl:6:24: error[E157]: the loop bound 1 << 40 = 1099511627776 does not fit i32, the type of the loop "
     "variable 't'\n"
     "  |\n"
     "6 |         for t in range(1 << 40):\n"
     "  |                        ^^^^^^^\n"
     "  = hint: a loop counts in i32: nest two loops for a longer one\n"),
    # the last step takes it to 2**31: the C loop wrapped and never ended (the cpu target hung)
    ("range step past i32", kernel_with("        for t in range(0, 2147483647, 1073741824):\n"
                                        "            for i in parallel(BLOCK):\n                xs[i] = xs[i] + 1.0"),
     "p.tl:6:18: error[E157]: range(0, 2147483647, 1073741824) steps the loop variable 't' to 2147483648 after its "
     "last iteration, which does not fit i32: the loop would not end\n"
     "  |\n"
     "6 |         for t in range(0, 2147483647, 1073741824):\n"
     "  |                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
     "  = hint: a loop counts in i32: keep its last value plus the step within i32\n"),
    ("pipelined bound", kernel_with("        for t in pipelined(3000000000, stages=2):\n            for i in parallel(BLOCK):\n"
                                    "                xs[i] = xs[i] + 1.0"),
     "p.tl:6:28: error[E157]: the loop bound 3000000000 does not fit i32, the type of the loop variable 't'\n"
     "  |\n"
     "6 |         for t in pipelined(3000000000, stages=2):\n"
     "  |                            ^^^^^^^^^^\n"
     "  = hint: a loop counts in i32: nest two loops for a longer one\n"),
]


def _check(text, path):
    Path(path).write_text(text)
    return cli_run("check", path)


@pytest.mark.parametrize("name, text, rendered", CHECK_CASES, ids=[c[0] for c in CHECK_CASES])
def test_check_refuses(name, text, rendered, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert guarded(_check, text, "p.tl") == (1, "", rendered + "\nerror: 1 error in p.tl\n")


def test_literals_of_any_length_that_fit_are_taken(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = kernel_with("", f"X: const = 0x{'0' * 5000}1\nY: const = 0.{'0' * 5000}1\n"
                       "Z: const = 18446744073709551615\nW: const = (1 << 64) - 1\n\n")
    assert guarded(_check, text, "p.tl") == (0, "", "p.tl: ok\n")


# ---- sizes given with -D and as keyword constants ------------------------------------------

LN = str(EXAMPLES / "layernorm.tl")
VA = str(EXAMPLES / "vector_add.tl")
LN_BM = ("   |\n"
         "12 |               eps: const = 1e-5, BM: const = 4, BN: const = 1024):\n"
         "   |                                  ^^^^^^^^^^^^^\n")
VA_BLOCK = ("  |\n"
            "9 | def vector_add(x: f32[N], y: f32[N], out: f32[N], alpha: f32, BLOCK: const = 1024):\n"
            "  |                                                               ^^^^^^^^^^^^^^^^^^^\n")
E153_HINT = ("  = hint: a thread has 1020 bytes of registers and spills the rest to local memory; "
             "use smaller tiles or more threads")

BUILD_CASES = [
    ("10**40", LN, "BM=1" + "0" * 40,
     f"{LN}:12:34: error[E150]: constant too large: 'BM' is given a number of 41 digits, which does not fit in 64 bits\n"
     + LN_BM + RANGE_HINT),
    ("5000 digits", LN, "BM=" + "7" * 5000,
     f"{LN}:12:34: error[E150]: constant too large: 'BM' is given a number of 5000 digits, which does not fit in 64 bits\n"
     + LN_BM + RANGE_HINT),
    ("65536 rows", LN, "BM=65536",
     f"{LN}:14:9: error[E153]: kernel 'layernorm' needs 4.5 MiB a thread for its fragments and local buffers, "
     "more than the 8 KiB a thread can hold: row (2.0 MiB), sq (2.0 MiB), mean (256 KiB), inv_std (256 KiB), "
     "g (32 B), b (32 B)\n"
     "   |\n"
     "14 |         row = fragment(f32[BM, BN])\n"
     "   |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^\n" + E153_HINT + "\n"),
    ("10**8 elements", VA, "BLOCK=100000000",
     f"{VA}:11:9: error[E153]: kernel 'vector_add' needs 6.0 MiB a thread for its fragments and local buffers, "
     "more than the 8 KiB a thread can hold: xs (3.0 MiB), ys (3.0 MiB)\n"
     "   |\n"
     "11 |         xs = fragment(f32[BLOCK])\n"
     "   |         ^^^^^^^^^^^^^^^^^^^^^^^^^\n" + E153_HINT + "\n"),
]


@pytest.mark.parametrize("name, path, define, rendered", BUILD_CASES, ids=[c[0] for c in BUILD_CASES])
def test_build_refuses(name, path, define, rendered):
    assert guarded(cli_run, "build", path, "-D", define) == (1, "", rendered)


@pytest.mark.parametrize("constants, rendered", [
    ({"BLOCK": 10**30}, f"{VA}:9:63: error[E150]: constant too large: 'BLOCK' is given "
                        "1000000000000000000000000000000, which does not fit in 64 bits\n" + VA_BLOCK + RANGE_HINT[:-1]),
    ({"BLOCK": 100_000_000}, BUILD_CASES[-1][-1][:-1]),
    # str() of the constant (the kernel's cache key, the message) raised ValueError past 4300 digits
    pytest.param({"BLOCK": 10**5000}, f"{VA}:9:63: error[E150]: constant too large: 'BLOCK' is given a number of "
                 "5001 digits, which does not fit in 64 bits\n" + VA_BLOCK + RANGE_HINT[:-1], id="BLOCK=10**5000"),
])
def test_api_refuses(constants, rendered):
    assert guarded(api_error, VA, "vector_add", constants) == rendered


def test_a_loop_bound_given_as_a_constant_beyond_i32(tmp_path):
    """A const parameter that a range() counts to, given 2**40 at the call: E157 with the
    constant named, where the kernel wrapped it to 0 and ran no iteration."""
    path = tmp_path / "r.tl"
    path.write_text("@kernel\ndef k(out: f32[N], R: const = 4):\n    with grid(1, threads=32) as bx:\n"
                    "        acc = fragment(f32[32])\n        clear(acc)\n        for r in range(R):\n"
                    "            for i in parallel(32):\n                acc[i] = acc[i] + 1.0\n        copy(acc, out[0])\n")
    assert guarded(api_error, str(path), "k", {"R": 2**40}) == (
        f"{path}:6:24: error[E157]: with R=1099511627776: the loop bound R = 1099511627776 does not fit i32, "
        "the type of the loop variable 'r'\n"
        "  |\n"
        "6 |         for r in range(R):\n"
        "  |                        ^\n"
        "  = hint: a loop counts in i32: nest two loops for a longer one")


def test_a_fragment_at_the_limit_builds_and_runs(tmp_path):
    """Two f32 fragments of 4 KiB a thread each: 8 KiB, the most a thread may hold; twice that
    is refused."""
    def build_and_run():
        code, _, err = cli_run("build", VA, "-D", "BLOCK=131072", "-o", str(tmp_path / "va.cu"))
        k = tlc.load(VA, target="cpu").vector_add
        x = np.arange(5, dtype=np.float32)
        out = np.zeros(5, np.float32)
        k(x, x, out, 2.0, BLOCK=131072)
        return code, out.tolist(), cli_run("build", VA, "-D", "BLOCK=262144")[0]

    assert guarded(build_and_run) == (0, [0.0, 3.0, 6.0, 9.0, 12.0], 1)


def test_a_parallel_loop_a_thread_cannot_unroll(tmp_path, monkeypatch):
    """parallel(10**12) over no fragment: 7.8e9 unrolled iterations a thread in C, and an
    array of 10**12 indices (3.6 TiB) in the interpreter."""
    monkeypatch.chdir(tmp_path)
    Path("p.tl").write_text(kernel_with("        for i in parallel(1000000000000):\n            out[i] = 1.0"))
    rendered = ("p.tl:6:9: error[E156]: this parallel loop over 1000000000000 runs 7812500000 iterations in each of "
                "the 128 threads, more than the 2048 a thread may unroll\n"
                "  |\n"
                "6 |         for i in parallel(1000000000000):\n"
                f"  |         {'^' * 33}\n"
                "  = hint: use a smaller extent or more threads, or a range() loop around it\n")
    assert guarded(cli_run, "build", "p.tl") == (1, "", rendered)
    assert guarded(cli_run, "run", "p.tl", "-k", "k", "--target", "interp", "--shape", "N=4") == (1, "", rendered)


# ---- nesting -------------------------------------------------------------------------------

def _parallel(expr: str) -> str:
    return kernel_with(f"        for i in parallel(BLOCK):\n            a = xs[i]\n            xs[i] = {expr}")


def _ifs(k: int) -> str:
    lines = ["        for i in parallel(BLOCK):", "            a = xs[i]"]
    lines += [" " * (12 + j) + "if a > 0.0:" for j in range(k)]
    lines += [" " * (12 + k) + "a = a + 1.0", "            xs[i] = a"]
    return kernel_with("\n".join(lines))


def _fors(k: int) -> str:
    lines = [" " * (8 + j) + f"for t{j} in range(1):" for j in range(k)]
    lines += [" " * (8 + k) + "for i in parallel(BLOCK):", " " * (12 + k) + "xs[i] = xs[i] + 1.0"]
    return kernel_with("\n".join(lines))


def _tile_op(expr: str) -> str:
    return f"@tile_op\ndef k(x: f32[M, K]) -> f32[M, K]:\n    return {expr}\n"


SHAPES = {  # name -> the program with k levels of one kind of nesting
    "a + a + ... (left)": lambda k: _parallel(" + ".join(["a"] * k)),
    "a + (a + (...)) (right)": lambda k: _parallel("a + (" * k + "a" + ")" * k),
    "((a + a) + a) ...": lambda k: _parallel("(" * k + "a" + " + a)" * k),
    "-(-(...))": lambda k: _parallel("-" * k + "a"),
    "tanh(tanh(...))": lambda k: _parallel("tanh(" * k + "a" + ")" * k),
    "if / if / ...": _ifs,
    "for / for / ...": _fors,
    "tile op x + x + ...": lambda k: _tile_op(" + ".join(["x"] * k)),
    "tile op tanh(tanh(...))": lambda k: _tile_op("tanh(" * k + "x" + ")" * k),
    "tile op t1 = t0 + x; t2 = t1 + x; ...": lambda k: (
        "@tile_op\ndef k(x: f32[M, K]) -> f32[M, K]:\n    t0 = x\n"
        + "".join(f"    t{j + 1} = t{j} + x\n" for j in range(k)) + f"    return t{k}\n"),
}


@functools.cache  # (each shape's bound is asked by a test at it and a test past it: ~100 parses each)
def _deepest_accepted(shape) -> int:
    """The largest k whose program nests at most MAX_AST_DEPTH levels."""
    from tlc.parser import parse
    from tlc.parser.depth import ast_depth, substituted_depth

    def depth(text):
        fn = parse(text).functions[-1]
        return max(ast_depth(fn)[0], substituted_depth(fn)[0] if fn.has_decorator("tile_op") else 0)

    k = 1
    while depth(shape(k + 1)) <= MAX_AST_DEPTH:
        k += 1
    return k


def _stage(path: str, stage: str, tile_op: bool):
    """One stage of `path` with a third of Python's default recursion limit left over for the
    callers' frames: the exit status of `tlc check` or `tlc build`, or whether the interpreter's
    result is finite."""
    import inspect

    sys.setrecursionlimit(len(inspect.stack()) + 650)
    if stage == "check":
        return cli_run("check", path)[0]
    if stage.startswith("sm_"):
        return cli_run("build", path, "--arch", stage)[0]
    k = tlc.load(path, target="cpu").k
    if tile_op:
        out = k(np.ones((3, 5), np.float32))
    else:
        out = np.zeros(7, np.float32)
        k(np.ones(7, np.float32), out)
    return int(not np.isfinite(out).all())


@pytest.mark.parametrize("shape", list(SHAPES))
def test_nesting_at_the_bound_goes_through_every_stage(shape, tmp_path):
    k = _deepest_accepted(SHAPES[shape])
    path = tmp_path / "p.tl"
    path.write_text(SHAPES[shape](k))
    for stage in ("check", "sm_80", "sm_90a", "interpreter"):
        assert (stage, guarded(_stage, str(path), stage, shape.startswith("tile op"))) == (stage, 0)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_nesting_past_the_bound_is_refused_at_check(shape, tmp_path):
    k = _deepest_accepted(SHAPES[shape])
    path = tmp_path / "p.tl"
    path.write_text(SHAPES[shape](k + 1))
    for command in ("check", "build"):
        code, out, err = guarded(cli_run, command, str(path))
        assert (code, out) == (1, "")
        when = " once the values it uses are substituted into it, as fusion does" if " = " in shape else ""
        assert f"error[E155]: this {'statement' if shape.startswith(('if', 'for')) else 'expression'} nests more " \
               f"than {MAX_AST_DEPTH} levels deep{when}, more than the compiler allows" in err


def test_the_expression_too_deep_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shape = SHAPES["a + a + ... (left)"]
    assert guarded(_check, shape(_deepest_accepted(shape) + 1), "p.tl") == (1, "", (
        "p.tl:8:21: error[E155]: this expression nests more than 100 levels deep, more than the compiler allows\n"
        "  |\n"
        f"8 |             xs[i] = {'a + ' * 25}...\n"
        f"  |                     {'^' * 103}\n"
        "  = hint: split it into named intermediate values\n"
        "\n"
        "error: 1 error in p.tl\n"))


def test_the_statement_too_deep_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    k = _deepest_accepted(_ifs)
    indent = " " * (12 + k + 1)
    assert guarded(_check, _ifs(k + 1), "p.tl") == (1, "", (
        f"p.tl:{k + 9}:{len(indent) + 1}: error[E155]: this statement nests more than 100 levels deep, more than the "
        "compiler allows\n"
        "    |\n"
        f"{k + 9} | {indent}a = a + 1.0\n"
        f"    | {indent}^^^^^^^^^^^\n"
        "  = hint: move the inner part into a device function\n"
        "\n"
        "error: 1 error in p.tl\n"))


def test_device_functions_inlined_into_each_other_count_together(tmp_path, monkeypatch):
    """Each function is shallow, but inlining nests the calls: a chain of 200 device functions
    passed check and then ended in a RecursionError in build."""
    monkeypatch.chdir(tmp_path)
    chain = "".join(f"def g{j}(v: f32) -> f32:\n    return g{j + 1}(v) + 1.0\n\n" for j in range(200))
    Path("p.tl").write_text(chain + "def g200(v: f32) -> f32:\n    return v\n\n" + _parallel("g0(a)"))
    for command in ("check", "build"):
        code, out, err = guarded(cli_run, command, "p.tl")
        assert (code, out) == (1, "")
        assert "error[E155]: this call nests more than 100 levels deep once the device functions it calls are " \
               "inlined, more than the compiler allows" in err


def test_a_grid_extent_beyond_64_bits_is_refused_before_it_is_computed(tmp_path, monkeypatch):
    """The host computes grid extents exactly: `n ** n` for n = 10**9 ran for hours."""
    monkeypatch.chdir(tmp_path)
    Path("g.tl").write_text("@kernel\ndef k(x: f32[N], n: i32):\n    with grid(n ** n, threads=128) as bx:\n"
                            "        pass\n")
    for grid in ("n ** n", "1 << n"):
        Path("g.tl").write_text(Path("g.tl").read_text().replace("n ** n", grid))
        code, out, err = guarded(cli_run, "run", "g.tl", "-k", "k", "--target", "interp", "--shape", "N=4",
                                 "--in", "n=1000000000")
        shown = grid.replace("n", "1000000000")
        assert (code, err) == (1, f"error: kernel 'k' (g.tl:2): grid dimension x, {grid} with n = 1000000000, "
                                  f"computes {shown}, which is beyond 64 bits\n")


def _early_returns(k: int) -> str:
    """A device function with k `if`s that may return, each followed by more statements."""
    body = "".join(f"    if w > {j}.0:\n        if w > {j + 1}.5:\n            return w\n    w = w + 1.0\n"
                   for j in range(k))
    return f"def g(v: f32) -> f32:\n    w = v\n{body}    return w\n\n" + _parallel("g(a)")


def _early_returns_reference(v: float, k: int) -> float:
    w = np.float32(v)
    for j in range(k):
        if w > j and w > j + 1.5:
            return float(w)
        w = w + np.float32(1.0)
    return float(w)


def test_early_returns_are_not_copied_into_every_branch(tmp_path, monkeypatch):
    """Inlining copied the statements after an `if` that may return into both its branches:
    2^k copies for k such `if`s (k = 22 built for minutes).  The interpreter agrees with Python."""
    monkeypatch.chdir(tmp_path)
    Path("r.tl").write_text(_early_returns(60))
    assert guarded(cli_run, "build", "r.tl", "-o", "r.cu")[0] == 0

    def run():
        x = np.array([-90, -5.5, -1, 0, 0.25, 0.7, 1.2, 2, 3.7, 10, 25.5, 70], np.float32)
        out = np.zeros_like(x)
        tlc.load("r.tl", target="cpu").k(x, out)
        return out.tolist(), [_early_returns_reference(float(v), 60) for v in x]

    got, want = guarded(run)
    assert got == want


def test_a_shape_of_4301_digits_for_build():
    """tlc build --shape ended in int()'s ValueError past 4300 digits."""
    code, out, err = guarded(cli_run, "build", str(EXAMPLES / "linear_gelu.tl"), "--shape", f"M={LONG}")
    assert (code, out, err) == (2, "", f"error: --shape M={LONG}: a size is at most 2147483647 (shape symbols are i32)\n")


def test_a_print_width_of_4301_digits(tmp_path, monkeypatch):
    """print()'s format check ended in int()'s ValueError past 4300 digits."""
    monkeypatch.chdir(tmp_path)
    text = kernel_with(f'        print("%{LONG}d", bx)')
    code, out, err = guarded(_check, text, "p.tl")
    assert (code, out) == (1, "")
    assert err.startswith(f"p.tl:6:15: error[E171]: '%{LONG}d' has a width of 4301 digits; print() takes at most 999\n")


def test_a_module_constant_too_deep(tmp_path, monkeypatch):
    """Constant folding recurses too: a module constant is bounded like a function."""
    monkeypatch.chdir(tmp_path)
    code, out, err = guarded(_check, kernel_with("", "X: const = " + " + ".join(["1"] * 5000) + "\n\n"), "p.tl")
    assert (code, out) == (1, "")
    assert err.startswith("p.tl:1:12: error[E155]: this expression nests more than 100 levels deep, more than the "
                          "compiler allows\n")


def _call_with_a_huge_workspace(path: str):
    mod = tlc.load(path, target="cpu")
    try:
        mod.k(np.zeros(64, np.float32), np.zeros(64, np.float32))
    except tlc.TlcError as e:
        return str(e)
    return None


def test_a_workspace_too_large_to_allocate(tmp_path):
    """alloc_global sized past the memory (64 x 10**9 f32: 238 GiB; the child's address space
    is 4 GiB): a call's error naming the workspace and its size, where NumPy's MemoryError
    ended the call (tlc run: exit 3)."""
    path = tmp_path / "ws.tl"
    path.write_text("@kernel\ndef k(x: f32[N], out: f32[N]):\n    part = alloc_global(f32[N, 1000000000])\n"
                    "    with grid(cdiv(N, 32), threads=32) as bx:\n        for i in parallel(32):\n"
                    "            part[bx * 32 + i, 0] = x[bx * 32 + i]\n"
                    "    with grid(cdiv(N, 32), threads=32) as bx:\n        for i in parallel(32):\n"
                    "            out[bx * 32 + i] = part[bx * 32 + i, 0]\n")
    assert guarded(_call_with_a_huge_workspace, str(path)) == \
        "k() cannot allocate its workspace 'part': f32[64, 1000000000] takes 238.4 GiB"


def _abs_of_a_huge_view():
    from tlc import package_data

    mod = tlc.load(str(package_data.stdlib().joinpath("elementwise.tl")), target="cpu")
    big = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (2**20, 2**20), (0, 0))
    try:
        mod.abs(big)
    except tlc.TlcError as e:
        return str(e)
    return None


def test_a_tile_op_result_too_large_to_allocate():
    """A tile op of a (2**20, 2**20) view of one element: its 4 TiB result is the call's error,
    where NumPy's MemoryError ended the call."""
    assert guarded(_abs_of_a_huge_view) == "abs() cannot allocate its result: f32[1048576, 1048576] takes 4096.0 GiB"
