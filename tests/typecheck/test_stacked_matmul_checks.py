"""`@` of stacks of matrices in a tile op (NumPy's matmul: the dimensions before the last two
broadcast) and `.mT` (the last two dimensions swapped, PyTorch's and NumPy's): the types they
give and the exact diagnostic of each wrong use."""
import pytest

from tlc.driver import check_source
from diagnostic_kit import rendered


def test_types():
    src = ("@tile_op\ndef t(q: f16[B, H, S, D], k: f16[B, 1, SK, D], m: f16[S, D]) -> f32[B, H, S, SK]:\n"
           "    x = m.mT\n    return q @ k.mT\n")
    r = check_source(src, "t.tl")
    assert not r.diagnostics
    fn = r.program.function("t")
    assert str(fn.body[-1].value.ty) == "f32[B, H, S, SK]"
    assert str(fn.body[0].value.ty) == "f16[D, S]"


CASES = {
    "inner": (
        "@tile_op\ndef t(q: f16[H, S, D], k: f16[H, SK, E]) -> f32[H, S, SK]:\n    return q @ k.mT\n",
        "t.tl:3:12: error[E058]: inner dimensions of '@' differ: f16[H, S, D] @ f16[H, E, SK]\n"
        "  |\n3 |     return q @ k.mT\n  |            ^^^^^^^^\n"
        "  = hint: the columns of the left operand must match the rows of the right one; use '.T' to transpose "
        "(.mT: the last two dimensions)"),
    "stacked": (
        "@tile_op\ndef t(q: f16[2, S, D], k: f16[3, SK, D]) -> f32[2, S, SK]:\n    return q @ k.mT\n",
        "t.tl:3:12: error[E057]: the stacked dimensions of '@' do not broadcast: f16[2, S, D] @ f16[3, D, SK]\n"
        "  |\n3 |     return q @ k.mT\n  |            ^^^^^^^^\n"
        "  = hint: the dimensions before the last two must be equal, or one of them 1"),
    "mT_of_a_vector": (
        "@tile_op\ndef t(x: f16[N]) -> f16[N]:\n    return x.mT\n",
        "t.tl:3:12: error[E058]: '.mT' transposes the last two dimensions, found f16[N]\n"
        "  |\n3 |     return x.mT\n  |            ^^^^\n"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_diagnostic(case):
    src, want = CASES[case]
    assert rendered(src).strip() == want.strip()
