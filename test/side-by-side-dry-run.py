#!/usr/bin/env python3
"""Runs bench/torch_side_by_side.py end to end without a GPU, torch or Triton.

The script only runs on the GPU machine, where a mistake in it costs a device call. Here torch,
triton and libcuda are replaced by stubs (tensors that are only shapes, launches that do
nothing, timings drawn at random, a CUDA driver whose every call succeeds), so that what does not
depend on the GPU runs: reading DIR/kernels.jsonl, the parameter lists of each exported kernel,
building the launchers and the Triton configurations, the checks, the rounds and the summary
lines. The figures it prints mean nothing.

usage: side-by-side-dry-run.py DIR [torch_side_by_side.py options]
"""
import ctypes
import os
import random
import runpy
import sys
import types

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "torch_side_by_side.py")


class FakeTensor:
    def __init__(self, *shape, **_):
        self.shape = shape

    def data_ptr(self):
        return 1 << 20

    def fill_(self, _):
        return self

    def float(self):
        return self

    def abs(self):
        return self

    def __sub__(self, _):
        return self

    def __add__(self, _):
        return self

    def __ne__(self, _):
        return self

    def norm(self):
        return FakeScalar(1.0)

    def max(self):
        return FakeScalar(0.0)

    def sum(self):
        return FakeScalar(0)


class FakeScalar:
    def __init__(self, v):
        self.v = v

    def item(self):
        return self.v

    def __truediv__(self, other):
        return FakeScalar(0.0)


def fake_torch():
    torch = types.ModuleType("torch")
    torch.__version__ = "stub"
    torch.Tensor = FakeTensor
    torch.bfloat16, torch.float16 = "bfloat16", "float16"
    for name in ("randn", "empty"):
        setattr(torch, name, lambda *shape, **_: FakeTensor(*shape))
    torch.empty_like = lambda t: FakeTensor(*t.shape)
    torch.matmul = lambda a, b, out=None: FakeTensor()
    torch.add = lambda a, b, out=None: FakeTensor()
    torch.softmax = lambda x, dim: FakeTensor()
    torch.equal = lambda a, b: True
    torch.allclose = lambda *a, **k: True
    torch.manual_seed = lambda seed: None
    torch.cuda = types.SimpleNamespace(synchronize=lambda: None, get_device_name=lambda: "no GPU (dry run)",
                                       current_stream=lambda: types.SimpleNamespace(cuda_stream=0))
    functional = types.ModuleType("torch.nn.functional")
    functional.scaled_dot_product_attention = lambda q, k, v, is_causal=False: FakeTensor()
    functional.layer_norm = lambda *a, **k: FakeTensor()
    nn = types.ModuleType("torch.nn")
    nn.functional = functional
    torch.nn = nn
    attention = types.ModuleType("torch.nn.attention")
    attention.SDPBackend = types.SimpleNamespace(CUDNN_ATTENTION=types.SimpleNamespace(name="CUDNN_ATTENTION"),
                                                 FLASH_ATTENTION=types.SimpleNamespace(name="FLASH_ATTENTION"))

    class Backend:
        def __init__(self, backend):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    attention.sdpa_kernel = Backend
    return {"torch": torch, "torch.nn": nn, "torch.nn.functional": functional, "torch.nn.attention": attention}


def fake_triton():
    triton = types.ModuleType("triton")
    language = types.ModuleType("triton.language")
    testing = types.ModuleType("triton.testing")

    class Jit:
        def __init__(self, fn):
            self.fn = fn

        def __getitem__(self, grid):
            return lambda *args, **kwargs: None

    triton.jit = Jit
    triton.cdiv = lambda a, b: (a + b - 1) // b
    triton.next_power_of_2 = lambda n: 1 << (n - 1).bit_length()
    triton.__version__ = "stub"
    language.constexpr = int
    rng = random.Random(0)
    testing.do_bench = lambda fn, warmup=0, rep=0, return_mode="median": (fn(), rng.uniform(0.9, 1.1))[1]
    triton.language, triton.testing = language, testing
    return {"triton": triton, "triton.language": language, "triton.testing": testing}


class FakeDriver:
    """libcuda.so.1: every entry point returns CUDA_SUCCESS."""

    def __getattr__(self, name):
        return lambda *args: 0


def main():
    sys.modules.update(fake_torch())
    sys.modules.update(fake_triton())
    load = ctypes.CDLL
    ctypes.CDLL = lambda name, *a, **k: FakeDriver() if "libcuda" in name else load(name, *a, **k)
    sys.argv = [SCRIPT] + sys.argv[1:]
    runpy.run_path(SCRIPT, run_name="__main__")


if __name__ == "__main__":
    main()
