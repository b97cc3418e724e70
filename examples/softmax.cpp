// Fused row softmax: one program per row loads the whole row into one tile, subtracts the row max
// (for stability), exponentiates, normalises and stores, so each element is read and written once.
#include "common.h"

namespace tl = tiledsl;

const tl::Kernel softmax_kernel = tl::kernel(
    "softmax_kernel", {"out", "in", "in_row_stride", "out_row_stride", "n_cols", "BLOCK"},
    [](tl::Ptr<float> out, tl::Ptr<float> in, tl::Int in_row_stride, tl::Int out_row_stride, tl::Int n_cols,
       tl::Constexpr BLOCK) {
      auto row = tl::program_id(0);
      auto cols = tl::arange(0, BLOCK);
      auto mask = cols < n_cols;
      // -inf in the padding columns: they do not change the max and exp(-inf) adds 0 to the sum.
      auto x = tl::load(in + row * in_row_stride + cols, mask, -INFINITY);
      auto num = tl::exp(x - tl::max(x, 0));
      tl::store(out + row * out_row_stride + cols, num / tl::sum(num, 0), mask);
    });

int main() {
  return example::run("softmax", [] {
    const int rows = 1823, cols = 781;  // the columns do not fill the block: the padding must not leak in
    auto x = tl::Tensor::randn({rows, cols}, 3), y = tl::Tensor::full({rows, cols}, NAN);
    const int64_t block = example::next_power_of_2(cols);
    softmax_kernel[tl::grid(rows)](y, x, static_cast<int>(x.stride(0)), static_cast<int>(y.stride(0)), cols, block);

    auto xs = x.to_double();
    std::vector<double> want(xs.size());
    for (int r = 0; r < rows; ++r) {
      const double* xr = &xs[static_cast<size_t>(r) * cols];
      double m = *std::max_element(xr, xr + cols), s = 0;
      for (int c = 0; c < cols; ++c) s += std::exp(xr[c] - m);
      for (int c = 0; c < cols; ++c) want[static_cast<size_t>(r) * cols + c] = std::exp(xr[c] - m) / s;
    }
    // f32 exp and a 781-term f32 sum: a few ulps of relative error per element.
    return example::report("softmax", example::max_rel_error(y.to_double(), want), 2e-6);
  });
}
