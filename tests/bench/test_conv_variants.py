"""bench/conv.py's --variant ROW:CONSTS: that row's own variant, checked against the rows run
(the timing needs a GPU; the choice of constants does not)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import conv  # noqa: E402


def test_a_row_variant_names_a_row_that_runs(capsys):
    with pytest.raises(SystemExit):
        conv.main(["--only", "r50_s1_3x3_64", "--variant", "r50_s3_3x3_256:BM=64", "--dry-run"])
    assert "--variant r50_s3_3x3_256:BM=64: no such row among those run" in capsys.readouterr().err


def test_row_variants_reach_their_row_only():
    variants = ["r50_s1_3x3_64:BM=256,stages=4", "stages=4", "r50_s3_3x3_256:BM=64,THREADS=128"]
    assert conv.row_variants("r50_s1_3x3_64", variants) == ["BM=256,stages=4", "stages=4"]
    assert conv.row_variants("r50_s3_3x3_256", variants) == ["stages=4", "BM=64,THREADS=128"]
    assert conv.row_variants("conv3x3_56_256", variants) == ["stages=4"]


def test_bwd_variants_reach_the_kernel_and_row_they_name():
    variants = ["DATA:RING=True", "DATA:r50_s1_3x3_64:RING=True,BN=64", "WEIGHT:SPLIT=1", "BK=32",
                "r50_s3_3x3_256:BM=64"]
    assert conv.bwd_variants("r50_s1_3x3_64", "data", variants) == ["RING=True", "RING=True,BN=64", "BK=32"]
    assert conv.bwd_variants("r50_s1_3x3_64", "weight", variants) == ["SPLIT=1", "BK=32"]
    assert conv.bwd_variants("r50_s3_3x3_256", "data", variants) == ["RING=True", "BK=32", "BM=64"]


def test_a_bwd_variant_names_a_row_that_runs(capsys):
    with pytest.raises(SystemExit):
        conv.main(["--bwd", "--only", "r50_s1_3x3_64", "--variant", "DATA:r50_s3_3x3_256:RING=True", "--dry-run"])
    assert "--variant DATA:r50_s3_3x3_256:RING=True: no such row among those run" in capsys.readouterr().err


def test_a_kernel_of_two_grids_is_timed_as_its_call():
    # conv2d_bwd_weight launches 2 grids, which launcher() refuses ("call the kernel instead"): the
    # bench times the call (on the cpu target here, whose launcher() the GPU's would be)
    import numpy as np

    import tlc

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stdlib"))
    import conv_kit as ck

    std = tlc.load("std.conv", target="cpu")
    assert std.conv2d_bwd_weight.grid_count == 2
    rng = np.random.default_rng(0)
    dy = rng.standard_normal((1, 5, 5, 16)).astype(np.float16)
    x = rng.standard_normal((1, 5, 5, 16)).astype(np.float16)
    dw = np.full((16, 3, 3, 16), np.nan, np.float16)
    # small tiles (test_conv's): at the defaults' the interpreter took 3.7 s of the README's run
    run = conv._launch(std.conv2d_bwd_weight, dy, x, dw, S=1, P=1, SPLIT=2, BM=16, BN=16, BK=16, stages=2, THREADS=64,
                       BE=64)
    dw[...] = np.nan
    run()
    np.testing.assert_allclose(dw.astype(np.float32), ck.conv2d_bwd_weight(dy, x, 3, 1, 1), rtol=2e-2, atol=5e-2)
