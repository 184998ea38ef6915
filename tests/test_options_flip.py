"""scripts/options-flip (each off-by-default compiler option built with it on, against the
defaults): the options it names exist and are off, it turns one on and back, its builds follow
the option, and a build that breaks with an option on is reported as broken."""
import importlib

import pytest
from script_kit import load_script


@pytest.fixture(scope="module")
def flip():
    return load_script("options-flip")


def test_every_option_it_names_exists_and_is_off(flip):
    from tlc.api import load
    from tlc import package_data

    for name, module, attr, on in flip.OPTIONS:
        if module is None:  # a std kernel's constant: FILE:KERNEL:CONSTANT
            tl, kernel, const = attr.split(":")
            k = load(str(package_data.stdlib().joinpath(tl)), target="cpu").kernels[kernel]
            assert k.fn.param(const).value != on, name
        else:
            assert hasattr(importlib.import_module(module), attr), name
            assert getattr(importlib.import_module(module), attr) != on, f"{name} is on by default"


def test_an_option_goes_on_and_back(flip):
    from tlc.schedule import operand_layout

    flip.set_option("operand_layout.WGMMA_REGISTER_A_MAX", True)
    assert operand_layout.WGMMA_REGISTER_A_MAX == 32
    flip.set_option("operand_layout.WGMMA_REGISTER_A_MAX", False)
    assert operand_layout.WGMMA_REGISTER_A_MAX == 0


def test_the_builds_follow_the_option(flip, monkeypatch):
    off = flip.build_all(["sm_90a"], ["examples/gemm.tl"], {})
    assert list(off) == [("examples/gemm.tl", "matmul", "sm_90a", "defaults")]
    flip.set_option("stream_k.STREAM_K", True)
    try:
        on = flip.build_all(["sm_90a"], ["examples/gemm.tl"], {})
    finally:
        flip.set_option("stream_k.STREAM_K", False)
    on, off = next(iter(on.values())), next(iter(off.values()))
    assert on.count("tl::StreamWalk") > off.count("tl::StreamWalk")  # the walk used where streamed


def test_a_build_that_fails_with_the_option_on_is_broken(flip, monkeypatch, tmp_path, capsys):
    import io

    key = ("examples/gemm.tl", "matmul", "sm_90a", "defaults")
    base = flip.build_all(["sm_90a"], ["examples/gemm.tl"], {})

    def failing(archs, only, extra):
        return {key: "ERROR (INTERNAL): KeyError: 'acc'"}
    monkeypatch.setattr(flip, "build_all", failing)
    report = io.StringIO()
    assert flip.flip("stream_k.STREAM_K", base, ["sm_90a"], ["examples/gemm.tl"], tmp_path, report) is True
    assert "BROKEN examples/gemm.tl matmul sm_90a defaults: generation with the option on: ERROR (INTERNAL)" \
        in report.getvalue()
    assert (tmp_path / "stream_k.STREAM_K.txt").read_text() == report.getvalue()
