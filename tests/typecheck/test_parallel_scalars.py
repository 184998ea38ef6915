"""E158: a scalar declared outside a parallel loop cannot be assigned inside it (finding 17 of
tests/fuzz/FINDINGS.md: it checked, then `tlc build` failed in the IR verifier with no place).
Each index runs on its own thread; the checker now says so at the assignment."""
import pytest

from tlc.diagnostics import render_all
from tlc.driver import check_source

HEAD = ("@kernel\ndef k(A: f32[M], C: f32[M], BM: const = 64):\n"
        "    with grid(cdiv(M, BM), threads=64) as bx:\n"
        "        f = fragment(f32[BM])\n"
        "        copy(A[bx * BM], f)\n"
        "        r = 0.0\n")
TAIL = "        copy(f, C[bx * BM])\n"
HINT = ("  = hint: give each index its own scalar, declared in the loop's body, or store the value "
        "into a buffer element")


def rendered(*body: str) -> str:
    src = HEAD + "".join("        " + line + "\n" for line in body) + TAIL
    r = check_source(src, "t.tl")
    return render_all(r.diagnostics, r.sources)


def message(name: str) -> str:
    return (f"error[E158]: '{name}' is declared outside this parallel loop and cannot be assigned "
            "inside it: its iterations run at once on different threads")


def test_an_assignment_inside_parallel_to_an_outer_scalar():
    assert rendered("for i in parallel(BM):", "    r = f[i]") == (
        f"t.tl:8:13: {message('r')}\n  |\n8 |             r = f[i]\n  |             ^\n{HINT}")


def test_an_augmented_assignment_in_a_loop_and_an_if_inside_parallel():
    assert rendered("for i in parallel(BM):", "    for j in range(2):", "        if j > 0:",
                    "            r += f[i]") == (
        f"t.tl:10:21: {message('r')}\n   |\n10 |                     r += f[i]\n   |                     ^\n" + HINT)


@pytest.mark.parametrize("body", [
    # a scalar declared in the body, assigned in nested statements, and an outer one only read
    ("for i in parallel(BM):", "    a = f[i] * r", "    for j in range(2):", "        a += 1.0",
     "        if j > 0:", "            a = a * 0.5", "    f[i] = a"),
    # the outer scalar assigned outside the loop, before and after it
    ("r = 2.0", "for i in parallel(BM):", "    f[i] = f[i] * r", "r = 3.0"),
])
def test_scalars_of_the_body_and_outer_reads_check(body):
    assert rendered(*body) == ""
