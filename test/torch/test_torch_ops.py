"""The custom ops of examples/torch/ (torch.ops.tiledsl_examples.sigmoid and .layer_norm) from
Python: against torch.sigmoid and torch.nn.functional.layer_norm, torch.autograd.gradcheck (in
double for the sigmoid; the layer norm's kernels are f32, so its gradients are checked against
torch's in double within a stated tolerance), small models trained with them beside the same
models in plain torch, inside torch.jit.script and under torch.compile (the ops opaque to it,
their Meta kernels giving shapes). CPU tensors run on tiledsl's interpreter; CUDA ones, where
torch sees a GPU, on it. Usage: test_torch_ops.py <path of the op library>."""
import sys
import warnings

import torch

torch.ops.load_library(sys.argv[1])
sigmoid = torch.ops.tiledsl_examples.sigmoid
layer_norm = torch.ops.tiledsl_examples.layer_norm
devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
checks = 0


def check(ok, what):
    global checks
    if not ok:
        raise SystemExit(f"FAILED: {what}")
    checks += 1


for dev in devices:
    gen = torch.Generator(device="cpu").manual_seed(7)
    # forward on odd shapes, f32 and f64, a non-contiguous input
    for dtype, tol in ((torch.float32, 1e-6), (torch.float64, 1e-14)):
        x = (torch.randn(37, 211, generator=gen, dtype=dtype) * 5).to(dev)
        check(torch.allclose(sigmoid(x), torch.sigmoid(x), rtol=tol, atol=tol), f"forward {dev} {dtype}")
        xt = x.t()
        check(torch.allclose(sigmoid(xt), torch.sigmoid(xt), rtol=tol, atol=tol), f"forward, transposed, {dev}")
    # gradcheck in double (the kernels are templated on the dtype)
    x = torch.randn(5, 33, generator=gen, dtype=torch.float64).to(dev).requires_grad_()
    check(torch.autograd.gradcheck(sigmoid, (x,), eps=1e-6, atol=1e-8), f"gradcheck {dev}")

    # a small model: linear -> sigmoid -> linear, trained for a few steps with tiledsl's op and
    # with torch.sigmoid from the same weights and data; the losses must follow each other.
    def train(act):
        torch.manual_seed(11)
        model = torch.nn.Sequential(torch.nn.Linear(17, 64), torch.nn.Linear(64, 3)).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        data = torch.randn(128, 17, generator=torch.Generator().manual_seed(12)).to(dev)
        target = torch.randn(128, 3, generator=torch.Generator().manual_seed(13)).to(dev)
        losses = []
        for _ in range(8):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model[1](act(model[0](data))), target)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    ours, ref = train(sigmoid), train(torch.sigmoid)
    check(ours[-1] < ours[0], f"training lowers the loss on {dev}: {ours}")
    check(all(abs(a - b) <= 1e-5 * max(1.0, abs(b)) for a, b in zip(ours, ref)),
          f"training with tiledsl's sigmoid follows torch's on {dev}: {ours} vs {ref}")

    # torch.jit.script: the op is callable from TorchScript
    @torch.jit.script
    def scripted(t: torch.Tensor) -> torch.Tensor:
        return torch.ops.tiledsl_examples.sigmoid(t) * 2.0

    x = torch.randn(1000, generator=gen).to(dev)
    check(torch.allclose(scripted(x), torch.sigmoid(x) * 2.0, atol=1e-6), f"torch.jit.script on {dev}")

    # torch.compile: opaque op, shapes from its Meta kernel; forward and backward through it
    def f(t):
        return (sigmoid(t * 3.0) + 1.0).sum()

    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    x = torch.randn(4, 129, generator=gen).to(dev).requires_grad_()
    got = compiled(x)
    got.backward()
    x_ref = x.detach().clone().requires_grad_()
    want = (torch.sigmoid(x_ref * 3.0) + 1.0).sum()
    want.backward()
    check(torch.allclose(got, want, rtol=1e-5), f"torch.compile forward on {dev}")
    check(torch.allclose(x.grad, x_ref.grad, atol=1e-6), f"torch.compile backward on {dev}")
    with torch._subclasses.fake_tensor.FakeTensorMode():
        fake = sigmoid(torch.empty(3, 7, device=dev))
        check(fake.shape == (3, 7), "the Meta kernel gives the shape")

