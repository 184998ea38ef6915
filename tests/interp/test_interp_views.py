"""The interpreter on tests/programs/views.tl and the convolution port, against NumPy on ragged
sizes: views of tensor parameters with another shape (TileLang's `T.Tensor(shape, dtype,
x.data)`) read and written through copies, elements and atomics, a view of a view, and
im2col's tiles (TileLang's `T.im2col`) with strides, dilations and padding, into shared memory
and into a fragment.  tests/gpu/test_views_gpu.py runs the same checks on the GPU."""
import sys
from pathlib import Path

import numpy as np
import pytest

import tlc

TESTS = Path(__file__).resolve().parents[1]
PROGRAM = TESTS / "programs" / "views.tl"
PORT = TESTS / "ports" / "convolution.tl"
sys.path.insert(0, str(TESTS / "ports"))
from refs import conv2d_nhwc  # noqa: E402


@pytest.fixture(scope="module")
def mod():
    return tlc.load(str(PROGRAM), target="cpu")


@pytest.fixture(scope="module")
def port():
    return tlc.load(str(PORT), target="cpu")


def unfolded(img, k, s, d, p):
    """NumPy's im2col: [n, oh, ow, kh, kw, c] = img[n, oh*s + kh*d - p, ow*s + kw*d - p, c], 0 outside."""
    n, h, w, c = img.shape
    oh, ow = (h + 2 * p - d * (k - 1) - 1) // s + 1, (w + 2 * p - d * (k - 1) - 1) // s + 1
    padded = np.zeros((n, h + 2 * p, w + 2 * p, c), img.dtype)
    padded[:, p:p + h, p:p + w] = img
    out = np.zeros((n, oh, ow, k, k, c), img.dtype)
    for i in range(k):
        for j in range(k):
            out[:, :, :, i, j] = padded[:, i * d:i * d + s * oh:s, j * d:j * d + s * ow:s]
    return out


def test_a_view_merges_leading_dimensions_through_copies(mod):
    x = np.random.default_rng(1).standard_normal((3, 11, 40)).astype(np.float32)  # 33 rows, 40 columns: ragged tiles
    y = np.full(x.shape, np.nan, np.float16)
    mod.merged_rows(x, y)
    np.testing.assert_array_equal(y, (x * 2).astype(np.float16))


def test_elements_of_a_view_and_of_a_view_of_a_view(mod):
    x = np.random.default_rng(2).standard_normal((13, 21)).astype(np.float32)
    y = np.full(x.shape, np.nan, np.float32)
    mod.reshaped_elements(x, y)
    np.testing.assert_array_equal(y, x * 2)  # the same positions: y's [21, 13] view over x's


def test_atomics_through_a_view(mod):
    y = np.arange(7 * 9, dtype=np.float32).reshape(7, 9)
    mod.view_atomics(y)
    np.testing.assert_array_equal(y, np.arange(63, dtype=np.float32).reshape(7, 9) + 1)


def test_a_workspace_viewed_in_two_grids(mod):
    a = np.random.default_rng(6).standard_normal((5, 27)).astype(np.float32)  # 135: a ragged last block
    b = np.full(a.shape, np.nan, np.float32)
    mod.through_workspace(a, b)
    np.testing.assert_array_equal(b, a + np.float32(1))


@pytest.mark.parametrize("k, s, d, p", [(3, 1, 1, 1), (3, 2, 1, 0), (2, 1, 2, 2), (1, 3, 1, 0)])
def test_im2col_tiles_match_numpy(mod, k, s, d, p):
    img = np.random.default_rng(3).standard_normal((2, 9, 7, 5)).astype(np.float16)  # K*K*C, N*OH*OW ragged
    want = unfolded(img, k, s, d, p)
    cols = np.full(want.shape, np.nan, np.float16)
    mod.unfold(img, cols, K=k, S=s, D=d, P=p)
    np.testing.assert_array_equal(cols, want)


def test_im2col_into_a_fragment_with_a_kernel_size_from_a_shape(mod):
    img = np.random.default_rng(4).standard_normal((1, 6, 5, 3)).astype(np.float32)
    for ks in (3, 5):
        cols = np.full((6 * 5, ks * ks * 3), np.nan, np.float32)
        mod.unfold_fragment(img, np.zeros((ks, ks), np.float32), cols)
        np.testing.assert_array_equal(cols, unfolded(img, ks, 1, 1, (ks - 1) // 2).reshape(cols.shape))


@pytest.mark.parametrize("s, d, p", [(2, 1, 0), (1, 2, 2)])
def test_the_convolution_port_with_strides_dilations_and_padding(port, s, d, p):
    rng = np.random.default_rng(5)
    data = rng.standard_normal((2, 9, 8, 16)).astype(np.float16)
    kernel = rng.standard_normal((3, 3, 16, 24)).astype(np.float16)
    ref = conv2d_nhwc(data, kernel, s, p, d)
    out = np.full(ref.shape, np.nan, np.float16)
    port.convolution(data, kernel, out, S=s, D=d, P=p)
    err = np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref)
    assert err < 2e-3
