#!/usr/bin/env python3
"""tiledsl's kernels beside torch and Triton in one process, timed the same way.

tiledsl-bench compares with torch and Triton only through figures from another process (the
reference harness). On the H200 one timing call (a median over hundreds of runs) lands in one of
two levels a few per cent apart (add at 2^20: 7.7 or 8.4 us), for every kernel, ours, torch's and
Triton's alike, so figures from two processes compare two draws. Here every kernel is timed by
triton.testing.do_bench (CUDA events, L2 cleared before each run) in alternation, over several
rounds, and the ratios are medians over the rounds.

Each side picks its launch configuration on rounds of its own (ours from the configs tiledsl-bench
sweeps, Triton's from the same num_warps / BLOCK choices), so the rounds compared are not the
draws that chose them. The Triton kernels are the plain one-program-per-block/row kernels of
Triton's tutorials, written here; torch is torch.add, torch.softmax and layer_norm. Layer norm is
timed in two forms, each the same on both sides: the row loaded once (a row of 4096 fits one
block), and three loops over the row as in Triton's layer-norm tutorial (x read three times).

The tensor-core workloads of issue 15 run the same way: bf16 and f16 matmul (C in the inputs'
type) at 4096^3 and 8192^3 against cuBLAS (torch.matmul), and attention forward (B4 H32 N4096,
D128 and D64, causal and not, O in bf16) against torch's SDPA (cuDNN where torch has it, else
flash). The Triton side
is written here in the form of Triton's tutorials and takes the same arguments as ours (grouped
program order and masked K steps for matmul; run-time strides and exp2 with the scale folded in
for attention), and both sides choose among the same block configurations (the ones
tiledsl-bench sweeps; --full-space for all of them, else those that won in earlier runs).

Our kernels come from `tiledsl-bench export DIR` (PTX, cubins where nvJitLink made them, and
DIR/kernels.jsonl). A cubin is what our runtime would load (nvJitLink's machine code); without
one, the PTX goes through cuModuleLoadData (the driver's JIT, which the runtime uses without
nvJitLink). They are launched with cuLaunchKernel through ctypes: the host path differs from the
runtime's, the GPU time measured between the events does not.

usage: torch_side_by_side.py DIR [--select-rounds 3] [--rounds 11]
                             [--only add,softmax,layernorm,matmul,attention] [--full-space]
"""
import argparse
import ctypes
import json
import math
import os
import re
import statistics

import torch
import triton
import triton.language as tl
from triton.testing import do_bench


def timed(fn):
    return do_bench(fn, warmup=50, rep=300, return_mode="median")


# ---- our kernels, from tiledsl-bench export

CTYPES = {"u64": ctypes.c_uint64, "u32": ctypes.c_int32, "f32": ctypes.c_float}
# The parameter list each exported kernel must have (pointers, then i32 sizes, then f32).
SIGNATURES = {"add": ["u64"] * 3 + ["u32"], "softmax": ["u64"] * 2 + ["u32"] * 3,
              "layernorm": ["u64"] * 6 + ["u32"] * 2 + ["f32"],
              # a, b, c; M, N, K and the six strides
              "matmul": ["u64"] * 3 + ["u32"] * 9,
              # q, k, v, o; sm_scale; stride_z, stride_h, stride_n, stride_d, H, N
              "attention": ["u64"] * 4 + ["f32"] + ["u32"] * 6}
SIGNATURES["layernorm_loops"] = SIGNATURES["layernorm"]


