// PTX -> cubin through nvJitLink (the CUDA toolkit's in-process linker and assembler), loaded
// with dlopen from TILEDSL_NVJITLINK_PATH. Opt-in: measured on an H200 (docs/benchmarks.md, run 3)
// its first use costs about 190 ms of library loading, against about 20 ms for the driver's own
// JIT linker, which is the default (Launcher.cpp); later compiles take the same time with both.
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
