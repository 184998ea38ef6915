"""cumsum (TileLang's `T.cumsum(src, dst=None, dim=0, reverse=False)`) in the checker: the
spellings it accepts, by position and by name, of buffers and regions of them, and the exact
diagnostic of each wrong use (E292, E293, E295-E298, and the shared codes E031, E033, E034,
E060 where they mean what they mean elsewhere)."""
import pytest
from diagnostic_kit import rendered


HEAD = ("@kernel\ndef k(A: f32[M, N], n: i32, BM: const = 64, rev: const = False):\n"
        "    with grid(cdiv(M, BM), threads=128) as bx:\n"
        "        s = shared(f32[BM, 32])\n        f = fragment(f32[BM, 32])\n")


def body(*lines: str) -> str:
    return HEAD + "".join("        " + line + "\n" for line in lines)


def test_tilelang_spellings_check():
    assert rendered(body("cumsum(s)", "cumsum(f, dim=1, reverse=True)", "cumsum(src=s, dst=f, dim=-1)",
                         "cumsum(f, s, 0, rev)", "w = fragment(f64[BM, 32])", "cumsum(f, w)")) == ""


def test_cumprod_cummax_and_cummin_take_cumsums_spellings():
    assert rendered(body("cumprod(s)", "cummax(f, dim=1, reverse=True)", "cummin(src=s, dst=f, dim=-1)",
                         "i = shared(i32[BM, 32])", "cummax(i, dim=0)")) == ""


def test_regions_check():  # TileLang's T.cumsum(g[i * C:(i + 1) * C], dim=0); a single index is an extent of 1
    assert rendered(body("cumsum(s[0:16, :])", "cumsum(f[3, :], s[3, :], dim=1)", "for i in range(4):",
                         "    cumsum(s[i * 16:(i + 1) * 16, 0:32], dim=0)")) == ""


