// Which backend runs a launch: the GPU (CUDA driver + code generation) or the CPU interpreter.
#pragma once

#include <string>

#include "tiledsl/tensor.h"

namespace tiledsl::runtime {

// Whether this build can compile for the GPU (lib/codegen built in).
bool has_gpu_codegen();
// Whether a GPU is usable now; `why` says what is missing when not.
bool gpu_available(std::string* why = nullptr);

}  // namespace tiledsl::runtime
