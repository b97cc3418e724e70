// Layer norm, forward and backward. Forward (in layernorm_kernel.h, shared with the benchmarks):
// one program per row computes the row's mean and reciprocal standard deviation in column chunks,
// stores them for the backward pass, and writes y = (x - mean) * rstd * w + b. Backward: dx per
// row, and dw, db summed over all rows.
#include "common.h"
#include "layernorm_kernel.h"

namespace tl = tiledsl;

int main() {
  return example::run("layernorm", [] {
    const int m = 937, n = 1151;  // n spans several forward chunks, the last one partial
    const float eps = 1e-5f;
    const int64_t fwd_block = 256, bwd_block = example::next_power_of_2(n), groups = 32, dwdb_block = 128;
    auto x = tl::Tensor::randn({m, n}, 11), w = tl::Tensor::randn({n}, 12), b = tl::Tensor::randn({n}, 13);
    auto dy = tl::Tensor::randn({m, n}, 14);
    auto y = tl::Tensor::full({m, n}, NAN), mean = tl::Tensor::full({m}, NAN), rstd = tl::Tensor::full({m}, NAN);
    auto dx = tl::Tensor::full({m, n}, NAN), dw = tl::Tensor::full({n}, NAN), db = tl::Tensor::full({n}, NAN);
    auto partial_dw = tl::Tensor::full({groups, n}, NAN), partial_db = tl::Tensor::full({groups, n}, NAN);
    const int stride = static_cast<int>(x.stride(0));

    layernorm::layer_norm_fwd[tl::grid(m)](x, y, w, b, mean, rstd, stride, n, eps, fwd_block);
    layernorm::layer_norm_bwd_dx[tl::grid(groups)](x, dy, dx, w, mean, rstd, partial_dw, partial_db, stride, m, n,
                                                   groups, bwd_block);
    layernorm::layer_norm_bwd_dwdb[tl::grid(tl::cdiv(n, dwdb_block))](partial_dw, partial_db, dw, db,
                                                                      static_cast<int>(groups), n, dwdb_block);

    // The reference, in double from the same f32 inputs; backward by the analytic formula.
    auto xs = x.to_double(), ws = w.to_double(), bs = b.to_double(), dys = dy.to_double();
    std::vector<double> y_ref(xs.size()), dx_ref(xs.size()), mean_ref(m), rstd_ref(m), dw_ref(n, 0.0), db_ref(n, 0.0);
    std::vector<double> xhat(n), wdy(n);
    for (int r = 0; r < m; ++r) {
      const size_t base = static_cast<size_t>(r) * n;
      double mu = 0, var = 0;
      for (int c = 0; c < n; ++c) mu += xs[base + c];
      mu /= n;
      for (int c = 0; c < n; ++c) var += (xs[base + c] - mu) * (xs[base + c] - mu);
      const double rs = 1 / std::sqrt(var / n + eps);
      mean_ref[r] = mu;
      rstd_ref[r] = rs;
      double c1 = 0, c2 = 0;
      for (int c = 0; c < n; ++c) {
        xhat[c] = (xs[base + c] - mu) * rs;
        wdy[c] = ws[c] * dys[base + c];
        y_ref[base + c] = xhat[c] * ws[c] + bs[c];
        c1 += xhat[c] * wdy[c];
        c2 += wdy[c];
        dw_ref[c] += dys[base + c] * xhat[c];
        db_ref[c] += dys[base + c];
      }
      c1 /= n;
      c2 /= n;
      for (int c = 0; c < n; ++c) dx_ref[base + c] = (wdy[c] - (xhat[c] * c1 + c2)) * rs;
    }
    // Relative error, absolute below magnitude 1. dw and db are sums of m terms of either sign whose
    // partial sums reach about sqrt(m), so their rounding error is measured against that size.
    const double sum_scale = std::sqrt(static_cast<double>(m));
    double err = 0;
    for (double e :
         {example::max_rel_error(y.to_double(), y_ref, 1.0), example::max_rel_error(mean.to_double(), mean_ref, 1.0),
          example::max_rel_error(rstd.to_double(), rstd_ref, 1.0), example::max_rel_error(dx.to_double(), dx_ref, 1.0),
          example::max_rel_error(dw.to_double(), dw_ref, sum_scale),
          example::max_rel_error(db.to_double(), db_ref, sum_scale)})
      err = std::max(err, e);
    return example::report("layernorm", err, 1e-5);
  });
}
