#include "runtime/Backend.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/cuda/Driver.h"
#include "support/Env.h"

namespace tiledsl {

namespace runtime {
bool has_gpu_codegen() {
#ifdef TILEDSL_HAS_CODEGEN
  return true;
#else
  return false;
#endif
}

bool gpu_available(std::string* why) {
  if (!has_gpu_codegen()) {
    if (why) *why = "this build has no GPU code generation";
    return false;
  }
  return cuda::driver(why) != nullptr;
}
}  // namespace runtime

int cuda_device_count() { return cuda::device_count(); }

Device default_device() {
  static const Device d = []() -> Device {
    std::string backend = env::value(env::Var::TILEDSL_BACKEND);
    std::string why;
    if (backend == "interpreter") return Device::cpu;
    if (backend == "gpu") {
      if (!runtime::gpu_available(&why)) throw Error("TILEDSL_BACKEND=gpu, but no GPU can be used: " + why);
      return Device::cuda;
    }
    if (!backend.empty()) throw Error("TILEDSL_BACKEND must be 'interpreter' or 'gpu', got '" + backend + "'");
    if (runtime::gpu_available(&why)) return Device::cuda;
    std::fprintf(stderr, "tiledsl: no GPU (%s); kernels run on the CPU interpreter\n", why.c_str());
    return Device::cpu;
  }();
  return d;
}

}  // namespace tiledsl
