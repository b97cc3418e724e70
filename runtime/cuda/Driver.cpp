#include "runtime/cuda/Driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

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
#define TILEDSL_CU_OPTIONAL(name, symbol, params) l.d.name = reinterpret_cast<decltype(l.d.name)>(dlsym(h, symbol));
#include "runtime/cuda/DriverApi.def"
#undef TILEDSL_CU_OPTIONAL
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
  // A thread without a current context gets GPU 0's primary one (the caller's own, where it
  // made one current, stays: ContextScope uses it when it is on the GPU a call needs).
  thread_local bool checked = false;
  if (l.ok && !checked) {
    checked = true;  // first: primary_context() comes back here
    CUcontext ctx = nullptr;
    if (l.d.cuCtxGetCurrent(&ctx) == 0 && !ctx) l.d.cuCtxSetCurrent(primary_context(0));
  }
  return l;
}

struct Primaries {
  std::mutex mu;
  std::vector<CUcontext> ctx;  // by device index, null until retained
};
Primaries& primaries() {
  static Primaries p;
  return p;
}
}  // namespace

int device_count() {
  static const int n = [] {
    int count = 0;
    const Driver* d = driver();
    if (!d || d->cuDeviceGetCount(&count) != 0) return 0;
    return count;
  }();
  return n;
}

const Driver& check_device(int index, const std::string& what) {
  std::string why;
  const Driver* d = driver(&why);
  if (!d) throw Error(fmt::format("{}: tl::Device::cuda({}) needs a GPU: {}", what, index, why));
  const int n = device_count();
  if (index < 0 || index >= n)
    throw Error(fmt::format("{}: there is no GPU {} (tl::Device::cuda({})): this machine has {} GPU{}, 0 to {}", what,
                            index, index, n, n == 1 ? "" : "s", n - 1));
  return *d;
}

CUcontext primary_context(int index) {
  const Driver& d = loaded().d;  // not driver(): loaded() calls this for GPU 0
  Primaries& p = primaries();
  std::lock_guard lock(p.mu);
  if (p.ctx.size() <= static_cast<size_t>(index)) p.ctx.resize(static_cast<size_t>(index) + 1, nullptr);
  CUcontext& ctx = p.ctx[static_cast<size_t>(index)];
  if (!ctx) {
    CUdevice dev = 0;
    check(d.cuDeviceGet(&dev, index), "cuDeviceGet", fmt::format(" (GPU {})", index));
    check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain", fmt::format(" (GPU {})", index));
  }
  return ctx;
}

ContextScope::ContextScope(int index) {
  const Driver* d = driver();
  if (!d) return;
  CUcontext current = nullptr;
  CUdevice dev = -1;
  if (d->cuCtxGetCurrent(&current) == 0 && current && d->cuCtxGetDevice(&dev) == 0 && dev == index) {
    ctx_ = current;
    return;
  }
  check_device(index, "tiledsl");
  ctx_ = primary_context(index);
  check(d->cuCtxPushCurrent(ctx_), "cuCtxPushCurrent", fmt::format(" (GPU {})", index));
  pushed_ = true;
}

ContextScope::~ContextScope() {
  if (!pushed_) return;
  CUcontext popped = nullptr;
  loaded().d.cuCtxPopCurrent(&popped);
}

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

const DeviceInfo& device_info(int index) {
  static std::mutex mu;
  static std::map<int, DeviceInfo> infos;  // node-based: references stay valid
  std::lock_guard lock(mu);
  if (auto it = infos.find(index); it != infos.end()) return it->second;
  const DeviceInfo& info = infos[index] = [&] {
    DeviceInfo i;
    const Driver* d = driver();
    if (!d || index < 0 || index >= device_count()) return i;
    CUdevice dev = 0;
    d->cuDeviceGet(&dev, index);
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
