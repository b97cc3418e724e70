#!/usr/bin/env python3
"""Vector add: tiledsl's kernel against torch.add in one process, timed the same way.

tiledsl-bench compares with torch only through figures from another process; at n = 2^20 one
timing call (a median over thousands of runs) lands in one of two levels about 8 % apart, for
torch's kernel as for ours, so two processes compare two draws. Here both kernels are timed by
triton.testing.do_bench (CUDA events, L2 cleared before each run) in alternation, several rounds,
and the ratio is the median over the rounds.

Needs torch and triton (as the reference harness does) and the PTX that
`tiledsl-bench export-add DIR` writes. Our kernels are loaded with cuModuleLoadData (the driver's
JIT, as the tiledsl runtime loads PTX) and launched with cuLaunchKernel through ctypes: the host
path differs from the runtime's, the GPU time measured between the events does not.

usage: torch_side_by_side.py PTX_DIR [--log2n 20,24,28] [--select-rounds 3] [--rounds 7]
"""
import argparse
import ctypes
import glob
import os
import re
import statistics

import torch
from triton.testing import do_bench


def timed(fn):
    return do_bench(fn, warmup=50, rep=300, return_mode="median")


class Ptx:
    """One exported add kernel: add-w<warps>-b<block>.ptx, entry `add`, (x, y, out, n: i32)."""

    cuda = None

    def __init__(self, path):
        if Ptx.cuda is None:
            Ptx.cuda = ctypes.CDLL("libcuda.so.1")
        m = re.search(r"add-w(\d+)-b(\d+)\.ptx$", path)
        self.warps, self.block = int(m.group(1)), int(m.group(2))
        self.name = f"w{self.warps} b{self.block}"
        self.module, self.fn = ctypes.c_void_p(), ctypes.c_void_p()
        image = ctypes.create_string_buffer(open(path, "rb").read() + b"\0")
        self.check(Ptx.cuda.cuModuleLoadData(ctypes.byref(self.module), image), "cuModuleLoadData " + path)
        self.check(Ptx.cuda.cuModuleGetFunction(ctypes.byref(self.fn), self.module, b"add"), "cuModuleGetFunction")

    @staticmethod
    def check(result, call):
        if result != 0:
            raise RuntimeError(f"{call} failed with CUDA error {result}")

    def launcher(self, x, y, out):
        n = x.numel()
        values = [ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(y.data_ptr()), ctypes.c_uint64(out.data_ptr()),
                  ctypes.c_int32(n)]
        params = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
        grid = (n + self.block - 1) // self.block
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

        def launch():
            _keep = values  # the parameter values must outlive every launch
            self.check(Ptx.cuda.cuLaunchKernel(self.fn, grid, 1, 1, 32 * self.warps, 1, 1, 0, stream, params, None),
                       "cuLaunchKernel add " + self.name)

        return launch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ptx_dir")
    ap.add_argument("--log2n", default="20,24,28")
    ap.add_argument("--select-rounds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()

    torch.manual_seed(0)
    x0 = torch.randn(1, device="cuda")  # creates the context our modules load into
    kernels = [Ptx(p) for p in sorted(glob.glob(os.path.join(args.ptx_dir, "add-w*-b*.ptx")))]
    if not kernels:
        raise SystemExit(f"no add-w*-b*.ptx in {args.ptx_dir} (run tiledsl-bench export-add {args.ptx_dir})")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}; {len(kernels)} tiledsl configs", flush=True)
    del x0

    for log2n in (int(v) for v in args.log2n.split(",")):
        n = 1 << log2n
        x, y, out = torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
        want = x + y
        launches = {}
        for k in kernels:
            out.fill_(float("nan"))
            launch = k.launcher(x, y, out)
            launch()
            torch.cuda.synchronize()
            if not torch.equal(out, want):
                raise SystemExit(f"add {k.name} n=2^{log2n}: WRONG ({(out != want).sum().item()} elements differ)")
            launches[k.name] = launch

        def torch_add():
            torch.add(x, y, out=out)

        gbps = lambda ms: 3 * 4 * n / ms / 1e6

        # Choose a config on rounds of its own, so that the figures compared below are not the
        # lucky draws that chose it.
        sel = {name: [] for name in launches}
        for _ in range(args.select_rounds):
            for name, launch in launches.items():
                sel[name].append(timed(launch))
        chosen = min(sel, key=lambda name: statistics.median(sel[name]))
        print(f"add n=2^{log2n}: selection rounds " +
              ", ".join(f"{name} {statistics.median(v) * 1e3:.2f} us" for name, v in sel.items()) + f"; chose {chosen}",
              flush=True)

        ours, theirs = [], []
        for _ in range(args.rounds):
            theirs.append(timed(torch_add))
            ours.append(timed(launches[chosen]))
        ratios = [t / o for o, t in zip(ours, theirs)]
        print(f"add n=2^{log2n}: rounds (us) ours " + " ".join(f"{v * 1e3:.2f}" for v in ours) + " | torch " +
              " ".join(f"{v * 1e3:.2f}" for v in theirs), flush=True)
        mo, mt = statistics.median(ours), statistics.median(theirs)
        print(f"add f32 n=2^{log2n} [{chosen}]  tiledsl {mo * 1e3:8.3f} us {gbps(mo):7.1f} GB/s   torch {mt * 1e3:8.3f} us "
              f"{gbps(mt):7.1f} GB/s   ratio of medians {mt / mo:.3f}   median ratio per round {statistics.median(ratios):.3f}",
              flush=True)


if __name__ == "__main__":
    main()
