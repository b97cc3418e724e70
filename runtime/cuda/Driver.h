// The CUDA driver, loaded with dlopen("libcuda.so.1") (TILEDSL_LIBCUDA_PATH overrides) so that
// nothing links against it: a machine without a GPU gets a clear message, not a loader error.
// The types are our own minimal declarations, ABI-compatible with cuda.h.
#pragma once

#include <cstdint>
#include <string>

namespace tiledsl::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUlinkState = struct CUlinkState_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;

// Attribute and option numbers from cuda.h that tiledsl uses.
enum : int {
  kDevAttrMaxSharedPerBlockOptin = 97,
  kDevAttrMultiprocessorCount = 16,
  kDevAttrComputeCapabilityMajor = 75,
  kDevAttrComputeCapabilityMinor = 76,
  kFuncAttrMaxThreadsPerBlock = 0,
  kFuncAttrSharedSizeBytes = 1,
  kFuncAttrLocalSizeBytes = 3,
  kFuncAttrNumRegs = 4,
  kFuncAttrMaxDynamicSharedSizeBytes = 8,
  kPointerAttrContext = 1,
  kPointerAttrMemoryType = 2,
  kPointerAttrDeviceOrdinal = 9,
  kMemoryTypeHost = 1,
  kMemoryTypeDevice = 2,
  kMemoryTypeUnified = 4,
  kJitErrorLogBuffer = 5,
  kJitErrorLogBufferSizeBytes = 6,
  kJitInputPtx = 1,
};

struct Driver {
#define TILEDSL_CU(name, symbol, params) CUresult(*name) params = nullptr;
#include "runtime/cuda/DriverApi.def"
#undef TILEDSL_CU
};

// The driver, or null with `why` saying what is missing. Loaded once; thread-safe. A thread
// that has no current context gets GPU 0's primary context made current; a context the caller
// made current is left as it is (ContextScope picks the one a call needs).
const Driver* driver(std::string* why = nullptr);

// How many GPUs the driver sees (0 without a driver).
int device_count();
// The driver, where GPU `index` exists; else throws tiledsl::Error naming `what` and saying why.
const Driver& check_device(int index, const std::string& what);
// GPU `index`'s primary context (retained once, for the process's lifetime).
CUcontext primary_context(int index);

// Makes a context of GPU `index` current on the calling thread for the scope's lifetime: the
// one already current when it is on that GPU (the caller's own is used, not replaced, as
// Triton does), else the GPU's primary context, pushed and popped again at the end so that the
// caller's is current afterwards.
class ContextScope {
 public:
  explicit ContextScope(int index);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
  CUcontext context() const { return ctx_; }

 private:
  CUcontext ctx_ = nullptr;
  bool pushed_ = false;
};

// A function the thread that first asks for the driver runs while another thread initialises it
// (cuInit and the primary context, about 200 ms): the runtime registers the compiler's start-up
// (runtime/cuda/Compile.cpp), so the driver does not depend on the compiler. Set before the
// first call of driver() to take effect.
void set_init_companion(void (*fn)());

// Throws tiledsl::Error "<call> failed: <CUDA_ERROR_NAME> (<description>)<context>" unless r == 0.
void check(CUresult r, const char* call, const std::string& context = "");

struct DeviceInfo {
  std::string name;
  int sm_major = 0, sm_minor = 0, sm_count = 0, max_shared_optin = 0;
};
// GPU `index`'s name and attributes (an empty name without a driver).
const DeviceInfo& device_info(int index = 0);

}  // namespace tiledsl::cuda
