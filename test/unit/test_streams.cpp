// Launches on the caller's streams, contexts and devices, and inside CUDA graphs (issue 16). They
// need a GPU: tagged [gpu], run by ctest's gpu.streams (skipped without one) and by
// scripts/gpu-check.sh; the driver is called directly, as a program that owns these would.
#include <fmt/format.h>

#include "ops_util.h"
#include "runtime/cuda/Driver.h"

namespace cu = tiledsl::cuda;
using namespace opt;

namespace {
const tl::Kernel& affine() {
  static const tl::Kernel k =
      tl::kernel("affine_1d", {"x", "y", "n", "a", "b", "BLOCK"},
                 [](tl::Ptr<float> x, tl::Ptr<float> y, tl::Int n, tl::Float a, tl::Float b, tl::Constexpr BLOCK) {
                   auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                   auto mask = offs < n;
                   tl::store(y + offs, tl::load(x + offs, mask, 0.0f) * a + b, mask);
                 });
  return k;
}

void affine_on(void* stream, const tl::Tensor& x, const tl::Tensor& y, float a, float b) {
  const int n = static_cast<int>(x.numel());
  affine()[tl::grid(tl::cdiv(n, 256))].options({.stream = stream})(x, y, n, a, b, 256);
}

const cu::Driver& driver() {
  const cu::Driver* d = cu::driver();
  REQUIRE(d);
  return *d;
}

// A stream of the current context, destroyed with the object.
struct Stream {
  cu::CUstream s = nullptr;
  Stream() { cu::check(driver().cuStreamCreate(&s, 1 /* non-blocking */), "cuStreamCreate"); }
  ~Stream() { driver().cuStreamDestroy(s); }
};

void expect_affine(const std::vector<float>& x, const tl::Tensor& y, float a, float b) {
  const auto got = y.to_host<float>();
  REQUIRE(got.size() == x.size());
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(got[i] == x[i] * a + b);
}
}  // namespace

TEST_CASE("streams: two launches on two streams, the second waiting for the first's event", "[gpu]") {
  REQUIRE(on_gpu());
  const cu::Driver& d = driver();
  const int n = 1'000'003;  // no block divides it
  const auto xs = uniform<float>(n, 1601, -4, 4);
  auto x = tl::Tensor::from_host(xs), y = tl::Tensor::empty({n}), z = tl::Tensor::empty({n});
  Stream first, second;
  cu::CUevent done = nullptr;
  cu::check(d.cuEventCreate(&done, 0), "cuEventCreate");
  for (int round = 0; round < 3; ++round) {  // the second reads what the first wrote, every time
    affine_on(first.s, x, y, 2.0f, 1.0f + static_cast<float>(round));
    cu::check(d.cuEventRecord(done, first.s), "cuEventRecord");
    cu::check(d.cuStreamWaitEvent(second.s, done, 0), "cuStreamWaitEvent");
    affine_on(second.s, y, z, 0.5f, -3.0f);
    cu::check(d.cuStreamSynchronize(second.s), "cuStreamSynchronize");
    const auto got = z.to_host<float>();
    for (int i = 0; i < n; i += 997)
      REQUIRE(got[static_cast<size_t>(i)] == (xs[i] * 2.0f + (1.0f + round)) * 0.5f - 3.0f);
  }
  d.cuEventDestroy(done);
}

