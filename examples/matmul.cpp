// Tiled matrix multiplication as in Triton's matmul tutorial (the kernel is in matmul_kernel.h,
// shared with the benchmarks), run with f32 and bf16 inputs on sizes that fill no block.
#include "common.h"
#include "matmul_kernel.h"

namespace tl = tiledsl;
using matmul::matmul_bf16;
using matmul::matmul_f32;

// Runs C = A @ B for one input dtype and returns the largest error relative to the reference's scale.
double check(const tl::Kernel& kernel, tl::DType dtype, uint64_t seed) {
  const int m = 257, n = 193, k = 161;
  auto a = tl::Tensor::randn({m, k}, seed, dtype), b = tl::Tensor::randn({k, n}, seed + 1, dtype);
  auto c = tl::Tensor::full({m, n}, NAN);
  auto grid =
      tl::grid([&](const tl::Meta& meta) { return tl::cdiv(m, meta["BLOCK_M"]) * tl::cdiv(n, meta["BLOCK_N"]); });
  kernel[grid](a, b, c, m, n, k, static_cast<int>(a.stride(0)), static_cast<int>(a.stride(1)),
               static_cast<int>(b.stride(0)), static_cast<int>(b.stride(1)), static_cast<int>(c.stride(0)),
               static_cast<int>(c.stride(1)), 32, 64, 32, 4);

  // The reference uses the same (already rounded) inputs, in double. An f32 sum of k products is
  // off by at most about k * 2^-24 times the sum of their magnitudes; measure the error in those units.
  auto as = a.to_double(), bs = b.to_double(), got = c.to_double();
  double worst = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (int p = 0; p < k; ++p) {
        s += as[i * k + p] * bs[p * n + j];
        mag += std::fabs(as[i * k + p] * bs[p * n + j]);
      }
      double e = std::fabs(got[i * n + j] - s) / (mag * k * 0x1p-24);
      worst = std::isnan(e) ? INFINITY : std::max(worst, e);
    }
  return worst;
}

int main() {
  return example::run("matmul", [] {
    double err = std::max(check(matmul_f32, tl::DType::f32, 1), check(matmul_bf16, tl::DType::bf16, 3));
    // Rounding errors of a long f32 sum grow like sqrt(k) in practice, far below the bound of 1.
    return example::report("matmul", err, 0.1);
  });
}
