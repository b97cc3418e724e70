// One fused Adam step (torch.optim.Adam without weight decay): each program reads a block of
// parameters, gradients and both moment estimates once, updates the moments and the parameters
// in place, and writes them back once; eager code would make a pass over memory per operation.
#include "common.h"

namespace tl = tiledsl;

const tl::Kernel adam_step = tl::kernel(
    "adam_step", {"params", "grads", "exp_avg", "exp_avg_sq", "n", "lr", "beta1", "beta2", "eps", "step", "BLOCK"},
    [](tl::Ptr<float> params, tl::Ptr<float> grads, tl::Ptr<float> exp_avg, tl::Ptr<float> exp_avg_sq, tl::Int n,
       tl::Float lr, tl::Float beta1, tl::Float beta2, tl::Float eps, tl::Int step, tl::Constexpr BLOCK) {
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      auto g = tl::load(grads + offs, mask);
      auto m = beta1 * tl::load(exp_avg + offs, mask) + (1.0f - beta1) * g;
      auto v = beta2 * tl::load(exp_avg_sq + offs, mask) + (1.0f - beta2) * g * g;
      // Bias corrections 1 - beta^step, as exp(step * log(beta)): there is no pow, and a runtime
      // step (rather than a constexpr) keeps one traced kernel for every step.
      auto t = step.to<float>();
      auto bias1 = 1.0f - tl::exp(t * tl::log(beta1));
      auto bias2 = 1.0f - tl::exp(t * tl::log(beta2));
      // torch's order of operations: p -= (lr / bias1) * m / (sqrt(v) / sqrt(bias2) + eps).
      auto denom = tl::sqrt(v) / tl::sqrt(bias2) + eps;
      tl::store(params + offs, tl::load(params + offs, mask) - (lr / bias1) * m / denom, mask);
      tl::store(exp_avg + offs, m, mask);
      tl::store(exp_avg_sq + offs, v, mask);
    });

// A host vector of floats from a seeded random tensor, scaled and shifted.
std::vector<float> random_floats(int n, uint64_t seed, bool normal, float scale, float shift) {
  auto t = normal ? tl::Tensor::randn({n}, seed) : tl::Tensor::rand({n}, seed);
  auto v = t.to_host<float>();
  for (float& x : v) x = x * scale + shift;
  return v;
}

int main() {
  return example::run("adam", [] {
    const int n = 123'457;
    const int64_t block = 1024;
    const float lr = 3e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
    // Resumed from a checkpoint after `first_step - 1` steps, so the moments start non-zero and
    // the bias corrections are still far from 1.
    const int first_step = 4, steps = 6;
    auto p_host = random_floats(n, 31, true, 1.0f, 0.0f);
    auto m_host = random_floats(n, 32, true, 0.1f, 0.0f);
    auto v_host = random_floats(n, 33, false, 0.05f, 1e-3f);
    auto params = tl::Tensor::from_host(p_host), exp_avg = tl::Tensor::from_host(m_host);
    auto exp_avg_sq = tl::Tensor::from_host(v_host);
    std::vector<double> p_ref(p_host.begin(), p_host.end()), m_ref(m_host.begin(), m_host.end());
    std::vector<double> v_ref(v_host.begin(), v_host.end());

    for (int step = first_step; step < first_step + steps; ++step) {
      auto grads = tl::Tensor::randn({n}, 100 + static_cast<uint64_t>(step));
      adam_step[tl::grid(tl::cdiv(n, block))](params, grads, exp_avg, exp_avg_sq, n, lr, beta1, beta2, eps, step,
                                              block);
      // The reference in double, from the f32 hyperparameters the kernel sees.
      auto gs = grads.to_double();
      const double b1 = beta1, b2 = beta2;
      const double bias1 = 1 - std::pow(b1, step), bias2 = 1 - std::pow(b2, step);
      for (int i = 0; i < n; ++i) {
        m_ref[i] = b1 * m_ref[i] + (1 - b1) * gs[i];
        v_ref[i] = b2 * v_ref[i] + (1 - b2) * gs[i] * gs[i];
        p_ref[i] -= static_cast<double>(lr) / bias1 * m_ref[i] / (std::sqrt(v_ref[i]) / std::sqrt(bias2) + eps);
      }
    }
    // Relative errors (absolute below 1 for the parameters and the first moment, which change
    // sign). Each step rounds to f32 and 1 - beta2^step loses digits in f32, so a few 1e-7.
    double err = std::max({example::max_rel_error(params.to_double(), p_ref, 1.0),
                           example::max_rel_error(exp_avg.to_double(), m_ref, 1.0),
                           example::max_rel_error(exp_avg_sq.to_double(), v_ref)});
    return example::report("adam", err, 2e-6);
  });
}
