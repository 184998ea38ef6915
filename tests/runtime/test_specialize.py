"""Specialization (LANGUAGE.md section 1): a shape symbol that something needs as a constant (a
buffer dimension, a parallel extent, an unroll count) is compiled in, one kernel per size, bound
from the arrays at a call; the other symbols stay dynamic.  On the interpreter, through the API,
`tlc run` and `tlc build`; the GPU's on-disk cache is in tests/gpu/test_specialize_gpu.py."""
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tlc
from tlc.cli import main
from tlc.diagnostics import DiagnosticError, render_all
from tlc.runtime.cache import program_key

RMS_NORM = (Path(__file__).resolve().parents[1] / "programs" / "specialize.tl").read_text()


def rms_norm(a):
    return a / np.sqrt((a * a).mean(axis=1, keepdims=True) + 1e-12)


@pytest.fixture
def module():
    return tlc.compile_source(RMS_NORM, target="cpu", path="norm.tl")


def test_a_symbol_sizing_a_buffer_is_specialized_and_the_others_stay_dynamic(module):
    fn = module.rms_norm.fn
    assert set(fn.to_specialize) == {"N"} and set(fn.from_arrays) == {"N"}
    assert set(fn.shape_symbols) == {"M", "N"}  # the checker still sees N as a symbol of A and B
    assert module.add.fn.from_arrays == {} and module.add.fn.to_specialize == {}


def test_two_sizes_run_as_two_kernels_and_a_dynamic_kernel_as_one(module):
    rng = np.random.default_rng(0)
    for m, n in ((5, 64), (3, 96), (7, 64)):  # ragged rows: M is dynamic, N is compiled in
        a = rng.standard_normal((m, n)).astype(np.float32)
        b = np.zeros_like(a)
        module.rms_norm(a, b)
        np.testing.assert_allclose(b, rms_norm(a), rtol=1e-5, atol=1e-6)
    assert sorted(k.specialized for k in module.rms_norm._scheduled.values()) == [(("N", 64),), (("N", 96),)]
    for n in (100, 300):
        a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        c = np.zeros_like(a)
        module.add(a, b, c)
        np.testing.assert_array_equal(c, a + b)
    assert len(module.add._scheduled) == 1


def test_the_cache_key_holds_the_specialized_size(module):
    """The GPU's on-disk entry is keyed by the call's constants, which hold N."""
    a = np.zeros((4, 64), np.float32)
    _, c64 = module.rms_norm.bind((a, a), {})
    _, c96 = module.rms_norm.bind((np.zeros((4, 96), np.float32),) * 2, {})
    assert c64 == {"N": 64} and c96 == {"N": 96}
    keys = {program_key(module.program.sources, "rms_norm", sorted(c.items()), "sm_80") for c in (c64, c96)}
    assert len(keys) == 2
    _, dynamic = module.add.bind((np.zeros(8, np.float32),) * 3, {})
    assert dynamic == {}


def test_the_ir_and_the_launcher_say_which_symbols_are_specialized(module):
    text = module.rms_norm.ir(N=64)
    assert "kernel rms_norm(A: f32[M, 64], B: f32[M, 64]):\n  const blk_m=2\n  specialized N=64\n" in text
    src = module.rms_norm.cuda_source(N=64)
    assert "// Specialized for N=64: compiled in as constants; the launcher takes them and refuses other sizes." in src
    assert ("launch_rms_norm(const float* A, float* B, int M, int N, cudaStream_t stream) {\n"
            "  if (N != 64) return cudaErrorInvalidValue;  // specialized: compiled for N=64 only\n") in src
    assert "specialized" not in module.add.ir()


def test_a_second_array_of_another_size_is_refused(module):
    with pytest.raises(tlc.TlcError, match=r"'B' axis 1 has size 32 but the kernel expects 64"):
        module.rms_norm(np.zeros((4, 64), np.float32), np.zeros((4, 32), np.float32))