CASES = {
    "E034_too_many": (
        ("cumsum(s, s, 0, False, 1)",),
        "t.tl:6:9: error[E034]: cumsum() takes 1 to 4 arguments, 5 given\n  |\n6 |         cumsum(s, s, 0, False, 1)\n"
        "  |         ^^^^^^^^^^^^^^^^^^^^^^^^^\n  = hint: TileLang's signature: cumsum(src, dst=None, dim=0, reverse=False)"),
    "E034_unknown_keyword": (
        ("cumsum(s, axis=1)",),
        "t.tl:6:19: error[E034]: cumsum() has no argument 'axis'\n  |\n6 |         cumsum(s, axis=1)\n"
        "  |                   ^^^^^^\n  = hint: it takes src, dst, dim, reverse"),
    "E034_no_source": (
        ("cumsum(dim=1)",),
        "t.tl:6:9: error[E034]: cumsum() needs the tile it scans: cumsum(src, dst=None, dim=0, reverse=False)\n  |\n"
        "6 |         cumsum(dim=1)\n  |         ^^^^^^^^^^^^^"),
    "E292_twice": (
        ("cumsum(s, s, 1, dim=1)",),
        "t.tl:6:25: error[E292]: cumsum() gets dim twice: by position and as dim=\n  |\n6 |         cumsum(s, s, 1, dim=1)\n"
        "  |                         ^^^^^\n  = hint: give it once; TileLang's signature: cumsum(src, dst=None, dim=0, reverse=False)"),
    "E293_global": (
        ("cumsum(A)",),
        "t.tl:6:16: error[E293]: the source of cumsum() must be a shared or fragment buffer or a region of one, found global tensor f32[M, N]\n"
        "  |\n6 |         cumsum(A)\n  |                ^\n  = hint: copy the tile into a shared(...) or fragment(...) buffer first"),
    "E293_local": (
        ("l = local(f32[4])", "cumsum(s, l)"),
        "t.tl:7:19: error[E293]: the destination of cumsum() must be a shared or fragment buffer or a region of one, found local tensor f32[4]\n"
        "  |\n7 |         cumsum(s, l)\n  |                   ^\n  = hint: copy the tile into a shared(...) or fragment(...) buffer first"),
    "E293_region_of_a_global_tensor": (
        ("cumsum(A[0:4, 0:4])",),
        "t.tl:6:16: error[E293]: the source of cumsum() must be a shared or fragment buffer or a region of one, found a "
        "region of the global tensor f32[M, N]\n  |\n6 |         cumsum(A[0:4, 0:4])\n  |                ^^^^^^^^^^^\n"
        "  = hint: copy the tile into a shared(...) or fragment(...) buffer first"),
    "E295_regions": (
        ("cumsum(s[0:16, :], f[0:8, :])",),
        "t.tl:6:28: error[E295]: cumsum() writes a tile of its source's shape [16, 32] into the destination, which is "
        "[8, 32]\n  |\n6 |         cumsum(s[0:16, :], f[0:8, :])\n  |                            ^^^^^^^^^"),
    "E295_shape": (
        ("g = shared(f32[BM, 16])", "cumsum(s, g)"),
        "t.tl:7:19: error[E295]: cumsum() writes a tile of its source's shape [BM, 32] into the destination, which is [BM, 16]\n"
        "  |\n7 |         cumsum(s, g)\n  |                   ^"),
    "E033_narrowing": (
        ("h = shared(f16[BM, 32])", "cumsum(s, h)"),
        "t.tl:7:19: error[E033]: cumsum() of f32 values cannot be stored into f16 without losing precision\n  |\n"
        "7 |         cumsum(s, h)\n  |                   ^\n  = hint: TileLang converts silently, tlc never narrows on a store: scan "
        "into a buffer of a dtype that holds f32, then copy it into the f16 one (copy converts)"),
    "E296_bool": (
        ("b = shared(bool[4])", "cumsum(b)"),
        "t.tl:7:16: error[E296]: cumsum() adds numbers; 'b' holds bool\n  |\n7 |         cumsum(b)\n  |                ^\n"
        "  = hint: cast the tile to an integer dtype first"),
    "E296_bool_cummax": (
        ("b = shared(bool[4])", "cummax(b)"),
        "t.tl:7:16: error[E296]: cummax() compares numbers; 'b' holds bool\n  |\n7 |         cummax(b)\n  |                ^\n"
        "  = hint: cast the tile to an integer dtype first"),
    "E296_bool_cumprod": (
        ("b = shared(bool[4])", "cumprod(b)"),
        "t.tl:7:17: error[E296]: cumprod() multiplies numbers; 'b' holds bool\n  |\n7 |         cumprod(b)\n  |                 ^\n"
        "  = hint: cast the tile to an integer dtype first"),
    "E034_too_many_cummin": (
        ("cummin(s, s, 0, False, 1)",),
        "t.tl:6:9: error[E034]: cummin() takes 1 to 4 arguments, 5 given\n  |\n6 |         cummin(s, s, 0, False, 1)\n"
        "  |         ^^^^^^^^^^^^^^^^^^^^^^^^^\n  = hint: its signature (cumsum's): cummin(src, dst=None, dim=0, reverse=False)"),
    "E034_no_source_cumprod": (
        ("cumprod(dim=1)",),
        "t.tl:6:9: error[E034]: cumprod() needs the tile it scans: cumprod(src, dst=None, dim=0, reverse=False)\n  |\n"
        "6 |         cumprod(dim=1)\n  |         ^^^^^^^^^^^^^^"),
    "E060_cummin_in_parallel": (
        ("for i in parallel(4):", "    cummin(s)"),
        "t.tl:7:13: error[E060]: cummin(...) works on whole tiles and cannot be inside a 'parallel' loop\n  |\n"
        "7 |             cummin(s)\n  |             ^^^^^^^^^\n  = hint: inside a parallel loop, read and write single elements"),
    "E297_out_of_range": (
        ("cumsum(s, dim=2)",),
        "t.tl:6:23: error[E297]: dim=2 is out of range for the 2-D tile f32[BM, 32]\n  |\n6 |         cumsum(s, dim=2)\n"
        "  |                       ^\n  = hint: dim counts from 0 to 1, or from -1 (the last) to -2"),
    "E297_not_an_integer": (
        ("cumsum(s, dim=1.0)",),
        "t.tl:6:23: error[E297]: the dim of cumsum() must be an integer, found 1.0\n  |\n6 |         cumsum(s, dim=1.0)\n"
        "  |                       ^^^\n  = hint: write a literal such as 1 or -1 (counted from the last), or a const parameter"),
    "E031_dim_at_run_time": (
        ("cumsum(s, dim=n)",),
        "t.tl:6:23: error[E031]: the dim of cumsum() must be a compile-time constant; 'n' is not a constant\n  |\n"
        "6 |         cumsum(s, dim=n)\n  |                       ^\n  = hint: use a literal, a module constant or a 'const' parameter"),
    "E298_reverse": (
        ("cumsum(s, reverse=1)",),
        "t.tl:6:27: error[E298]: the reverse of cumsum() must be True or False, found 1\n  |\n6 |         cumsum(s, reverse=1)\n"
        "  |                           ^"),
    "E060_in_parallel": (
        ("for i in parallel(4):", "    cumsum(s)"),
        "t.tl:7:13: error[E060]: cumsum(...) works on whole tiles and cannot be inside a 'parallel' loop\n  |\n"
        "7 |             cumsum(s)\n  |             ^^^^^^^^^\n  = hint: inside a parallel loop, read and write single elements"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_diagnostic_text(name):
    lines, expected = CASES[name]
    assert rendered(body(*lines)) == expected
