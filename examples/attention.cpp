// Flash-attention forward, as in Triton's fused attention tutorial: each program computes
// BLOCK_M query rows of one (batch, head) and streams over the keys and values in blocks of
// BLOCK_N, keeping a running row max and row sum (online softmax, in base 2) so that the full
// N x N score matrix never exists. Q, K, V and O are addressed as the tutorial does, a pointer
// per (batch, head) plus tiles of row and column offsets, with masks for a sequence length that
// is not a multiple of the block. bf16 inputs, f32 accumulation; causal and non-causal, head
// dimensions 64 and 128.
#include "attention_kernel.h"
#include "common.h"

namespace tl = tiledsl;

using attention::attention_kernel;

// Runs one configuration and returns the largest error against softmax(Q K^T * scale) V in double.
// n = 200 is a multiple of neither block size; n = 256 of both (no mask but the causal one).
double check(int n, int head_dim, bool causal, uint64_t seed) {
  const int batch = 2, heads = 3;
  // 8 warps, 32 query rows (64 at head dim 64) and 64 keys keep every dot path (FMA, mma.sync,
  // wgmma) within the register file (ptx.examples checks ptxas reports no spill; 32 keys at head
  // dim 128 spilled 8 bytes on sm_80 once N needed no mask).
  const int block_m = head_dim == 128 ? 32 : 64, block_n = 64;
  auto q = tl::Tensor::randn({batch, heads, n, head_dim}, seed, tl::DType::bf16);
  auto k = tl::Tensor::randn({batch, heads, n, head_dim}, seed + 1, tl::DType::bf16);
  auto v = tl::Tensor::randn({batch, heads, n, head_dim}, seed + 2, tl::DType::bf16);
  auto o = tl::Tensor::full({batch, heads, n, head_dim}, NAN);
  const float sm_scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  attention_kernel[tl::grid(tl::cdiv(n, block_m), batch * heads)].options({.num_warps = 8})(
      q, k, v, o, sm_scale, static_cast<int>(q.stride(0)), static_cast<int>(q.stride(1)), static_cast<int>(q.stride(2)),
      static_cast<int>(q.stride(3)), heads, n, head_dim, block_m, block_n, causal ? 1 : 0, n % block_n == 0);

  auto qs = q.to_double(), ks = k.to_double(), vs = v.to_double();
  std::vector<double> want(qs.size()), s(n);
  for (int zh = 0; zh < batch * heads; ++zh) {
    size_t base = static_cast<size_t>(zh) * n * head_dim;
    for (int i = 0; i < n; ++i) {
      int last = causal ? i : n - 1;
      double mx = -INFINITY, sum = 0;
      for (int j = 0; j <= last; ++j) {
        double d = 0;
        for (int c = 0; c < head_dim; ++c) d += qs[base + i * head_dim + c] * ks[base + j * head_dim + c];
        s[j] = d * sm_scale;
        mx = std::max(mx, s[j]);
      }
      for (int j = 0; j <= last; ++j) sum += (s[j] = std::exp(s[j] - mx));
      for (int c = 0; c < head_dim; ++c) {
        double acc = 0;
        for (int j = 0; j <= last; ++j) acc += s[j] * vs[base + j * head_dim + c];
        want[base + i * head_dim + c] = acc / sum;
      }
    }
  }
  return example::max_abs_error(o.to_double(), want);
}

int main() {
  return example::run("attention", [] {
    double err = 0;
    uint64_t seed = 1;
    for (int n : {200, 256})
      for (int head_dim : {64, 128})
        for (bool causal : {false, true}) err = std::max(err, check(n, head_dim, causal, seed += 3));
    // P is rounded to bf16 (8 significant bits) before the P @ V dot, as on the GPU: a relative
    // error of up to 2^-9 per weight, on outputs of magnitude up to ~3.
    return example::report("attention", err, 1e-2);
  });
}
