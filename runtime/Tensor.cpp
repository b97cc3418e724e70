#include "tiledsl/tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "runtime/Backend.h"
#include "runtime/Interpreter.h"
#include "runtime/ThreadPool.h"
#include "runtime/cuda/Driver.h"

namespace tiledsl {

// Host memory (64-byte aligned like a device allocation) for the interpreter, or device memory.
// Or memory the caller owns (from_blob): freed by its deleter, or not at all.
struct Tensor::Storage {
  void* ptr = nullptr;
  size_t bytes = 0;
  Device device = Device::cpu;
  bool owned = true;
  std::function<void(void*)> deleter;
  bool registered = false;  // with the interpreter's host memory (runtime::register_host_memory)
  // Host memory becomes reachable through addresses a kernel computes (pointer casts).
  void register_host() {
    if (device.is_cpu() && ptr) {
      runtime::register_host_memory(ptr, bytes);
      registered = true;
    }
  }
  ~Storage() {
    if (registered) runtime::unregister_host_memory(ptr, bytes);
    if (!owned) {
      if (deleter) deleter(ptr);
    } else if (device.is_cpu()) {
      std::free(ptr);
    } else if (const cuda::Driver* d = ptr ? cuda::driver() : nullptr) {
      try {  // a destructor: nothing may escape (the GPU exists, or nothing was allocated)
        cuda::ContextScope scope(device.index());
        d->cuMemFree(reinterpret_cast<cuda::CUdeviceptr>(ptr));
      } catch (const Error&) {
      }
    }
  }
};

std::string name(Device d) { return d.is_cpu() ? "cpu" : fmt::format("cuda:{}", d.index()); }

namespace {
// SplitMix64: a small, fully specified generator, so tensors are identical on every machine.
// Counter-based: output n (from 0) is the mix of seed + (n + 1) * gamma, the stream a sequential
// SplitMix64 from `seed` gives, so that any element can be computed on its own.
struct SplitMix {
  uint64_t seed;
  uint64_t at(uint64_t n) const {
    uint64_t z = seed + (n + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform(uint64_t n) const { return static_cast<double>(at(n) >> 11) * 0x1.0p-53; }
};

// Rejects negative dimensions and shapes whose size in bytes does not fit in 63 bits (they
// would wrap to a small allocation).
void check_shape(const std::vector<int64_t>& shape, DType dtype) {
  int64_t bytes = byte_size(dtype);
  for (int64_t d : shape) {
    if (d < 0) throw Error(fmt::format("Tensor: negative dimension in shape [{}]", fmt::join(shape, ", ")));
    if (__builtin_mul_overflow(bytes, d, &bytes))
      throw Error(
          fmt::format("Tensor: shape [{}] of {} is larger than 2^63 bytes", fmt::join(shape, ", "), name(dtype)));
  }
}

// Fills on the host, then copies to the tensor's device: the same values everywhere. `gen(j)` is
// element j's value; large tensors are filled by several threads (the values do not depend on
// how many: each element's comes from its index alone).
template <class Gen>
Tensor generate(const std::vector<int64_t>& shape, DType dtype, Device device, Gen gen) {
  Tensor t = Tensor::empty(shape, dtype, device);
  std::vector<char> host(t.nbytes());
  const int64_t n = t.numel(), size = byte_size(dtype);
  auto fill = [&](int64_t lo, int64_t hi) {
    char* p = host.data() + lo * size;
    for (int64_t j = lo; j < hi; ++j, p += size) {
      const double v = gen(static_cast<uint64_t>(j));
      if (is_float(dtype))
        store_float(dtype, p, v);
      else
        store_int(dtype, p, static_cast<int64_t>(v));
    }
  };
  // The library's pool (run_team), chunks of 2^18 elements taken from a shared counter.
  constexpr int64_t kChunk = int64_t{1} << 18;
  std::atomic<int64_t> next{0};
  const int threads = n < 4 * kChunk ? 1 : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 16);
  runtime::run_team(threads, [&] {
    for (int64_t lo; (lo = next.fetch_add(kChunk)) < n;) fill(lo, std::min(n, lo + kChunk));
  });
  t.copy_from_host(host.data());
  return t;
}

const cuda::Driver& gpu(const char* what) {
  std::string why;
  const cuda::Driver* d = cuda::driver(&why);
  if (!d) throw Error(fmt::format("{}: a tensor on cuda needs a GPU: {}", what, why));
  return *d;
}

// from_blob on a GPU: the driver must know `data` as memory GPU `device` can address as its own
// (device memory of that GPU, or managed memory); host memory and another GPU's are errors here
// rather than faults in a kernel later.
void check_device_pointer(void* data, Device device) {
  const cuda::Driver& d = cuda::check_device(device.index(), "Tensor::from_blob");
  const auto p = reinterpret_cast<cuda::CUdeviceptr>(data);
  unsigned type = 0;
  int ordinal = -1;
  if (d.cuPointerGetAttribute(&type, cuda::kPointerAttrMemoryType, p) != 0)
    throw Error(
        fmt::format("Tensor::from_blob: {} is not memory the CUDA driver knows (host memory from malloc or new?); "
                    "a tensor on {} needs device memory (cuMemAlloc, cudaMalloc, torch's CUDA tensors)",
                    data, name(device)));
  if (type == cuda::kMemoryTypeHost)
    throw Error(fmt::format("Tensor::from_blob: {} is pinned host memory; a tensor on {} needs device memory", data,
                            name(device)));
  if (d.cuPointerGetAttribute(&ordinal, cuda::kPointerAttrDeviceOrdinal, p) == 0 && type == cuda::kMemoryTypeDevice &&
      ordinal != device.index())
    throw Error(fmt::format("Tensor::from_blob: {} is memory of GPU {}, not of {}", data, ordinal, name(device)));
}
}  // namespace

Tensor Tensor::empty(const std::vector<int64_t>& shape, DType dtype, Device device) {
  check_shape(shape, dtype);
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.strides_.assign(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) t.strides_[d - 1] = t.strides_[d] * shape[d];
  t.storage_ = std::make_shared<Storage>();
  size_t bytes = std::max<size_t>(t.nbytes(), 1);
  t.storage_->bytes = t.nbytes();
  t.storage_->device = device;
  if (device.is_cpu()) {
    if (bytes > SIZE_MAX - 63) throw Error(fmt::format("Tensor: cannot allocate {} bytes", bytes));
    t.storage_->ptr = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  } else {
    cuda::CUdeviceptr p = 0;
    const cuda::Driver& d = cuda::check_device(device.index(), "Tensor::empty");
    cuda::ContextScope scope(device.index());
    cuda::check(d.cuMemAlloc(&p, bytes), "cuMemAlloc",
                fmt::format(" (Tensor::empty of {} bytes on {})", bytes, name(device)));
    t.storage_->ptr = reinterpret_cast<void*>(p);
  }
  if (!t.storage_->ptr) throw Error(fmt::format("Tensor: cannot allocate {} bytes", bytes));
  t.storage_->register_host();
  return t;
}

Tensor Tensor::from_blob(void* data, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                         DType dtype, Device device, std::function<void(void*)> deleter) {
  check_shape(shape, dtype);
  if (strides.size() != shape.size())
    throw Error(fmt::format("Tensor::from_blob: {} strides for a shape of {} dimensions ([{}])", strides.size(),
                            shape.size(), fmt::join(shape, ", ")));
  int64_t last = 0;  // the last element's offset, which must fit (in bytes) in 63 bits
  for (size_t d = 0; d < shape.size(); ++d) {
    if (strides[d] < 0)
      throw Error(fmt::format("Tensor::from_blob: negative stride in [{}]", fmt::join(strides, ", ")));
    int64_t step = 0;
    if (shape[d] > 0 &&
        (__builtin_mul_overflow(shape[d] - 1, strides[d], &step) || __builtin_add_overflow(last, step, &last) ||
         __builtin_mul_overflow(last + 1, int64_t{byte_size(dtype)}, &step)))
      throw Error(fmt::format("Tensor::from_blob: shape [{}] with strides [{}] spans more than 2^63 bytes",
                              fmt::join(shape, ", "), fmt::join(strides, ", ")));
  }
  Tensor t;
  t.shape_ = shape;
  t.strides_ = strides;
  t.dtype_ = dtype;
  const size_t span = t.span_bytes();
  if (!data && span) throw Error("Tensor::from_blob: null data for a non-empty tensor");
  // Checked where a driver can tell (without one, nothing can touch the view: every launch and
  // copy on a GPU fails first, saying why).
  if (device.is_cuda() && data && cuda::driver()) check_device_pointer(data, device);
  t.storage_ = std::make_shared<Storage>();
  t.storage_->ptr = data;
  t.storage_->bytes = span;
  t.storage_->device = device;
  t.storage_->owned = false;
  t.storage_->deleter = std::move(deleter);
  t.storage_->register_host();
  return t;
}

Tensor Tensor::from_blob(void* data, const std::vector<int64_t>& shape, DType dtype, Device device,
                         std::function<void(void*)> deleter) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return from_blob(data, shape, strides, dtype, device, std::move(deleter));
}

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (size_t d = shape_.size(); d-- > 0;) {
    if (shape_[d] != 1 && strides_[d] != expect) return false;
    expect *= shape_[d];
  }
  return true;
}

