// Vector addition: the smallest tiledsl kernel. Each program adds one block of BLOCK elements;
// the mask keeps the last, partial block inside the arrays.
#include "common.h"

namespace tl = tiledsl;

const tl::Kernel add_kernel =
    tl::kernel("add_kernel", {"x", "y", "out", "n", "BLOCK"},
               [](tl::Ptr<float> x, tl::Ptr<float> y, tl::Ptr<float> out, tl::Int n, tl::Constexpr BLOCK) {
                 auto pid = tl::program_id(0);
                 auto offs = pid * BLOCK + tl::arange(0, BLOCK);
                 auto mask = offs < n;
                 tl::store(out + offs, tl::load(x + offs, mask) + tl::load(y + offs, mask), mask);
               });

int main() {
  return example::run("add", [] {
    const int n = 98'437;  // not a multiple of the block: the mask matters
    auto x = tl::Tensor::randn({n}, 1), y = tl::Tensor::randn({n}, 2), out = tl::Tensor::full({n}, NAN);
    add_kernel[tl::grid([&](const tl::Meta& m) { return tl::cdiv(n, m["BLOCK"]); })](x, y, out, n, 1024);
    auto xs = x.to_double(), ys = y.to_double();
    std::vector<double> want(n);
    for (int i = 0; i < n; ++i) want[i] = static_cast<float>(xs[i]) + static_cast<float>(ys[i]);
    return example::report("add", example::max_abs_error(out.to_double(), want), 0.0);
  });
}
