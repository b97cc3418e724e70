// PTX -> cubin through nvJitLink (the CUDA toolkit's in-process linker and assembler), loaded with
// dlopen: TILEDSL_NVJITLINK_PATH, else libnvJitLink.so.13 or .12 from the loader's path, CUDA_HOME
// or /usr/local/cuda. It needs no CUDA context, so the runtime starts it up on the thread that
// will compile while cuInit runs on another (Driver.cpp); the driver's JIT, which needs the
// context, would pay its start-up inside the first kernel's compile (docs/benchmarks.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tiledsl::cuda {

// Whether nvJitLink was found; `why` says why not.
bool nvjitlink_available(std::string* why = nullptr);

// The libraries tried, in order: TILEDSL_NVJITLINK_PATH alone ("0": none, the driver's JIT then),
// else libnvJitLink.so.13 and .12 on the loader's path, in CUDA_HOME/lib64, in /usr/local/cuda/lib64.
std::vector<std::string> nvjitlink_candidates();

// The library in use (empty when none).
const std::string& nvjitlink_path();

// The cubin for `ptx` compiled for `arch` (e.g. "sm_90"), or nothing when nvJitLink is absent.
// Throws tiledsl::Error with nvJitLink's log when the PTX does not assemble.
std::optional<std::string> nvjitlink_compile(const std::string& ptx, const std::string& arch, const std::string& name);

}  // namespace tiledsl::cuda
