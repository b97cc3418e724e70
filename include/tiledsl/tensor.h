// tl::Tensor: an n-dimensional array in the memory of the active backend (host memory for the
// interpreter), with shape, strides and dtype.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "tiledsl/dtype.h"
#include "tiledsl/error.h"

struct DLManagedTensor;  // <dlpack/dlpack.h> (DLPack 0.6, Debian's libdlpack-dev)

namespace tiledsl {

// Where a tensor lives: the host (`tl::Device::cpu`, run by the interpreter) or GPU i
// (`tl::Device::cuda(i)`; plain `tl::Device::cuda` is GPU 0), as torch.device("cuda", i).
class Device {
 public:
  enum class Kind : uint8_t { cpu, cuda };
  constexpr Device() = default;
  constexpr Device(Kind kind, int index) : kind_(kind), index_(kind == Kind::cpu ? 0 : index) {}
  constexpr Kind kind() const { return kind_; }
  constexpr int index() const { return index_; }  // 0 on the CPU
  constexpr bool is_cpu() const { return kind_ == Kind::cpu; }
  constexpr bool is_cuda() const { return kind_ == Kind::cuda; }
  constexpr bool operator==(const Device&) const = default;
  // `tl::Device::cuda` converts to GPU 0; `tl::Device::cuda(i)` is GPU i.
  struct Cuda {
    constexpr operator Device() const { return Device(Kind::cuda, 0); }
    constexpr Device operator()(int index) const { return Device(Kind::cuda, index); }
  };
  static const Cuda cuda;
  static const Device cpu;

 private:
  Kind kind_ = Kind::cpu;
  int index_ = 0;
};
inline constexpr Device::Cuda Device::cuda{};
inline constexpr Device Device::cpu{};
// "cpu", "cuda:0", "cuda:1", ...
std::string name(Device d);
// How many GPUs tl::Device::cuda(i) can name (torch.cuda.device_count()): 0 without a CUDA driver.
int cuda_device_count();

// Where new tensors go: the GPU when a CUDA device and the GPU backend are available, else the
// CPU (host memory, run by the interpreter), announced once on stderr. TILEDSL_BACKEND=interpreter
// or gpu forces one.
Device default_device();

class Tensor {
 public:
  Tensor() = default;

