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
  kJitErrorLogBuffer = 5,
  kJitErrorLogBufferSizeBytes = 6,
  kJitInputPtx = 1,
};

struct Driver {
#define TILEDSL_CU(name, symbol, params) CUresult(*name) params = nullptr;
#include "runtime/cuda/DriverApi.def"
#undef TILEDSL_CU
};

// The driver with a current context on device 0, or null with `why` saying what is missing.
// Loaded once; thread-safe.
const Driver* driver(std::string* why = nullptr);

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
const DeviceInfo& device_info();

}  // namespace tiledsl::cuda
