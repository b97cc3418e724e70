// Kernel::compile: every stage of one specialisation, without a GPU.
#include <tiledsl/tiledsl.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "attention_kernel.h"
#include "matmul_kernel.h"
#include "runtime/cuda/Launcher.h"
#include "runtime/cuda/Ptxas.h"

namespace tl = tiledsl;

namespace {
const tl::Kernel rowsum = tl::kernel("rowsum", {"x", "out", "n", "BLOCK"},
                                     [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int n, tl::Constexpr BLOCK) {
                                       auto cols = tl::arange(0, BLOCK);
                                       auto row = tl::program_id(0);
                                       tl::store(out + row, tl::sum(tl::load(x + row * n + cols, cols < n, 0.0f), 0));
                                     });
}  // namespace

TEST_CASE("compile exposes the IR after each pass, LLVM IR, PTX and resources", "[ptx]") {
  auto x = tl::Tensor::rand({7, 300}, 1, tl::DType::f32, tl::Device::cpu),
       out = tl::Tensor::empty({7}, tl::DType::f32, tl::Device::cpu);
  tl::CompiledKernel c = rowsum.compile(tl::LaunchOptions{.num_warps = 2}, x, out, 300, 512);
  CHECK(c.name == "rowsum");
  CHECK(c.num_warps == 2);
  CHECK(c.traced_ir.find("kernel @rowsum(") == 0);
  std::vector<std::string> passes;
  for (const auto& [pass, ir] : c.ir_after_pass) passes.push_back(pass);
  CHECK(passes == std::vector<std::string>{"canonicalize", "prefetch-loads", "cse", "dce", "assign-layouts",
                                           "remove-convert-layouts", "allocate-shared"});
  CHECK(c.ir_after_pass[4].second.find("blocked<") != std::string::npos);  // layouts from assign-layouts on
  CHECK(c.llvm_ir.find("define") != std::string::npos);
  CHECK(c.ptx.find(".entry rowsum(") != std::string::npos);
  CHECK(c.ptx.find(".maxntid 64") != std::string::npos);
  CHECK(c.ptx.find("shfl.sync.bfly") != std::string::npos);
  if (c.resources_from == "ptxas" || c.resources_from == "driver") {
    CHECK(c.registers > 0);
    CHECK(c.registers < 255);
    CHECK(c.spill_bytes == 0);
    CHECK(c.shared_bytes > 0);  // the cross-warp step of the reduction
  } else {
    WARN("resources unknown here: " << c.resources_from);
  }
}

TEST_CASE("compile: shared memory is dynamic, sized by allocate-shared, and may pass 48 KiB", "[ptx]") {
  // A 128x128 sum of a transposed tile: trans goes through shared memory, 64 KiB of f32.
  const tl::Kernel transpose_sum = tl::kernel("transpose_sum", {"x", "out"}, [](tl::Ptr<float> x, tl::Ptr<float> out) {
    auto r = tl::arange(0, 128);
    auto offs = tl::expand_dims(r, 1) * 128 + tl::expand_dims(r, 0);
    auto t = tl::load(x + offs);
    tl::store(out + offs, t + tl::trans(t));
  });
  auto x = tl::Tensor::rand({128, 128}, 2, tl::DType::f32, tl::Device::cpu);
  auto out = tl::Tensor::empty({128, 128}, tl::DType::f32, tl::Device::cpu);
  tl::CompiledKernel c = transpose_sum.compile(tl::LaunchOptions{.num_warps = 8}, x, out);
  const std::string& alloc = c.ir_after_pass.back().second;
  CHECK(alloc.find("shared_bytes = 65536") != std::string::npos);
  CHECK(alloc.find("smem_bytes = 65536") != std::string::npos);
  // 1024-byte aligned: the swizzle of dots' operands repeats every 1024 bytes of address.
  CHECK(c.ptx.find(".extern .shared .align 1024 .b8 tiledsl_smem[];") != std::string::npos);
  size_t first = c.ptx.find("tiledsl_smem[");
  CHECK(c.ptx.find("tiledsl_smem[", first + 1) == std::string::npos);  // declared once: nothing static
  if (c.resources_from == "ptxas" || c.resources_from == "driver") CHECK(c.shared_bytes == 65536);
}

