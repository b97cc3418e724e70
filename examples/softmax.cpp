// Fused row softmax (the kernel is in softmax_kernel.h, shared with the benchmarks), checked
// against a double-precision softmax on rows that do not fill the block.
#include "common.h"
#include "softmax_kernel.h"

namespace tl = tiledsl;
using softmax::softmax_kernel;

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
