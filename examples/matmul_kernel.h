// The tiled matmul kernel of examples/matmul.cpp, in a header so that the benchmarks (bench/)
// time the same kernel. As in Triton's matmul tutorial: each program computes one
// BLOCK_M x BLOCK_N tile of C = A @ B with tl::dot, walking K in BLOCK_K steps with an f32
// accumulator carried through the loop. Programs are ordered in groups of GROUP_M block rows so
// that neighbouring programs share blocks of A and B (better L2 reuse on a GPU). Wrapped rows and
// columns, a mask along K and a masked store let M, N and K be any size.
#pragma once

#include <tiledsl/tiledsl.h>

#include <type_traits>

namespace matmul {
namespace tl = tiledsl;

// The parameters of both kernels below, in order.
inline const std::vector<std::string> kMatmulParameters = {
    "a",         "b",         "c",         "M",         "N",       "K",       "stride_am", "stride_ak",
    "stride_bk", "stride_bn", "stride_cm", "stride_cn", "BLOCK_M", "BLOCK_N", "BLOCK_K",   "GROUP_M"};

// T: the inputs' element type; Out: C's (the f32 accumulator is rounded to it as it is stored).
template <class T, class Out = float>
inline tl::Kernel make_matmul_kernel(const char* name) {
  return tl::kernel(
      name, kMatmulParameters,
      [](tl::Ptr<T> a, tl::Ptr<T> b, tl::Ptr<Out> c, tl::Int M, tl::Int N, tl::Int K, tl::Int stride_am,
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
        // As Triton's tutorial states them: with these, the compiler knows the offsets below
        // are non-negative, so that wrapping them (% M, % N) keeps their runs contiguous.
        tl::assume(pid_m >= 0);
        tl::assume(pid_n >= 0);

        auto offs_m = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
        auto offs_n = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
        auto offs_k = tl::arange(0, BLOCK_K);
        // Rows and columns past M and N wrap around (as in Triton's tutorial): every
        // load in the loop is in bounds along them, so only K needs a mask there, and the
        // store below drops what the wrapped rows and columns computed.
        auto offs_am = offs_m % M, offs_bn = offs_n % N;
        auto a_ptrs = a + offs_am(tl::_, tl::newaxis) * stride_am + offs_k(tl::newaxis, tl::_) * stride_ak;
        auto b_ptrs = b + offs_k(tl::_, tl::newaxis) * stride_bk + offs_bn(tl::newaxis, tl::_) * stride_bn;

        auto acc = tl::zeros<float>({BLOCK_M, BLOCK_N});
        tl::range(0, tl::cdiv(K, BLOCK_K), [&](tl::Int kb) {
          // Zero padding past K leaves the dot product of the valid part unchanged.
          auto k_left = K - kb * BLOCK_K;
          auto x = tl::load(a_ptrs, offs_k(tl::newaxis, tl::_) < k_left, 0.0f);
          auto y = tl::load(b_ptrs, offs_k(tl::_, tl::newaxis) < k_left, 0.0f);
          acc = tl::dot(x, y, acc);
          a_ptrs += BLOCK_K * stride_ak;
          b_ptrs += BLOCK_K * stride_bk;
        });
        auto c_ptrs = c + offs_m(tl::_, tl::newaxis) * stride_cm + offs_n(tl::newaxis, tl::_) * stride_cn;
        auto mask_m = offs_m(tl::_, tl::newaxis) < M, mask_n = offs_n(tl::newaxis, tl::_) < N;
        if constexpr (std::is_same_v<Out, float>)
          tl::store(c_ptrs, acc, mask_m & mask_n);
        else
          tl::store(c_ptrs, acc.to<Out>(), mask_m & mask_n);
      });
}

// The same product with a persistent schedule, as Triton's persistent matmul tutorial runs it
// (launch one program per SM, or fewer): program p takes tiles p, p + P, p + 2P, ... (P programs;
// tile t in the grouped order above) and walks all of its tiles' k steps in one flat loop, the
// tile and the k step computed from the loop's index. So the loads of the next tile's first
// steps are issued (software-pipelined, num_stages) while the current tile ends, and the
// accumulator is cleared at each tile's first step (the select below: on wgmma the MMAs' own
// "ignore the accumulator" flag) and stored under an if at its last (the epilogue). Measured on
// an H100 (bench/results/2026-12-07-run95-notes.md) at about 0.64 x the kernel above: every
// iteration recomputes the tile's indices, offsets and addresses from the loop's index (210
// instructions a warp against 95; the divisions by k_tiles and the group width are multiplies
// since codegen's invariant-division rewrite), where the kernel above increments carried pointers.
template <class T, class Out = float>
inline tl::Kernel make_matmul_persistent_kernel(const char* name) {
  return tl::kernel(
      name, kMatmulParameters,
      [](tl::Ptr<T> a, tl::Ptr<T> b, tl::Ptr<Out> c, tl::Int M, tl::Int N, tl::Int K, tl::Int stride_am,
         tl::Int stride_ak, tl::Int stride_bk, tl::Int stride_bn, tl::Int stride_cm, tl::Int stride_cn,
         tl::Constexpr BLOCK_M, tl::Constexpr BLOCK_N, tl::Constexpr BLOCK_K, tl::Constexpr GROUP_M) {
        auto pid = tl::program_id(0), programs = tl::num_programs(0);
        auto num_pid_m = tl::cdiv(M, BLOCK_M), num_pid_n = tl::cdiv(N, BLOCK_N);
        auto k_tiles = tl::cdiv(K, BLOCK_K);
        auto my_tiles = (num_pid_m * num_pid_n - pid + programs - 1) / programs;
        auto num_pid_in_group = GROUP_M * num_pid_n;
        auto offs_k = tl::arange(0, BLOCK_K);
        auto acc = tl::zeros<float>({BLOCK_M, BLOCK_N});
        tl::range(0, my_tiles * k_tiles, [&](tl::Int i) {
          auto tile = pid + (i / k_tiles) * programs;
          auto ki = i % k_tiles;
          auto group_id = tile / num_pid_in_group;
          auto first_pid_m = group_id * GROUP_M;
          auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_M);
          auto pid_m = first_pid_m + (tile % num_pid_in_group) % group_size_m;
          auto pid_n = (tile % num_pid_in_group) / group_size_m;
          tl::assume(pid_m >= 0);
          tl::assume(pid_n >= 0);
          auto offs_m = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
          auto offs_n = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
          auto kk = ki * BLOCK_K + offs_k;
          // Rows past M read row 0 instead (as Triton's persistent tutorial does; their products
          // are never stored): a select per row, where a mask would cost a compare and a select
          // per copy, and a remainder (as above) far more. Columns past N are masked: clamped,
          // they would no longer be known contiguous and b's copies would go element by element.
          auto am = tl::where(offs_m < M, offs_m, 0);
          auto x = tl::load(a + am(tl::_, tl::newaxis) * stride_am + kk(tl::newaxis, tl::_) * stride_ak,
                            kk(tl::newaxis, tl::_) < K, 0.0f);
          auto y = tl::load(b + kk(tl::_, tl::newaxis) * stride_bk + offs_n(tl::newaxis, tl::_) * stride_bn,
                            (kk(tl::_, tl::newaxis) < K) & (offs_n(tl::newaxis, tl::_) < N), 0.0f);
          acc = tl::dot(x, y, tl::where(ki == 0, 0.0f, acc));
          tl::if_(ki == k_tiles - 1, [&] {
            auto c_ptrs = c + offs_m(tl::_, tl::newaxis) * stride_cm + offs_n(tl::newaxis, tl::_) * stride_cn;
            auto mask = (offs_m(tl::_, tl::newaxis) < M) & (offs_n(tl::newaxis, tl::_) < N);
            if constexpr (std::is_same_v<Out, float>)
              tl::store(c_ptrs, acc, mask);
            else
              tl::store(c_ptrs, acc.to<Out>(), mask);
          });
        });
      });
}

inline const tl::Kernel matmul_f32 = make_matmul_kernel<float>("matmul_f32");
inline const tl::Kernel matmul_bf16 = make_matmul_kernel<tl::bf16>("matmul_bf16");
inline const tl::Kernel matmul_bf16_out = make_matmul_kernel<tl::bf16, tl::bf16>("matmul_bf16_out");
// f16 in and out, as Triton's matmul tutorial runs it.
inline const tl::Kernel matmul_f16_out = make_matmul_kernel<tl::f16, tl::f16>("matmul_f16_out");
inline const tl::Kernel matmul_bf16_out_persistent =
    make_matmul_persistent_kernel<tl::bf16, tl::bf16>("matmul_bf16_out_persistent");

}  // namespace matmul
