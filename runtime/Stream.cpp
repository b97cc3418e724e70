#include "tiledsl/stream.h"

#include <fmt/format.h>

#include <utility>

#include "runtime/cuda/Driver.h"

namespace tiledsl {

namespace {
const cuda::Driver& gpu_for(Device device, const char* what) {
  if (!device.is_cuda()) throw Error(fmt::format("{}: streams are on GPUs, not on {}", what, name(device)));
  return cuda::check_device(device.index(), what);
}
}  // namespace

Stream::Stream(Device device) : device_(device) {
  const cuda::Driver& d = gpu_for(device, "tl::Stream");
  cuda::ContextScope scope(device.index());
  cuda::CUstream s = nullptr;
  cuda::check(d.cuStreamCreate(&s, 1 /* CU_STREAM_NON_BLOCKING */), "cuStreamCreate",
              fmt::format(" (tl::Stream on {})", name(device)));
  handle_ = s;
}

Stream::~Stream() {
  if (!handle_) return;
  if (const cuda::Driver* d = cuda::driver()) {
    try {  // a destructor: nothing may escape
      cuda::ContextScope scope(device_.index());
      d->cuStreamDestroy(static_cast<cuda::CUstream>(handle_));
    } catch (const Error&) {
    }
  }
}

Stream::Stream(Stream&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)), device_(other.device_) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream old(std::move(*this));  // destroys this one's stream
    handle_ = std::exchange(other.handle_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

void Stream::synchronize() const {
  const cuda::Driver& d = gpu_for(device_, "tl::Stream::synchronize");
  cuda::ContextScope scope(device_.index());
  cuda::check(d.cuStreamSynchronize(static_cast<cuda::CUstream>(handle_)), "cuStreamSynchronize",
              fmt::format(" (tl::Stream on {})", name(device_)));
}

}  // namespace tiledsl