size_t Tensor::span_bytes() const {
  if (numel() == 0) return 0;
  int64_t last = 0;  // the offset of the last element, in elements
  for (size_t d = 0; d < shape_.size(); ++d) last += (shape_[d] - 1) * strides_[d];
  return static_cast<size_t>(last + 1) * static_cast<size_t>(byte_size(dtype_));
}

Tensor Tensor::zeros(const std::vector<int64_t>& shape, DType dtype, Device device) {
  return generate(shape, dtype, device, [](uint64_t) { return 0.0; });
}

Tensor Tensor::full(const std::vector<int64_t>& shape, double value, DType dtype, Device device) {
  return generate(shape, dtype, device, [&](uint64_t) { return value; });
}

Tensor Tensor::rand(const std::vector<int64_t>& shape, uint64_t seed, DType dtype, Device device) {
  const SplitMix g{seed};
  return generate(shape, dtype, device, [&](uint64_t j) { return g.uniform(j); });
}

Tensor Tensor::randn(const std::vector<int64_t>& shape, uint64_t seed, DType dtype, Device device) {
  const SplitMix g{seed};
  return generate(shape, dtype, device, [&](uint64_t j) {  // Box-Muller on outputs 2 j and 2 j + 1
    double u1 = std::max(g.uniform(2 * j), 1e-300), u2 = g.uniform(2 * j + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  });
}

Tensor Tensor::randint(const std::vector<int64_t>& shape, int64_t lo, int64_t hi, uint64_t seed, DType dtype,
                       Device device) {
  if (hi <= lo) throw Error(fmt::format("Tensor::randint: empty range [{}, {})", lo, hi));
  const SplitMix g{seed};
  uint64_t span = static_cast<uint64_t>(hi - lo);
  return generate(shape, dtype, device,
                  [&](uint64_t j) { return static_cast<double>(lo + static_cast<int64_t>(g.at(j) % span)); });
}

std::vector<double> Tensor::to_double() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  std::vector<char> host(nbytes());
  copy_to_host(host.data());
  const char* p = host.data();
  for (auto& v : out) {
    v = is_float(dtype_) ? load_float(dtype_, p) : static_cast<double>(load_int(dtype_, p));
    p += byte_size(dtype_);
  }
  return out;
}

