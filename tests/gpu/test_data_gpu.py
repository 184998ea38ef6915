"""std.data on the GPU against NumPy: the interpreter's table (every op at every dtype and
shape of tests/stdlib/test_data.py), one larger ragged shape per op, and the deterministic
scatter_add's sums in order of k."""
import pathlib
import sys

import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the table
from test_data import DATA_PATH, OPS, adds_in_order_of_k, cases, run  # noqa: E402

pytestmark = pytest.mark.gpu

# Per kernel, a shape past one block in every direction (ragged, as the table's shapes are).
LARGE = {"transpose": (1000, 3001), "transpose_batched": (3, 513, 1025),
         "permute": ((8, 33, 17, 65), (3, 1, 2, 0)), "concat": (1000, 1001, 37), "split": (1000, 1001, 37),
         # gather and scatter: x's (y's) rows of 7500 elements through shared memory, gather's 10000
         # outputs a row in two blocks (the table's ROW = 64 rows take the element-by-element path)
         "gather": (6, 1500, 5, 2000), "index_select": (4, 5000, 33, 3000), "scatter": (6, 1500, 5, 2000),
         "scatter_add": (4, 5000, 33, 3000), "scatter_add_deterministic": (4, 5000, 33, 3000),
         "pad": (1000, 1001, 1003, 1010, 2, 3), "repeat": (100, 333, 300, 999), "tril": (1000, 1500, 7),
         "triu": (1000, 1500, -7), "tril_mask": (1000, 1500, 0), "fill": (1 << 20) + 3, "arange": (1 << 20) + 3}


@pytest.fixture(scope="module")
def gpu_mod():
    return tlc.load(DATA_PATH, target="cuda")


@pytest.mark.parametrize("op,dtype,shape", cases(first_shape_only=False))
def test_against_numpy_on_the_gpu(gpu_mod, op, dtype, shape):
    run(gpu_mod, op, dtype, shape)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.kernel)
@pytest.mark.parametrize("dtype", ["f16", "f32", "i32"])
def test_large_ragged_shapes(gpu_mod, op, dtype):
    if dtype not in op.dtypes:
        pytest.skip(f"{op.kernel} does not take {dtype}")
    run(gpu_mod, op, dtype, LARGE[op.kernel], seed=1)


def test_scatter_add_deterministic_adds_in_order_of_k(gpu_mod):
    adds_in_order_of_k(gpu_mod)


# Tiles whose origin lies between two vectors of rows that are aligned (tl::copy_g2f's shifted
# runs: each run read as the aligned vectors it overlaps, its elements shifted out of their
# words): pad's x[r0 - top, c0 - left] by 3 and 5 (cropping) columns, split's b read from
# x[r, Na + c] with Na odd; rows of 1024 and 1048 elements, a whole number of vectors in every dtype.
SHIFTED = {"pad": [(1000, 1024, 1003, 1040, 2, 3), (1000, 1024, 998, 1016, -1, -5)],
           "split": [(1000, 37, 1011)]}


@pytest.mark.parametrize("op,shape", [(op, s) for op in OPS for s in SHIFTED.get(op.kernel, ())],
                         ids=lambda v: getattr(v, "kernel", None) or "-".join(map(str, v)))
@pytest.mark.parametrize("dtype", ["f16", "f32", "i8", "i64"])
def test_tiles_between_vectors(gpu_mod, op, dtype, shape):
    if dtype not in op.dtypes:
        pytest.skip(f"{op.kernel} does not take {dtype}")
    run(gpu_mod, op, dtype, shape, seed=2)
