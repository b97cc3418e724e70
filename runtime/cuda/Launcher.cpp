// Loading a kernel: the disk cache, else compile and assemble (runtime/cuda/Assemble.h), module
// load, attributes and the shared-memory opt-in; the time each step took
// (TILEDSL_PRINT_COMPILE_TIMES). Resource usage (Resources.cpp) and launches (Launch.cpp) are
// files of their own.
#include "runtime/cuda/Launcher.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "ir/Printer.h"
#include "runtime/cuda/Assemble.h"
#include "runtime/cuda/DiskCache.h"
#include "support/Env.h"
#include "tiledsl/error.h"

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

std::string target_arch(int device) {
  if (std::string e = env::value(env::Var::TILEDSL_ARCH); !e.empty()) return e;
  const cuda::DeviceInfo& d = cuda::device_info(device);
  // Machine code for sm_80 runs on every 8.x GPU (sm_86 among them); 8.9 gets sm_89 (fp8 tensor
  // cores), 9.0 sm_90a (its architecture-specific features, wgmma among them, run on 9.0 only). A
  // newer GPU than the code generator knows is an error that says so (once per launch that needs
  // a compile).
  if (d.sm_major == 8) return d.sm_minor >= 9 ? "sm_89" : "sm_80";
  if (d.sm_major == 9) return d.sm_minor == 0 ? "sm_90a" : "sm_90";
  if (d.sm_major)
    throw Error(
        fmt::format("the GPU ({}, compute capability {}.{}) is newer than tiledsl's code generator knows "
                    "(sm_80 to sm_90); GPUs of compute capability 8.x and 9.0 are supported",
                    d.name, d.sm_major, d.sm_minor));
  return "sm_90";
}

GpuKernel::~GpuKernel() {
  // Unloaded from a GPU's primary context, which tiledsl keeps for the process's lifetime. A
  // caller's own context frees its modules when it is destroyed, which may have happened already:
  // those are left to it.
  const cuda::Driver* d = module ? cuda::driver() : nullptr;
  try {
    if (!d || context != cuda::primary_context(device) || d->cuCtxPushCurrent(context) != 0) return;
  } catch (const Error&) {
    return;
  }
  d->cuModuleUnload(module);
  cuda::CUcontext popped = nullptr;
  d->cuCtxPopCurrent(&popped);
}

std::shared_ptr<GpuKernel> load_gpu_kernel(const ir::Function& f, const GpuCompileOptions& o, int device) {
  const int num_warps = o.num_warps, num_stages = o.num_stages;
  std::string why;
  const cuda::Driver* d = cuda::driver(&why);
  if (!d) throw Error(fmt::format("kernel '{}': cannot run on the GPU: {}", f.name, why));
  const std::string arch = target_arch(device);
  const std::string key = cache_key(ir::print(f), arch, num_warps, num_stages, o.fp_fusion);
  auto k = std::make_shared<GpuKernel>();
  k->name = f.name;
  k->device = device;
  cuda::check(d->cuCtxGetCurrent(&k->context), "cuCtxGetCurrent", fmt::format(" loading kernel '{}'", f.name));
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
  std::string compile_times;
  if (!bin || d->cuModuleLoadData(&k->module, bin->binary.data()) != 0) {
    k->module = nullptr;
    auto t1 = Clock::now();
    GpuBinary fresh = compile_for_gpu(f, o, arch);
    compile_ms = ms_since(t1);
    compile_times = fresh.times;
    s1 = thread_stats();
    t1 = Clock::now();
    std::string cubin = assemble_and_load(*d, fresh.ptx, arch, f.name, &k->module, &linker);
    bin = CachedBinary{fresh.entry, std::move(cubin), fresh.shared_bytes};
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
          "tiledsl: kernel '%s' (%s, %d warps): compiled, passes+LLVM+PTX %.2f ms (CPU %.2f ms, %ld page faults; "
          "%s), PTX->cubin (%s) %.2f ms (CPU %.2f ms, %ld page faults), total %.2f ms\n",
          f.name.c_str(), arch.c_str(), num_warps, compile_ms, s1.first - s0.first, s1.second - s0.second,
          compile_times.c_str(), linker, link_ms, s2.first - s1.first, s2.second - s1.second, ms_since(t0));
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
  int max_shared = cuda::device_info(device).max_shared_optin;
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

}  // namespace tiledsl::runtime
