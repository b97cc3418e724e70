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

// TILEDSL_COMPARE_INTERPRETER: every GPU launch also runs in the interpreter, on host copies of
// its tensors taken before the launch, and each tensor argument's memory afterwards must agree
// (integers exactly, floats within 64 f32 ulps of the tensor's scale, or 2 ulps of f16/bf16/fp8); a difference is a
// tiledsl::Error naming the kernel, the argument and the first element. Kernels with atomics or
// device_print run on the GPU only (their results or output depend on the order programs run in),
// as do kernels with inline_asm_elementwise (PTX, which the interpreter cannot run).
// This is the differential test of code generation against the interpreter (label gpu).
void launch_compared_with_interpreter(const GpuKernel& k, const ir::Function& f, std::span<const ParamSpec> specs,
                                      std::span<const std::string> names, std::span<const detail::LaunchArg> args,
                                      Dim3 grid, void* stream, const std::string& where);
bool compare_with_interpreter();

// Where the GPU's copy of a tensor and the interpreter's (a host tensor of the same shape and
// dtype) first differ, under the rule above: "element I: GPU A, interpreter B", or "" if nowhere.
// `rounded_bits`: the fewest mantissa bits a float the kernel computes with is rounded to (a
// cast to bf16 in the middle of the kernel, as attention's P): floats are then compared within 2
// ulps of that format too, as one ulp of such an intermediate can flip between the two (a dot
// of fp8 inputs counts as 8 bits: fp8 tensor cores do not sum in f32).
std::string first_difference(const Tensor& gpu, const Tensor& host, int rounded_bits = 52);

// Launches compared so far, and launches that could not be (atomics, prints).
struct Comparisons {
  int64_t compared = 0, not_comparable = 0;
};
Comparisons comparisons();

}  // namespace tiledsl::runtime