class Ptx:
    cuda = None

    def __init__(self, directory, entry):
        if Ptx.cuda is None:
            Ptx.cuda = ctypes.CDLL("libcuda.so.1")
        self.info = entry
        self.warps, self.shared = entry["num_warps"], entry["shared_bytes"]
        text = open(os.path.join(directory, entry["file"])).read()
        params = re.findall(r"\.param \.(\w+) " + re.escape(entry["entry"]) + r"_param_\d+", text)
        if params != SIGNATURES[entry["kernel"]]:
            raise SystemExit(f"{entry['file']}: parameters {params}, expected {SIGNATURES[entry['kernel']]}")
        self.types = params
        self.module, self.fn = ctypes.c_void_p(), ctypes.c_void_p()
        self.loaded_from = "PTX (driver JIT)"
        image = ctypes.create_string_buffer(text.encode() + b"\0")
        if "cubin" in entry:
            cubin = open(os.path.join(directory, entry["cubin"]), "rb").read()
            image_bin = ctypes.create_string_buffer(cubin, len(cubin))
            if Ptx.cuda.cuModuleLoadData(ctypes.byref(self.module), image_bin) == 0:
                image, self.loaded_from = None, "cubin (nvJitLink)"
            else:  # a cubin newer than the driver: the runtime falls back to the JIT too
                self.module = ctypes.c_void_p()
        if image is not None:
            self.check(Ptx.cuda.cuModuleLoadData(ctypes.byref(self.module), image), "cuModuleLoadData " + entry["file"])
        self.check(Ptx.cuda.cuModuleGetFunction(ctypes.byref(self.fn), self.module, entry["entry"].encode()),
                   "cuModuleGetFunction")
        if self.shared > 48 * 1024:  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            self.check(Ptx.cuda.cuFuncSetAttribute(self.fn, 8, self.shared), "cuFuncSetAttribute")

    @staticmethod
    def check(result, call):
        if result != 0:
            raise RuntimeError(f"{call} failed with CUDA error {result}")

    def launcher(self, grid, *args):
        """grid: the number of programs along x, or (x, y)."""
        gx, gy = (grid, 1) if isinstance(grid, int) else grid
        values = [CTYPES[t](a.data_ptr() if isinstance(a, torch.Tensor) else a) for t, a in zip(self.types, args)]
        params = (ctypes.c_void_p * len(values))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        fn, block, shared, name = self.fn, 32 * self.warps, self.shared, self.info["file"]

        def launch():
            _ = values  # the parameter values must outlive every launch
            Ptx.check(Ptx.cuda.cuLaunchKernel(fn, gx, gy, 1, block, 1, 1, shared, stream, params, None),
                      "cuLaunchKernel " + name)

        return launch


# ---- Triton's tutorial-style kernels

