"""The sigmoid custom op of examples/torch/ (torch.ops.tiledsl_examples.sigmoid) from Python:
against torch.sigmoid, torch.autograd.gradcheck in double, a small model trained with it beside
the same model with torch.sigmoid, inside torch.jit.script and under torch.compile (the op opaque
to it, its Meta kernel giving shapes). CPU tensors run on tiledsl's interpreter; CUDA ones, where
torch sees a GPU, on it. Usage: test_torch_ops.py <path of the op library>."""
import sys

import torch

torch.ops.load_library(sys.argv[1])
sigmoid = torch.ops.tiledsl_examples.sigmoid
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

print(f"test_torch_ops: {checks} checks passed on {', '.join(devices)} (torch {torch.__version__})")
