// The layer-norm kernels of examples/layernorm.cpp, in a header so that the benchmarks (bench/)
// time the same forward kernel and the torch op (examples/torch/layer_norm_op.cpp) runs them all. It has the structure
// of the forward kernel in Triton's layer-norm tutorial: one program per row, three loops over the row in BLOCK-wide
// chunks.
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

// dw and db are sums over every row. Rather than atomics (which serialise the programs, and whose
// float sums depend on the order programs run), each of the GROUPS programs takes rows pid,
// pid + GROUPS, ... and writes its own partial row of dw and db; layer_norm_bwd_dwdb then sums
// the GROUPS partial rows. The result is deterministic. A row fits in one BLOCK here, so xhat and
// w * dy stay in registers between the two row reductions and the dx formula.
inline const tl::Kernel layer_norm_bwd_dx = tl::kernel(
    "layer_norm_bwd_dx",
    {"x", "dy", "dx", "w", "mean", "rstd", "partial_dw", "partial_db", "stride", "m", "n", "GROUPS", "BLOCK"},
    [](tl::Ptr<float> x, tl::Ptr<float> dy, tl::Ptr<float> dx, tl::Ptr<float> w, tl::Ptr<float> mean,
       tl::Ptr<float> rstd, tl::Ptr<float> partial_dw, tl::Ptr<float> partial_db, tl::Int stride, tl::Int m, tl::Int n,
       tl::Constexpr GROUPS, tl::Constexpr BLOCK) {
      auto pid = tl::program_id(0);
      auto cols = tl::arange(0, BLOCK);
      auto mask = cols < n;
      auto w_row = tl::load(w + cols, mask, 0.0f);
      auto dw_acc = tl::zeros<float>({BLOCK}), db_acc = tl::zeros<float>({BLOCK});
      tl::range(pid, m, GROUPS, [&](tl::Int row) {
        auto offs = row * stride + cols;
        auto x_row = tl::load(x + offs, mask, 0.0f), dy_row = tl::load(dy + offs, mask, 0.0f);
        auto row_rstd = tl::load(rstd + row);
        // Masked-off columns must contribute 0 to both row sums below, so xhat is forced to 0 there.
        auto xhat = tl::where(mask, (x_row - tl::load(mean + row)) * row_rstd, 0.0f);
        auto wdy = w_row * dy_row;
        auto c1 = tl::sum(xhat * wdy, 0) / n.to<float>();
        auto c2 = tl::sum(wdy, 0) / n.to<float>();
        tl::store(dx + offs, (wdy - (xhat * c1 + c2)) * row_rstd, mask);
        dw_acc += dy_row * xhat;
        db_acc += dy_row;
      });
      tl::store(partial_dw + pid * n + cols, dw_acc, mask);
      tl::store(partial_db + pid * n + cols, db_acc, mask);
    });

// Sums the partial rows: one program per BLOCK columns.
inline const tl::Kernel layer_norm_bwd_dwdb =
    tl::kernel("layer_norm_bwd_dwdb", {"partial_dw", "partial_db", "dw", "db", "groups", "n", "BLOCK"},
               [](tl::Ptr<float> partial_dw, tl::Ptr<float> partial_db, tl::Ptr<float> dw, tl::Ptr<float> db,
                  tl::Int groups, tl::Int n, tl::Constexpr BLOCK) {
                 auto cols = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                 auto mask = cols < n;
                 auto dw_acc = tl::zeros<float>({BLOCK}), db_acc = tl::zeros<float>({BLOCK});
                 tl::range(0, groups, [&](tl::Int g) {
                   dw_acc += tl::load(partial_dw + g * n + cols, mask, 0.0f);
                   db_acc += tl::load(partial_db + g * n + cols, mask, 0.0f);
                 });
                 tl::store(dw + cols, dw_acc, mask);
                 tl::store(db + cols, db_acc, mask);
               });

}  // namespace layernorm