def test_a_size_can_be_given_and_must_then_match(module):
    a = np.ones((2, 16), np.float32)
    b = np.zeros_like(a)
    module.rms_norm(a, b, N=16)
    np.testing.assert_allclose(b, 1.0, rtol=1e-6)
    with pytest.raises(tlc.TlcError, match=r"'A' axis 1 has size 16 but the kernel expects 8"):
        module.rms_norm(a, b, N=8)


UNROLLED = """
@kernel
def row_sum(x: f32[M, K], y: f32[M]):
    with grid(M, threads=32) as bx:
        acc: f32 = 0.0
        for k in unroll(K):
            acc += x[bx, k]
        y[bx] = acc
"""


def test_an_unroll_count_specializes_too():
    m = tlc.compile_source(UNROLLED, target="cpu")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.zeros(3, np.float32)
    m.row_sum(x, y)
    np.testing.assert_array_equal(y, x.sum(axis=1))
    assert m.row_sum.fn.to_specialize["K"][1] == "the trip count of unroll()"


# ---- a const parameter named as a dimension is the same thing, spelt out ----------------------

SCALE = """
@kernel
def {name}(x: f32[M, N], y: f32[M, N], N: const{default}):
    with grid(M, threads=32) as bx:
        row = fragment(f32[N])
        copy(x[bx, 0], row)
        for j in parallel(N):
            row[j] *= 2.0
        copy(row, y[bx, 0])
"""
CONST_DIM = SCALE.format(name="scale", default=" = 128") + SCALE.format(name="scale_nodefault", default="")


@pytest.mark.parametrize("kernel", ["scale", "scale_nodefault"])
def test_a_const_parameter_standing_as_a_dimension_is_bound_from_the_arrays(kernel):
    m = tlc.compile_source(CONST_DIM, target="cpu", path="scale.tl")
    k = getattr(m, kernel)
    for n in (8, 24):
        x = np.arange(3 * n, dtype=np.float32).reshape(3, n)
        y = np.zeros_like(x)
        k(x, y)
        np.testing.assert_array_equal(y, 2 * x)
    assert sorted(dict(s.constants)["N"] for s in k._scheduled.values()) == [8, 24]


def test_a_const_dimension_keeps_its_default_where_no_array_binds_it():
    m = tlc.compile_source(CONST_DIM, target="cpu", path="scale.tl")
    assert "scale(x: f32[M, 128], y: f32[M, 128])" in m.scale.ir()
    with pytest.raises(DiagnosticError) as e:
        m.scale_nodefault.ir()
    assert render_all(e.value.diagnostics, e.value.sources) == (
        "scale.tl:12:49: error[E240]: the constant 'N' has no default and no size was given for it\n"
        "   |\n"
        "12 | def scale_nodefault(x: f32[M, N], y: f32[M, N], N: const):\n"
        "   |                                                 ^^^^^^^^\n"
        "  = hint: give it: -D N=SIZE or --shape N=SIZE (a call binds it from its arrays)")


# ---- what only a compiled-in size gets wrong --------------------------------------------------

def test_an_empty_array_where_the_size_is_compiled_in_is_refused_with_the_reason():
    m = tlc.compile_source(RMS_NORM, target="cpu", path="norm.tl")
    with pytest.raises(tlc.TlcError) as e:
        m.rms_norm(np.zeros((2, 0), np.float32), np.zeros((2, 0), np.float32))
    assert str(e.value) == ("'A' has size 0 on axis 1, but 'N' is compiled into the kernel as a buffer dimension "
                            "at norm.tl:6:35, which cannot be 0; an empty array has nothing to compute: skip the call")


def test_a_size_that_breaks_the_kernel_is_reported_with_the_size(norm_file):
    r = cli("build", norm_file, "-k", "rms_norm", "-D", "N=0")
    assert r.exit_code == 1
    assert "norm.tl:6:35: error[E061]: with N=0: a buffer dimension must be a positive integer, found 0\n" in r.stderr


def test_tile_ops_and_device_functions_keep_their_symbols_dynamic(rendered):
    src = """
@tile_op
def double(x: f32[N]) -> f32[N]:
    return x * 2.0

@kernel
def k(x: f32[N], y: f32[N]):
    with grid(1, threads=32) as bx:
        t = fragment(f32[N])
        copy(x[0], t)
        copy(t, y[0])
"""
    assert rendered(src) == ""
    m = tlc.compile_source(src, target="cpu")
    assert set(m.k.fn.from_arrays) == {"N"}


