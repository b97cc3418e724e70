// The forward layer-norm kernel of examples/layernorm.cpp, in a header so that the benchmarks
// (bench/) time the same kernel. It has the structure of the forward kernel in Triton's layer-norm
// tutorial: one program per row, three loops over the row in BLOCK-wide chunks.
#pragma once

#include <tiledsl/tiledsl.h>

namespace layernorm {
namespace tl = tiledsl;

// The row may be longer than BLOCK: three passes over it in BLOCK-wide chunks (sum, squared
// deviations, output), so the tile size does not grow with the row.
inline const tl::Kernel layer_norm_fwd =
    tl::kernel("layer_norm_fwd", {"x", "y", "w", "b", "mean", "rstd", "stride", "n", "eps", "BLOCK"},
               [](tl::Ptr<float> x, tl::Ptr<float> y, tl::Ptr<float> w, tl::Ptr<float> b, tl::Ptr<float> mean_out,
                  tl::Ptr<float> rstd_out, tl::Int stride, tl::Int n, tl::Float eps, tl::Constexpr BLOCK) {
                 auto row = tl::program_id(0);
                 auto x_row = x + row * stride, y_row = y + row * stride;
                 auto acc = tl::zeros<float>({BLOCK});
                 tl::range(0, n, BLOCK, [&](tl::Int off) {
                   auto cols = off + tl::arange(0, BLOCK);
                   acc += tl::load(x_row + cols, cols < n, 0.0f);
                 });
                 auto mean = tl::sum(acc, 0) / n.to<float>();
                 // Two-pass variance: sum((x - mean)^2) does not cancel catastrophically like E[x^2] - mean^2.
                 auto acc_sq = tl::zeros<float>({BLOCK});
                 tl::range(0, n, BLOCK, [&](tl::Int off) {
                   auto cols = off + tl::arange(0, BLOCK);
                   auto mask = cols < n;
                   auto d = tl::where(mask, tl::load(x_row + cols, mask, 0.0f) - mean, 0.0f);
                   acc_sq += d * d;
                 });
                 auto rstd = tl::rsqrt(tl::sum(acc_sq, 0) / n.to<float>() + eps);
                 tl::store(mean_out + row, mean);
                 tl::store(rstd_out + row, rstd);
                 tl::range(0, n, BLOCK, [&](tl::Int off) {
                   auto cols = off + tl::arange(0, BLOCK);
                   auto mask = cols < n;
                   auto xhat = (tl::load(x_row + cols, mask) - mean) * rstd;
                   tl::store(y_row + cols, xhat * tl::load(w + cols, mask) + tl::load(b + cols, mask), mask);
                 });
               });

}  // namespace layernorm
