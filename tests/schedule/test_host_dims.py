"""schedule/host_dims.py: which dimension expressions of tensor parameters the launch computes
and passes (`ir.DimExpr.arg`), shown by `--emit ir` in the signature and as a note: with
HOST_DIMS "all" every kernel's, with "warp_specialized" a warp-specialized kernel's alone, off
(False) none."""
import pytest

import tlc
from tlc import ir
from tlc.ir.nodes import DimExpr, host_dims
from tlc.dtypes import I32
from tlc.schedule import host_dims as hd

# H // HK in two params (one argument), K // 2 and cdiv(K, 128) by constants (computed in the
# kernel), S % HK a second expression that divides by a run-time value
SOURCE = """
@kernel
def k(x: f32[H, K], heads: f32[HK], y: f32[HK * (H // HK), K // 2], z: f32[HK * (H // HK), cdiv(K, 128)],
      w: f32[S], r: f32[S % HK]):
    with grid(H, threads=32) as bx:
        for i in parallel(32):
            y[bx, i] = x[bx, i] + z[bx, 0] + r[0]
"""


def scheduled(on: bool, monkeypatch):
    monkeypatch.setattr(hd, "HOST_DIMS", "all" if on else False)
    return tlc.compile_source(SOURCE, target="cpu", path="k.tl").k.scheduled({}, "sm_80")


def dims(kernel):
    return [(p.name, str(d), d.arg) for p in kernel.params for d in p.shape if isinstance(d, DimExpr)]


def test_the_expressions_that_divide_by_a_run_time_value_are_arguments_of_the_launch(monkeypatch):
    k = scheduled(True, monkeypatch)
    assert dims(k) == [("y", "HK * (H // HK)", "tl_dim0"), ("y", "K // 2", ""), ("z", "HK * (H // HK)", "tl_dim0"),
                       ("z", "cdiv(K, 128)", ""), ("r", "S % HK", "tl_dim1")]
    assert [(d.text, d.arg) for d in host_dims(k.params)] == [("HK * (H // HK)", "tl_dim0"), ("S % HK", "tl_dim1")]
    text = ir.print_kernel(k)
    assert "y: f32[HK * (H // HK) = tl_dim0, K // 2], z: f32[HK * (H // HK) = tl_dim0, cdiv(K, 128)]" in text
    assert ("# note: the launch computes HK * (H // HK) once and passes it as tl_dim0 (it divides by a run-time "
            "value: schedule/host_dims.py)") in text
    assert "# note: the launch computes S % HK once and passes it as tl_dim1" in text


def test_off_the_kernel_computes_them_itself(monkeypatch):
    k = scheduled(False, monkeypatch)
    assert all(arg == "" for _, _, arg in dims(k)) and host_dims(k.params) == ()
    assert "tl_dim" not in ir.print_kernel(k)


def test_warp_specialized_takes_the_kernels_whose_loop_has_a_producer_and_consumers(monkeypatch):
    """std.attention's flash_fwd on sm_90a (a ring of a producer and consumer warpgroups) takes
    its LSE axis as an argument; the same kernel on sm_80, and the kernel above, do not."""
    from pathlib import Path

    monkeypatch.setattr(hd, "HOST_DIMS", "warp_specialized")
    std = tlc.compile_source((Path(__file__).resolve().parents[2] / "stdlib" / "attention.tl").read_text(),
                             target="cpu", path="attention.tl").flash_fwd
    hopper, ampere = std.scheduled({"D": 64}, "sm_90a"), std.scheduled({"D": 64}, "sm_80")
    assert hopper.warp_spec is not None and [d.text for d in host_dims(hopper.params)] == ["HK * (H // HK)"]
    assert ampere.warp_spec is None and host_dims(ampere.params) == ()
    k = tlc.compile_source(SOURCE, target="cpu", path="k.tl").k.scheduled({}, "sm_90a")
    assert host_dims(k.params) == ()


def test_the_argument_is_no_part_of_a_dimensions_equality():
    """A tensor map's sizes and the launch's slots find a hoisted dimension by its expression."""
    e = ir.BinOp("//", v("H"), v("HK"), I32)
    assert DimExpr("H // HK", e) == DimExpr("H // HK", e, arg="tl_dim0")
    assert hash(DimExpr("H // HK", e)) == hash(DimExpr("H // HK", e, arg="tl_dim0"))


def v(name):
    return ir.Var(name, I32)


def c(value):
    return ir.Const(value, I32)


@pytest.mark.parametrize("e, divides", [
    (ir.BinOp("//", v("H"), v("HK"), I32), True),
    (ir.BinOp("%", v("S"), v("HK"), I32), True),
    (ir.BinOp("*", v("HK"), ir.BinOp("//", v("H"), ir.BinOp("+", v("HK"), c(1), I32), I32), I32), True),
    (ir.BinOp("//", v("K"), c(2), I32), False),
    (ir.BinOp("-", ir.BinOp("*", v("K"), c(2), I32), c(1), I32), False),
])
def test_a_division_by_a_run_time_value_is_what_is_passed(e, divides):
    assert hd.divides_at_run_time(e) is divides
