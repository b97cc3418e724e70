// PTX -> cubin through nvJitLink (the CUDA toolkit's in-process linker and assembler), loaded
// with dlopen when it can be found: TILEDSL_NVJITLINK_PATH, else libnvJitLink.so.13 / .so.12.
// Without it the driver's own JIT linker does the job (Launcher.cpp).
#pragma once

#include <optional>
#include <string>

namespace tiledsl::cuda {

// Whether nvJitLink was found; `why` says why not.
bool nvjitlink_available(std::string* why = nullptr);

// The cubin for `ptx` compiled for `arch` (e.g. "sm_90"), or nothing when nvJitLink is absent.
// Throws tiledsl::Error with nvJitLink's log when the PTX does not assemble.
std::optional<std::string> nvjitlink_compile(const std::string& ptx, const std::string& arch, const std::string& name);

}  // namespace tiledsl::cuda
