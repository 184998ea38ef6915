"""The program cache's entries (tlc/runtime/ir_pickle.py): every kernel's IR and generated code
round-trips, and an entry naming anything but a data class of tlc's is refused before it runs."""
from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

import tlc
from tlc import ir
from tlc.runtime import ir_pickle

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.tl"))


def _kernels():
    for path in EXAMPLES:
        mod = tlc.load(str(path), target="cpu")
        for name, k in mod.kernels.items():
            if k.fn.kind != "tile_op":
                yield path.name, name, k


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_every_example_kernel_round_trips(arch):
    count = 0
    for _, _, k in _kernels():
        kernel, generated = k.scheduled({}, arch), k.generated({}, arch)
        back = ir_pickle.loads(ir_pickle.dumps((kernel, generated, b"binary", arch)))
        assert ir.print_kernel(back[0]) == ir.print_kernel(kernel)
        assert back[1] == generated and back[1].source == generated.source
        assert back[2:] == (b"binary", arch)
        count += 1
    assert count >= 4


class _Runs:
    """Unpickled by a plain pickle, this calls `func(*args)`."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


@pytest.mark.parametrize("make", [
    lambda marker: _Runs(os.system, f"touch {marker}"),
    lambda marker: _Runs(open, str(marker), "w"),
    lambda marker: _Runs(eval, f"open({str(marker)!r}, 'w')"),
    lambda marker: _Runs(tlc.files.write_all, [(str(marker), "x")]),  # a function of tlc's: not data
])
def test_an_entry_that_would_run_code_is_refused(tmp_path, make):
    marker = tmp_path / "ran"
    blob = pickle.dumps(make(marker))
    with pytest.raises(pickle.UnpicklingError, match="is not a data class of tlc's"):
        ir_pickle.loads(blob)
    assert not marker.exists()


@pytest.mark.parametrize("module, name", [
    ("tlc.files", "os"),  # a module a tlc module imports
    ("tlc.files", "tempfile.mkstemp"),  # a dotted name reaching through it
    ("tlc.ir.nodes", "Kernel.__init__"),
    ("builtins", "getattr"),
    ("tlc.nonexistent", "X"),
])
def test_globals_beyond_tlc_data_classes_are_refused(module, name):
    blob = b"\x80\x04" + pickle.SHORT_BINUNICODE + bytes([len(module)]) + module.encode() \
        + pickle.SHORT_BINUNICODE + bytes([len(name)]) + name.encode() + pickle.STACK_GLOBAL + pickle.STOP
    with pytest.raises(pickle.UnpicklingError, match=f"{module}.{name} is not a data class of tlc's"):
        ir_pickle.loads(blob)


@pytest.mark.gpu
def test_a_planted_program_cache_entry_is_rebuilt_not_run(tmp_path, monkeypatch):
    """Through the real path (tlc.load, a kernel's first launch): the program cache's entry is
    replaced by a pickle that would create a file; the kernel is rebuilt and runs correctly."""
    import numpy as np

    from tlc.runtime import cache as cache_mod

    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    marker = tmp_path / "ran"
    planted = pickle.dumps(_Runs(open, str(marker), "w"))
    real_load = cache_mod.KernelCache.load
    monkeypatch.setattr(cache_mod.KernelCache, "load",
                        lambda self, key: planted if key.startswith("p") else real_load(self, key))
    mod = tlc.load(str(Path(__file__).resolve().parents[2] / "examples" / "vector_add.tl"), target="cuda")
    x, y = np.arange(1000, dtype=np.float32), np.ones(1000, dtype=np.float32)
    out = np.zeros(1000, dtype=np.float32)
    mod.vector_add(x, y, out, 2.0)
    assert not marker.exists()
    np.testing.assert_allclose(out, 2 * x + 1)
