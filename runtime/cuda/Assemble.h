// PTX -> cubin, the way a load asks for: ptxas when TILEDSL_PTXAS_PATH names it, else nvJitLink
// where it is found, else the driver's JIT linker. A cubin the driver will not load (from a
// toolkit newer than the driver) falls back to the JIT, and nvJitLink is not asked again.
#pragma once

#include <string>

#include "runtime/cuda/Driver.h"

namespace tiledsl::runtime {

// The cubin of `ptx` for `arch`, loaded into `*module` (which the caller owns); `linker` says
// which assembler made it ("ptxas", "nvJitLink" or "driver").
std::string assemble_and_load(const cuda::Driver& d, const std::string& ptx, const std::string& arch,
                              const std::string& name, cuda::CUmodule* module, const char** linker);

// PTX to a cubin with the driver's own JIT linker.
std::string link_ptx(const cuda::Driver& d, const std::string& ptx, const std::string& name);

}  // namespace tiledsl::runtime
