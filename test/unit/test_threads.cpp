// Several threads launching (and so tracing and compiling) kernels at once: every result is
// right and each specialisation is traced exactly once.
#include <tiledsl/tiledsl.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

namespace tl = tiledsl;

namespace {
const tl::Kernel scale_kernel = tl::kernel(
    "scale_shift", {"x", "out", "a", "n", "BLOCK", "SHIFT"},
    [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Float a, tl::Int n, tl::Constexpr BLOCK, tl::Constexpr SHIFT) {
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      tl::store(out + offs, tl::load(x + offs, mask) * a + static_cast<float>(SHIFT.value()), mask);
    });
}  // namespace

TEST_CASE("concurrent launches trace each specialisation once and compute the right values", "[interp]") {
  const size_t before = scale_kernel.trace_count();
  constexpr int kThreads = 8, kLaunches = 6;
  std::atomic<int> wrong{0};
  std::mutex error_mu;
  std::string error;  // Catch2's macros are not thread-safe: collect, report after join
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        const int n = 1000 + 37 * t;
        auto x = tl::Tensor::randn({n}, static_cast<uint64_t>(100 + t));
        auto out = tl::Tensor::full({n}, NAN);
        auto xs = x.to_host<float>();
        for (int i = 0; i < kLaunches; ++i) {
          int64_t block = i % 2 ? 128 : 256, shift = t % 3;  // 2 x 3 = 6 specialisations in all
          float a = 0.5f + static_cast<float>(i);
          scale_kernel[tl::grid(tl::cdiv(n, block))](x, out, a, n, block, shift);
          auto got = out.to_host<float>();
          for (int j = 0; j < n; ++j)
            if (got[j] != xs[j] * a + static_cast<float>(shift)) {
              ++wrong;
              break;
            }
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(error_mu);
        error = e.what();
        ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  INFO(error);
  CHECK(wrong == 0);
  CHECK(scale_kernel.trace_count() - before <= 6);
  CHECK(scale_kernel.trace_count() >= 6);
}
