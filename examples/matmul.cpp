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
  // off by at most about k * 2^-24 times the sum of their magnitudes; f32 inputs are first rounded
  // to tf32 (tl::dot's default input_precision, as Triton's), which moves each product by up to
  // 2^-10 of itself. Measure the error in units of that bound.
  const double input_rounding = dtype == tl::DType::f32 ? 0x1p-10 : 0.0;
  auto as = a.to_double(), bs = b.to_double(), got = c.to_double();
  double worst = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (int p = 0; p < k; ++p) {
        s += as[i * k + p] * bs[p * n + j];
        mag += std::fabs(as[i * k + p] * bs[p * n + j]);
      }
      double e = std::fabs(got[i * n + j] - s) / (mag * (k * 0x1p-24 + input_rounding));
      worst = std::isnan(e) ? INFINITY : std::max(worst, e);
    }
  return worst;
}

int main() {
  return example::run("matmul", [] {
    double err = std::max(check(matmul_f32, tl::DType::f32, 1), check(matmul_bf16, tl::DType::bf16, 3));
    // Rounding errors add up like sqrt(k) in practice, well below the bound of 1 (about 0.2 at
    // worst here for the tf32 inputs, 0.05 for bf16).
    return example::report("matmul", err, 0.5);
  });
}