TEST_CASE("the compiler warm-up compiles a kernel, writes no dumps, and can be turned off", "[ptx]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tiledsl-warm-up-" + std::to_string(std::random_device{}()));
  setenv("TILEDSL_DUMP_DIR", dir.c_str(), 1);
  CHECK(tiledsl::runtime::warm_up_compiler());
  CHECK(!fs::exists(dir));  // the user's dump folder sees only their kernels
  unsetenv("TILEDSL_DUMP_DIR");
  setenv("TILEDSL_WARM_COMPILER", "0", 1);
  CHECK(!tiledsl::runtime::warm_up_compiler());
  unsetenv("TILEDSL_WARM_COMPILER");
}

TEST_CASE("ptxas runs as a child process without a shell: paths with quotes and spaces work", "[ptx]") {
  std::string ptxas = tiledsl::cuda::find_ptxas();
  if (ptxas.empty()) {
    WARN("no ptxas here: nothing to check");
    return;
  }
  auto c = rowsum.compile(tl::Tensor::rand({3, 100}, 1, tl::DType::f32, tl::Device::cpu),
                          tl::Tensor::empty({3}, tl::DType::f32, tl::Device::cpu), 100, 128);
  // A ptxas reached through a name a shell command string would break on.
  auto dir =
      std::filesystem::temp_directory_path() / ("tiledsl ptxas 'test' " + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  auto odd = dir / "pt'x as";
  std::filesystem::create_symlink(ptxas, odd);
  tiledsl::cuda::PtxasRun ok = tiledsl::cuda::run_ptxas(odd.string(), c.ptx, "sm_90", /*verbose=*/true);
  CHECK(ok.status == 0);
  CHECK(ok.cubin.size() > 100);
  CHECK(ok.log.find("registers") != std::string::npos);  // -v reports the resources
  tiledsl::cuda::PtxasRun bad = tiledsl::cuda::run_ptxas(odd.string(), "this is not PTX", "sm_90");
  CHECK(bad.status != 0);
  CHECK(bad.cubin.empty());
  CHECK(!bad.log.empty());  // ptxas says what is wrong
  std::filesystem::remove_all(dir);
}

namespace {
const tl::Kernel& matmul_e4m3() {
  static const tl::Kernel k = matmul::make_matmul_kernel<tl::f8e4m3, tl::bf16>("matmul_e4m3");
  return k;
}
}  // namespace

// The configurations tiledsl-bench times on the H200 (sm_90a, wgmma), and an fp8 matmul: ptxas must report no spill
// and no serialized wgmma (warning C7515) for each; a regression in registers shows here first.
TEST_CASE("the benchmarked matmul and attention configurations compile for sm_90a without spills", "[ptx]") {
  std::string ptxas = tiledsl::cuda::find_ptxas();
  if (ptxas.empty()) {
    WARN("no ptxas here: nothing to check");
    return;
  }
  const char* before = std::getenv("TILEDSL_ARCH");
  const std::string saved = before ? before : "";
  setenv("TILEDSL_ARCH", "sm_90a", 1);
  std::vector<tl::CompiledKernel> compiled;
  // With fp fusion, as tiledsl-bench launches them (the tests' default is off).
  const tl::LaunchOptions kFused{.num_warps = 8, .num_stages = 3, .enable_fp_fusion = true};
  {
    auto a = tl::Tensor::empty({256, 256}, tl::DType::bf16, tl::Device::cpu);
    auto c = tl::Tensor::empty({256, 256}, tl::DType::bf16, tl::Device::cpu);
    const int n = 4096;  // the specialisation of 4096^3 (what matters: divisibility by 16)
    compiled.push_back(matmul::matmul_bf16_out.compile(kFused, a, a, c, n, n, n, n, 1, n, 1, n, 1, 128, 256, 64, 8));
    // f16 in and out (Triton's matmul tutorial), the same block.
    auto h = tl::Tensor::empty({256, 256}, tl::DType::f16, tl::Device::cpu);
    compiled.push_back(matmul::matmul_f16_out.compile(kFused, h, h, h, n, n, n, n, 1, n, 1, n, 1, 128, 256, 64, 8));
  }
  {
    // fp8 as Triton's fp8 matmul runs it: b K-major in memory (stride_bk 1), wgmma m64n256k32.
    auto a = tl::Tensor::empty({256, 256}, tl::DType::f8e4m3, tl::Device::cpu);
    auto c = tl::Tensor::empty({256, 256}, tl::DType::bf16, tl::Device::cpu);
    const int n = 4096;
    compiled.push_back(matmul_e4m3().compile(kFused, a, a, c, n, n, n, n, 1, 1, n, n, 1, 128, 256, 128, 8));
  }
  for (int d : {128, 64}) {
    auto q = tl::Tensor::empty({1, 2, 256, d}, tl::DType::bf16, tl::Device::cpu);
    auto o = tl::Tensor::empty({1, 2, 256, d}, tl::DType::f32, tl::Device::cpu);
    auto o16 = tl::Tensor::empty({1, 2, 256, d}, tl::DType::bf16, tl::Device::cpu);
    // (BLOCK_M, BLOCK_N, num_warps, num_stages, causal): the configurations tiledsl-bench picks
    // (bench/results, run 84) and their neighbours.
    for (auto [bm, bn, warps, stages, causal] : {std::array<int, 5>{128, 64, 8, 2, 0},
                                                 {128, 64, 8, 3, 0},
                                                 {128, 128, 8, 2, 0},
                                                 {128, 128, 8, 3, 0},
                                                 {128, 64, 4, 3, 0},
                                                 {128, 128, 8, 2, 1},
                                                 {128, 128, 8, 3, 1},
                                                 {128, 64, 8, 2, 1},
                                                 {128, 64, 8, 3, 1}}) {
      if (warps == 4 && d == 128) continue;  // 128 x 64 blocks on one warpgroup spill at head dim 128
      const tl::LaunchOptions options{.num_warps = warps, .num_stages = stages, .enable_fp_fusion = true};
      compiled.push_back(attention::attention_kernel.compile(options, q, q, q, o, 0.088f, 32 * 4096 * d, 4096 * d, d, 1,
                                                             32, 4096, d, bm, bn, causal, 1));
      compiled.push_back(attention::attention_kernel_bf16.compile(options, q, q, q, o16, 0.088f, 32 * 4096 * d,
                                                                  4096 * d, d, 1, 32, 4096, d, bm, bn, causal, 1));
    }
  }
  if (before)
    setenv("TILEDSL_ARCH", saved.c_str(), 1);
  else
    unsetenv("TILEDSL_ARCH");
  for (const auto& k : compiled) {
    INFO(k.name << " " << k.traced_ir.substr(k.traced_ir.find("attributes"), 80));
    CHECK(k.arch == "sm_90a");
    CHECK(k.ptx.find("wgmma.mma_async") != std::string::npos);
    tiledsl::cuda::PtxasRun run = tiledsl::cuda::run_ptxas(ptxas, k.ptx, "sm_90a", /*verbose=*/true);
    INFO(run.log);
    REQUIRE(run.status == 0);
    CHECK(run.log.find(" 0 bytes spill stores") != std::string::npos);
    // ptxas serializes every wgmma of a kernel it cannot prove safe, naming the reason in one of
    // several warnings (C7514: accumulators read while MMAs are pending, C7515: written, ...).
    CHECK(run.log.find("serialized") == std::string::npos);
  }
}
