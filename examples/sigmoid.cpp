// Sigmoid forward and backward as an autograd-style pair: forward computes y = 1 / (1 + exp(-x))
// and saves y; backward turns the upstream gradient dy into dx = dy * y * (1 - y). The gradient is
// checked against the formula and against central finite differences of the forward kernel.
#include <random>

#include "common.h"

namespace tl = tiledsl;

const tl::Kernel sigmoid_fwd = tl::kernel("sigmoid_fwd", {"x", "y", "n", "BLOCK"},
                                          [](tl::Ptr<float> x, tl::Ptr<float> y, tl::Int n, tl::Constexpr BLOCK) {
                                            auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                                            auto mask = offs < n;
                                            tl::store(y + offs, tl::sigmoid(tl::load(x + offs, mask)), mask);
                                          });

const tl::Kernel sigmoid_bwd =
    tl::kernel("sigmoid_bwd", {"y", "dy", "dx", "n", "BLOCK"},
               [](tl::Ptr<float> y, tl::Ptr<float> dy, tl::Ptr<float> dx, tl::Int n, tl::Constexpr BLOCK) {
                 auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                 auto mask = offs < n;
                 auto s = tl::load(y + offs, mask);
                 tl::store(dx + offs, tl::load(dy + offs, mask) * s * (1.0f - s), mask);
               });

// Like torch.autograd.Function: forward keeps what backward needs. That is y, not x: the
// derivative is a function of the output, so backward needs no exp of its own.
struct SigmoidFunction {
  static constexpr int64_t kBlock = 1024;
  tl::Tensor saved_y;

  tl::Tensor forward(const tl::Tensor& x) {
    auto y = tl::Tensor::full(x.shape(), NAN);
    const int n = static_cast<int>(x.numel());
    sigmoid_fwd[tl::grid(tl::cdiv(n, kBlock))](x, y, n, kBlock);
    saved_y = y;
    return y;
  }

  tl::Tensor backward(const tl::Tensor& dy) const {
    auto dx = tl::Tensor::full(dy.shape(), NAN);
    const int n = static_cast<int>(dy.numel());
    sigmoid_bwd[tl::grid(tl::cdiv(n, kBlock))](saved_y, dy, dx, n, kBlock);
    return dx;
  }
};

// The loss whose gradient is checked, sum(w * sigmoid(x)), from the forward kernel, in double.
double loss(const std::vector<float>& x, const std::vector<double>& w) {
  auto y = SigmoidFunction{}.forward(tl::Tensor::from_host(x)).to_double();
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += w[i] * y[i];
  return s;
}

int main() {
  return example::run("sigmoid", [] {
    const int n = 100'003;
    auto x = tl::Tensor::randn({n}, 21), w = tl::Tensor::randn({n}, 22);
    SigmoidFunction fn;
    auto y = fn.forward(x);
    auto dx = fn.backward(w);  // upstream gradient of sum(w * y) is w

    auto xs = x.to_double(), ws = w.to_double(), ys = y.to_double(), dxs = dx.to_double();
    std::vector<double> y_ref(n), dx_ref(n);
    for (int i = 0; i < n; ++i) {
      y_ref[i] = 1 / (1 + std::exp(-xs[i]));
      dx_ref[i] = ws[i] * y_ref[i] * (1 - y_ref[i]);
    }
    // f32 exp and division: a few ulps of y; dx absolute (it is at most |w| / 4).
    const double ref_tol = 1e-6;
    double ref_err = std::max(example::max_rel_error(ys, y_ref), example::max_rel_error(dxs, dx_ref, 1.0));

    // Central differences at a few random positions. The step is large enough that the f32
    // rounding of y (~6e-8) divided by 2h stays small, and small enough that the h^2 term
    // (|sigmoid'''| <= 1/8) does too; both are near 1e-6, well under the tolerance.
    const float h = 1e-2f;
    const double fd_tol = 1e-4;
    auto x_host = x.to_host<float>();
    std::mt19937 rng(23);
    std::uniform_int_distribution<int> pick(0, n - 1);
    std::vector<double> fd, analytic;
    for (int k = 0; k < 8; ++k) {
      int i = pick(rng);
      auto plus = x_host, minus = x_host;
      plus[i] += h;
      minus[i] -= h;
      // The actual f32 step, not h: x + h rounds to the nearest float.
      fd.push_back((loss(plus, ws) - loss(minus, ws)) / (static_cast<double>(plus[i]) - minus[i]));
      analytic.push_back(dxs[i]);
    }
    double fd_err = example::max_rel_error(analytic, fd, 1.0);

    // Two checks of different precision: each error in units of its own tolerance.
    return example::report("sigmoid", std::max(ref_err / ref_tol, fd_err / fd_tol), 1.0);
  });
}
