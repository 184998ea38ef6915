"""Where buffers may be allocated (typecheck/placement.py): anywhere in the grid block, inside
an if, its else or a loop, as TileLang allows, each allocation one buffer of the block; the same
name allocated again with the same type is that buffer; and the exact diagnostic where an
allocation means nothing (E030 outside the grid block, E290 inside a parallel loop, E291 one
name for two types, E031 a size known only at run time)."""
import pytest

from diagnostic_kit import rendered

HEAD = ("@kernel\ndef k(A: f32[M, N], n: i32, BM: const = 64, flag: const = False):\n"
        "    with grid(cdiv(M, BM), threads=128) as bx:\n")


def body(*lines: str) -> str:
    return HEAD + "".join("        " + line + "\n" for line in lines)


def test_allocations_inside_ifs_and_loops_check_and_stay_visible_after_them():
    assert rendered(body(
        "if flag:", "    t = shared(f32[BM])", "    u = fragment(f32[BM])", "else:", "    t = shared(f32[BM])",
        "    u = fragment(f32[BM])",
        "for k in range(n):", "    w = fragment(f32[BM])", "    copy(t, w)",
        "while n > 0:", "    x = local(f32[4])", "    break",
        "copy(u, t)", "copy(w, t)", "t = shared(f32[BM])")) == ""


def test_a_buffer_in_an_if_is_one_buffer_of_the_kernel():
    from tlc.api import compile_source
    src = body("if n > 0:", "    t = shared(f32[BM])", "    copy(A[bx * BM, 0], t)", "    copy(t, A[bx * BM, 1])")
    k = compile_source(src, target="cpu").kernels["k"].scheduled({}, "sm_80")
    assert [(b.name, b.scope, b.shape) for b in k.buffers] == [("t", "shared", (64,))]


CASES = {
    "E030_before_the_grid": (
        "@kernel\ndef k(A: f32[M]):\n    s = shared(f32[4])\n    with grid(1, threads=32) as bx:\n        pass\n",
        "t.tl:3:9: error[E030]: buffers are allocated inside a kernel's grid block\n  |\n3 |     s = shared(f32[4])\n"
        "  |         ^^^^^^^^^^^^^^\n  = hint: move the allocation under 'with grid(...)'"),
    "E030_in_a_device_function": (
        "def f(x: f32) -> f32:\n    s = local(f32[4])\n    return x\n",
        "t.tl:2:9: error[E030]: buffers are allocated inside a kernel's grid block, not in a device function\n  |\n"
        "2 |     s = local(f32[4])\n  |         ^^^^^^^^^^^^^"),
    "E290_in_a_parallel_loop": (
        body("for i in parallel(4):", "    s = fragment(f32[BM])"),
        "t.tl:5:17: error[E290]: fragment(...) cannot be inside a 'parallel' loop: its iterations run at once on different "
        "threads, and a buffer belongs to the whole block\n  |\n5 |             s = fragment(f32[BM])\n"
        "  |                 ^^^^^^^^^^^^^^^^^\n  = hint: allocate it before the loop (TileLang hoists every allocation to the "
        "top of the kernel)"),
    "E291_other_type_in_the_else": (
        body("if flag:", "    t = shared(f32[BM])", "else:", "    t = fragment(f32[BM])"),
        "t.tl:7:13: error[E291]: 't' is allocated here as a fragment tensor f32[BM], but at line 5 as a shared tensor "
        "f32[BM]; every allocation is one buffer of the block, so a name holds one type\n  |\n"
        "7 |             t = fragment(f32[BM])\n  |             ^\n  = hint: give this buffer a name of its own"),
    "E291_other_dtype_in_a_loop": (
        body("t = shared(f32[BM])", "for i in range(n):", "    t = shared(f16[BM])"),
        "t.tl:6:13: error[E291]: 't' is allocated here as a shared tensor f16[BM], but at line 4 as a shared tensor "
        "f32[BM]; every allocation is one buffer of the block, so a name holds one type\n  |\n"
        "6 |             t = shared(f16[BM])\n  |             ^\n  = hint: give this buffer a name of its own"),
    "E025_a_variable_then_a_buffer": (
        body("t = 1", "if flag:", "    t = shared(f32[BM])"),
        "t.tl:6:13: error[E025]: 't' is already defined as a variable\n  |\n6 |             t = shared(f32[BM])\n"
        "  |             ^"),
    "E031_size_from_the_loop_index": (
        body("for i in range(4):", "    t = shared(f32[i + 1])"),
        "t.tl:5:28: error[E031]: a buffer dimension must be a compile-time constant; 'i' is not a constant\n  |\n"
        "5 |             t = shared(f32[i + 1])\n  |                            ^\n"
        "  = hint: use a literal, a module constant or a 'const' parameter"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_diagnostic_text(name):
    src, expected = CASES[name]
    assert rendered(src) == expected
