"""A parallel loop of bytewise logic over 1-byte fragments computed four registers at a time, as
32-bit words (codegen/byte_words.py), and the copies of 1-byte fragments moving their bytes as
they are (templates/tl/layout.cuh, raw_bytes): std.elementwise's logical_and, logical_or,
logical_xor, logical_not, eq / ne of bools and where of 1-byte values.  Element by element, nvcc
split every loaded word into bytes, tested each bool and packed the results again: 12-14 SASS
instructions an element on the whole-tile path at the benchmark's shape, where a copy takes 2.3.
The words' values are the interpreter's (the emitted C evaluated here on words of every
combination of bytes); on the GPU, tests/gpu/test_elementwise_gpu.py."""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.codegen import generate_file
from tlc.codegen.byte_words import HALF_SELECT
from tlc.runner import build
from tlc.runtime.whole_runs import DEFINE

sys.path.insert(0, str(Path(__file__).parent))

BENCH = dict(M=16384, N=8192)  # tlc/benchmarks/ops_rows.py's shape
STORE = re.compile(r"tl::set_bytes_word\((\w+), tl_w, (.*)\);")


@pytest.fixture(scope="module")
def ew():
    return tlc.load("std.elementwise", target="cpu")


def source(ew, op, consts=None, arch="sm_90a", sizes=BENCH):
    p = getattr(ew, op).program(consts or {}, arch, sizes=sizes)
    return generate_file(list(p.kernels), arch, sources=ew.program.sources, source_name=ew.program.path)


@pytest.mark.parametrize("op,consts,word", [
    ("logical_and", {}, "(tl::bytes_word(a_tile, tl_w) & tl::bytes_word(b_tile, tl_w))"),
    ("logical_or", {}, "(tl::bytes_word(a_tile, tl_w) | tl::bytes_word(b_tile, tl_w))"),
    ("logical_xor", {}, "(tl::bytes_word(a_tile, tl_w) ^ tl::bytes_word(b_tile, tl_w))"),
    ("logical_not", {}, "(tl::bytes_word(a_tile, tl_w) ^ 0x01010101u)"),
    ("eq", {"T": "bool"}, "(~(tl::bytes_word(a_tile, tl_w) ^ tl::bytes_word(b_tile, tl_w)) & 0x01010101u)"),
    ("where", {"T": "u8"}, "tl::select_bytes(tl::bytes_word(cond_tile, tl_w), tl::bytes_word(a_tile, tl_w), "
                           "tl::bytes_word(b_tile, tl_w))"),
])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_bytewise_logic_is_computed_in_words(ew, op, consts, word, arch):
    src = source(ew, op, consts, arch)
    assert "// four registers at a time: 32-bit words of bytes (codegen/byte_words.py)" in src
    assert f"tl::set_bytes_word(out_tile, tl_w, {word});" in src, src[-1500:]


@pytest.mark.parametrize("op,consts", [
    ("add", {"T": "u8"}),        # a carry crosses bytes
    ("lt", {"T": "u8"}),         # a comparison of bytes is not one word operation
    ("eq", {"T": "i8"}),
    ("where", {"T": "f32"}),     # 4-byte values
])
def test_other_loops_stay_scalar(ew, op, consts):
    src = source(ew, op, consts)
    assert "// four registers at a time" not in src and "tl::set_bytes_word(" not in src.split("TL_PRIMITIVES")[-1]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_a_where_of_halves_by_bools_is_computed_in_words(ew, dtype):
    # four registers a step, two words of each 16-bit fragment and one of the bools
    # (tl::select_halves4), in the tile op's loop and in std.broadcast.where's run loop
    src = source(ew, "where", {"T": dtype}).split("TL_PRIMITIVES")[-1]
    assert HALF_SELECT in src and "tl::select_halves4(out_tile, cond_tile, a_tile, b_tile, 4 * tl_w);" in src
    assert " ? a_tile[" not in src
    bc = tlc.load("std.broadcast", target="cpu")
    src = bc.where.cuda_source("sm_90a", T=dtype).split("TL_PRIMITIVES")[-1]
    assert "tl::select_halves4(out, cond_1_, a_1_, b_1_, tl_r0 + 4 * tl_w);" in src
    assert "out[tl_r] = (cond_1_[tl_r] ?" not in src


def _words(b: np.ndarray) -> np.ndarray:
    """Bytes [n, 4] -> the little-endian words a thread's registers 4w .. 4w + 3 make."""
    return np.ascontiguousarray(b).view(np.uint32).reshape(-1)


