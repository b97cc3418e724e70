// Scales a vector with a tiledsl kernel and checks the result: proves the installed headers,
// library and CMake package work from another project.
#include <tiledsl/tiledsl.h>

#include <cmath>
#include <cstdio>

namespace tl = tiledsl;

int main() {
  auto scale = tl::kernel("scale", {"x", "out", "a", "n", "BLOCK"},
                          [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Float a, tl::Int n, tl::Constexpr BLOCK) {
                            auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                            tl::store(out + offs, tl::load(x + offs, offs < n) * a, offs < n);
                          });
  const int n = 3001;
  auto x = tl::Tensor::randn({n}, 7);
  auto out = tl::Tensor::zeros({n});
  scale[tl::grid(tl::cdiv(n, 256))](x, out, 2.5f, n, 256);
  auto xs = x.to_host<float>(), os = out.to_host<float>();
  for (int i = 0; i < n; ++i)
    if (os[i] != xs[i] * 2.5f) {
      std::printf("consumer: mismatch at %d: %g vs %g\n", i, os[i], xs[i] * 2.5f);
      return 1;
    }
  std::printf("consumer: OK (%d elements, tiledsl %s)\n", n, TILEDSL_VERSION);
  return 0;
}
