// tl::autotune: choices per key, kept in memory and on disk, pruning, failing configs skipped,
// clear errors. On the interpreter the first valid config wins untimed; on the GPU (gpu.ops)
// every config is timed.
#include <tiledsl/tiledsl.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <random>

namespace tl = tiledsl;

namespace {
const tl::Kernel scale_kernel = tl::kernel("tuned_scale", {"x", "out", "n", "BLOCK"},
                                           [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int n, tl::Constexpr BLOCK) {
                                             auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                                             tl::store(out + offs, tl::load(x + offs, offs < n) * 3.0f, offs < n);
                                           });

struct TempCache {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tiledsl-autotune-test-" + std::to_string(std::random_device{}()));
  TempCache() { setenv("TILEDSL_CACHE_DIR", dir.c_str(), 1); }
  ~TempCache() {
    std::filesystem::remove_all(dir);
    unsetenv("TILEDSL_CACHE_DIR");
  }
};

std::vector<tl::Config> configs() {
  return {{{{"BLOCK", 100}}, 4, 3},  // not a power of two: fails to trace, skipped
          {{{"BLOCK", 128}}, 4, 3},
          {{{"BLOCK", 256}}, 8, 3},
          {{{"BLOCK", 512}}, 4, 2}};
}

auto grid_for(int n) {
  return tl::grid([n](const tl::Meta& m) { return tl::cdiv(n, m["BLOCK"]); });
}

void check_scaled(const tl::Tensor& x, const tl::Tensor& out) {
  auto xs = x.to_host<float>(), os = out.to_host<float>();
  for (size_t i = 0; i < xs.size(); ++i) REQUIRE(os[i] == xs[i] * 3.0f);
}
}  // namespace

TEST_CASE("autotune chooses per key, once, and the result is right", "[interp]") {
  TempCache cache;
  auto tuned = tl::autotune(scale_kernel, configs(), {"n"});
  const int n = 3001;
  auto x = tl::Tensor::randn({n}, 5), out = tl::Tensor::full({n}, NAN);
  CHECK(!tuned.chosen(x, out, n));
  tuned[grid_for(n)](x, out, n);
  check_scaled(x, out);
  CHECK(tuned.tunings() == 1);
  auto c = tuned.chosen(x, out, n);
  REQUIRE(c);
  CHECK(c->constexprs.at("BLOCK") != 100);
  if (tl::default_device().is_cpu()) CHECK(c->constexprs.at("BLOCK") == 128);  // first valid, untimed

  tuned[grid_for(n)](x, out, n);  // same key: no tuning
  CHECK(tuned.tunings() == 1);
  const int m = 777;  // a new key value tunes again
  auto y = tl::Tensor::randn({m}, 6), out2 = tl::Tensor::full({m}, NAN);
  tuned[grid_for(m)](y, out2, m);
  check_scaled(y, out2);
  CHECK(tuned.tunings() == 2);

  // Another autotuner (as in a new process) finds the choice on disk and does not tune.
  auto again = tl::autotune(scale_kernel, configs(), {"n"});
  CHECK(again.chosen(x, out, n) == c);
  again[grid_for(n)](x, out, n);
  CHECK(again.tunings() == 0);
}

TEST_CASE("autotune prunes by argument values and ranks by a cost model", "[interp]") {
  TempCache cache;
  tl::AutotuneOptions opts;
  opts.prune = [](const std::vector<tl::Config>& cs, const tl::Args& a) {
    std::vector<tl::Config> kept;
    for (const auto& c : cs)
      if (c.constexprs.at("BLOCK") >= 256 && c.constexprs.at("BLOCK") <= a.integer("n")) kept.push_back(c);
    return kept;
  };
  opts.cost_model = [](const tl::Config& c, const tl::Args&) { return -static_cast<double>(c.constexprs.at("BLOCK")); };
  opts.top_k = 1;
  auto tuned = tl::autotune(scale_kernel, configs(), {"n"}, opts);
  const int n = 1000;
  auto x = tl::Tensor::randn({n}, 7), out = tl::Tensor::full({n}, NAN);
  tuned[grid_for(n)](x, out, n);
  check_scaled(x, out);
  auto c = tuned.chosen(x, out, n);
  REQUIRE(c);
  CHECK(c->constexprs.at("BLOCK") == 512);  // pruning keeps 256 and 512; the model ranks 512 first
}

TEST_CASE("autotune errors name the call site and the problem", "[error]") {
  TempCache cache;
  int line = __LINE__ + 1;
  CHECK_THROWS_WITH(
      tl::autotune(scale_kernel, {{{{"n", 4}}, 4, 3}}, {}),
      "test_autotune.cpp:" + std::to_string(line) +
          ": error in kernel 'tuned_scale': autotune: configs set 'n', which is not a tl::Constexpr parameter");
  line = __LINE__ + 1;
  CHECK_THROWS_WITH(tl::autotune(scale_kernel, configs(), {"m"}),
                    "test_autotune.cpp:" + std::to_string(line) +
                        ": error in kernel 'tuned_scale': autotune: key names 'm', which is not a parameter");
  line = __LINE__ + 1;
  auto tuned = tl::autotune(scale_kernel, configs(), {"n"});
  auto x = tl::Tensor::randn({10}, 1, tl::DType::f32, tl::Device::cpu);
  CHECK_THROWS_WITH(tuned[grid_for(10)](x, x, 10, 128),
                    "test_autotune.cpp:" + std::to_string(line) +
                        ": error in kernel 'tuned_scale': autotune: expects 3 arguments (x, out, n) but got 4; the "
                        "tuned constexprs come from the configs");
  line = __LINE__ + 1;
  auto bad = tl::autotune(scale_kernel, {{{{"BLOCK", 100}}, 4, 3}}, {"n"});
  CHECK_THROWS_WITH(bad[grid_for(10)](x, x, 10),
                    Catch::StartsWith("test_autotune.cpp:" + std::to_string(line) +
                                      ": error in kernel 'tuned_scale': autotune: no config can run:"));
}