TEST_CASE("contexts: a launch while the caller's own context is current runs in it and leaves it current", "[gpu]") {
  REQUIRE(on_gpu());
  const cu::Driver& d = driver();
  REQUIRE(d.cuCtxCreate);
  REQUIRE(d.cuCtxDestroy);
  cu::CUcontext own = nullptr, current = nullptr;
  cu::check(d.cuCtxCreate(&own, 0, 0), "cuCtxCreate");  // current on this thread from now on
  {
    const auto xs = uniform<float>(4099, 1602, -2, 2);
    auto x = tl::Tensor::from_host(xs), y = tl::Tensor::empty({4099});
    cu::CUcontext owner = nullptr;  // the tensors' memory is the caller's context's
    cu::check(d.cuPointerGetAttribute(&owner, cu::kPointerAttrContext, reinterpret_cast<cu::CUdeviceptr>(x.data_ptr())),
              "cuPointerGetAttribute");
    CHECK(owner == own);
    Stream s;  // of the caller's context
    affine_on(s.s, x, y, -1.5f, 0.25f);
    cu::check(d.cuStreamSynchronize(s.s), "cuStreamSynchronize");
    cu::check(d.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
    CHECK(current == own);  // used, not replaced
    expect_affine(xs, y, -1.5f, 0.25f);
  }
  cu::check(d.cuCtxDestroy(own), "cuCtxDestroy");
  // Destroying it popped it: the next launch runs in what is current now (GPU 0's primary
  // context, or none and then that one), not in the destroyed one.
  const auto xs = uniform<float>(300, 1603, -1, 1);
  auto x = tl::Tensor::from_host(xs), y = tl::Tensor::empty({300});
  affine_on(nullptr, x, y, 3.0f, 0.0f);
  expect_affine(xs, y, 3.0f, 0.0f);
}

TEST_CASE("devices: tensors and launches on an explicit GPU index; one that does not exist is an error", "[gpu]") {
  REQUIRE(on_gpu());
  const int gpus = tl::cuda_device_count();
  REQUIRE(gpus >= 1);
  for (int g = 0; g < gpus; ++g) {
    INFO("GPU " << g);
    const auto xs = uniform<float>(5000, 1604 + static_cast<uint64_t>(g), -3, 3);
    auto x = tl::Tensor::from_host(xs, {}, tl::Device::cuda(g)),
         y = tl::Tensor::empty({5000}, tl::DType::f32, tl::Device::cuda(g));
    CHECK(x.device() == tl::Device::cuda(g));
    affine_on(nullptr, x, y, 1.25f, -0.5f);
    expect_affine(xs, y, 1.25f, -0.5f);
  }
  CHECK_THROWS_WITH(tl::Tensor::empty({4}, tl::DType::f32, tl::Device::cuda(gpus)),
                    Catch::Contains(fmt::format("there is no GPU {} (tl::Device::cuda({})): this machine has {} GPU",
                                                gpus, gpus, gpus)));
}

// Stream capture records the launches (no synchronisation, allocation or module load inside a
// launch once compiled: capture in the strictest mode fails on any of them); the graph replays
// them on new inputs.
TEST_CASE("graphs: launches captured into a CUDA graph replay with new inputs", "[gpu]") {
  REQUIRE(on_gpu());
  const cu::Driver& d = driver();
  REQUIRE(d.cuStreamBeginCapture);
  const int n = 70'001;
  auto x = tl::Tensor::empty({n}), y = tl::Tensor::empty({n}), z = tl::Tensor::empty({n});
  Stream s;
  affine_on(s.s, x, y, 1.0f, 0.0f);  // compiled and loaded before the capture
  affine_on(s.s, y, z, 1.0f, 0.0f);
  cu::check(d.cuStreamSynchronize(s.s), "cuStreamSynchronize");
  cu::check(d.cuStreamBeginCapture(s.s, 0 /* CU_STREAM_CAPTURE_MODE_GLOBAL */), "cuStreamBeginCapture");
  affine_on(s.s, x, y, 2.0f, 1.0f);
  affine_on(s.s, y, z, -1.0f, 4.0f);
  cu::CUgraph graph = nullptr;
  cu::check(d.cuStreamEndCapture(s.s, &graph), "cuStreamEndCapture");
  cu::CUgraphExec exec = nullptr;
  cu::check(d.cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  for (uint64_t replay = 0; replay < 3; ++replay) {
    const auto xs = uniform<float>(n, 1610 + replay, -8, 8);
    x.copy_from_host(xs.data());
    cu::check(d.cuGraphLaunch(exec, s.s), "cuGraphLaunch");
    cu::check(d.cuStreamSynchronize(s.s), "cuStreamSynchronize");
    const auto got = z.to_host<float>();
    for (int i = 0; i < n; ++i) REQUIRE(got[static_cast<size_t>(i)] == -(xs[i] * 2.0f + 1.0f) + 4.0f);
  }
  d.cuGraphExecDestroy(exec);
  d.cuGraphDestroy(graph);
}

TEST_CASE("autotune: a tuned launch on a stream times and runs there", "[gpu]") {
  REQUIRE(on_gpu());
  const cu::Driver& d = driver();
  auto tuned = tl::autotune(affine(), {{{{"BLOCK", 128}}, 4, 3}, {{{"BLOCK", 1024}}, 8, 3}}, {"n"});
  const int n = 123'457;
  const auto xs = uniform<float>(n, 1620, -5, 5);
  auto x = tl::Tensor::from_host(xs), y = tl::Tensor::empty({n});
  Stream s;
  auto grid = tl::grid([n](const tl::Meta& m) { return tl::Dim3((n + m["BLOCK"] - 1) / m["BLOCK"]); });
  tuned[grid].stream(s.s)(x, y, n, 0.75f, 2.0f);
  cu::check(d.cuStreamSynchronize(s.s), "cuStreamSynchronize");
  CHECK(tuned.chosen(x, y, n, 0.75f, 2.0f).has_value());
  expect_affine(xs, y, 0.75f, 2.0f);
}