  static Tensor empty(const std::vector<int64_t>& shape, DType dtype = DType::f32, Device device = default_device());
  static Tensor zeros(const std::vector<int64_t>& shape, DType dtype = DType::f32, Device device = default_device());
  static Tensor full(const std::vector<int64_t>& shape, double value, DType dtype = DType::f32,
                     Device device = default_device());
  // Uniform in [0, 1) and standard normal, reproducible from `seed` on every machine and device:
  // element i is a function of i and the seed alone, so a tensor's values are the first ones of
  // a longer tensor's with the same seed (filled on the host, large ones on several threads).
  static Tensor rand(const std::vector<int64_t>& shape, uint64_t seed = 0, DType dtype = DType::f32,
                     Device device = default_device());
  static Tensor randn(const std::vector<int64_t>& shape, uint64_t seed = 0, DType dtype = DType::f32,
                      Device device = default_device());
  // Uniform integers in [lo, hi).
  static Tensor randint(const std::vector<int64_t>& shape, int64_t lo, int64_t hi, uint64_t seed = 0,
                        DType dtype = DType::i32, Device device = default_device());
  // A view of memory the caller owns (host memory for the interpreter, device memory for the
  // GPU), as torch.from_blob: no copy. `strides` in elements, non-negative (row-major when not
  // given); kernels that take the strides as arguments honour them. `deleter`, when given, is
  // called with `data` once the last tensor sharing this storage is gone; without one the memory
  // is only borrowed and must outlive the tensor and every launch that uses it.
  static Tensor from_blob(void* data, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                          DType dtype, Device device = Device::cpu, std::function<void(void*)> deleter = {});
  static Tensor from_blob(void* data, const std::vector<int64_t>& shape, DType dtype, Device device = Device::cpu,
                          std::function<void(void*)> deleter = {});
  // DLPack import: a view of `managed`'s memory (kDLCPU, or kDLCUDA of any device), taking ownership:
  // its deleter runs once the last tensor sharing the storage is gone (also when the import fails).
  // Every dtype DLPack 0.6 names that tiledsl has (int, uint and float of 8-64 bits, bfloat16),
  // lanes 1; strides and byte_offset honoured.
  static Tensor from_dlpack(DLManagedTensor* managed);
  // DLPack export: a DLManagedTensor sharing this tensor's storage (kept alive until the
  // consumer calls its deleter), with its shape and strides. bool and fp8 have no DLPack 0.6 type.
  DLManagedTensor* to_dlpack() const;
  // Copies host data of element type T; `shape` defaults to 1-D. std::vector<bool> (packed bits)
  // is copied into bool's one byte per element.
  template <class T>
  static Tensor from_host(const std::vector<T>& data, std::vector<int64_t> shape = {},
                          Device device = default_device()) {
    if (shape.empty()) shape = {static_cast<int64_t>(data.size())};
    Tensor t = empty(shape, dtype_v<T>, device);
    if (static_cast<int64_t>(data.size()) != t.numel())
      throw Error("Tensor::from_host: " + std::to_string(data.size()) + " values for a shape of " +
                  std::to_string(t.numel()) + " elements");
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(data.begin(), data.end());
      t.copy_from_host(bytes.data());
    } else {
      t.copy_from_host(data.data());
    }
    return t;
  }
  // The elements as T (the tensor's dtype must be T's).
  template <class T>
  std::vector<T> to_host() const {
    if (dtype_v<T> != dtype_)
      throw Error("Tensor::to_host: tensor holds " + std::string(name(dtype_)) + ", asked for " +
                  std::string(name(dtype_v<T>)) + "; use to_double() to convert");
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool>: from one byte per element
      std::vector<uint8_t> bytes(static_cast<size_t>(numel()));
      copy_to_host(bytes.data());
      return std::vector<bool>(bytes.begin(), bytes.end());
    } else {
      std::vector<T> out(static_cast<size_t>(numel()));
      copy_to_host(out.data());
      return out;
    }
  }
  // A copy on `device` (the same tensor when it is already there; a copy is row-major).
  Tensor to(Device device) const;
  // The elements converted to double, whatever the dtype, in row-major order.
  std::vector<double> to_double() const;
  // numel() elements in row-major order, from or to host memory (through the strides). On a GPU
  // they are the driver's synchronous copies (the legacy default stream) and complete when they
  // return; kernels the caller queued on streams of its own that do not synchronise with that
  // stream (non-blocking ones) must be waited for first, as with cudaMemcpy.
  void copy_from_host(const void* src);
  void copy_to_host(void* dst) const;

  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }  // in elements
  int64_t size(int dim) const { return shape_.at(static_cast<size_t>(dim < 0 ? dim + dim_count() : dim)); }
  int64_t stride(int dim) const { return strides_.at(static_cast<size_t>(dim < 0 ? dim + dim_count() : dim)); }
  int dim_count() const { return static_cast<int>(shape_.size()); }
  DType dtype() const { return dtype_; }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * static_cast<size_t>(byte_size(dtype_)); }
  // Whether the strides are row-major (dimensions of size 1 aside).
  bool is_contiguous() const;
  // The bytes from data_ptr() that the elements span (nbytes() when contiguous): what a kernel
  // may address through this tensor.
  size_t span_bytes() const;
  void* data_ptr() const;
  Device device() const;
  bool defined() const { return storage_ != nullptr; }

  struct Storage;

 private:
  void copy_span_from_host(const void* src, size_t bytes);
  void copy_span_to_host(void* dst, size_t bytes) const;
  std::shared_ptr<Storage> storage_;
  std::vector<int64_t> shape_, strides_;
  DType dtype_ = DType::f32;
};

}  // namespace tiledsl
