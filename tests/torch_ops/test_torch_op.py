"""tlc.torch on CPU tensors (tlc's interpreter): a kernel or tile op registered as a
torch.library custom op runs, matches PyTorch, has a fake implementation whose shapes and
dtypes are the tl signature's (also with symbolic sizes), traces under
torch.compile(fullgraph=True) with no graph break, passes torch.library.opcheck, and has a
gradient when a backward kernel is given.  Skipped where PyTorch is not installed (it is not
a test dependency: CI without it skips this file, saying so).  The GPU half is
tests/torch_ops/test_torch_op_gpu.py."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import tlc.torch  # noqa: E402
from torch_kit import example_block, load_std, name, rms_ref  # noqa: E402
from tlc.torch import OpError  # noqa: E402


@pytest.fixture(scope="module")
def std():
    return load_std("cpu")


def test_kernel_with_outputs_returns_new_tensors(std):
    rms = tlc.torch.op(name("rms"), std["nn"].rms_norm, outputs="y")
    x, w = torch.randn(5, 37), torch.randn(37)
    torch.testing.assert_close(rms(x, w, 1e-6), rms_ref(x, w))
    xh = x.half()
    y = rms(xh, w.half(), 1e-6)  # T bound from the tensors, as a direct call binds it
    assert y.dtype == torch.float16
    torch.testing.assert_close(y.float(), rms_ref(xh.float(), w.half().float()), atol=2e-3, rtol=2e-3)


def test_kernel_writes_its_mutated_argument_in_place(std):
    rms = tlc.torch.op(name("rms_inplace"), std["nn"].rms_norm)
    x, w = torch.randn(4, 16), torch.randn(16)
    y = torch.full((4, 16), float("nan"))
    assert rms(x, w, y, 1e-6) is None
    torch.testing.assert_close(y, rms_ref(x, w))
    # a non-contiguous output is computed densely and copied back into it
    big = torch.full((16, 4), float("nan")).t()
    rms(x, w, big, 1e-6)
    torch.testing.assert_close(big, rms_ref(x, w))


def test_kernel_with_two_outputs_returns_both(std):
    ce = tlc.torch.op(name("ce"), std["nn_train"].cross_entropy, outputs=("loss", "lse"))
    logits, target = torch.randn(6, 50), torch.tensor([3, 0, 49, -100, 7, 7])
    loss, lse = ce(logits, target)  # ignore_index left at its default, -100
    torch.testing.assert_close(lse, torch.logsumexp(logits, -1))
    want = torch.nn.functional.cross_entropy(logits, target, reduction="none", ignore_index=-100)
    torch.testing.assert_close(loss, want)


def test_decorator_form_and_tile_op(std):
    add = tlc.torch.op(name("add"))(std["elementwise"].add)
    a, b = torch.randn(3, 7), torch.randn(3, 7)
    torch.testing.assert_close(add(a, b), a + b)
    bf = add(a.bfloat16(), b.bfloat16())  # bf16 through ml_dtypes views of the same memory
    assert bf.dtype == torch.bfloat16
    torch.testing.assert_close(bf, (a.bfloat16().float() + b.bfloat16().float()).bfloat16())


def test_constants_are_fixed_for_the_operator(std):
    # ACT=2: relu in matmul_epilogue's store; small tiles for the interpreter
    gemm = tlc.load("std.gemm", target="cpu")
    relu_linear = tlc.torch.op(name("relu_linear"), gemm.matmul_epilogue, outputs="C",
                               constants={"ACT": 2, "BM": 16, "BN": 16, "BK": 16})
    assert relu_linear.tlc_signature.schema() == "(Tensor A, Tensor B, Tensor bias, float alpha, float beta) -> Tensor"
    a, b, bias = torch.randn(9, 20), torch.randn(20, 11), torch.randn(11)
    want = torch.relu(2.0 * a @ b + bias)
    for _ in range(2):  # the second call takes the kernel's cached launch
        torch.testing.assert_close(relu_linear(a, b, bias, 2.0, 0.0), want, atol=1e-4, rtol=1e-4)


def test_fake_tensor_shapes_and_dtypes_come_from_the_signature(std):
    from torch._subclasses.fake_tensor import FakeTensorMode

    swiglu = tlc.torch.op(name("swiglu"), std["nn_layers"].swiglu, outputs="y")
    ce = tlc.torch.op(name("ce"), std["nn_train"].cross_entropy, outputs=("loss", "lse"))
    with FakeTensorMode():
        y = swiglu(torch.empty(6, 2, 10, dtype=torch.bfloat16))
        loss, lse = ce(torch.empty(4, 50, dtype=torch.float16), torch.empty(4, dtype=torch.int64))
    assert (tuple(y.shape), y.dtype) == ((6, 10), torch.bfloat16)
    assert (tuple(loss.shape), loss.dtype, tuple(lse.shape)) == ((4,), torch.float32, (4,))


def test_fake_rejects_inconsistent_shapes(std):
    from torch._subclasses.fake_tensor import FakeTensorMode

    rms = tlc.torch.op(name("rms_fake"), std["nn"].rms_norm, outputs="y")
    with FakeTensorMode(), pytest.raises(RuntimeError, match="shape symbol 'N' is 8 from 'x' .axis 1. but 9 from 'weight'"):
        rms(torch.empty(4, 8), torch.empty(9), 1e-6)


def test_compile_fullgraph_no_graph_break_dynamic_shapes(std):
    rms = tlc.torch.op(name("rms_compile"), std["nn"].rms_norm, outputs="y")
    add = tlc.torch.op(name("add_compile"), std["elementwise"].add)
    inplace = tlc.torch.op(name("rms_compile_inplace"), std["nn"].rms_norm)

    def f(x, w):
        y = torch.empty_like(x)
        inplace(x, w, y, 1e-6)  # a mutating op: functionalized by torch.compile
        return add(rms(x, w, 1e-6) * 2, y)

    x, w = torch.randn(5, 24), torch.randn(24)
    assert torch._dynamo.explain(f)(x, w).graph_break_count == 0
    g = torch.compile(f, fullgraph=True, backend="aot_eager", dynamic=True)  # symbolic sizes in the fake
    for rows, cols in ((5, 24), (3, 40)):
        x, w = torch.randn(rows, cols), torch.randn(cols)
        torch.testing.assert_close(g(x, w), 3 * rms_ref(x, w))


def test_torch_export_keeps_the_operator_as_one_node(std):
    rms = tlc.torch.op(name("rms_export"), std["nn"].rms_norm, outputs="y")

    class Norm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(24))

        def forward(self, x):
            return rms(x, self.weight, 1e-6) + 1

    model, x = Norm(), torch.randn(5, 24)
    exported = torch.export.export(model, (x,))
    called = [n.target for n in exported.graph.nodes if n.op == "call_function"]
    assert called == [rms.default, torch.ops.aten.add.Tensor]
    torch.testing.assert_close(exported.module()(x), model(x))


def test_opcheck(std):
    rms = tlc.torch.op(name("rms_check"), std["nn"].rms_norm, outputs="y", backward=std["nn_train"].rms_norm_bwd)
    inplace = tlc.torch.op(name("rms_check_inplace"), std["nn"].rms_norm)
    x, w = torch.randn(3, 16, requires_grad=True), torch.randn(16, requires_grad=True)
    for op, args in ((rms, (x, w, 1e-5)), (inplace, (x.detach(), w.detach(), torch.empty(3, 16), 1e-5))):
        result = torch.library.opcheck(op, args)
        assert set(result.values()) == {"SUCCESS"}, result


def test_autograd_with_a_backward_kernel(std):
    rms = tlc.torch.op(name("rms_grad"), std["nn"].rms_norm, outputs="y", backward=std["nn_train"].rms_norm_bwd)
    x, w, g = torch.randn(5, 40, requires_grad=True), torch.randn(40, requires_grad=True), torch.randn(5, 40)
    rms(x, w, 1e-6).backward(g)
    x2, w2 = x.detach().requires_grad_(), w.detach().requires_grad_()
    rms_ref(x2, w2).backward(g)
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(w.grad, w2.grad)
    # and through torch.compile: the backward is an operator too (rms_grad_N_backward)
    x.grad = w.grad = None
    torch.compile(lambda x, w: rms(x, w, 1e-6), fullgraph=True, backend="aot_eager")(x, w).backward(g)
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(w.grad, w2.grad)


def test_autograd_with_a_backward_tile_op(std):
    ew = std["elementwise"]
    silu = tlc.torch.op(name("silu"), ew.silu, backward=ew.silu_bwd)  # silu_bwd(dy, x) -> dx
    a = torch.randn(3, 7, requires_grad=True)
    silu(a).sum().backward()
    a2 = a.detach().requires_grad_()
    torch.nn.functional.silu(a2).sum().backward()
    torch.testing.assert_close(a.grad, a2.grad)


@pytest.mark.parametrize("options, message", [
    ({"forward": "rms_norm"},
     "backward: 'rms_norm' mutates 'y'; an operator with a gradient returns its outputs: outputs=('y',)"),
    ({"backward": "cross_entropy_bwd"},
     "backward: 'cross_entropy_bwd' has no parameter named d + an input of 'rms_norm' (dx, dweight), so it computes no "
     "gradient"),
    ({"grads": ("eps",)}, "grads: 'eps' is not a tensor input of 'rms_norm'; its tensor inputs are x, weight"),
])
def test_backward_errors(std, options, message):
    forward = options.get("forward")
    kwargs = {} if forward else {"outputs": "y"}
    with pytest.raises(OpError) as e:
        tlc.torch.op(name("bad"), std["nn"].rms_norm, backward=getattr(std["nn_train"], options.get("backward", "rms_norm_bwd")),
                     grads=options.get("grads"), **kwargs)
    assert str(e.value) == message


def test_example_block_on_cpu():
    """examples/torch_block.py at a small size: every computation a tlc operator, traced whole."""
    r = example_block().check("cpu", s=8, d=32, heads=2, f=32, dtype=torch.float32, cpu_target="interp", backend="aot_eager")
    assert r["graph_breaks"] == 0 and r["graphs"] == 1
    assert r["eager_error"] <= 1e-4 * r["scale"] and r["compiled_error"] <= 1e-4 * r["scale"], r


@pytest.mark.slow
def test_cpu_tensors_on_the_cpp_target(std):
    """cpu_target="cpp": the cpu target's C++ (compiled by the system's compiler) through the
    same NumPy views; the module loaded for the interpreter lends its checked program."""
    add = tlc.torch.op(name("add_cpp"), std["elementwise"].add, cpu_target="cpp")
    rms = tlc.torch.op(name("rms_cpp"), std["nn"].rms_norm, outputs="y", cpu_target="cpp")
    a, w = torch.randn(30, 70), torch.randn(70)
    torch.testing.assert_close(add(a, a), 2 * a)
    torch.testing.assert_close(rms(a, w, 1e-6), rms_ref(a, w))


def test_no_backward_means_no_gradient_and_a_warning(std):
    add = tlc.torch.op(name("add_nograd"), std["elementwise"].add)
    a = torch.randn(3, 4, requires_grad=True)
    with pytest.warns(UserWarning, match="an autograd kernel was not registered to the Autograd key"):
        add(a, a).sum().backward()
    assert a.grad is None


def test_operator_names_are_checked(std):
    with pytest.raises(OpError, match=r"^an operator's name is 'namespace::name' \(two identifiers\), not 'rms'$"):
        tlc.torch.op("rms", std["nn"].rms_norm)
    taken = name("taken")
    tlc.torch.op(taken, std["nn"].rms_norm)
    with pytest.raises(OpError, match=f"^cannot define the operator '{taken}': "):
        tlc.torch.op(taken, std["nn"].rms_norm)
