// tl::Stream: a CUDA stream on one GPU, for programs that have none of their own (a program that
// has one passes its handle as LaunchOptions::stream, or tuned[grid].stream(s), directly).
#pragma once

#include "tiledsl/tensor.h"

namespace tiledsl {

class Stream {
 public:
  // A new stream on `device` (a GPU), which does not synchronise with the legacy default stream
  // (CU_STREAM_NON_BLOCKING, as torch's side streams). Throws without that GPU.
  explicit Stream(Device device = Device::cuda);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;

  // The CUstream (cudaStream_t) to launch on: `kernel[grid].options({.stream = s.handle()})`.
  void* handle() const { return handle_; }
  Device device() const { return device_; }
  // Waits until everything queued on the stream is done.
  void synchronize() const;

 private:
  void* handle_ = nullptr;
  Device device_;
};

}  // namespace tiledsl