# ---- the command line -------------------------------------------------------------------------

def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def norm_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "norm.tl").write_text(RMS_NORM)
    return "norm.tl"


def test_build_without_a_size_names_the_symbol_and_what_to_pass(norm_file):
    r = cli("build", norm_file, "-k", "rms_norm")
    assert r.exit_code == 1
    assert r.stderr == (
        "norm.tl:6:35: error[E240]: the shape symbol 'N' is used as a buffer dimension here, so it is compiled "
        "in as a constant (one kernel per size), and no size was given for it\n"
        "  |\n"
        "6 |         row = fragment(f32[blk_m, N])\n"
        "  |                                   ^\n"
        "  = hint: give it: -D N=SIZE or --shape N=SIZE (a call binds it from its arrays)\n")


@pytest.mark.parametrize("option", [["-D", "N=48"], ["--shape", "N=48"], ["--shape", "M=3,N=48"]])
def test_build_takes_the_size_from_define_or_shape(norm_file, option):
    r = cli("build", norm_file, "--emit", "ir", "-k", "rms_norm", "-k", "add", *option)  # add keeps N dynamic
    assert r.exit_code == 0, r.stderr
    assert "kernel rms_norm(A: f32[M, 48], B: f32[M, 48]):" in r.stdout
    assert "kernel add(A: f32[N], B: f32[N], C: f32[N]):" in r.stdout


def test_build_refuses_a_size_that_is_not_one(norm_file):
    r = cli("build", norm_file, "-k", "rms_norm", "-D", "N=-3")
    assert r.exit_code == 1
    assert r.stderr.startswith("norm.tl:6:35: error[E241]: the shape symbol 'N' is a size, an integer from 0 to "
                               "2147483647; it cannot be '-3'\n")


def test_run_takes_the_size_from_the_shapes(norm_file, tmp_path):
    np.save(tmp_path / "a.npy", np.ones((3, 40), np.float32))
    r = cli("run", norm_file, "-k", "rms_norm", "--target", "interp", "--shape", "M=7,N=40")
    assert r.exit_code == 0, r.stderr
    assert "B: f32[7, 40]" in r.stdout
    r = cli("run", norm_file, "-k", "rms_norm", "--target", "interp", "--in", "A=a.npy", "--out", "B=b.npy")
    assert r.exit_code == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "b.npy"), 1.0, rtol=1e-6)


# ---- a region's extent ------------------------------------------------------------------------




def test_a_region_over_a_shape_symbol_specializes_it():
    """TileLang's rms norm copies rows with `A[r0:r1, :]`: the extent is N, compiled in."""
    m = tlc.compile_source(RMS_NORM, target="cpu", path="norm.tl")
    for n in (64, 100):
        a = np.random.default_rng(n).standard_normal((3, n)).astype(np.float32)
        b = np.zeros_like(a)
        m.rms_norm_regions(a, b)
        np.testing.assert_allclose(b, rms_norm(a), rtol=1e-5, atol=1e-6)
    assert m.copy_cols.fn.to_specialize["N"][1] == "the extent of a region"
    a = np.arange(128, dtype=np.float32).reshape(2, 64)
    b = np.zeros_like(a)
    m.copy_cols(a, b)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(DiagnosticError) as e:  # the region is N wide, the tile 64: checked once N is known
        m.copy_cols(np.zeros((2, 50), np.float32), np.zeros((2, 50), np.float32))
    assert "error[E036]: with N=50: copy between tiles of different shapes" in str(e.value)


# ---- a size compared with 1 ---------------------------------------------------------------------

ADD_BIAS = """
def pick(j: i32, n: i32) -> i32:
    return where(n == 1, 0, j)

@kernel
def add_bias(x: f32[M, N], b: f32[K], y: f32[M, N]):
    # y = x + b, where b has N elements or one (broadcast along the row)
    with grid(M, threads=32) as i:
        for j in range(N):
            if K == 1:
                y[i, j] = x[i, j] + b[0]
            else:
                y[i, j] = x[i, j] + b[pick(j, K)]
        if N == 2:
            y[i, 0] += 0.0
"""


