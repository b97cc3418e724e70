// Checks that stop a kernel: a loop step that is not positive and a failing device_assert. In the
// interpreter the launch throws the message; on the GPU the kernel prints it (with the user's
// file:line) and traps, and the next synchronising call throws. A trap leaves the CUDA context
// unusable, so on the GPU each case runs in a process of its own (ctest gpu.trap.*).
#include "ops_util.h"

using namespace opt;

namespace {
// The launch's error text and what the kernel printed, after a synchronising copy of `x`.
std::pair<std::string, std::string> run_trapping(const std::function<void()>& launch, const tl::Tensor& x) {
  std::string error;
  std::string printed = captured_stdout([&] {
    try {
      launch();
      x.to_double();
    } catch (const tl::Error& e) {
      error = e.what();
    }
  });
  return {error, printed};
}
}  // namespace

TEST_CASE("trap: a loop whose step is zero stops the kernel with the interpreter's message", "[gpu-trap]") {
  auto k = tl::kernel("stepped", {"x", "n", "step"}, [](tl::Ptr<float> x, tl::Int n, tl::Int step) {
    tl::Float acc = 0.0f;
    tl::range(0, n, step, [&](tl::Int i) { acc = acc + tl::load(x + i); });
    tl::store(x, acc);
  });
  auto x = tensor<float>(uniform<float>(16, 11, -1, 1));
  auto [error, printed] = run_trapping([&] { k[tl::grid(3)](x, 16, 0); }, x);
  INFO("error: " << error << "\nprinted: " << printed);
  REQUIRE(!error.empty());
  const std::string want = "for: step must be positive, got 0 (program (";
  CHECK((on_gpu() ? printed : error).find(want) != std::string::npos);
  CHECK((on_gpu() ? printed : error).find("test_gpu_traps.cpp:") != std::string::npos);  // the user's line
}

TEST_CASE("trap: a failing device_assert stops the kernel with its message", "[gpu-trap]") {
  auto k = tl::kernel("checked", {"x"}, [](tl::Ptr<float> x) {
    auto v = tl::load(x + tl::arange(0, 16));
    tl::device_assert(v < 100.0f, "x must stay below 100");
  });
  auto values = uniform<float>(16, 12, -1, 1);
  values[9] = 250.0f;
  auto x = tensor<float>(values);
  auto [error, printed] = run_trapping([&] { k[tl::grid(1)](x); }, x);
  INFO("error: " << error << "\nprinted: " << printed);
  REQUIRE(!error.empty());
  CHECK((on_gpu() ? printed : error).find("device_assert failed at index [9]: x must stay below 100") !=
        std::string::npos);
}
