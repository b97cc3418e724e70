#include "runtime/cuda/Driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "support/Env.h"
#include "tiledsl/error.h"

namespace tiledsl::cuda {

namespace {
std::atomic<void (*)()>& init_companion() {
  static std::atomic<void (*)()> fn{nullptr};
  return fn;
}

struct Loaded {
  Driver d;
  bool ok = false;
  std::string why;
};

Loaded load() {
  Loaded l;
  std::string path_env = env::value(env::Var::TILEDSL_LIBCUDA_PATH);
  const char* path = path_env.empty() ? nullptr : path_env.c_str();
  void* h = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    l.why = fmt::format("cannot load {} ({})", path && *path ? path : "libcuda.so.1", dlerror());
    return l;
  }
#define TILEDSL_CU(name, symbol, params)                                                \
  l.d.name = reinterpret_cast<decltype(l.d.name)>(dlsym(h, symbol));                    \
  if (!l.d.name) {                                                                      \
    l.why = fmt::format("the CUDA driver lacks {}; is it older than CUDA 12?", symbol); \
    return l;                                                                           \
  }
#include "runtime/cuda/DriverApi.def"
#undef TILEDSL_CU
  // cuInit and the context take about 200 ms of CPU time. Meanwhile the calling thread, which is
  // the one likely to compile the first kernel, runs the companion the runtime registered: the
  // compiler's start-up (LLVM's registries, nvJitLink's per-thread pools; bench/results/
  // history-runs-1-to-39.md, run 16). The driver itself knows nothing of the compiler. Joined
  // before returning: no thread outlives this function.
  auto start = [](Loaded& l) {
    int count = 0;
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    if (CUresult r = l.d.cuInit(0); r != 0) {
      l.why = fmt::format("cuInit failed with error {}", r);
      return;
    }
    if (l.d.cuDeviceGetCount(&count) != 0 || count == 0) {
      l.why = "no CUDA device found";
      return;
    }
    if (l.d.cuDeviceGet(&dev, 0) != 0 || l.d.cuDevicePrimaryCtxRetain(&ctx, dev) != 0 ||
        l.d.cuCtxSetCurrent(ctx) != 0) {
      l.why = "cannot create a context on CUDA device 0";
      return;
    }
    l.ok = true;
  };
  std::thread init([&] { start(l); });
  if (void (*companion)() = init_companion().load()) companion();
  init.join();
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  // Every thread that launches needs the context current.
  thread_local bool current = false;
  if (l.ok && !current) {
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    l.d.cuDeviceGet(&dev, 0);
    l.d.cuDevicePrimaryCtxRetain(&ctx, dev);
    l.d.cuCtxSetCurrent(ctx);
    current = true;
  }
  return l;
}
}  // namespace

void set_init_companion(void (*fn)()) { init_companion() = fn; }

const Driver* driver(std::string* why) {
  const Loaded& l = loaded();
  if (!l.ok && why) *why = l.why;
  return l.ok ? &l.d : nullptr;
}

void check(CUresult r, const char* call, const std::string& context) {
  if (r == 0) return;
  const Driver* d = driver();
  const char *name = "CUDA_ERROR_UNKNOWN", *desc = "";
  if (d) {
    d->cuGetErrorName(r, &name);
    d->cuGetErrorString(r, &desc);
  }
  throw Error(fmt::format("{} failed: {} ({}){}", call, name ? name : "?", desc ? desc : "", context));
}

const DeviceInfo& device_info() {
  static const DeviceInfo info = [] {
    DeviceInfo i;
    const Driver* d = driver();
    if (!d) return i;
    CUdevice dev = 0;
    d->cuDeviceGet(&dev, 0);
    char name[256] = {};
    d->cuDeviceGetName(name, sizeof name, dev);
    i.name = name;
    d->cuDeviceGetAttribute(&i.sm_major, kDevAttrComputeCapabilityMajor, dev);
    d->cuDeviceGetAttribute(&i.sm_minor, kDevAttrComputeCapabilityMinor, dev);
    d->cuDeviceGetAttribute(&i.sm_count, kDevAttrMultiprocessorCount, dev);
    d->cuDeviceGetAttribute(&i.max_shared_optin, kDevAttrMaxSharedPerBlockOptin, dev);
    return i;
  }();
  return info;
}

}  // namespace tiledsl::cuda
