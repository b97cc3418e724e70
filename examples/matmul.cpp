// Tiled matrix multiplication, as in Triton's matmul tutorial: each program computes one
// BLOCK_M x BLOCK_N tile of C = A @ B with tl::dot, walking K in BLOCK_K steps with an f32
// accumulator carried through the loop. Programs are ordered in groups of GROUP_M block rows so
// that neighbouring programs share blocks of A and B (better L2 reuse on a GPU). Masks on every
// edge let M, N and K be any size. Run with f32 and bf16 inputs.
#include "common.h"

namespace tl = tiledsl;

template <class T>
tl::Kernel make_matmul_kernel(const char* name) {
  return tl::kernel(name,
                    {"a", "b", "c", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
                     "stride_cn", "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"},
                    [](tl::Ptr<T> a, tl::Ptr<T> b, tl::Ptr<float> c, tl::Int M, tl::Int N, tl::Int K, tl::Int stride_am,
                       tl::Int stride_ak, tl::Int stride_bk, tl::Int stride_bn, tl::Int stride_cm, tl::Int stride_cn,
                       tl::Constexpr BLOCK_M, tl::Constexpr BLOCK_N, tl::Constexpr BLOCK_K, tl::Constexpr GROUP_M) {
                      // Grouped ordering: program ids run down GROUP_M block rows before moving one block column right.
                      auto pid = tl::program_id(0);
                      auto num_pid_m = tl::cdiv(M, BLOCK_M), num_pid_n = tl::cdiv(N, BLOCK_N);
                      auto num_pid_in_group = GROUP_M * num_pid_n;
                      auto group_id = pid / num_pid_in_group;
                      auto first_pid_m = group_id * GROUP_M;
                      auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_M);  // the last group may be short
                      auto pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m;
                      auto pid_n = (pid % num_pid_in_group) / group_size_m;

                      auto offs_m = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
                      auto offs_n = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
                      auto offs_k = tl::arange(0, BLOCK_K);
                      auto a_ptrs = a + offs_m(tl::_, tl::newaxis) * stride_am + offs_k(tl::newaxis, tl::_) * stride_ak;
                      auto b_ptrs = b + offs_k(tl::_, tl::newaxis) * stride_bk + offs_n(tl::newaxis, tl::_) * stride_bn;
                      auto mask_m = offs_m(tl::_, tl::newaxis) < M, mask_n = offs_n(tl::newaxis, tl::_) < N;

                      auto acc = tl::zeros<float>({BLOCK_M, BLOCK_N});
                      tl::range(0, tl::cdiv(K, BLOCK_K), [&](tl::Int kb) {
                        // Zero padding past K (and past M, N) leaves the dot product of the valid part unchanged.
                        auto k_left = K - kb * BLOCK_K;
                        auto x = tl::load(a_ptrs, mask_m & (offs_k(tl::newaxis, tl::_) < k_left), 0.0f);
                        auto y = tl::load(b_ptrs, (offs_k(tl::_, tl::newaxis) < k_left) & mask_n, 0.0f);
                        acc = tl::dot(x, y, acc);
                        a_ptrs += BLOCK_K * stride_ak;
                        b_ptrs += BLOCK_K * stride_bk;
                      });
                      auto c_ptrs = c + offs_m(tl::_, tl::newaxis) * stride_cm + offs_n(tl::newaxis, tl::_) * stride_cn;
                      tl::store(c_ptrs, acc, mask_m & mask_n);
                    });
}

const tl::Kernel matmul_f32 = make_matmul_kernel<float>("matmul_f32");
const tl::Kernel matmul_bf16 = make_matmul_kernel<tl::bf16>("matmul_bf16");

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
