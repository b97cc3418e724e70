// tiledsl-bench: GPU benchmarks. Each workload prints time, bandwidth and the ratio to a
// reference measured in the same process (a device-to-device copy of the same bytes for
// memory-bound kernels). Without a GPU it says so and exits 0.
#include <dlfcn.h>
#include <fmt/format.h>
#include <tiledsl/tiledsl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "attention_kernel.h"
#include "ir/Parser.h"
#include "layernorm_kernel.h"
#include "matmul_kernel.h"
#include "runtime/Backend.h"
#include "runtime/cuda/Driver.h"
#include "runtime/cuda/Launcher.h"
#include "runtime/cuda/NvJitLink.h"
#include "softmax_kernel.h"
#include "support/Env.h"

namespace tl = tiledsl;
namespace cu = tiledsl::cuda;

namespace {

std::string fmt_double(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

const cu::Driver& drv() { return *cu::driver(); }

// Median milliseconds of `fn` (tl::bench: CUDA events, L2 flushed before each run, as Triton's do_bench).
// As many runs as fill about 300 ms, flushes included (the reference harness gives do_bench
// rep=300), at least 100: with only 100 runs, repeated medians of a microsecond kernel moved by 5 %.
double time_ms(const std::function<void()>& fn) {
  auto t0 = std::chrono::steady_clock::now();
  tl::bench(fn, {.warmup = 5, .rep = 10});
  double per_run = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 15;
  int reps = static_cast<int>(std::clamp(300.0 / std::max(per_run, 1e-3), 100.0, 10000.0));
  return tl::bench(fn, {.warmup = 20, .rep = reps}).median_ms;
}

// The median of `times` separate time_ms calls, each printed. At n = 2^20 the median of one call
// lands in one of two levels about 8 % apart (7.7 or 8.4 us on the H200, for torch's add as for
// ours, changing from call to call), so one call is a draw, not a measurement.
double time_ms_repeated(const std::string& what, const std::function<void()>& fn, int times = 5) {
  std::vector<double> ms;
  for (int i = 0; i < times; ++i) ms.push_back(time_ms(fn));
  std::printf("  %s, %d separate timings:", what.c_str(), times);
  for (double t : ms) std::printf(" %.4f", t);
  std::sort(ms.begin(), ms.end());
  std::printf(" ms (median %.4f)\n", ms[ms.size() / 2]);
  return ms[ms.size() / 2];
}

// The memory-bound reference: copying `bytes` bytes (read + write) device to device.
double copy_gbps(size_t bytes, int times = 5) {
  auto a = tl::Tensor::empty({static_cast<int64_t>(bytes / 4)}),
       b = tl::Tensor::empty({static_cast<int64_t>(bytes / 4)});
  auto copy = [&] {
    cu::check(drv().cuMemcpyDtoDAsync(reinterpret_cast<cu::CUdeviceptr>(b.data_ptr()),
                                      reinterpret_cast<cu::CUdeviceptr>(a.data_ptr()), bytes, nullptr),
              "cuMemcpyDtoDAsync");
  };
  double ms = times > 1 ? time_ms_repeated("copy", copy, times) : time_ms(copy);
  return 2.0 * static_cast<double>(bytes) / ms / 1e6;
}

// Every figure, for the table printed at the end and the CSV (--csv=PATH).
tl::Report& summary() {
  static tl::Report r({"workload", "ms", "value", "unit", "reference", "ratio"});
  return r;
}

std::string num(double v, int digits = 4) { return fmt_double(v, digits); }

void row(const std::string& name, double ms, double gbps, double ref_gbps, const std::string& ref_name) {
  summary().add_row({name, num(ms), num(gbps, 1), "GB/s", ref_name + " " + num(ref_gbps, 1), num(gbps / ref_gbps, 3)});
  std::printf("%-40s %10.4f ms %9.1f GB/s   %s %9.1f GB/s   ratio %.3f\n", name.c_str(), ms, gbps, ref_name.c_str(),
              ref_gbps, gbps / ref_gbps);
  std::fflush(stdout);
}

tl::Kernel make_add(const char* name) {
  return tl::kernel(name, {"x", "y", "out", "n", "BLOCK"},
                    [](tl::Ptr<float> x, tl::Ptr<float> y, tl::Ptr<float> out, tl::Int n, tl::Constexpr BLOCK) {
                      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                      auto mask = offs < n;
                      tl::store(out + offs, tl::load(x + offs, mask) + tl::load(y + offs, mask), mask);
                    });
}

// Layer norm forward, one row per program, as Triton's tutorial kernel.
const tl::Kernel layernorm_kernel = tl::kernel(
    "layernorm_fwd", {"x", "y", "w", "b", "mean", "rstd", "stride", "n", "eps", "BLOCK"},
    [](tl::Ptr<float> x, tl::Ptr<float> y, tl::Ptr<float> w, tl::Ptr<float> b, tl::Ptr<float> mean_out,
       tl::Ptr<float> rstd_out, tl::Int stride, tl::Int n, tl::Float eps, tl::Constexpr BLOCK) {
      auto row = tl::program_id(0);
      auto cols = tl::arange(0, BLOCK);
      auto mask = cols < n;
      auto v = tl::load(x + row * stride + cols, mask, 0.0f);
      auto mean = tl::sum(v, 0) / n.to<float>();
      auto d = tl::where(mask, v - mean, 0.0f);
      auto rstd = tl::rsqrt(tl::sum(d * d, 0) / n.to<float>() + eps);
      tl::store(mean_out + row, mean);
      tl::store(rstd_out + row, rstd);
      tl::store(y + row * stride + cols, d * rstd * tl::load(w + cols, mask) + tl::load(b + cols, mask), mask);
    });

// SpMM, one program per row as Triton's row kernel: BLOCK_NNZ nonzeros at a time, each
// scaling a row of the dense matrix, summed over the chunk.
const tl::Kernel spmm_kernel =
    tl::kernel("spmm_rows", {"vals", "row_ptr", "cols", "b", "c", "N_COLS", "BLOCK_NNZ"},
               [](tl::Ptr<float> vals, tl::Ptr<int32_t> row_ptr, tl::Ptr<int32_t> cols, tl::Ptr<float> b,
                  tl::Ptr<float> c, tl::Constexpr N_COLS, tl::Constexpr BLOCK_NNZ) {
                 auto row = tl::program_id(0);
                 auto start = tl::load(row_ptr + row), end = tl::load(row_ptr + row + 1);
                 auto oc = tl::arange(0, N_COLS);
                 auto acc = tl::zeros<float>({N_COLS});
                 tl::range(start, end, BLOCK_NNZ, [&](tl::Int i) {
                   auto oi = i + tl::arange(0, BLOCK_NNZ);
                   auto m = oi < end;
                   auto col = tl::load(cols + oi, m, 0);
                   auto v = tl::load(vals + oi, m, 0.0f);
                   auto rows = tl::load(b + col(tl::_, tl::newaxis) * N_COLS + oc(tl::newaxis, tl::_),
                                        m(tl::_, tl::newaxis), 0.0f);
                   acc = acc + tl::sum(v(tl::_, tl::newaxis) * rows, 0);
                 });
                 tl::store(c + row * N_COLS + oc, acc);
               });

// cuSPARSE's generic SpMM through dlopen (TILEDSL_CUSPARSE_PATH, else libcusparse.so.12), the
// reference for the SpMM benchmark. Enum values are cusparse.h's.
struct CuSparse {
  using Status = int;
  Status (*create)(void**);
  Status (*create_csr)(void**, int64_t, int64_t, int64_t, void*, void*, void*, int, int, int, int);
  Status (*create_dn_mat)(void**, int64_t, int64_t, int64_t, void*, int, int);
  Status (*spmm_buffer_size)(void*, int, int, const void*, void*, void*, const void*, void*, int, int, size_t*);
  Status (*spmm)(void*, int, int, const void*, void*, void*, const void*, void*, int, int, void*);
  static constexpr int kIndex32 = 2, kBaseZero = 0, kR32F = 0, kRowMajor = 2, kNonTranspose = 0, kAlgDefault = 0;

  static const CuSparse* load(std::string* why) {
    std::string path_env = tiledsl::env::value(tiledsl::env::Var::TILEDSL_CUSPARSE_PATH);
    const char* path = path_env.empty() ? nullptr : path_env.c_str();
    void* h = dlopen(path && *path ? path : "libcusparse.so.12", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      *why = dlerror();
      return nullptr;
    }
    static CuSparse c;
    c.create = reinterpret_cast<decltype(c.create)>(dlsym(h, "cusparseCreate"));
    c.create_csr = reinterpret_cast<decltype(c.create_csr)>(dlsym(h, "cusparseCreateCsr"));
    c.create_dn_mat = reinterpret_cast<decltype(c.create_dn_mat)>(dlsym(h, "cusparseCreateDnMat"));
    c.spmm_buffer_size = reinterpret_cast<decltype(c.spmm_buffer_size)>(dlsym(h, "cusparseSpMM_bufferSize"));
    c.spmm = reinterpret_cast<decltype(c.spmm)>(dlsym(h, "cusparseSpMM"));
    if (!c.create || !c.create_csr || !c.create_dn_mat || !c.spmm_buffer_size || !c.spmm) {
      *why = "missing cuSPARSE entry points";
      return nullptr;
    }
    return &c;
  }
};

// (num_warps, BLOCK) of the vector-add sweep; num_warps of the softmax and layer-norm sweeps.
constexpr std::array<std::pair<int, int64_t>, 7> kAddConfigs = {
    {{4, 512}, {4, 1024}, {4, 2048}, {4, 4096}, {8, 1024}, {8, 2048}, {8, 4096}}};
constexpr std::array<int, 3> kRowWarps = {4, 8, 16};
constexpr std::array<std::pair<int, int>, 2> kSoftmaxShapes = {{{4096, 4096}, {32768, 1024}}};
constexpr int kLayerNormRows = 4096, kLayerNormCols = 4096;
// The matmul sweep's configurations: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages); GROUP_M 8.
// From the fourth on, blocks wgmma takes on sm_90a (K and N multiples of 64, whole warpgroups
// along M), whose loads num_stages - 1 iterations ahead wait in shared ring buffers.
constexpr std::array<std::array<int, 5>, 13> kMatmulConfigs = {{{64, 64, 32, 4, 3},
                                                                {128, 64, 32, 4, 3},
                                                                {128, 128, 32, 8, 3},
                                                                {64, 128, 64, 4, 3},
                                                                {128, 128, 64, 4, 3},
                                                                {128, 128, 64, 8, 3},
                                                                {128, 128, 64, 8, 4},
                                                                {128, 128, 64, 8, 5},
                                                                {128, 256, 64, 8, 2},
                                                                {128, 256, 64, 8, 3},
                                                                {256, 128, 64, 8, 3},
                                                                {64, 256, 64, 4, 3},
                                                                {64, 256, 64, 4, 4}}};
// The attention benchmark's configurations: (BLOCK_M, BLOCK_N, num_warps, num_stages).
constexpr std::array<std::array<int, 4>, 13> kAttentionConfigs = {{{32, 32, 8, 3},
                                                                   {64, 32, 4, 3},
                                                                   {64, 64, 4, 2},
                                                                   {64, 64, 4, 3},
                                                                   {32, 64, 4, 3},
                                                                   {128, 64, 8, 2},
                                                                   {128, 64, 8, 3},
                                                                   {128, 128, 8, 2},
                                                                   {128, 128, 8, 3},
                                                                   {64, 128, 4, 2},
                                                                   {64, 128, 4, 3},
                                                                   {128, 64, 4, 2},
                                                                   {128, 64, 4, 3}}};

// The one-row-per-program kernels' sweep: each of kRowWarps with the whole row in one block.
std::vector<std::pair<int, int64_t>> row_configs(int64_t block) {
  std::vector<std::pair<int, int64_t>> configs;
  for (int warps : kRowWarps) configs.push_back({warps, block});
  return configs;
}

int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

// `tiledsl-bench export DIR`: the PTX of the benchmark's kernels, every config of their sweeps,
// specialised as the benchmark launches them (16-byte aligned pointers, sizes multiples of 16):
// the memory-bound ones, and bf16 matmul (C in bf16) and attention (O in bf16) on the issue-15
// workloads. Where nvJitLink is found, also the cubin the runtime would assemble from it (so the
// side-by-side times the same machine code as our runtime, not the driver JIT's). DIR/kernels.jsonl
// has one line per kernel: the file (and cubin), its entry point, num_warps, dynamic shared memory,
// and the kernel's constexprs and sizes. bench/torch_side_by_side.py loads them to time them
// against torch and Triton in one process.
int export_kernels(const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream manifest(dir + "/kernels.jsonl");
  const std::string arch = tiledsl::runtime::target_arch();
  auto emit = [&](const std::string& file, const std::string& ir_text, int warps, const std::string& fields,
                  int stages = 3) {
    auto f = tiledsl::ir::parse(ir_text);
    f->number_values();
    auto bin = tiledsl::runtime::compile_for_gpu(*f, {.num_warps = warps, .num_stages = stages}, arch);
    std::ofstream(dir + "/" + file) << bin.ptx;
    std::string cubin_field;
    if (cu::nvjitlink_available())
      if (auto cubin = cu::nvjitlink_compile(bin.ptx, arch, file)) {
        const std::string name = file.substr(0, file.rfind('.')) + ".cubin";
        std::ofstream(dir + "/" + name, std::ios::binary) << *cubin;
        cubin_field = ", \"cubin\": \"" + name + "\"";
      }
    manifest << "{\"file\": \"" << file << "\"" << cubin_field << ", \"entry\": \"" << bin.entry
             << "\", \"num_warps\": " << warps << ", \"num_stages\": " << stages
             << ", \"shared_bytes\": " << bin.shared_bytes << ", \"arch\": \"" << arch << "\", " << fields << "}\n";
  };
  auto t = [](int64_t n) { return tl::Tensor::empty({n}); };
  tl::Kernel add = make_add("add");
  for (auto [warps, block] : kAddConfigs)
    emit("add-w" + std::to_string(warps) + "-b" + std::to_string(block) + ".ptx",
         add.ir(t(16), t(16), t(16), 1 << 20, block), warps,
         "\"kernel\": \"add\", \"BLOCK\": " + std::to_string(block));
  for (auto [m, n] : kSoftmaxShapes)
    for (int warps : kRowWarps) {
      int64_t block = next_pow2(n);
      emit("softmax-" + std::to_string(m) + "x" + std::to_string(n) + "-w" + std::to_string(warps) + ".ptx",
           softmax::softmax_kernel.ir(t(16), t(16), n, n, n, block), warps,
           "\"kernel\": \"softmax\", \"rows\": " + std::to_string(m) + ", \"cols\": " + std::to_string(n));
    }
  for (int warps : kRowWarps)
    emit("layernorm-w" + std::to_string(warps) + ".ptx",
         layernorm_kernel.ir(t(16), t(16), t(16), t(16), t(16), t(16), kLayerNormCols, kLayerNormCols, 1e-5f,
                             next_pow2(kLayerNormCols)),
         warps,
         "\"kernel\": \"layernorm\", \"rows\": " + std::to_string(kLayerNormRows) +
             ", \"cols\": " + std::to_string(kLayerNormCols));
  for (int warps : kRowWarps)
    emit("layernorm_loops-w" + std::to_string(warps) + ".ptx",
         layernorm::layer_norm_fwd.ir(t(16), t(16), t(16), t(16), t(16), t(16), kLayerNormCols, kLayerNormCols, 1e-5f,
                                      next_pow2(kLayerNormCols)),
         warps,
         "\"kernel\": \"layernorm_loops\", \"rows\": " + std::to_string(kLayerNormRows) +
             ", \"cols\": " + std::to_string(kLayerNormCols));
  // Matmul at 4096 and 8192 (one specialisation serves both: every size and row stride a multiple
  // of 16), the sweep's default-kernel configurations: bf16 in with a bf16 C, f16 in and out.
  for (const auto& [dtype, kernel, prefix] : {std::tuple{tl::DType::bf16, &matmul::matmul_bf16_out, "matmul"},
                                              std::tuple{tl::DType::f16, &matmul::matmul_f16_out, "matmul_f16"}}) {
    auto t16 = [dtype] { return tl::Tensor::empty({16}, dtype); };
    for (const auto& [bm, bn, bk, warps, stages] : kMatmulConfigs) {
      const int size = 4096;
      emit(fmt::format("{}-{}x{}x{}-w{}-s{}.ptx", prefix, bm, bn, bk, warps, stages),
           kernel->ir(t16(), t16(), t16(), size, size, size, size, 1, size, 1, size, 1, bm, bn, bk, 8), warps,
           fmt::format("\"kernel\": \"matmul\", \"dtype\": \"{}\", \"BM\": {}, \"BN\": {}, \"BK\": {}, \"GROUP_M\": 8",
                       tl::name(dtype), bm, bn, bk),
           stages);
    }
  }
  auto bf16 = [] { return tl::Tensor::empty({16}, tl::DType::bf16); };
  // Attention forward, bf16 O, B4 H32 N4096 (EVEN_N: N a multiple of every BLOCK_N), as
  // attention_sweep launches it.
  const int heads = 32, n = 4096;
  for (int d : {128, 64})
    for (int causal : {0, 1})
      for (const auto& [bm, bn, warps, stages] : kAttentionConfigs)
        emit(fmt::format("attention-d{}-c{}-{}x{}-w{}-s{}.ptx", d, causal, bm, bn, warps, stages),
             attention::attention_kernel_bf16.ir(bf16(), bf16(), bf16(), bf16(), 0.1f, n * heads * d, n * d, d, 1,
                                                 heads, n, d, bm, bn, causal, n % bn == 0),
             warps,
             fmt::format("\"kernel\": \"attention\", \"D\": {}, \"CAUSAL\": {}, \"BM\": {}, \"BN\": {}", d, causal, bm,
                         bn),
             stages);
  std::printf("%s/kernels.jsonl\n", dir.c_str());
  return 0;
}

std::string fmt_config(int warps, int64_t block) { return "w" + std::to_string(warps) + " b" + std::to_string(block); }

// Times `launch(warps, block)` for each configuration and returns (best ms, its name); prints each.
template <class F>
std::pair<double, std::string> best_config(const std::string& what, std::span<const std::pair<int, int64_t>> configs,
                                           F launch) {
  double best = 1e30;
  std::pair<int, int64_t> chosen;
  for (auto [warps, block] : configs) {
    launch(warps, block);
    double t = time_ms([&] { launch(warps, block); });
    std::printf("  %s config %s: %.4f ms\n", what.c_str(), fmt_config(warps, block).c_str(), t);
    if (t < best) {
      best = t;
      chosen = {warps, block};
    }
  }
  // The figure reported comes from fresh measurements of the chosen config: the fastest of
  // several noisy medians would flatter it.
  double t = time_ms_repeated(what + " chosen " + fmt_config(chosen.first, chosen.second),
                              [&] { launch(chosen.first, chosen.second); });
  return {t, fmt_config(chosen.first, chosen.second)};
}

void check_sparse(int status, const char* call) {
  if (status != 0) throw tl::Error(std::string(call) + " failed with cuSPARSE status " + std::to_string(status));
}

void bench_spmm(int64_t m, int64_t k, double density, int64_t f) {
  // Random CSR with sorted, distinct columns per row.
  std::mt19937_64 g(42);
  std::vector<int32_t> row_ptr{0}, cols;
  std::vector<float> vals;
  std::normal_distribution<float> normal;
  int64_t per_row = static_cast<int64_t>(static_cast<double>(k) * density);
  for (int64_t r = 0; r < m; ++r) {
    std::vector<int32_t> c;
    int64_t nnz_r = std::uniform_int_distribution<int64_t>(0, 2 * per_row)(g);
    for (int64_t j = 0; j < nnz_r; ++j) c.push_back(static_cast<int32_t>(g() % static_cast<uint64_t>(k)));
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    for (int32_t col : c) {
      cols.push_back(col);
      vals.push_back(normal(g));
    }
    row_ptr.push_back(static_cast<int32_t>(cols.size()));
  }
  int64_t nnz = static_cast<int64_t>(cols.size());
  auto t_vals = tl::Tensor::from_host(vals), t_cols = tl::Tensor::from_host(cols),
       t_rp = tl::Tensor::from_host(row_ptr);
  auto b = tl::Tensor::randn({k, f}, 9), c = tl::Tensor::empty({m, f}), c_ref = tl::Tensor::empty({m, f});
  // A few launch configurations (num_warps, BLOCK_NNZ); the fastest is reported, each is printed.
  double ms = 1e30;
  std::string best;
  for (auto [warps, chunk] :
       {std::pair{4, 16}, std::pair{2, 16}, std::pair{1, 8}, std::pair{1, 16}, std::pair{1, 32}}) {
    auto launch = [&] { spmm_kernel[m].options({.num_warps = warps})(t_vals, t_rp, t_cols, b, c, f, chunk); };
    launch();
    double t = time_ms(launch);
    std::printf("  spmm config w%d nnz%d: %.4f ms\n", warps, chunk, t);
    if (t < ms) {
      ms = t;
      best = fmt_config(warps, chunk);
    }
  }
  double gflops = 2.0 * static_cast<double>(nnz * f) / ms / 1e6;
  std::string name =
      "spmm " + std::to_string(m) + "x" + std::to_string(k) + " F=" + std::to_string(f) + " [" + best + "]";
  std::string why;
  const CuSparse* cs = CuSparse::load(&why);
  if (!cs) {
    std::printf("%-40s %10.4f ms %9.1f GFLOP/s   (no cuSPARSE: %s)\n", name.c_str(), ms, gflops, why.c_str());
    return;
  }
  void *handle, *mat_a, *mat_b, *mat_c;
  check_sparse(cs->create(&handle), "cusparseCreate");
  check_sparse(cs->create_csr(&mat_a, m, k, nnz, t_rp.data_ptr(), t_cols.data_ptr(), t_vals.data_ptr(),
                              CuSparse::kIndex32, CuSparse::kIndex32, CuSparse::kBaseZero, CuSparse::kR32F),
               "cusparseCreateCsr");
  check_sparse(cs->create_dn_mat(&mat_b, k, f, f, b.data_ptr(), CuSparse::kR32F, CuSparse::kRowMajor),
               "cusparseCreateDnMat");
  check_sparse(cs->create_dn_mat(&mat_c, m, f, f, c_ref.data_ptr(), CuSparse::kR32F, CuSparse::kRowMajor),
               "cusparseCreateDnMat");
  float alpha = 1, beta = 0;
  size_t bytes = 0;
  check_sparse(cs->spmm_buffer_size(handle, CuSparse::kNonTranspose, CuSparse::kNonTranspose, &alpha, mat_a, mat_b,
                                    &beta, mat_c, CuSparse::kR32F, CuSparse::kAlgDefault, &bytes),
               "cusparseSpMM_bufferSize");
  auto buffer = tl::Tensor::empty({static_cast<int64_t>(bytes / 4 + 1)});
  auto ref = [&] {
    check_sparse(cs->spmm(handle, CuSparse::kNonTranspose, CuSparse::kNonTranspose, &alpha, mat_a, mat_b, &beta, mat_c,
                          CuSparse::kR32F, CuSparse::kAlgDefault, buffer.data_ptr()),
                 "cusparseSpMM");
  };
  ref();
  auto got = c.to_host<float>(), want = c_ref.to_host<float>();
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  double ref_ms = time_ms(ref);
  double ref_gflops = 2.0 * static_cast<double>(nnz * f) / ref_ms / 1e6;
  summary().add_row(
      {name, num(ms), num(gflops, 1), "GFLOP/s", "cuSPARSE " + num(ref_gflops, 1), num(gflops / ref_gflops, 3)});
  std::printf("%-40s %10.4f ms %9.1f GFLOP/s   cuSPARSE %9.1f GFLOP/s   ratio %.3f   relerr %.1e\n", name.c_str(), ms,
              gflops, ref_gflops, gflops / ref_gflops, std::sqrt(err / norm));
}

// cuBLAS's cublasGemmEx through dlopen (TILEDSL_CUBLAS_PATH, else libcublas.so.13 or .12), the
// matmul reference. Enum values are cublas_api.h's and library_types.h's.
struct CuBlas {
  using Status = int;
  Status (*create)(void**);
  Status (*gemm_ex)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                    const void*, void*, int, int, int, int);
  static constexpr int kOpN = 0, kR32F = 0, kR16F = 2, kR16BF = 14, kCompute32F = 68, kGemmDefault = -1;

  static const CuBlas* load(std::string* why) {
    std::string path = tiledsl::env::value(tiledsl::env::Var::TILEDSL_CUBLAS_PATH);
    void* h = nullptr;
    for (const std::string& p :
         path.empty() ? std::vector<std::string>{"libcublas.so.13", "libcublas.so.12"} : std::vector<std::string>{path})
      if ((h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    if (!h) {
      *why = dlerror();
      return nullptr;
    }
    static CuBlas c;
    static void* handle = nullptr;
    c.create = reinterpret_cast<decltype(c.create)>(dlsym(h, "cublasCreate_v2"));
    c.gemm_ex = reinterpret_cast<decltype(c.gemm_ex)>(dlsym(h, "cublasGemmEx"));
    if (!c.create || !c.gemm_ex || c.create(&handle) != 0) {
      *why = "missing cuBLAS entry points, or cublasCreate failed";
      return nullptr;
    }
    c.handle = handle;
    return &c;
  }
  void* handle = nullptr;

  // Row-major C[m, n] (f32, bf16 or f16, as c is) = A[m, k] @ B[k, n] (bf16 or f16, as a is), f32
  // accumulation: column-major C^T = B^T A^T.
  void gemm(const tl::Tensor& a, const tl::Tensor& b, tl::Tensor& c, int m, int n, int k) const {
    auto type = [](tl::DType t) { return t == tl::DType::bf16 ? kR16BF : t == tl::DType::f16 ? kR16F : kR32F; };
    float alpha = 1, beta = 0;
    Status st = gemm_ex(handle, kOpN, kOpN, n, m, k, &alpha, b.data_ptr(), type(b.dtype()), n, a.data_ptr(),
                        type(a.dtype()), k, &beta, c.data_ptr(), type(c.dtype()), n, kCompute32F, kGemmDefault);
    if (st != 0) throw tl::Error("cublasGemmEx failed with status " + std::to_string(st));
  }
};

// `tiledsl-bench sweep --csv=PATH`: each workload over a range of sizes (as Triton's perf_report
// does), ours against the reference measured beside it: the device copy of the same bytes for the
// memory-bound kernels, cuBLAS for matmul. One row per (workload, size); bench/plot_sweep.py draws
// them. Each figure is one median (tl::bench), the best of a few launch configurations for ours.
int sweep(const std::string& csv, bool matmul_only, const std::string& only) {
  tl::Report report({"workload", "size", "unit", "ours", "config", "reference", "reference_value", "ratio"});
  auto add_point = [&](const std::string& workload, int64_t size, const std::string& unit, double ours,
                       const std::string& config, const std::string& ref, double ref_value) {
    report.add_row(
        {workload, std::to_string(size), unit, num(ours, 2), config, ref, num(ref_value, 2), num(ours / ref_value, 3)});
    std::printf("sweep %-10s %9lld  %9.2f %s [%s]   %s %9.2f   ratio %.3f\n", workload.c_str(),
                static_cast<long long>(size), ours, unit.c_str(), config.c_str(), ref.c_str(), ref_value,
                ours / ref_value);
    std::fflush(stdout);
  };
  // The fastest of `configs`, timed once each.
  auto fastest = [](std::span<const std::pair<int, int64_t>> configs, auto launch) {
    double best = 1e30;
    std::string name;
    for (auto [warps, block] : configs) {
      launch(warps, block);
      double t = time_ms([&] { launch(warps, block); });
      if (t < best) std::tie(best, name) = std::pair{t, fmt_config(warps, block)};
    }
    return std::pair{best, name};
  };

  tl::Kernel add = make_add("add_sweep");
  const std::array<std::pair<int, int64_t>, 3> add_configs = {{{4, 1024}, {8, 2048}, {8, 4096}}};
  for (int log2n = 12; !matmul_only && log2n <= 28; log2n += 2) {
    int n = 1 << log2n;
    auto x = tl::Tensor::randn({n}, 1), y = tl::Tensor::randn({n}, 2), o = tl::Tensor::empty({n});
    auto [ms, config] = fastest(add_configs, [&](int warps, int64_t block) {
      add[tl::grid(tl::cdiv(n, block))].options({.num_warps = warps})(x, y, o, n, block);
    });
    double bytes = 3.0 * n * 4;
    add_point("add", n, "GB/s", bytes / ms / 1e6, config, "copy", copy_gbps(static_cast<size_t>(bytes / 2), 1));
  }

  const int rows = 4096;
  for (int cols = 256; !matmul_only && cols <= 16384; cols *= 2) {
    auto x = tl::Tensor::randn({rows, cols}, 3), y = tl::Tensor::empty({rows, cols});
    const int64_t block = next_pow2(cols);
    const double bytes = 2.0 * rows * cols * 4, copy = copy_gbps(static_cast<size_t>(bytes / 2), 1);
    auto [ms, config] = fastest(row_configs(block), [&](int warps, int64_t) {
      softmax::softmax_kernel[rows].options({.num_warps = warps})(y, x, cols, cols, cols, block);
    });
    add_point("softmax", cols, "GB/s", bytes / ms / 1e6, config, "copy", copy);
    auto w = tl::Tensor::randn({cols}, 5), b = tl::Tensor::randn({cols}, 6), mean = tl::Tensor::empty({rows}),
         rstd = tl::Tensor::empty({rows});
    auto [ln_ms, ln_config] = fastest(row_configs(block), [&](int warps, int64_t) {
      layernorm::layer_norm_fwd[rows].options({.num_warps = warps})(x, y, w, b, mean, rstd, cols, cols, 1e-5f, block);
    });
    add_point("layernorm", cols, "GB/s", bytes / ln_ms / 1e6, ln_config, "copy", copy);
  }

  std::string why;
  const CuBlas* blas = CuBlas::load(&why);
  if (!blas) std::printf("sweep: no cuBLAS (%s): matmul left out\n", why.c_str());
  // The persistent kernel (matmul_kernel.h; bf16 C), one program per SM: blocks whose
  // accumulators and ring buffers leave room for the epilogue's shared buffer beside them.
  const std::array<std::array<int, 5>, 4> persistent_configs = {
      {{128, 128, 64, 8, 3}, {128, 128, 64, 8, 4}, {128, 256, 64, 8, 2}, {256, 128, 64, 8, 2}}};
  // Every (configuration, persistent) the sweep runs, the default kernel's first.
  std::vector<std::pair<std::array<int, 5>, bool>> runs;
  for (const auto& cfg : kMatmulConfigs) runs.emplace_back(cfg, false);
  for (const auto& cfg : persistent_configs) runs.emplace_back(cfg, true);
  const int sms = cu::device_info().sm_count;
  // bf16 inputs with C in f32 (every size) and in bf16 (the accumulator rounded as it is stored;
  // 2048 and up); f16 inputs with C in f16, as Triton's tutorial (2048 and up).
  for (int size = 512; blas && size <= 8192; size *= 2)
    for (tl::DType out : {tl::DType::f32, tl::DType::bf16, tl::DType::f16}) {
      if (out != tl::DType::f32 && size < 2048) continue;
      const tl::DType in = out == tl::DType::f16 ? tl::DType::f16 : tl::DType::bf16;
      // "4096 bf16 128x256x64 w8 s3", and " persistent" after it for that kernel.
      auto name_of = [&](const std::array<int, 5>& cfg, bool persistent) {
        return fmt::format("{} {} {}x{}x{} w{} s{}{}", size, tl::name(out), cfg[0], cfg[1], cfg[2], cfg[3], cfg[4],
                           persistent ? " persistent" : "");
      };
      auto chosen = [&](const std::array<int, 5>& cfg, bool persistent) {
        return name_of(cfg, persistent).find(only) != std::string::npos && (!persistent || out == tl::DType::bf16);
      };
      // Making the inputs takes seconds at 8192: none for a size --only leaves no run of.
      if (std::none_of(runs.begin(), runs.end(), [&](const auto& r) { return chosen(r.first, r.second); })) continue;
      const int m = size, n = size, k = size;
      auto a = tl::Tensor::randn({m, k}, 7, in), b = tl::Tensor::randn({k, n}, 8, in),
           c = tl::Tensor::empty({m, n}, out), c_ref = tl::Tensor::empty({m, n}, out);
      auto ref = [&] { blas->gemm(a, b, c_ref, m, n, k); };
      ref();
      const std::vector<double> want = c_ref.to_double();
      // Sums in another order differ by about sqrt(k) f32 roundings of terms of size 1; a 16-bit C
      // may also round one ulp apart (2^-7 of the value in bf16, 2^-10 in f16). Every
      // configuration's C is checked.
      auto wrong = [&](const std::string& name) {
        auto got = c.to_double();
        for (size_t i = 0; i < got.size(); i += 101) {
          const double bound =
              1e-2 * std::sqrt(static_cast<double>(k)) + (out == tl::DType::bf16  ? std::ldexp(std::fabs(want[i]), -7)
                                                          : out == tl::DType::f16 ? std::ldexp(std::fabs(want[i]), -10)
                                                                                  : 0.0);
          if (!(std::fabs(got[i] - want[i]) <= bound)) {
            std::printf("sweep matmul %s: WRONG against cuBLAS (element %zu: %g, cuBLAS %g)\n", name.c_str(), i, got[i],
                        want[i]);
            return true;
          }
        }
        return false;
      };
      double best = 1e30;
      std::string config;
      for (const auto& [cfg, persistent] : runs) {
        if (!chosen(cfg, persistent)) continue;
        const std::string name = name_of(cfg, persistent);
        auto [bm, bn, bk, warps, stages] = cfg;
        const int tiles = tl::cdiv(m, bm) * tl::cdiv(n, bn);
        const tl::Kernel& kernel = persistent              ? matmul::matmul_bf16_out_persistent
                                   : out == tl::DType::f32 ? matmul::matmul_bf16
                                   : out == tl::DType::f16 ? matmul::matmul_f16_out
                                                           : matmul::matmul_bf16_out;
        auto launch = [&] {
          kernel[persistent ? std::min(tiles, sms) : tiles].options({.num_warps = warps, .num_stages = stages})(
              a, b, c, m, n, k, k, 1, n, 1, n, 1, bm, bn, bk, 8);
        };
        try {
          launch();
        } catch (const tl::Error& e) {  // more shared memory than the GPU has, say
          std::printf("  matmul config %s: %s\n", name.c_str(), e.what());
          continue;
        }
        if (wrong(name)) return 1;
        const double t = time_ms(launch);
        std::printf("  matmul %s: %.3f ms, %.1f TFLOP/s\n", name.c_str(), t, 2.0 * m * n * k / t / 1e9);
        if (t < best)
          std::tie(best, config) = std::pair{
              t, fmt::format("{}x{}x{} w{} s{}{}", bm, bn, bk, warps, stages, persistent ? " persistent" : "")};
      }
      if (config.empty()) continue;  // every selected config failed to launch
      const double flop = 2.0 * m * n * k;
      add_point(out == tl::DType::f32   ? "matmul_bf16"
                : out == tl::DType::f16 ? "matmul_f16_out_f16"
                                        : "matmul_bf16_out_bf16",
                size, "TFLOP/s", flop / best / 1e9, config, "cuBLAS", flop / time_ms(ref) / 1e9);
    }
  if (!csv.empty()) report.write_csv(csv);
  return 0;
}

// `tiledsl-bench probe`: the ceiling of the mma.sync path, from hand-written PTX run through
// our runtime's driver: every warp issues chains of mma.sync.m16n8k16 (bf16 in, f32 accumulate)
// on registers, `kChains` independent accumulators so that the instruction's latency is hidden,
// no memory traffic. TFLOP/s = 4096 flops per instruction per warp.
std::string mma_probe_ptx(int chains) {
  std::string body;
  for (int c = 0; c < chains; ++c)
    body += fmt::format(
        "  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{%c{0}, %c{1}, %c{2}, %c{3}}}, {{%a0, %a1, %a2, "
        "%a3}}, {{%b0, %b1}}, {{%c{0}, %c{1}, %c{2}, %c{3}}};\n",
        4 * c, 4 * c + 1, 4 * c + 2, 4 * c + 3);
  std::string sum;
  for (int c = 1; c < 4 * chains; ++c) sum += fmt::format("  add.f32 %c0, %c0, %c{};\n", c);
  return fmt::format(R"(.version 7.0
.target sm_80
.address_size 64
.visible .entry mma_probe(.param .u64 out, .param .u32 iters) {{
  .reg .b32 %a<4>, %b<2>;
  .reg .f32 %c<{regs}>;
  .reg .u32 %i, %n;
  .reg .u64 %o;
  .reg .pred %p;
  ld.param.u32 %n, [iters];
  mov.b32 %a0, 0x3f803f80;
  mov.b32 %a1, 0x3f803f80;
  mov.b32 %a2, 0x3f803f80;
  mov.b32 %a3, 0x3f803f80;
  mov.b32 %b0, 0x3c003c00;
  mov.b32 %b1, 0x3c003c00;
{zero}  mov.u32 %i, 0;
LOOP:
{body}  add.u32 %i, %i, 1;
  setp.lt.u32 %p, %i, %n;
  @%p bra LOOP;
{sum}  ld.param.u64 %o, [out];
  st.global.f32 [%o], %c0;
  ret;
}}
)",
                     fmt::arg("regs", 4 * chains), fmt::arg("body", body), fmt::arg("sum", sum), fmt::arg("zero", [&] {
                       std::string z;
                       for (int c = 0; c < 4 * chains; ++c) z += fmt::format("  mov.f32 %c{}, 0f00000000;\n", c);
                       return z;
                     }()));
}

// The ceiling of the wgmma path, likewise: every warpgroup issues wgmma.m64n256k16 (bf16 in, f32
// accumulate, both operands from shared memory through 128-byte-swizzled descriptors, b N-major
// as the matmul example's), four to a group as a 64-deep k step, one group kept in flight
// (wait_group 1), the way the matmul's k loop runs them; shared memory is zeroed first. TFLOP/s
// = 2 * 64 * 256 * 16 flops per instruction per warpgroup.
std::string wgmma_probe_ptx() {
  std::string regs, sum;
  for (int c = 0; c < 128; ++c) regs += fmt::format("{}%c{}", c ? ", " : "", c);
  for (int c = 1; c < 128; ++c) sum += fmt::format("  add.f32 %c0, %c0, %c{};\n", c);
  // Descriptors (DotToLLVM.cpp's lower_dot_wgmma): address >> 4, the leading byte offset >> 4
  // (bits 16-29; b: K * 128 = 8192 bytes between panels), the stride byte offset 1024 >> 4
  // (bits 32-45), the 128-byte swizzle (bit 62). Each k step of 16 moves a by 32 bytes (+2) and
  // b by 16 lines of 128 bytes (+128).
  std::string body = "  wgmma.fence.sync.aligned;\n";
  for (int k = 0; k < 4; ++k)
    body += fmt::format(
        "  add.s64 %da, %a0, {0};\n  add.s64 %db, %b0, {1};\n"
        "  wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{{2}}}, %da, %db, 1, 1, 1, 0, 1;\n",
        2 * k, 128 * k, regs);
  body += "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 1;\n";
  return fmt::format(R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry wgmma_probe(.param .u64 out, .param .u32 iters) {{
  .shared .align 1024 .b8 probe_smem[40960];
  .reg .f32 %c<128>;
  .reg .b32 %z, %t, %nt, %s, %i, %n;
  .reg .b64 %a0, %b0, %da, %db, %o;
  .reg .pred %p;
  mov.u32 %t, %tid.x;
  mov.u32 %nt, %ntid.x;
  mov.u32 %z, 0;
  shl.b32 %i, %t, 4;
ZERO:
  mov.u32 %s, probe_smem;
  add.u32 %s, %s, %i;
  st.shared.v4.u32 [%s], {{%z, %z, %z, %z}};
  mad.lo.u32 %i, %nt, 16, %i;
  setp.lt.u32 %p, %i, 40960;
  @%p bra ZERO;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  mov.u32 %s, probe_smem;
  shr.u32 %s, %s, 4;
  cvt.u64.u32 %a0, %s;
  add.s64 %b0, %a0, 512;
  or.b64 %a0, %a0, 4611686293338849280;
  or.b64 %b0, %b0, 4611686293338849280;
{zero}  ld.param.u32 %n, [iters];
  mov.u32 %i, 0;
LOOP:
{body}  add.u32 %i, %i, 1;
  setp.lt.u32 %p, %i, %n;
  @%p bra LOOP;
  wgmma.wait_group.sync.aligned 0;
{sum}  ld.param.u64 %o, [out];
  st.global.f32 [%o], %c0;
  ret;
}}
)",
                     fmt::arg("body", body), fmt::arg("sum", sum), fmt::arg("zero", [&] {
                       std::string z;
                       for (int c = 0; c < 128; ++c) z += fmt::format("  mov.f32 %c{}, 0f00000000;\n", c);
                       return z;
                     }()));
}

int mma_probe() {
  const int sms = cu::device_info().sm_count;
  auto out = tl::Tensor::empty({1});
  for (int chains : {4, 8}) {
    std::string ptx = mma_probe_ptx(chains);
    cu::CUmodule mod = nullptr;
    cu::CUfunction fn = nullptr;
    cu::check(drv().cuModuleLoadData(&mod, ptx.c_str()), "cuModuleLoadData (mma probe)");
    cu::check(drv().cuModuleGetFunction(&fn, mod, "mma_probe"), "cuModuleGetFunction");
    for (int warps : {4, 8}) {
      unsigned iters = 4096;
      void* ptr = out.data_ptr();
      void* args[] = {&ptr, &iters};
      const unsigned blocks = static_cast<unsigned>(sms * 4);
      auto launch = [&] {
        cu::check(
            drv().cuLaunchKernel(fn, blocks, 1, 1, 32 * static_cast<unsigned>(warps), 1, 1, 0, nullptr, args, nullptr),
            "cuLaunchKernel (mma probe)");
      };
      launch();
      double ms = time_ms(launch);
      double flop = 4096.0 * chains * iters * warps * blocks;
      std::printf("probe mma.sync.m16n8k16 bf16: %d chains, %d warps x %u blocks: %.1f TFLOP/s\n", chains, warps,
                  blocks, flop / ms / 1e9);
      summary().add_row({fmt::format("mma.sync probe, {} chains, {} warps", chains, warps), num(ms),
                         num(flop / ms / 1e9, 1), "TFLOP/s", "", ""});
    }
  }
  if (cu::device_info().sm_major != 9) {
    std::printf("probe wgmma: sm_90a only (this GPU is sm_%d%d)\n", cu::device_info().sm_major,
                cu::device_info().sm_minor);
    return 0;
  }
  const std::string ptx = wgmma_probe_ptx();
  cu::CUmodule mod = nullptr;
  cu::CUfunction fn = nullptr;
  cu::check(drv().cuModuleLoadData(&mod, ptx.c_str()), "cuModuleLoadData (wgmma probe)");
  cu::check(drv().cuModuleGetFunction(&fn, mod, "wgmma_probe"), "cuModuleGetFunction");
  for (int groups : {1, 2}) {  // warpgroups per block, one block per SM
    unsigned iters = 4096;
    void* ptr = out.data_ptr();
    void* args[] = {&ptr, &iters};
    const unsigned blocks = static_cast<unsigned>(sms);
    auto launch = [&] {
      cu::check(
          drv().cuLaunchKernel(fn, blocks, 1, 1, 128 * static_cast<unsigned>(groups), 1, 1, 0, nullptr, args, nullptr),
          "cuLaunchKernel (wgmma probe)");
    };
    launch();
    const double ms = time_ms(launch);
    const double flop = 2.0 * 64 * 256 * 16 * 4 * iters * groups * blocks;
    std::printf("probe wgmma.m64n256k16 bf16: %d warpgroups x %u blocks: %.1f TFLOP/s\n", groups, blocks,
                flop / ms / 1e9);
    summary().add_row(
        {fmt::format("wgmma probe, {} warpgroups", groups), num(ms), num(flop / ms / 1e9, 1), "TFLOP/s", "", ""});
  }
  return 0;
}

// `tiledsl-bench attention`: the attention example's kernel on B4 H32 N4096 (TARGETS.md's
// workload), head dim 128 and 64, causal or not, over a few block configurations, storing O in
// bf16 as Triton's tutorial kernel does (attention_kernel_bf16), then the fastest configuration
// again storing f32 as the example does; TFLOP/s counts 4 N^2 D per (batch, head), half of it
// when causal. No reference runs in this process (cuDNN's
// and Triton's figures come from the reference harness beside it). `only`, when not empty, keeps
// the runs whose "D128 causal 64x64 w4 s3"-style name contains it (one kernel for a profiler).
int attention_sweep(const std::string& only) {
  const int batch = 4, heads = 32, n = 4096;
  auto selected = [&](int d, int causal, const std::array<int, 4>& c) {
    return only.empty() ||
           fmt::format("D{}{} {}x{} w{} s{}", d, causal ? " causal" : "", c[0], c[1], c[2], c[3]).find(only) !=
               std::string::npos;
  };
  for (int d : {128, 64})
    for (int causal : {0, 1}) {
      // Making the inputs takes seconds on the host: none for a workload --only leaves no run of.
      if (std::none_of(kAttentionConfigs.begin(), kAttentionConfigs.end(),
                       [&](const auto& c) { return selected(d, causal, c); }))
        continue;
      auto q = tl::Tensor::randn({batch, heads, n, d}, 1, tl::DType::bf16),
           k = tl::Tensor::randn({batch, heads, n, d}, 2, tl::DType::bf16),
           v = tl::Tensor::randn({batch, heads, n, d}, 3, tl::DType::bf16), o = tl::Tensor::empty({batch, heads, n, d}),
           o_bf16 = tl::Tensor::empty({batch, heads, n, d}, tl::DType::bf16);
      const float scale = 1.0f / std::sqrt(static_cast<float>(d));
      double best = 1e30;
      std::string chosen;
      std::array<int, 4> chosen_config{};
      auto run = [&](const tl::Kernel& kernel, const tl::Tensor& out, const std::array<int, 4>& c) {
        const auto [bm, bn, warps, stages] = c;
        kernel[tl::grid(tl::cdiv(n, bm), batch * heads)].options({.num_warps = warps, .num_stages = stages})(
            q, k, v, out, scale, n * heads * d, n * d, d, 1, heads, n, d, bm, bn, causal, n % bn == 0);
      };
      for (const std::array<int, 4>& config : kAttentionConfigs) {
        if (!selected(d, causal, config)) continue;
        auto [bm, bn, warps, stages] = config;
        auto launch = [&] { run(attention::attention_kernel_bf16, o_bf16, config); };
        try {
          launch();
        } catch (const tl::Error& e) {
          std::printf("  attention config %dx%d w%d s%d: %s\n", bm, bn, warps, stages, e.what());
          continue;
        }
        double ms = time_ms(launch);
        std::printf("  attention D%d%s config %dx%d w%d s%d: %.3f ms\n", d, causal ? " causal" : "", bm, bn, warps,
                    stages, ms);
        if (ms < best) {
          std::tie(best, chosen) = std::pair{ms, fmt::format("{}x{} w{} s{}", bm, bn, warps, stages)};
          chosen_config = config;
        }
      }
      if (chosen.empty()) continue;
      const double flop = 4.0 * batch * heads * double(n) * n * d * (causal ? 0.5 : 1.0);
      const double f32_ms = time_ms([&] { run(attention::attention_kernel, o, chosen_config); });
      for (auto [label, ms] : {std::pair{"", best}, std::pair{", f32 O", f32_ms}}) {
        std::string name =
            fmt::format("attention fwd bf16 B4 H32 N4096 D{}{}{} [{}]", d, causal ? " causal" : "", label, chosen);
        summary().add_row({name, num(ms), num(flop / ms / 1e9, 1), "TFLOP/s", "", ""});
        std::printf("%-60s %10.4f ms %9.1f TFLOP/s\n", name.c_str(), ms, flop / ms / 1e9);
      }
      std::fflush(stdout);
    }
  return 0;
}

// Host time per launch of `launch` (a tiny kernel): the median over 40 batches of 128 launches,
// each batch timed from its first call to its last return, the GPU drained between batches
// (outside the timing). Launched back to back without end, a kernel that takes the GPU longer
// than the host takes to launch it fills the launch queue, and from then on each call waits for
// the GPU: the loop then times the GPU's launch-to-launch rate, not the host. The back-to-back
// figure (5000 launches) is printed beside it.
void host_time_per_launch(const std::string& label, const std::function<void()>& launch) {
  using clock = std::chrono::steady_clock;
  auto us_since = [](clock::time_point t0, int n) {
    return std::chrono::duration<double, std::micro>(clock::now() - t0).count() / n;
  };
  for (int i = 0; i < 100; ++i) launch();
  drv().cuCtxSynchronize();
  const int batch = 128;
  std::vector<double> per_launch;
  for (int b = 0; b < 40; ++b) {
    auto t0 = clock::now();
    for (int i = 0; i < batch; ++i) launch();
    per_launch.push_back(us_since(t0, batch));
    drv().cuCtxSynchronize();
  }
  std::sort(per_launch.begin(), per_launch.end());
  const double us = per_launch[per_launch.size() / 2];
  const int n = 5000;
  auto t0 = clock::now();
  for (int i = 0; i < n; ++i) launch();
  const double back_to_back = us_since(t0, n);
  drv().cuCtxSynchronize();
  summary().add_row({label, num(us / 1000, 6), num(us, 3), "us", "", ""});
  summary().add_row({label + ", 5000 back to back", num(back_to_back / 1000, 6), num(back_to_back, 3), "us", "", ""});
  std::printf("%-40s %10.3f us (batches of %d: %.3f-%.3f; 5000 back to back %.3f us)\n", label.c_str(), us, batch,
              per_launch.front(), per_launch.back(), back_to_back);
}

// Host time per kernel of `launch` (a tiny kernel, given the stream to launch on) replayed from
// a CUDA graph: 128 launches captured once (the strictest capture mode: a launch that allocated,
// synchronised or loaded a module would fail it), then the median over 40 replays of the graph,
// each timed from cuGraphLaunch to its return and divided by 128, the GPU drained in between.
void host_time_in_graph(const std::string& label, const std::function<void(void*)>& launch) {
  using clock = std::chrono::steady_clock;
  const cu::Driver& d = drv();
  if (!d.cuStreamBeginCapture || !d.cuGraphInstantiate) {
    std::printf("%-40s the driver has no graph API\n", label.c_str());
    return;
  }
  cu::CUstream s = nullptr;
  cu::check(d.cuStreamCreate(&s, 1), "cuStreamCreate");
  launch(s);  // compiled before the capture
  cu::check(d.cuStreamSynchronize(s), "cuStreamSynchronize");
  const int kernels = 128;
  cu::check(d.cuStreamBeginCapture(s, 0 /* CU_STREAM_CAPTURE_MODE_GLOBAL */), "cuStreamBeginCapture");
  for (int i = 0; i < kernels; ++i) launch(s);
  cu::CUgraph graph = nullptr;
  cu::CUgraphExec exec = nullptr;
  cu::check(d.cuStreamEndCapture(s, &graph), "cuStreamEndCapture");
  cu::check(d.cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  std::vector<double> per_kernel;
  for (int r = 0; r < 45; ++r) {
    auto t0 = clock::now();
    cu::check(d.cuGraphLaunch(exec, s), "cuGraphLaunch");
    const double us = std::chrono::duration<double, std::micro>(clock::now() - t0).count() / kernels;
    cu::check(d.cuStreamSynchronize(s), "cuStreamSynchronize");
    if (r >= 5) per_kernel.push_back(us);  // the first replays upload the graph
  }
  d.cuGraphExecDestroy(exec);
  d.cuGraphDestroy(graph);
  d.cuStreamDestroy(s);
  std::sort(per_kernel.begin(), per_kernel.end());
  const double us = per_kernel[per_kernel.size() / 2];
  summary().add_row({label, num(us / 1000, 6), num(us, 3), "us", "", ""});
  std::printf("%-40s %10.3f us per kernel (graphs of %d; %.3f-%.3f)\n", label.c_str(), us, kernels, per_kernel.front(),
              per_kernel.back());
}

// The attention example's kernel on one small problem (B1 H1 N1024 D128, the example's blocks):
// trace, compile, load and run once, synchronised.
void first_launch_attention(const char* label) {
  const int n = 1024, d = 128;
  auto q = tl::Tensor::randn({1, 1, n, d}, 1, tl::DType::bf16), k = tl::Tensor::randn({1, 1, n, d}, 2, tl::DType::bf16),
       v = tl::Tensor::randn({1, 1, n, d}, 3, tl::DType::bf16), o = tl::Tensor::empty({1, 1, n, d});
  auto t0 = std::chrono::steady_clock::now();
  attention::attention_kernel[tl::grid(tl::cdiv(n, 32), 1)].options({.num_warps = 8})(
      q, k, v, o, 0.088f, n * d, n * d, d, 1, 1, n, d, 32, 64, 0, n % 64 == 0);
  drv().cuCtxSynchronize();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  summary().add_row({label, num(ms, 3), "", "", "", ""});
  std::printf("%-40s %10.3f ms\n", label, ms);
}

}  // namespace

int main(int argc, char** argv) {
  // `tiledsl-bench first-launch`: only the first launch of the tiny kernel, to time a warm start
  // from the disk cache in a fresh process (run it after a full run has filled the cache).
  // `tiledsl-bench cold`: only the first launches, add then attention (with an empty
  // TILEDSL_CACHE_DIR: cold compiles), so that a script can repeat them in fresh processes.
  // `tiledsl-bench memory`: only the memory-bound kernels and SpMM (to compare builds quickly).
  // `tiledsl-bench export DIR`: write the benchmarked kernels' PTX and cubins (see export_kernels) and exit.
  // `tiledsl-bench sweep --csv=PATH`: every workload over a range of sizes (see sweep).
  // `tiledsl-bench matmul [--only=TEXT] --csv=PATH`: the sweep's matmul rows only (--only: the
  // configurations whose name, as "4096 bf16 128x256x64 w8 s3", contains TEXT).
  // `tiledsl-bench probe`: the mma.sync ceiling from hand-written PTX (see mma_probe).
  // `tiledsl-bench attention [--only=TEXT]`: the attention example's kernel on TARGETS.md's
  // workload (--only: the runs whose name, as "D128 causal 64x64 w4 s3", contains TEXT).
  bool first_launch_only = false, cold_only = false, memory_only = false, sweep_only = false, probe_only = false,
       attention_only = false, matmul_only = false;
  std::string csv, only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "first-launch")
      first_launch_only = true;
    else if (a == "cold")
      cold_only = true;
    else if (a == "memory")
      memory_only = true;
    else if (a == "sweep")
      sweep_only = true;
    else if (a == "matmul")
      sweep_only = matmul_only = true;
    else if (a == "probe")
      probe_only = true;
    else if (a == "attention")
      attention_only = true;
    else if (a == "export" && i + 1 < argc)
      return export_kernels(argv[i + 1]);
    else if (a.rfind("--csv=", 0) == 0)
      csv = a.substr(6);
    else if (a.rfind("--only=", 0) == 0)
      only = a.substr(7);
  }

  std::string why;
  auto start = std::chrono::steady_clock::now();
  if (!tl::runtime::gpu_available(&why)) {
    std::printf("tiledsl-bench: no GPU (%s); nothing to measure\n", why.c_str());
    return 0;
  }
  // The runtime's start-up (cuInit, the context, the compiler's warm-up beside them): paid once
  // per process, before the first compile.
  double start_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("tiledsl-bench on %s\n", cu::device_info().name.c_str());
  if (sweep_only) return sweep(csv, matmul_only, only);
  if (probe_only) return mma_probe();
  if (attention_only) {
    const int rc = attention_sweep(only);
    if (!csv.empty()) summary().write_csv(csv);
    return rc;
  }
  std::printf("%-40s %10.3f ms\n", "runtime start-up", start_ms);
  std::string no_nvjitlink;
  std::printf("PTX -> cubin: %s\n", cu::nvjitlink_available(&no_nvjitlink)
                                        ? ("nvJitLink, " + cu::nvjitlink_path()).c_str()
                                        : ("the driver's JIT (" + no_nvjitlink + ")").c_str());
  struct Finish {  // the summary table (and CSV) however main returns
    const std::string& csv;
    ~Finish() {
      std::printf("\n");
      summary().print();
      if (!csv.empty()) summary().write_csv(csv);
    }
  } finish{csv};

  if (!memory_only) {
    // Cold compile + first launch: trace, lower, PTX, load, launch, synchronise.
    {
      auto x = tl::Tensor::randn({1024}, 1), y = tl::Tensor::randn({1024}, 2), o = tl::Tensor::empty({1024});
      tl::Kernel cold = make_add("add_cold");
      auto t0 = std::chrono::steady_clock::now();
      cold[1](x, y, o, 1024, 1024);
      drv().cuCtxSynchronize();
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const char* label = first_launch_only ? "first launch in a new process, add" : "cold compile + first launch, add";
      summary().add_row({label, num(ms, 3), "", "", "", ""});
      std::printf("%-40s %10.3f ms\n", label, ms);
      if (first_launch_only || cold_only) {
        first_launch_attention(first_launch_only ? "first launch in a new process, attention"
                                                 : "cold compile + first launch, attention");
        return 0;
      }
      // Host time per launch of a tiny kernel, warm.
      host_time_per_launch("host time per launch, tiny add", [&] { cold[1](x, y, o, 1024, 1024); });
      // The floor: the same kernel through cuLaunchKernel alone, to show what tiledsl adds.
      auto f = tiledsl::ir::parse(cold.ir(x, y, o, 1024, 1024));
      f->number_values();
      auto gk = tiledsl::runtime::load_gpu_kernel(*f, {});
      std::array<tiledsl::runtime::GpuArg, 4> raw{{{reinterpret_cast<uintptr_t>(x.data_ptr())},
                                                   {reinterpret_cast<uintptr_t>(y.data_ptr())},
                                                   {reinterpret_cast<uintptr_t>(o.data_ptr())},
                                                   {1024}}};
      host_time_per_launch("host time per launch, cuLaunchKernel alone", [&] {
        tiledsl::runtime::launch_gpu_kernel(*gk, raw, {1, 1, 1}, nullptr);
      });
      // The same launches captured into a CUDA graph and replayed.
      host_time_in_graph("host time per kernel, tiny add, graph replay",
                         [&](void* s) { cold[1].options({.stream = s})(x, y, o, 1024, 1024); });
    }

    first_launch_attention("cold compile + first launch, attention");

    // Autotuning (TILEDSL_PRINT_AUTOTUNING prints the table), and the host time of a tuned launch.
    {
      tl::Kernel add_tuned_kernel = make_add("add_tuned");
      std::vector<tl::Config> configs;
      for (int64_t block : {1024, 2048, 4096})
        for (int warps : {4, 8}) configs.push_back({{{"BLOCK", block}}, warps, 3});
      auto tuned = tl::autotune(add_tuned_kernel, configs, {"n"});
      const int n = 1 << 24;
      auto x = tl::Tensor::randn({n}, 1), y = tl::Tensor::randn({n}, 2), o = tl::Tensor::empty({n});
      auto g = tl::grid([n](const tl::Meta& m) { return tl::cdiv(n, m["BLOCK"]); });
      tuned[g](x, y, o, n);
      std::printf("%-40s %s\n", "autotuned add n=2^24 chose", tuned.chosen(x, y, o, n)->str().c_str());
      auto xs = tl::Tensor::randn({1024}, 1), ys = tl::Tensor::randn({1024}, 2), os = tl::Tensor::empty({1024});
      auto tiny = tl::grid([](const tl::Meta& m) { return tl::cdiv(1024, m["BLOCK"]); });
      tuned[tiny](xs, ys, os, 1024);
      drv().cuCtxSynchronize();
      host_time_per_launch("host time per launch, tiny add, tuned", [&] { tuned[tiny](xs, ys, os, 1024); });
    }
  }

  tl::Kernel add = make_add("add");
  for (int log2n : {20, 24, 28}) {
    int n = 1 << log2n;
    auto x = tl::Tensor::randn({n}, 1), y = tl::Tensor::randn({n}, 2), o = tl::Tensor::empty({n});
    auto launch = [&](int warps, int64_t block) {
      add[tl::grid(tl::cdiv(n, block))].options({.num_warps = warps})(x, y, o, n, block);
    };
    auto [ms, config] = best_config("add", kAddConfigs, launch);
    auto got = o.to_host<float>(), xs = x.to_host<float>(), ys = y.to_host<float>();
    for (int i = 0; i < n; i += 997)
      if (got[i] != xs[i] + ys[i]) {
        std::printf("add n=2^%d: WRONG at %d\n", log2n, i);
        return 1;
      }
    double bytes = 3.0 * n * 4;
    row("add f32 n=2^" + std::to_string(log2n) + " [" + config + "]", ms, bytes / ms / 1e6,
        copy_gbps(static_cast<size_t>(bytes / 2)), "copy");
  }

  for (auto [m, n] : kSoftmaxShapes) {
    auto x = tl::Tensor::randn({m, n}, 3), y = tl::Tensor::empty({m, n});
    int64_t block = next_pow2(n);
    auto launch = [&](int warps, int64_t) {
      softmax::softmax_kernel[m].options({.num_warps = warps})(y, x, n, n, n, block);
    };
    auto [ms, config] = best_config("softmax", row_configs(block), launch);
    auto ys = y.to_host<float>();
    double row_sum = 0;
    for (int j = 0; j < n; ++j) row_sum += ys[static_cast<size_t>(m / 2) * n + j];
    if (std::fabs(row_sum - 1) > 1e-4) {
      std::printf("softmax: WRONG, a row sums to %g\n", row_sum);
      return 1;
    }
    double bytes = 2.0 * m * n * 4;
    row("softmax f32 " + std::to_string(m) + "x" + std::to_string(n) + " [" + config + "]", ms, bytes / ms / 1e6,
        copy_gbps(static_cast<size_t>(bytes / 2)), "copy");
  }

  {
    const int m = kLayerNormRows, n = kLayerNormCols;
    auto x = tl::Tensor::randn({m, n}, 4), y = tl::Tensor::empty({m, n}), w = tl::Tensor::randn({n}, 5),
         b = tl::Tensor::randn({n}, 6), mean = tl::Tensor::empty({m}), rstd = tl::Tensor::empty({m});
    auto launch = [&](int warps, int64_t block) {
      layernorm_kernel[m].options({.num_warps = warps})(x, y, w, b, mean, rstd, n, n, 1e-5f, block);
    };
    auto [ms, config] = best_config("layernorm", row_configs(next_pow2(n)), launch);
    double bytes = 2.0 * m * n * 4;
    row("layernorm fwd f32 4096x4096 [" + config + "]", ms, bytes / ms / 1e6, copy_gbps(static_cast<size_t>(bytes / 2)),
        "copy");
    // The example's kernel, three loops over the row as in Triton's tutorial: x is read three times.
    auto launch_loops = [&](int warps, int64_t block) {
      layernorm::layer_norm_fwd[m].options({.num_warps = warps})(x, y, w, b, mean, rstd, n, n, 1e-5f, block);
    };
    auto [ms_loops, config_loops] = best_config("layernorm_loops", row_configs(next_pow2(n)), launch_loops);
    row("layernorm fwd f32 4096x4096, three loops [" + config_loops + "]", ms_loops, bytes / ms_loops / 1e6,
        copy_gbps(static_cast<size_t>(bytes / 2)), "copy");
  }

  bench_spmm(65536, 65536, 0.001, 128);
  bench_spmm(16384, 16384, 0.01, 64);
  return 0;
}
