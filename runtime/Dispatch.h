// A launch's arguments packed the way each backend takes them (constexpr parameters are part of
// the specialisation, not arguments), and the launch itself: the front end checks and
// specialises, the runtime packs and runs.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "runtime/cuda/Launcher.h"
#include "tiledsl/kernel.h"

namespace tiledsl::runtime {

// Launches the loaded kernel `k` on `grid` with the runtime arguments of `args` (whose kinds
// `specs` gives), on `stream`.
void launch_on_gpu(const GpuKernel& k, std::span<const ParamSpec> specs, std::span<const detail::LaunchArg> args,
                   Dim3 grid, void* stream);

// Runs the traced kernel `f` in the interpreter; `names` are the parameters' names (the memory
// checker names the argument an access falls outside of). Running out of host memory is an
// error that `where` (the launch's file:line) names.
void launch_in_interpreter(const ir::Function& f, std::span<const ParamSpec> specs, std::span<const std::string> names,
                           std::span<const detail::LaunchArg> args, Dim3 grid, const std::string& where);

}  // namespace tiledsl::runtime