for dev in devices:
    gen = torch.Generator(device="cpu").manual_seed(21)
    F = torch.nn.functional
    # forward: a 3-D input over its last dimension of 333 columns (not a power of two)
    x = (torch.randn(5, 41, 333, generator=gen) * 3 + 1).to(dev)
    w = torch.randn(333, generator=gen).to(dev)
    b = torch.randn(333, generator=gen).to(dev)
    y = layer_norm(x, w, b, 1e-5)
    check(torch.allclose(y, F.layer_norm(x, (333,), w, b, 1e-5), rtol=1e-5, atol=1e-5), f"layer norm forward {dev}")
    # gradients of sum(g * y) against torch's in double from the same f32 inputs: f32 sums over 205
    # rows and 333 columns, so within 1e-4 relative to the largest gradient
    g = torch.randn(5, 41, 333, generator=gen).to(dev)
    xs, ws, bs = (t.clone().requires_grad_() for t in (x, w, b))
    (layer_norm(xs, ws, bs, 1e-5) * g).sum().backward()
    xd, wd, bd = (t.double().clone().requires_grad_() for t in (x, w, b))
    (F.layer_norm(xd, (333,), wd, bd, 1e-5) * g.double()).sum().backward()
    for name, ours, ref in (("dx", xs.grad, xd.grad), ("dw", ws.grad, wd.grad), ("db", bs.grad, bd.grad)):
        err = (ours.double() - ref).abs().max().item() / ref.abs().max().item()
        check(err <= 1e-4, f"layer norm {name} on {dev}: relative error {err}")
    # gradcheck in f32 with a step and tolerance f32 allows (finite differences of f32 sums)
    xg = torch.randn(3, 17, generator=gen).to(dev).requires_grad_()
    wg = torch.randn(17, generator=gen).to(dev).requires_grad_()
    bg = torch.randn(17, generator=gen).to(dev).requires_grad_()
    with warnings.catch_warnings():  # that the inputs are not double: known, hence the tolerance
        warnings.simplefilter("ignore", UserWarning)
        check(torch.autograd.gradcheck(lambda a, c, d: layer_norm(a, c, d, 1e-5), (xg, wg, bg), eps=1e-2, atol=5e-2,
                                       rtol=5e-2, fast_mode=True), f"layer norm gradcheck (f32) on {dev}")

    # two linear layers around the layer norm, trained beside the same model with F.layer_norm
    def train_ln(norm):
        torch.manual_seed(31)
        lin1, lin2 = torch.nn.Linear(17, 96).to(dev), torch.nn.Linear(96, 3).to(dev)
        gamma = torch.nn.Parameter(torch.ones(96, device=dev))
        beta = torch.nn.Parameter(torch.zeros(96, device=dev))
        opt = torch.optim.SGD([*lin1.parameters(), *lin2.parameters(), gamma, beta], lr=0.05)
        data = torch.randn(64, 17, generator=torch.Generator().manual_seed(32)).to(dev)
        target = torch.randn(64, 3, generator=torch.Generator().manual_seed(33)).to(dev)
        losses = []
        for _ in range(8):
            opt.zero_grad()
            loss = F.mse_loss(lin2(norm(lin1(data), gamma, beta)), target)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    ours = train_ln(lambda t, gm, bt: layer_norm(t, gm, bt, 1e-5))
    ref = train_ln(lambda t, gm, bt: F.layer_norm(t, (96,), gm, bt, 1e-5))
    check(ours[-1] < ours[0], f"training with the layer norm lowers the loss on {dev}: {ours}")
    check(all(abs(a - c) <= 1e-4 * max(1.0, abs(c)) for a, c in zip(ours, ref)),
          f"training with tiledsl's layer norm follows torch's on {dev}: {ours} vs {ref}")

    @torch.jit.script
    def scripted_ln(t: torch.Tensor, gm: torch.Tensor, bt: torch.Tensor) -> torch.Tensor:
        return torch.ops.tiledsl_examples.layer_norm(t, gm, bt, 1e-5) + 1.0

    check(torch.allclose(scripted_ln(x, w, b), F.layer_norm(x, (333,), w, b, 1e-5) + 1.0, atol=1e-5),
          f"layer norm in torch.jit.script on {dev}")
    compiled_ln = torch.compile(lambda t: (layer_norm(t, w, b, 1e-5) ** 2).sum(), backend="aot_eager",
                                fullgraph=True)
    xc = x.clone().requires_grad_()
    compiled_ln(xc).backward()
    xr = x.clone().requires_grad_()
    (F.layer_norm(xr, (333,), w, b, 1e-5) ** 2).sum().backward()
    check(torch.allclose(xc.grad, xr.grad, atol=1e-3), f"layer norm under torch.compile on {dev}")

print(f"test_torch_ops: {checks} checks passed on {', '.join(devices)} (torch {torch.__version__})")