@triton.jit
def triton_add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@triton.jit
def triton_softmax(out, inp, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(inp + row * in_stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(v - tl.max(v, 0))
    tl.store(out + row * out_stride + cols, e / tl.sum(e, 0), mask=mask)


@triton.jit
def triton_layernorm(x, y, w, b, mean_out, rstd_out, stride, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    v = tl.load(x + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(v, 0) / n
    d = tl.where(mask, v - mean, 0.0)
    rstd = 1 / tl.sqrt(tl.sum(d * d, 0) / n + eps)
    tl.store(mean_out + row, mean)
    tl.store(rstd_out + row, rstd)
    tl.store(y + row * stride + cols, d * rstd * tl.load(w + cols, mask=mask) + tl.load(b + cols, mask=mask), mask=mask)


@triton.jit
def triton_layernorm_loops(x, y, w, b, mean_out, rstd_out, stride, n, eps, BLOCK: tl.constexpr):
    # The forward kernel of Triton's layer-norm tutorial in structure: three loops over the row in
    # BLOCK-wide chunks (sum, squared deviations, output), so x is read three times.
    row = tl.program_id(0)
    x_row, y_row = x + row * stride, y + row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < n, other=0.0)
    mean = tl.sum(acc, 0) / n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        d = tl.where(cols < n, tl.load(x_row + cols, mask=cols < n, other=0.0) - mean, 0.0)
        acc += d * d
    rstd = 1 / tl.sqrt(tl.sum(acc, 0) / n + eps)
    tl.store(mean_out + row, mean)
    tl.store(rstd_out + row, rstd)
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < n
        xhat = (tl.load(x_row + cols, mask=mask) - mean) * rstd
        tl.store(y_row + cols, xhat * tl.load(w + cols, mask=mask) + tl.load(b + cols, mask=mask), mask=mask)


@triton.jit
def triton_matmul(a, b, c, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Triton's matmul tutorial in structure, as examples/matmul_kernel.h: grouped program order,
    # rows and columns wrapped so that only K is masked in the loop, the store masked, C in the
    # inputs' type (bf16 or f16).
    pid = tl.program_id(0)
    blocks_m, blocks_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * blocks_n
    first_m = (pid // per_group) * GROUP_M
    rows_in_group = min(blocks_m - first_m, GROUP_M)
    bm = first_m + (pid % per_group) % rows_in_group
    bn = (pid % per_group) // rows_in_group
    m = bm * BLOCK_M + tl.arange(0, BLOCK_M)
    n = bn * BLOCK_N + tl.arange(0, BLOCK_N)
    k = tl.arange(0, BLOCK_K)
    pa = a + (m % M)[:, None] * s_am + k[None, :] * s_ak
    pb = b + k[:, None] * s_bk + (n % N)[None, :] * s_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - step * BLOCK_K
        x = tl.load(pa, mask=k[None, :] < left, other=0.0)
        y = tl.load(pb, mask=k[:, None] < left, other=0.0)
        acc = tl.dot(x, y, acc)
        pa += BLOCK_K * s_ak
        pb += BLOCK_K * s_bk
    tl.store(c + m[:, None] * s_cm + n[None, :] * s_cn, acc.to(c.dtype.element_ty),
             mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def triton_attention(q, k, v, o, sm_scale, s_z, s_h, s_n, s_d, H, N,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    # The forward pass of Triton's fused-attention tutorial in structure, as
    # examples/attention_kernel.h: one program per BLOCK_M query rows of one (batch, head), an
    # online softmax in base 2 with the scale folded in, P in bf16 for the second dot, O in bf16.
    # N is a multiple of BLOCK_N here (as the tutorial assumes), so only causal blocks mask.
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    head = (zh // H).to(tl.int64) * s_z + (zh % H).to(tl.int64) * s_h
    rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    d = tl.arange(0, HEAD_DIM)
    q_tile = tl.load(q + head + rows[:, None] * s_n + d[None, :] * s_d, mask=rows[:, None] < N, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.full([BLOCK_M], 1.0, tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    scale = sm_scale * 1.44269504
    hi = tl.minimum((start_m + 1) * BLOCK_M, N) if CAUSAL else N
    for start_n in range(0, hi, BLOCK_N):
        keys = start_n + cols
        k_tile = tl.load(k + head + keys[None, :] * s_n + d[:, None] * s_d)
        qk = tl.dot(q_tile, k_tile)
        if CAUSAL:
            qk = tl.where(rows[:, None] >= keys[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * scale)
        p = tl.math.exp2(qk * scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v_tile = tl.load(v + head + keys[:, None] * s_n + d[None, :] * s_d)
        acc = tl.dot(p.to(tl.bfloat16), v_tile, acc * alpha[:, None])
        m_i = m_ij
    out = acc / l_i[:, None]
    tl.store(o + head + rows[:, None] * s_n + d[None, :] * s_d, out.to(tl.bfloat16), mask=rows[:, None] < N)


# ---- one workload: check, choose configs, alternate

def compare(title, amount, ours, triton_configs, torch_fn, check, target, unit="GB/s"):
    """ours / triton_configs: {config name: launch}, each checked against torch's result first
    (check(launch, name) raises when it is wrong); target: 'torch' or 'triton', the reference the
    target is set against, or None where the issue sets none. amount: the bytes a run must move
    (unit GB/s) or the floating-point operations it does (unit TFLOP/s)."""
    for side, group in (("tiledsl", ours), ("triton", triton_configs)):
        for name, launch in list(group.items()):
            try:
                check(launch, f"{title}, {side} {name}")
            except SystemExit:
                raise  # a wrong result ends the run
            except Exception as e:  # a configuration this GPU cannot launch (shared memory, registers)
                print(f"{title}: {side} {name} left out: {type(e).__name__}: {str(e)[:200]}", flush=True)
                del group[name]
        if not group:
            raise SystemExit(f"{title}: no {side} configuration launches")

    def choose(group, rounds):
        times = {name: [] for name in group}
        for _ in range(rounds):
            for name, launch in group.items():
                times[name].append(timed(launch))
        return min(times, key=lambda name: statistics.median(times[name])), times

    our_cfg, our_sel = choose(ours, ARGS.select_rounds)
    tri_cfg, tri_sel = choose(triton_configs, ARGS.select_rounds)
    show = lambda sel: ", ".join(f"{n} {statistics.median(v) * 1e3:.2f}" for n, v in sel.items())
    print(f"{title}: selection (us, medians of {ARGS.select_rounds}) ours {show(our_sel)}; triton {show(tri_sel)}",
          flush=True)

    sides = {"tiledsl": ours[our_cfg], "triton": triton_configs[tri_cfg], "torch": torch_fn}
    rounds = {k: [] for k in sides}
    order = list(sides)
    for i in range(ARGS.rounds):
        for k in order[i % 3:] + order[:i % 3]:  # each side goes first in turn
            rounds[k].append(timed(sides[k]))
    for k, v in rounds.items():
        print(f"{title}: {k} rounds (us) " + " ".join(f"{t * 1e3:.2f}" for t in v), flush=True)
    rate = lambda ms: amount / ms / (1e6 if unit == "GB/s" else 1e9)
    med = {k: statistics.median(v) for k, v in rounds.items()}
    per_round = {ref: [r / o for o, r in zip(rounds["tiledsl"], rounds[ref])] for ref in ("triton", "torch")}
    ratio = {ref: statistics.median(v) for ref, v in per_round.items()}
    # How far the median can be trusted: the spread of the per-round ratios, and in how many
    # rounds ours was the faster (near parity, about half of them).
    for ref, v in per_round.items():
        print(f"{title}: per-round ratio to {ref}: min {min(v):.3f}, max {max(v):.3f}; "
              f"ours faster in {sum(x > 1 for x in v)} of {len(v)} rounds", flush=True)
    line = (f"side-by-side {title} [ours {our_cfg}, triton {tri_cfg}]: tiledsl {rate(med['tiledsl']):7.1f} {unit}, "
            f"triton {rate(med['triton']):7.1f}, torch {rate(med['torch']):7.1f}; "
            f"ratio to triton {ratio['triton']:.3f}, to torch {ratio['torch']:.3f}; "
            + (f"target >= 1.00 x {target}: {'met' if ratio[target] >= 1.0 else 'NOT met'}" if target else "no target"))
    print(line, flush=True)


def exact(want, out):
    def check(launch, name):
        out.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        if not torch.equal(out, want):
            raise SystemExit(f"{name}: WRONG ({(out != want).sum().item()} elements differ)")
    return check


def close(want, outs):
    def check(launch, name):
        for o in outs:
            o.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        for o, w in zip(outs, want):
            if not torch.allclose(o, w, atol=1e-4, rtol=1e-4):
                raise SystemExit(f"{name}: WRONG (max error {(o - w).abs().max().item()})")
    return check


def near(want, out, rel):
    """A bf16 result against torch's: the relative Frobenius error at most `rel`."""
    def check(launch, name):
        out.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        err = ((out.float() - want.float()).norm() / want.float().norm()).item()
        if not err <= rel:
            raise SystemExit(f"{name}: WRONG (relative error {err:.2e}, bound {rel:.0e})")
    return check

# Configurations that won on either side in earlier runs (bench/results/, runs 79-96); --full-space
# tries every one tiledsl-bench sweeps, on both sides.
MATMUL_SHORTLIST = {(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 256, 64, 8, 2), (128, 128, 64, 8, 3),
                    (64, 256, 64, 4, 4)}
ATTENTION_SHORTLIST = {(128, 128, 8, 2), (128, 128, 8, 3), (128, 64, 8, 2), (128, 64, 8, 3), (128, 64, 4, 3),
                       (64, 64, 4, 3)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--select-rounds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--only", default="add,softmax,layernorm,matmul,attention")
    ap.add_argument("--full-space", action="store_true", help="every block configuration, not the shortlist")
    global ARGS
    ARGS = ap.parse_args()
    only = ARGS.only.split(",")

    torch.manual_seed(0)
    torch.empty(1, device="cuda")  # creates the context our modules load into
    with open(os.path.join(ARGS.dir, "kernels.jsonl")) as f:
        kernels = [Ptx(ARGS.dir, json.loads(line)) for line in f if line.strip()]
    print(f"torch {torch.__version__}, triton {triton.__version__} on {torch.cuda.get_device_name()}; "
          f"{len(kernels)} tiledsl kernels", flush=True)
    of = lambda kind, **match: [k for k in kernels if k.info["kernel"] == kind and
                                all(k.info[key] == v for key, v in match.items())]

    if "add" in only:
        for log2n in (20, 24, 28):
            n = 1 << log2n
            x, y, out = (torch.randn(n, device="cuda") for _ in range(3))
            ours = {f"w{k.warps} b{k.info['BLOCK']}": k.launcher(triton.cdiv(n, k.info["BLOCK"]), x, y, out, n)
                    for k in of("add")}
            tri = {f"w{w} b{b}": (lambda w=w, b=b: triton_add[(triton.cdiv(n, b),)](x, y, out, n, BLOCK=b, num_warps=w))
                   for w, b in ((4, 512), (4, 1024), (4, 2048), (4, 4096), (8, 1024), (8, 2048), (8, 4096))}
            compare(f"add f32 n=2^{log2n}", 3 * 4 * n, ours, tri, lambda: torch.add(x, y, out=out), exact(x + y, out),
                    {20: "torch", 28: "triton"}.get(log2n))
            del x, y, out

    if "softmax" in only:
        for m, n in ((4096, 4096), (32768, 1024)):
            x, out = torch.randn(m, n, device="cuda"), torch.empty(m, n, device="cuda")
            block = triton.next_power_of_2(n)
            ours = {f"w{k.warps}": k.launcher(m, out, x, n, n, n) for k in of("softmax", rows=m, cols=n)}
            tri = {f"w{w}": (lambda w=w: triton_softmax[(m,)](out, x, n, n, n, BLOCK=block, num_warps=w)) for w in (4, 8, 16)}
            compare(f"softmax f32 {m}x{n}", 2 * 4 * m * n, ours, tri, lambda: torch.softmax(x, -1),
                    close([torch.softmax(x, -1)], [out]), "triton" if n == 4096 else "torch")
            del x, out

    if "layernorm" in only:
        m = n = 4096
        x, y = torch.randn(m, n, device="cuda"), torch.empty(m, n, device="cuda")
        w, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        mean, rstd = torch.empty(m, device="cuda"), torch.empty(m, device="cuda")
        want = torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5)
        ours = {f"w{k.warps}": k.launcher(m, x, y, w, b, mean, rstd, n, n, 1e-5) for k in of("layernorm", rows=m, cols=n)}
        tri = {f"w{nw}": (lambda nw=nw: triton_layernorm[(m,)](x, y, w, b, mean, rstd, n, n, 1e-5, BLOCK=n, num_warps=nw))
               for nw in (4, 8, 16)}
        compare("layernorm fwd f32 4096x4096", 2 * 4 * m * n, ours, tri,
                lambda: torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5), close([want], [y]), "triton")
        # Both sides as the tutorial writes it (examples/layernorm_kernel.h; three loops over the row).
        ours = {f"w{k.warps}": k.launcher(m, x, y, w, b, mean, rstd, n, n, 1e-5)
                for k in of("layernorm_loops", rows=m, cols=n)}
        tri = {f"w{nw}": (lambda nw=nw: triton_layernorm_loops[(m,)](x, y, w, b, mean, rstd, n, n, 1e-5, BLOCK=n,
                                                                       num_warps=nw))
               for nw in (4, 8, 16)}
        compare("layernorm fwd f32 4096x4096, three loops", 2 * 4 * m * n, ours, tri,
                lambda: torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5), close([want], [y]), "triton")


    if "matmul" in only:
        for dtype, size in (("bf16", 4096), ("bf16", 8192), ("f16", 4096), ("f16", 8192)):
            torch_dtype = torch.bfloat16 if dtype == "bf16" else torch.float16
            a, b = (torch.randn(size, size, device="cuda", dtype=torch_dtype) for _ in range(2))
            c = torch.empty(size, size, device="cuda", dtype=torch_dtype)
            want = torch.matmul(a, b)
            configs = [k for k in of("matmul", dtype=dtype) if ARGS.full_space or
                       (k.info["BM"], k.info["BN"], k.info["BK"], k.warps, k.info["num_stages"]) in MATMUL_SHORTLIST]
            name = lambda bm, bn, bk, w, st: f"{bm}x{bn}x{bk} w{w} s{st}"
            args = (size, size, size, size, 1, size, 1, size, 1)
            ours = {name(k.info["BM"], k.info["BN"], k.info["BK"], k.warps, k.info["num_stages"]):
                    k.launcher(triton.cdiv(size, k.info["BM"]) * triton.cdiv(size, k.info["BN"]), a, b, c, *args)
                    for k in configs}
            tri = {name(k.info["BM"], k.info["BN"], k.info["BK"], k.warps, k.info["num_stages"]):
                   (lambda i=k.info, w=k.warps: triton_matmul[(triton.cdiv(size, i["BM"]) * triton.cdiv(size, i["BN"]),)](
                       a, b, c, *args, BLOCK_M=i["BM"], BLOCK_N=i["BN"], BLOCK_K=i["BK"], GROUP_M=8, num_warps=w,
                       num_stages=i["num_stages"]))
                   for k in configs}
            print(f"matmul: our kernels loaded from {sorted({k.loaded_from for k in configs})}", flush=True)
            # A 16-bit C: one rounding (2^-9 relative in bf16), and f32 sums in another order.
            compare(f"matmul {dtype} {size}^3", 2 * size**3, ours, tri, lambda: torch.matmul(a, b, out=c),
                    near(want, c, 1e-2), "triton", unit="TFLOP/s")
            del a, b, c, want

    if "attention" in only:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        batch, heads, n = 4, 32, 4096
        for d, causal in ((128, 0), (128, 1), (64, 0)):
            q, k_, v = (torch.randn(batch, heads, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            o = torch.empty_like(q)
            scale = 1.0 / math.sqrt(d)
            want = torch.nn.functional.scaled_dot_product_attention(q, k_, v, is_causal=bool(causal))
            backend = SDPBackend.CUDNN_ATTENTION
            try:
                with sdpa_kernel(backend):
                    torch.nn.functional.scaled_dot_product_attention(q, k_, v, is_causal=bool(causal))
            except RuntimeError:
                backend = SDPBackend.FLASH_ATTENTION

            def reference():
                with sdpa_kernel(backend):
                    return torch.nn.functional.scaled_dot_product_attention(q, k_, v, is_causal=bool(causal))

            configs = [k for k in of("attention", D=d, CAUSAL=causal) if ARGS.full_space or
                       (k.info["BM"], k.info["BN"], k.warps, k.info["num_stages"]) in ATTENTION_SHORTLIST]
            name = lambda bm, bn, w, st: f"{bm}x{bn} w{w} s{st}"
            strides = (heads * n * d, n * d, d, 1)
            ours = {name(k.info["BM"], k.info["BN"], k.warps, k.info["num_stages"]):
                    k.launcher((triton.cdiv(n, k.info["BM"]), batch * heads), q, k_, v, o, scale, *strides, heads, n)
                    for k in configs}
            tri = {name(k.info["BM"], k.info["BN"], k.warps, k.info["num_stages"]):
                   (lambda i=k.info, w=k.warps: triton_attention[(triton.cdiv(n, i["BM"]), batch * heads)](
                       q, k_, v, o, scale, *strides, heads, n, HEAD_DIM=d, BLOCK_M=i["BM"], BLOCK_N=i["BN"],
                       CAUSAL=bool(causal), num_warps=w, num_stages=i["num_stages"]))
                   for k in configs}
            print(f"attention: our kernels loaded from {sorted({k.loaded_from for k in configs})}; torch's side is "
                  f"SDPA with {backend.name}", flush=True)
            flops = 4 * batch * heads * n * n * d // (2 if causal else 1)
            compare(f"attention fwd bf16 B{batch} H{heads} N{n} D{d}{' causal' if causal else ''}", flops, ours, tri,
                    reference, near(want, o, 1e-2), "triton", unit="TFLOP/s")
            del q, k_, v, o, want


ARGS = None

if __name__ == "__main__":
    main()
