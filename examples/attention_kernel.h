// The flash-attention forward kernel of examples/attention.cpp, in a header so that the
// benchmarks (bench/) time the same kernel. Design notes are in examples/attention.cpp.
#pragma once

#include <tiledsl/tiledsl.h>

#include <cmath>
#include <type_traits>

namespace attention {
namespace tl = tiledsl;

// EVEN_N (the caller sets it when N is a multiple of BLOCK_N): no key block runs past N, so
// neither K and V nor the scores need a mask unless the kernel is causal, as in Triton's
// tutorial, whose kernel assumes it. (Walking the key blocks left of the causal diagonal in a
// loop of their own, unmasked, as the tutorial does, kept values of the second loop live through
// the first: 255 registers and spills at 128 x 64 blocks, head dim 128, against 220 for one loop.)
// Out: O's element type: f32 (attention_kernel, the example's) or bf16 (attention_kernel_bf16,
// Triton's tutorial's: O as the inputs' type; the benchmarks compare that form).
template <class Out>
inline const tl::Kernel attention_kernel_of = tl::kernel(
    std::is_same_v<Out, float> ? "attention_kernel" : "attention_kernel_bf16",
    {"q", "k", "v", "o", "sm_scale", "stride_z", "stride_h", "stride_n", "stride_d", "H", "N", "HEAD_DIM", "BLOCK_M",
     "BLOCK_N", "CAUSAL", "EVEN_N"},
    [](tl::Ptr<tl::bf16> q, tl::Ptr<tl::bf16> k, tl::Ptr<tl::bf16> v, tl::Ptr<Out> o, tl::Float sm_scale,
       tl::Int stride_z, tl::Int stride_h, tl::Int stride_n, tl::Int stride_d, tl::Int H, tl::Int N,
       tl::Constexpr HEAD_DIM, tl::Constexpr BLOCK_M, tl::Constexpr BLOCK_N, tl::Constexpr CAUSAL,
       tl::Constexpr EVEN_N) {
      auto start_m = tl::program_id(0);
      auto off_zh = tl::program_id(1);
      // The (batch, head) slice starts 64-bit offsets in; within it, offsets are 32-bit tiles, as
      // in Triton's tutorial (so N * stride_n must stay below 2^31). Each element's address is
      // then one multiply-add from the slice's pointer (IMAD.WIDE), where block pointers'
      // 64-bit offsets cost four instructions per 16-byte copy in the loop (the SASS comparison
      // in bench/results/2026-12-08-cpu-notes.md).
      tl::Int64 head = (off_zh / H).to<int64_t>() * stride_z + (off_zh % H).to<int64_t>() * stride_h;
      auto q_head = q + head, k_head = k + head, v_head = v + head;
      auto o_head = o + head;
      auto offs_m = start_m * BLOCK_M + tl::arange(0, BLOCK_M);
      auto offs_n = tl::arange(0, BLOCK_N);
      auto offs_d = tl::arange(0, HEAD_DIM);
      auto rows = offs_m(tl::_, tl::newaxis) * stride_n + offs_d(tl::newaxis, tl::_) * stride_d;  // Q's and O's
      auto row_in = offs_m(tl::_, tl::newaxis) < N;  // rows past N load as zeros and are never stored

      auto m_i = tl::full<float>({BLOCK_M}, -INFINITY);
      auto l_i = tl::full<float>({BLOCK_M}, 1.0);
      auto acc = tl::zeros<float>({BLOCK_M, HEAD_DIM});
      // exp(x) = exp2(x * log2(e)): fold log2(e) into the scale once.
      auto qk_scale = sm_scale * 1.44269504f;
      auto q_tile = tl::load(q_head + rows, row_in, 0.0f);

      // Causal programs stop at the last key block their rows can see.
      tl::Int hi = CAUSAL ? tl::minimum((start_m + 1) * BLOCK_M, N) : N;
      tl::range(0, hi, BLOCK_N, [&](tl::Int start_n) {
        auto keys = start_n + offs_n;
        auto key_in = keys < N;
        // K^T is a [HEAD_DIM, BLOCK_N] tile read down its columns (K's rows), so that Q @ K^T is a
        // plain dot; V is [BLOCK_N, HEAD_DIM]. Keys past N load as zeros.
        auto k_ptrs = k_head + keys(tl::newaxis, tl::_) * stride_n + offs_d(tl::_, tl::newaxis) * stride_d;
        auto k_tile = EVEN_N ? tl::load(k_ptrs) : tl::load(k_ptrs, key_in(tl::newaxis, tl::_), 0.0f);
        auto qk = tl::dot(q_tile, k_tile);
        if (CAUSAL || !EVEN_N) {
          // Keys after the query (causal) or past N get a score of -inf: weight zero. Causal
          // rows below N see no key past N anyway; rows past N are never stored (and their keys
          // past N load as zeros), so causal needs no second compare.
          auto cols = keys(tl::newaxis, tl::_);
          tl::Tile<bool> keep = CAUSAL ? offs_m(tl::_, tl::newaxis) >= cols : cols < N;
          qk = tl::where(keep, qk, -INFINITY);
        }
        // Every row sees key 0 in the first block, so m_ij is finite from then on and no row is
        // all -inf. The scale (> 0) applies to the row max, and qk * qk_scale - m_ij is one fma.
        auto m_ij = tl::maximum(m_i, tl::max(qk, 1) * qk_scale);
        auto p = tl::exp2(qk * qk_scale - m_ij(tl::_, tl::newaxis));
        auto alpha = tl::exp2(m_i - m_ij);
        l_i = l_i * alpha + tl::sum(p, 1);
        acc = acc * alpha(tl::_, tl::newaxis);
        auto v_ptrs = v_head + keys(tl::_, tl::newaxis) * stride_n + offs_d(tl::newaxis, tl::_) * stride_d;
        auto v_tile = EVEN_N ? tl::load(v_ptrs) : tl::load(v_ptrs, key_in(tl::_, tl::newaxis), 0.0f);
        acc = tl::dot(p.to<tl::bf16>(), v_tile, acc);
        m_i = m_ij;
      });
      auto out = acc / l_i(tl::_, tl::newaxis);
      if constexpr (std::is_same_v<Out, float>)
        tl::store(o_head + rows, out, row_in);
      else
        tl::store(o_head + rows, out.to<Out>(), row_in);
    });
inline const tl::Kernel& attention_kernel = attention_kernel_of<float>;
inline const tl::Kernel& attention_kernel_bf16 = attention_kernel_of<tl::bf16>;

}  // namespace attention
