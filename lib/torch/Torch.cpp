// tiledsl::torch: views of torch tensors and torch's current stream. Only this file (and the
// examples and tests of the component) include torch's headers. No fmt here: torch ships its own
// fmt headers, of another version than the library tiledsl links.
#include "tiledsl/torch.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceType.h>

#include <string>

#ifdef TILEDSL_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace tiledsl::torch {

namespace {
struct Pair {
  at::ScalarType torch;
  DType ours;
};
constexpr Pair kTypes[] = {
    {at::kFloat, DType::f32},
    {at::kDouble, DType::f64},
    {at::kHalf, DType::f16},
    {at::kBFloat16, DType::bf16},
    {at::kBool, DType::i1},
    {at::kChar, DType::i8},
    {at::kShort, DType::i16},
    {at::kInt, DType::i32},
    {at::kLong, DType::i64},
    {at::kByte, DType::u8},
    {at::kUInt16, DType::u16},
    {at::kUInt32, DType::u32},
    {at::kUInt64, DType::u64},
    {at::kFloat8_e4m3fn, DType::f8e4m3},
    {at::kFloat8_e5m2, DType::f8e5m2},
};
}  // namespace

DType dtype_of(const at::Tensor& t) {
  for (const Pair& p : kTypes)
    if (p.torch == t.scalar_type()) return p.ours;
  throw Error(std::string("tl::torch: no tiledsl dtype for torch's ") + c10::toString(t.scalar_type()));
}

at::ScalarType scalar_type(DType d) {
  for (const Pair& p : kTypes)
    if (p.ours == d) return p.torch;
  throw Error("tl::torch: no torch dtype for " + std::string(name(d)));
}

Device device_of(const at::Tensor& t) {
  if (t.device().is_cpu()) return Device::cpu;
  if (t.device().is_cuda()) return Device::cuda(t.device().index());
  throw Error("tl::torch: tensors on " + t.device().str() + " (only CPU and CUDA tensors)");
}

Tensor from_tensor(const at::Tensor& t) {
  if (!t.defined()) throw Error("tl::torch::from_tensor: an undefined tensor");
  const DType dtype = tiledsl::torch::dtype_of(t);
  const Device device = tiledsl::torch::device_of(t);
  std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end()), strides(t.strides().begin(), t.strides().end());
  // The deleter holds a reference to t's storage until the last tiledsl tensor sharing it is gone.
  return Tensor::from_blob(t.data_ptr(), shape, strides, dtype, device, [keep = t](void*) {});
}

void* current_stream(const at::Tensor& t) {
  if (!t.device().is_cuda()) return nullptr;
#ifdef TILEDSL_TORCH_CUDA
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
#else
  throw Error("tl::torch::current_stream: this build of tiledsl::torch has no CUDA support from torch");
#endif
}

}  // namespace tiledsl::torch
