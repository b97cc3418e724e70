// One large job split across every visible GPU: out = x + alpha * y (axpy) over n elements, one
// contiguous slice per GPU, each GPU's tensors on that GPU (tl::Device::cuda(g)) and its launch
// on a stream of its own (tl::Stream), all queued before any is waited for, then gathered and
// checked. With one GPU it runs on that one; without a GPU, on the interpreter in one piece.
// On the GPU it also times the split job against the whole job on GPU 0 alone.
#include <chrono>
#include <optional>

#include "common.h"

namespace tl = tiledsl;

const tl::Kernel axpy_kernel = tl::kernel(
    "axpy_kernel", {"x", "y", "out", "alpha", "n", "BLOCK"},
    [](tl::Ptr<float> x, tl::Ptr<float> y, tl::Ptr<float> out, tl::Float alpha, tl::Int n, tl::Constexpr BLOCK) {
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      tl::store(out + offs, tl::load(x + offs, mask) + alpha * tl::load(y + offs, mask), mask);
    });

namespace {
// One GPU's share: its inputs, its output and its stream (none on the interpreter).
struct Part {
  int64_t begin = 0, size = 0;
  tl::Tensor x, y, out;
  std::optional<tl::Stream> stream;
};

void launch(Part& p, float alpha) {
  const int n = static_cast<int>(p.size);
  axpy_kernel[tl::grid(tl::cdiv(n, 1024))].options({.stream = p.stream ? p.stream->handle() : nullptr})(p.x, p.y, p.out,
                                                                                                        alpha, n, 1024);
}

// Splits [0, n) into `parts` slices on devices 0, 1, ... (or the CPU) and uploads them.
std::vector<Part> split(const std::vector<float>& x, const std::vector<float>& y, int parts, bool gpu) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<Part> out(static_cast<size_t>(parts));
  for (int g = 0; g < parts; ++g) {
    Part& p = out[static_cast<size_t>(g)];
    p.begin = n * g / parts;
    p.size = n * (g + 1) / parts - p.begin;
    const tl::Device device = gpu ? tl::Device::cuda(g) : tl::Device::cpu;
    auto slice = [&](const std::vector<float>& v) {
      return tl::Tensor::from_host(std::vector<float>(v.begin() + p.begin, v.begin() + p.begin + p.size), {p.size},
                                   device);
    };
    p.x = slice(x);
    p.y = slice(y);
    p.out = tl::Tensor::empty({p.size}, tl::DType::f32, device);
    if (gpu) p.stream.emplace(device);
  }
  return out;
}

// Milliseconds for launching every part and waiting for all of them.
double run_all(std::vector<Part>& parts, float alpha) {
  auto t0 = std::chrono::steady_clock::now();
  for (Part& p : parts) launch(p, alpha);
  for (Part& p : parts)
    if (p.stream) p.stream->synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main() {
  return example::run("multi_gpu", [] {
    const bool gpu = tl::default_device().is_cuda();
    const int gpus = gpu ? tl::cuda_device_count() : 0;
    const int64_t n = gpu ? (int64_t{1} << 27) + 4099 : 1'000'003;  // no block or GPU count divides it
    const float alpha = -0.75f;
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {  // cheap deterministic values, exact in f32
      x[static_cast<size_t>(i)] = static_cast<float>(i % 1021) - 510.0f;
      y[static_cast<size_t>(i)] = static_cast<float>(i % 977) * 0.25f;
    }
    std::vector<Part> parts = split(x, y, std::max(gpus, 1), gpu);
    run_all(parts, alpha);  // the first launch on each GPU compiles
    if (gpu) {
      double split_ms = 1e30, one_ms = 1e30;
      for (int r = 0; r < 5; ++r) split_ms = std::min(split_ms, run_all(parts, alpha));
      std::vector<Part> whole = split(x, y, 1, gpu);
      run_all(whole, alpha);
      for (int r = 0; r < 5; ++r) one_ms = std::min(one_ms, run_all(whole, alpha));
      std::printf("multi_gpu: %lld elements on %d GPU%s: %.3f ms; on GPU 0 alone: %.3f ms (%.2fx)\n",
                  static_cast<long long>(n), gpus, gpus == 1 ? "" : "s", split_ms, one_ms, one_ms / split_ms);
    }
    // Gather and compare with the host's (a + alpha * b, rounded as f32 is).
    std::vector<double> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
    for (const Part& p : parts) {
      const auto slice = p.out.to_host<float>();
      std::copy(slice.begin(), slice.end(), got.begin() + p.begin);
    }
    for (size_t i = 0; i < want.size(); ++i) want[i] = x[i] + alpha * y[i];
    return example::report("multi_gpu", example::max_abs_error(got, want), 1e-4);
  });
}
