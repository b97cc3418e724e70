#include "runtime/cuda/Launcher.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "ir/Printer.h"
#include "runtime/cuda/DiskCache.h"
#include "runtime/cuda/NvJitLink.h"
#include "runtime/cuda/Ptxas.h"
#include "support/Env.h"
#include "tiledsl/error.h"

extern char** environ;

namespace tiledsl::runtime {

#ifndef TILEDSL_HAS_CODEGEN
GpuBinary compile_for_gpu(const ir::Function& f, const GpuCompileOptions&, const std::string&, bool) {
  throw Error(
      fmt::format("kernel '{}': this build of tiledsl has no GPU code generation (configure with LLVM 19 "
                  "and TILEDSL_ENABLE_CODEGEN=ON)",
                  f.name));
}
bool warm_up_compiler() { return false; }
std::string compiler_identity() { return "no codegen"; }
#endif

std::string target_arch() {
  if (std::string e = env::value(env::Var::TILEDSL_ARCH); !e.empty()) return e;
  const cuda::DeviceInfo& d = cuda::device_info();
  // Machine code for sm_80 runs on every 8.x GPU (sm_86, sm_89); 9.0 gets sm_90. A newer GPU
  // than the code generator knows is an error that says so (once per launch that needs a compile).
  if (d.sm_major == 8) return "sm_80";
  if (d.sm_major == 9) return "sm_90";
  if (d.sm_major)
    throw Error(
        fmt::format("the GPU ({}, compute capability {}.{}) is newer than tiledsl's code generator knows "
                    "(sm_80 to sm_90); GPUs of compute capability 8.x and 9.0 are supported",
                    d.name, d.sm_major, d.sm_minor));
  return "sm_90";
}

GpuKernel::~GpuKernel() {
  if (module)
    if (const cuda::Driver* d = cuda::driver()) d->cuModuleUnload(module);
}

namespace {
// The toolkit's ptxas, for PTX -> cubin only when TILEDSL_PTXAS_PATH names it: measured on the
// H200 (docs/benchmarks.md, run 7) a ptxas process took as long as the driver's JIT (about 20 ms
// for a small kernel), so no child process is spawned unasked.
const std::string& ptxas_path() {
  static const std::string path = [] {
    std::string e = env::value(env::Var::TILEDSL_PTXAS_PATH);
    return e == "0" ? std::string() : e;
  }();
  return path;
}

// PTX to a cubin with ptxas as a child process; nothing when ptxas is absent or fails (the
// driver's JIT then reports what is wrong).
std::optional<std::string> ptxas_compile(const std::string& ptx, const std::string& arch) {
  if (ptxas_path().empty()) return std::nullopt;
  cuda::PtxasRun r = cuda::run_ptxas(ptxas_path(), ptx, arch);
  if (r.status != 0 || r.cubin.empty()) return std::nullopt;
  return r.cubin;
}

// PTX to a cubin with the driver's own JIT linker, so the disk cache can hold machine code and a
// warm start skips both LLVM and the PTX JIT.
std::string link_ptx(const cuda::Driver& d, const std::string& ptx, const std::string& name) {
  char log[8192] = {};
  int opts[] = {cuda::kJitErrorLogBuffer, cuda::kJitErrorLogBufferSizeBytes};
  void* vals[] = {log, reinterpret_cast<void*>(sizeof log)};
  cuda::CUlinkState state = nullptr;
  cuda::check(d.cuLinkCreate(2, opts, vals, &state), "cuLinkCreate", fmt::format(" for kernel '{}'", name));
  cuda::CUresult r = d.cuLinkAddData(state, cuda::kJitInputPtx, const_cast<char*>(ptx.c_str()), ptx.size() + 1,
                                     name.c_str(), 0, nullptr, nullptr);
  void* cubin = nullptr;
  size_t size = 0;
  if (r == 0) r = d.cuLinkComplete(state, &cubin, &size);
  std::string out = r == 0 ? std::string(static_cast<const char*>(cubin), size) : std::string();
  d.cuLinkDestroy(state);
  if (r != 0)
    cuda::check(r, "cuLinkAddData/cuLinkComplete", fmt::format(" compiling kernel '{}' from PTX: {}", name, log));
  return out;
}
}  // namespace

std::shared_ptr<GpuKernel> load_gpu_kernel(const ir::Function& f, const GpuCompileOptions& o) {
  const int num_warps = o.num_warps, num_stages = o.num_stages;
  std::string why;
  const cuda::Driver* d = cuda::driver(&why);
  if (!d) throw Error(fmt::format("kernel '{}': cannot run on the GPU: {}", f.name, why));
  const std::string arch = target_arch();
  const std::string key = cache_key(ir::print(f), arch, num_warps, num_stages, o.fp_fusion);
  auto k = std::make_shared<GpuKernel>();
  k->name = f.name;
  k->num_warps = num_warps;
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  // Per-thread CPU time and minor page faults, for TILEDSL_PRINT_COMPILE_TIMES.
  auto thread_stats = [] {
    rusage u{};
    getrusage(RUSAGE_THREAD, &u);
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::pair<double, long>(ts.tv_sec * 1e3 + ts.tv_nsec / 1e6, u.ru_minflt);
  };
  auto s0 = thread_stats(), s1 = s0, s2 = s0;
  auto t0 = Clock::now();
  std::optional<CachedBinary> bin = cache_read(key);
  double compile_ms = 0, link_ms = 0;
  const char* linker = "driver";
  if (!bin || d->cuModuleLoadData(&k->module, bin->binary.data()) != 0) {
    k->module = nullptr;
    auto t1 = Clock::now();
    GpuBinary fresh = compile_for_gpu(f, o, arch);
    compile_ms = ms_since(t1);
    s1 = thread_stats();
    t1 = Clock::now();
    // ptxas when asked for (TILEDSL_PTXAS_PATH), else nvJitLink where it is found, else the
    // driver's JIT. A cubin the driver will not load (from a toolkit newer than the driver) falls
    // back to the JIT, and nvJitLink is not asked again.
    static std::atomic<bool> nvjitlink_rejected{false};
    std::optional<std::string> cubin = ptxas_compile(fresh.ptx, arch);
    if (cubin)
      linker = "ptxas";
    else if (!nvjitlink_rejected && (cubin = cuda::nvjitlink_compile(fresh.ptx, arch, f.name)))
      linker = "nvJitLink";
    if (cubin && d->cuModuleLoadData(&k->module, cubin->data()) != 0) {
      if (linker == std::string("nvJitLink")) nvjitlink_rejected = true;
      k->module = nullptr;
      cubin.reset();
    }
    if (!cubin) linker = "driver";
    bin = CachedBinary{fresh.entry, cubin ? *cubin : link_ptx(*d, fresh.ptx, f.name), fresh.shared_bytes};
    link_ms = ms_since(t1);
    s2 = thread_stats();
    if (!k->module)
      cuda::check(d->cuModuleLoadData(&k->module, bin->binary.data()), "cuModuleLoadData",
                  fmt::format(" loading kernel '{}'", f.name));
    cache_write(key, *bin);
  }
  // TILEDSL_PRINT_COMPILE_TIMES: where a first launch's time goes.
  if (env::flag(env::Var::TILEDSL_PRINT_COMPILE_TIMES, false)) {
    if (compile_ms > 0)
      std::fprintf(
          stderr,
          "tiledsl: kernel '%s' (%s, %d warps): compiled, passes+LLVM+PTX %.2f ms (CPU %.2f ms, %ld page faults), "
          "PTX->cubin (%s) %.2f ms (CPU %.2f ms, %ld page faults), total %.2f ms\n",
          f.name.c_str(), arch.c_str(), num_warps, compile_ms, s1.first - s0.first, s1.second - s0.second, linker,
          link_ms, s2.first - s1.first, s2.second - s1.second, ms_since(t0));
    else
      std::fprintf(stderr, "tiledsl: kernel '%s' (%s, %d warps): from the disk cache, total %.2f ms\n", f.name.c_str(),
                   arch.c_str(), num_warps, ms_since(t0));
  }
  cuda::check(d->cuModuleGetFunction(&k->function, k->module, bin->entry.c_str()), "cuModuleGetFunction",
              fmt::format(" for kernel '{}' (entry {})", f.name, bin->entry));
  int static_shared = 0;
  d->cuFuncGetAttribute(&static_shared, cuda::kFuncAttrSharedSizeBytes, k->function);
  k->shared_bytes = bin->shared_bytes;
  k->static_shared_bytes = static_shared;
  d->cuFuncGetAttribute(&k->registers, cuda::kFuncAttrNumRegs, k->function);
  d->cuFuncGetAttribute(&k->local_bytes, cuda::kFuncAttrLocalSizeBytes, k->function);
  int max_shared = cuda::device_info().max_shared_optin;
  if (k->shared_bytes + k->static_shared_bytes > max_shared && max_shared > 0)
    throw Error(
        fmt::format("kernel '{}' needs {} bytes of shared memory (num_warps={}, num_stages={}) but the GPU "
                    "offers at most {} per block; use smaller blocks or fewer stages",
                    f.name, k->shared_bytes + k->static_shared_bytes, num_warps, num_stages, max_shared));
  if (k->shared_bytes > 48 * 1024)
    cuda::check(d->cuFuncSetAttribute(k->function, cuda::kFuncAttrMaxDynamicSharedSizeBytes, k->shared_bytes),
                "cuFuncSetAttribute",
                fmt::format(" (kernel '{}', {} bytes of shared memory)", f.name, k->shared_bytes));
  return k;
}

ResourceUsage resource_usage(const GpuBinary& bin, const std::string& arch) {
  ResourceUsage u;
  if (const cuda::Driver* d = cuda::driver()) {
    std::string cubin = link_ptx(*d, bin.ptx, bin.entry);
    cuda::CUmodule m = nullptr;
    cuda::CUfunction fn = nullptr;
    cuda::check(d->cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData", " (resource usage of '" + bin.entry + "')");
    if (d->cuModuleGetFunction(&fn, m, bin.entry.c_str()) == 0) {
      d->cuFuncGetAttribute(&u.registers, cuda::kFuncAttrNumRegs, fn);
      d->cuFuncGetAttribute(&u.spill_bytes, cuda::kFuncAttrLocalSizeBytes, fn);
      d->cuFuncGetAttribute(&u.shared_bytes, cuda::kFuncAttrSharedSizeBytes, fn);
      u.shared_bytes += bin.shared_bytes;  // static (none from our codegen) + dynamic
      u.source = "driver";
    }
    d->cuModuleUnload(m);
    return u;
  }
  // No GPU: ask ptxas (from PATH or the toolkit), whose -v report has the same figures.
  cuda::PtxasRun run = cuda::run_ptxas(cuda::find_ptxas(ptxas_path()), bin.ptx, arch, /*verbose=*/true);
  std::string out = run.status == 0 ? run.log : std::string();
  auto number_before = [&](const std::string& what) {
    size_t at = out.find(what);
    if (at == std::string::npos) return 0;
    size_t start = out.find_last_not_of("0123456789", at - 2) + 1;
    return std::atoi(out.substr(start, at - 1 - start).c_str());
  };
  if (out.find("registers") == std::string::npos) {
    u.source = "unknown: no GPU, and ptxas did not run";
    return u;
  }
  u.registers = number_before("registers");
  u.spill_bytes = number_before("bytes spill stores");
  u.shared_bytes = number_before("bytes smem") + bin.shared_bytes;
  u.source = "ptxas";
  return u;
}

void launch_gpu_kernel(const GpuKernel& k, std::span<const GpuArg> args, std::array<int64_t, 3> grid, void* stream) {
  // Fixed storage for the usual kernel; more arguments than that go to the heap (the driver
  // reports a parameter list over its 4 KiB limit).
  std::array<void*, 64> fixed;
  std::vector<void*> heap;
  if (args.size() > fixed.size()) heap.resize(args.size());
  void** ptrs = heap.empty() ? fixed.data() : heap.data();
  for (size_t i = 0; i < args.size(); ++i) ptrs[i] = const_cast<uint64_t*>(&args[i].bits);
  const cuda::Driver* d = cuda::driver();
  cuda::CUresult r =
      d->cuLaunchKernel(k.function, static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]),
                        static_cast<unsigned>(grid[2]), static_cast<unsigned>(32 * k.num_warps), 1, 1,
                        static_cast<unsigned>(k.shared_bytes), static_cast<cuda::CUstream>(stream), ptrs, nullptr);
  if (r != 0)
    cuda::check(r, "cuLaunchKernel",
                fmt::format(" (kernel '{}', grid ({}, {}, {}), block {}, {} bytes of shared memory)", k.name, grid[0],
                            grid[1], grid[2], 32 * k.num_warps, k.shared_bytes));
}

}  // namespace tiledsl::runtime