namespace {
// The byte offset of each element of a tensor of `shape` and `strides`, in row-major order.
std::vector<size_t> element_offsets(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                                    size_t size) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<size_t> out(static_cast<size_t>(n));
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t j = 0; j < out.size(); ++j) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * strides[d];
    out[j] = static_cast<size_t>(off) * size;
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}
}  // namespace

// Raw bytes [0, bytes) from data_ptr(), to or from the host.
void Tensor::copy_span_from_host(const void* src, size_t bytes) {
  if (!bytes) return;
  if (device().is_cpu()) {
    std::memcpy(data_ptr(), src, bytes);
    return;
  }
  const cuda::Driver& d = gpu("Tensor::copy_from_host");
  cuda::ContextScope scope(device().index());
  cuda::check(d.cuMemcpyHtoD(reinterpret_cast<cuda::CUdeviceptr>(data_ptr()), src, bytes), "cuMemcpyHtoD");
  // From pageable memory the driver may return before the DMA lands, and streams created
  // non-blocking do not wait for it: complete it here, so that a copy is done when it returns.
  cuda::check(d.cuStreamSynchronize(nullptr), "cuStreamSynchronize", " (after cuMemcpyHtoD)");
}

void Tensor::copy_span_to_host(void* dst, size_t bytes) const {
  if (!bytes) return;
  if (device().is_cpu()) {
    std::memcpy(dst, data_ptr(), bytes);
    return;
  }
  const cuda::Driver& d = gpu("Tensor::copy_to_host");
  cuda::ContextScope scope(device().index());
  cuda::check(d.cuMemcpyDtoH(dst, reinterpret_cast<cuda::CUdeviceptr>(data_ptr()), bytes), "cuMemcpyDtoH");
}

// A strided tensor goes through a host copy of the bytes it spans: gathered out of it, or
// scattered into it (the bytes between its elements are written back as they were).
void Tensor::copy_from_host(const void* src) {
  if (is_contiguous()) return copy_span_from_host(src, nbytes());
  const size_t size = static_cast<size_t>(byte_size(dtype_));
  std::vector<char> span(span_bytes());
  copy_span_to_host(span.data(), span.size());
  const char* s = static_cast<const char*>(src);
  for (size_t off : element_offsets(shape_, strides_, size)) {
    std::memcpy(span.data() + off, s, size);
    s += size;
  }
  copy_span_from_host(span.data(), span.size());
}

void Tensor::copy_to_host(void* dst) const {
  if (is_contiguous()) return copy_span_to_host(dst, nbytes());
  const size_t size = static_cast<size_t>(byte_size(dtype_));
  std::vector<char> span(span_bytes());
  copy_span_to_host(span.data(), span.size());
  char* d = static_cast<char*>(dst);
  for (size_t off : element_offsets(shape_, strides_, size)) {
    std::memcpy(d, span.data() + off, size);
    d += size;
  }
}

Tensor Tensor::to(Device d) const {
  if (d == device()) return *this;
  Tensor t = empty(shape_, dtype_, d);
  std::vector<char> host(nbytes());
  copy_to_host(host.data());
  t.copy_from_host(host.data());
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

void* Tensor::data_ptr() const {
  if (!storage_) throw Error("Tensor: use of an empty (default-constructed) tensor");
  return storage_->ptr;
}

Device Tensor::device() const { return storage_ ? storage_->device : Device::cpu; }

}  // namespace tiledsl