@pytest.fixture
def bias():
    return tlc.compile_source(ADD_BIAS, target="cpu", path="bias.tl")


def test_a_size_a_kernel_compares_with_1_is_specialized_on_that_alone(bias):
    fn = bias.add_bias.fn
    assert fn.ones == ("K",) and set(fn.from_arrays) == {"K"} and fn.to_specialize == {}
    # the device function's `n == 1` reads a parameter, and N is compared with 2: both stay dynamic
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for b in (np.float32([5]), np.float32([1, 2, 3, 4]), np.float32([7])):
        y = np.zeros_like(x)
        bias.add_bias(x, b, y)
        np.testing.assert_array_equal(y, x + b)
    y = np.zeros((2, 9), np.float32)
    bias.add_bias(np.ones((2, 9), np.float32), np.arange(9, dtype=np.float32), y)  # another size: K != 1 again
    np.testing.assert_array_equal(y, 1 + np.arange(9, dtype=np.float32)[None].repeat(2, 0))
    kernels = sorted(bias.add_bias._scheduled.values(), key=lambda k: k.specialized)
    assert [(k.specialized, k.not_one) for k in kernels] == [((), ("K",)), ((("K", 1),), ())]


def test_the_test_is_compiled_in_and_the_ir_launcher_and_key_say_so(bias):
    from tlc.typecheck.program import NOT_ONE

    _, one = bias.add_bias.bind((np.zeros((2, 4), np.float32), np.zeros(1, np.float32), np.zeros((2, 4), np.float32)), {})
    _, other = bias.add_bias.bind((np.zeros((2, 4), np.float32), np.zeros(4, np.float32), np.zeros((2, 4), np.float32)), {})
    assert one == {"K": 1} and other == {"K": NOT_ONE}
    keys = {program_key(bias.program.sources, "add_bias", sorted((k, str(v)) for k, v in c.items()), "sm_80")
            for c in (one, other, {})}
    assert len(keys) == 3
    text = bias.add_bias.ir(K=NOT_ONE)
    assert "kernel add_bias(x: f32[M, N], b: f32[K], y: f32[M, N]):\n  specialized K!=1\n" in text
    assert "K == 1" not in text and "if N == 2" in text  # the test of K is gone, N's stays
    assert "b[0]" not in text  # the branch of K == 1 with it
    assert "specialized" not in bias.add_bias.ir()  # unbound, K stays a run-time size with its test
    src = bias.add_bias.cuda_source(K=NOT_ONE)
    assert ("// Specialized for sizes other than 1 of K: each test of one being 1 compiled in as false; "
            "the launcher refuses a size of 1.\n") in src
    assert "  if (K == 1) return cudaErrorInvalidValue;  // specialized: compiled for K != 1 only\n" in src


def test_a_size_given_by_name_specializes_it_as_any_size(bias, tmp_path):
    x = np.ones((2, 4), np.float32)
    y = np.zeros_like(x)
    bias.add_bias(x, np.float32([1, 2, 3, 4]), y, K=4)
    np.testing.assert_array_equal(y, x + np.float32([1, 2, 3, 4]))
    assert any(k.specialized == (("K", 4),) for k in bias.add_bias._scheduled.values())
    (tmp_path / "bias.tl").write_text(ADD_BIAS)
    r = cli("build", str(tmp_path / "bias.tl"), "-D", "K=1", "--emit", "ir")
    assert r.exit_code == 0, r.stderr
    assert "kernel add_bias(x: f32[M, N], b: f32[1], y: f32[M, N]):\n  specialized K=1\n" in r.stdout
    r = cli("build", str(tmp_path / "bias.tl"), "-D", "M=1", "--emit", "ir")  # M is never compared with 1
    assert r.stderr == "error: -D M: no kernel built from " + str(tmp_path / "bias.tl") + " has such a constant\n"