def _evaluate(expr: str, words: dict) -> np.ndarray:
    """The emitted C word expression, in NumPy's uint32 arithmetic (same operators, same
    precedence, all parenthesized by the generator)."""
    def select_bytes(c, a, b):
        m = c * np.uint32(0xFF)
        return (a & m) | (b & ~m)

    py = re.sub(r"tl::bytes_word\((\w+), tl_w\)", r"W['\1']", expr)
    py = re.sub(r"(0x[0-9a-f]{8})u", r"np.uint32(\1)", py).replace("tl::select_bytes", "select_bytes")
    return eval(py, {"np": np, "W": words, "select_bytes": select_bytes})  # noqa: S307 (the generator's own text)


@pytest.mark.parametrize("op,consts,ins", [
    ("logical_and", {}, ("bool", "bool")),
    ("logical_or", {}, ("bool", "bool")),
    ("logical_xor", {}, ("bool", "bool")),
    ("logical_not", {}, ("bool",)),
    ("eq", {"T": "bool"}, ("bool", "bool")),
    ("ne", {"T": "bool"}, ("bool", "bool")),
    ("where", {"T": "bool"}, ("bool", "bool", "bool")),
    ("where", {"T": "u8"}, ("bool", "u8", "u8")),
    ("where", {"T": "i8"}, ("bool", "i8", "i8")),
])
def test_the_words_are_the_interpreters_values(ew, op, consts, ins):
    # every combination of 0/1 bools, and random bytes for u8 / i8, in every byte of a word
    rng = np.random.default_rng(5)
    n = 4096
    args = []
    for d in ins:
        if d == "bool":
            args.append(rng.integers(0, 2, (4, n), dtype=np.uint8).astype(bool))
        else:
            args.append(rng.integers(0, 256, (4, n), dtype=np.uint8).view(np.dtype(d.replace("u8", "uint8")
                                                                                       .replace("i8", "int8"))))
    want = np.asarray(getattr(ew, op)(*args, **consts))
    src = source(ew, op, consts)
    (name, expr), = STORE.findall(src)
    params = re.search(rf"void __launch_bounds__\(\d+(?:, \d+)?\) {op}\((.*?)\)", src).group(1)
    names = [p.split()[-1].removeprefix("__restrict__") for p in params.split(",")][:len(ins)]
    words = {f"{nm}_tile": _words(a.view(np.uint8).reshape(-1, 4)) for nm, a in zip(names, args)}
    got = _evaluate(expr, words).view(np.uint8).reshape(want.shape)
    assert np.array_equal(got, want.view(np.uint8)), (op, consts)


def _instructions(sass: str) -> list[str]:
    return [m for m in re.findall(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", sass) if not m.startswith("NOP")]


@pytest.mark.parametrize("op", ["logical_and", "logical_xor", "logical_not"])
def test_no_byte_is_split_out_of_its_word(ew, op, tmp_path):
    """sm_90a, the TL_WHOLE_RUNS build the runtime makes at the benchmark's shape: the loads'
    words go to the LOP3s and on to the stores whole (no PRMT packing bytes, no shift or
    test taking one out); 36 instructions for logical_and's kernel at one run a thread (133 at two,
    648 before the words)."""
    from nvcc import cubin_sass

    sass, log = cubin_sass(DEFINE + source(ew, op), "sm_90a", tmp_path)
    ins = _instructions(sass)
    assert not [i for i in ins if re.search(r"\bPRMT\b|SHF\.R\.U32\.HI|\bSEL\b.*0x1\b|\.U8\b", i)], "\n".join(ins)
    assert sum("LDG.E.128" in i for i in ins) >= (2 if op != "logical_not" else 1)
    assert len(ins) <= 45, len(ins)
    assert "0 bytes spill" in log


@pytest.mark.nvcc  # the real NVRTC includes the CUDA toolkit's headers, which its wheel lacks
def test_nvrtc_builds_the_same_words(ew, tmp_path, monkeypatch):
    """The runtime compiles with NVRTC, which has no __builtin_memcpy (the templates' memcpy
    is a builtin of both): the same word-wise machine code as nvcc's (133 instructions)."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "runtime"))
    from nvcc import sass_of
    from nvrtc_library import find, stand_in
    from tlc.runtime import compile as rc

    module, why = find()
    if module is None:
        pytest.skip(why)
    stand_in(monkeypatch, module)
    monkeypatch.setattr(rc, "nvrtc_version", lambda: tuple(module.getVersion()))
    monkeypatch.delenv(rc.LINEINFO_ENV, raising=False)
    (tmp_path / "k.cubin").write_bytes(rc.nvrtc_compile(DEFINE + source(ew, "logical_and"), "sm_90a", "k"))
    ins = _instructions(sass_of(tmp_path / "k.cubin"))
    assert not [i for i in ins if re.search(r"\bPRMT\b|SHF\.R\.U32\.HI|\.U8\b", i)], "\n".join(ins)
    assert len(ins) <= 150, len(ins)
