// tiledsl::torch (CMake target tiledsl::torch, built where LibTorch is found): tiledsl kernels on
// PyTorch tensors, and tiledsl kernels as PyTorch custom operators with autograd.
//
//   auto x = tl::torch::from_tensor(input);            // a view: no copy
//   kernel[grid].options({.stream = tl::torch::current_stream(input)})(x, ...);
//
// docs/interop.md ("PyTorch") shows a custom op with its backward (examples/torch/).
#pragma once

#include <ATen/Tensor.h>

#include "tiledsl/tiledsl.h"

namespace tiledsl::torch {

// The tiledsl dtype of a torch dtype (float, double, half, bfloat16, the fp8 formats, bool and
// every integer type); an error naming it otherwise (complex types, quantised ones).
DType dtype_of(const at::Tensor& t);
// The torch dtype of a tiledsl one.
at::ScalarType scalar_type(DType d);
// The tiledsl device of a torch tensor: cpu, or cuda:i.
Device device_of(const at::Tensor& t);

// A view of `t` with its shape, strides (in elements) and dtype, on its device (CPU tensors run
// on the interpreter, CUDA ones on their GPU); it keeps t's storage alive. Errors: an undefined
// tensor, a dtype tiledsl lacks, negative strides, devices other than CPU and CUDA.
Tensor from_tensor(const at::Tensor& t);

// torch's current CUDA stream on t's GPU (torch.cuda.current_stream(t.device)), to launch on so
// that tiledsl's kernels are ordered with torch's own work; null for a CPU tensor.
void* current_stream(const at::Tensor& t);

}  // namespace tiledsl::torch
