// The fused layer norm of examples/layernorm.cpp as PyTorch custom operators with autograd:
// torch.ops.tiledsl_examples.layer_norm(x, weight, bias, eps) over the last dimension, with
// layer_norm_fwd (y and each row's mean and 1/std, which backward reuses) and layer_norm_bwd
// (dx, dweight, dbias) as ops of their own, each with CPU, CUDA and Meta kernels. The kernels are
// f32 (the rows of the backward kernel fit in one tile: up to a few thousand columns). The
// pattern of torch_op.h's def_unary_op, written out for three inputs and a saved mean and rstd.
#include <tiledsl/torch_op.h>

#include "../layernorm_kernel.h"

namespace tl = tiledsl;

namespace {
using Triple = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

void check_inputs(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  TORCH_CHECK(x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat && bias.scalar_type() == at::kFloat,
              "tiledsl_examples::layer_norm: float32 tensors");
  TORCH_CHECK(x.dim() >= 1 && weight.dim() == 1 && bias.dim() == 1 && weight.size(0) == x.size(-1) &&
                  bias.size(0) == x.size(-1),
              "tiledsl_examples::layer_norm: weight and bias are 1-D, of x's last dimension");
  TORCH_CHECK(x.size(-1) <= 8192, "tiledsl_examples::layer_norm: rows of at most 8192 columns");
}

Triple layer_norm_forward(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  check_inputs(input, weight, bias);
  const int64_t n = input.size(-1);
  const at::Tensor x = input.contiguous().reshape({-1, n}), w = weight.contiguous(), b = bias.contiguous();
  const int64_t m = x.size(0);
  at::Tensor y = at::empty_like(x), mean = at::empty({m}, x.options()), rstd = at::empty({m}, x.options());
  if (m > 0 && n > 0)
    layernorm::layer_norm_fwd[tl::grid(m)].options({.stream = tl::torch::current_stream(x)})(
        tl::torch::from_tensor(x), tl::torch::from_tensor(y), tl::torch::from_tensor(w), tl::torch::from_tensor(b),
        tl::torch::from_tensor(mean), tl::torch::from_tensor(rstd), static_cast<int>(n), static_cast<int>(n),
        static_cast<float>(eps), 256);
  return {y.view(input.sizes()), mean, rstd};
}

// dx row by row; dweight and dbias as sums over the rows, first per group of rows, then over the
// groups (deterministic: no atomics).
Triple layer_norm_backward(const at::Tensor& grad, const at::Tensor& input, const at::Tensor& weight,
                           const at::Tensor& mean, const at::Tensor& rstd) {
  const int64_t n = input.size(-1);
  const at::Tensor x = input.contiguous().reshape({-1, n}), dy = grad.contiguous().reshape({-1, n});
  const at::Tensor w = weight.contiguous();
  const int64_t m = x.size(0), groups = std::max<int64_t>(1, std::min<int64_t>(32, m));
  at::Tensor dx = at::empty_like(x), dw = at::zeros_like(w), db = at::zeros_like(w);
  if (m > 0 && n > 0) {
    at::Tensor partial_dw = at::empty({groups, n}, x.options()), partial_db = at::empty({groups, n}, x.options());
    void* stream = tl::torch::current_stream(x);
    layernorm::layer_norm_bwd_dx[tl::grid(groups)].options({.stream = stream})(
        tl::torch::from_tensor(x), tl::torch::from_tensor(dy), tl::torch::from_tensor(dx), tl::torch::from_tensor(w),
        tl::torch::from_tensor(mean), tl::torch::from_tensor(rstd), tl::torch::from_tensor(partial_dw),
        tl::torch::from_tensor(partial_db), static_cast<int>(n), static_cast<int>(m), static_cast<int>(n), groups,
        next_pow2(n));
    layernorm::layer_norm_bwd_dwdb[tl::grid(tl::cdiv(n, 128))].options({.stream = stream})(
        tl::torch::from_tensor(partial_dw), tl::torch::from_tensor(partial_db), tl::torch::from_tensor(dw),
        tl::torch::from_tensor(db), static_cast<int>(groups), static_cast<int>(n), 128);
  }
  return {dx.view(input.sizes()), dw, db};
}

struct LayerNormGrad : ::torch::autograd::Function<LayerNormGrad> {
  static at::Tensor forward(::torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias, double eps) {
    at::AutoDispatchBelowADInplaceOrView below;
    auto [y, mean, rstd] =
        tl::torch::detail::op<Triple(const at::Tensor&, const at::Tensor&, const at::Tensor&, double)>(
            "tiledsl_examples::layer_norm_fwd")
            .call(x, weight, bias, eps);
    ctx->save_for_backward({x, weight, mean, rstd});
    return y;
  }
  static ::torch::autograd::tensor_list backward(::torch::autograd::AutogradContext* ctx,
                                                 ::torch::autograd::tensor_list grads) {
    auto s = ctx->get_saved_variables();
    auto [dx, dw, db] =
        tl::torch::detail::op<Triple(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                     const at::Tensor&)>("tiledsl_examples::layer_norm_bwd")
            .call(grads[0], s[0], s[1], s[2], s[3]);
    return {dx, dw, db, at::Tensor()};
  }
};

at::Tensor layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  return std::get<0>(layer_norm_forward(x, weight, bias, eps));
}

Triple forward_meta(const at::Tensor& x, const at::Tensor& weight, const at::Tensor&, double) {
  const int64_t m = x.size(-1) ? x.numel() / x.size(-1) : 0;
  return {at::empty_like(x), at::empty({m}, x.options()), at::empty({m}, x.options().dtype(weight.scalar_type()))};
}
Triple backward_meta(const at::Tensor&, const at::Tensor& x, const at::Tensor& weight, const at::Tensor&,
                     const at::Tensor&) {
  return {at::empty_like(x), at::empty_like(weight), at::empty_like(weight)};
}
}  // namespace

TORCH_LIBRARY_FRAGMENT(tiledsl_examples, m) {
  m.def("layer_norm(Tensor x, Tensor weight, Tensor bias, float eps) -> Tensor");
  m.def("layer_norm_fwd(Tensor x, Tensor weight, Tensor bias, float eps) -> (Tensor, Tensor, Tensor)");
  m.def("layer_norm_bwd(Tensor dy, Tensor x, Tensor weight, Tensor mean, Tensor rstd) -> (Tensor, Tensor, Tensor)");
  for (c10::DispatchKey key : {c10::DispatchKey::CPU, c10::DispatchKey::CUDA}) {
    m.impl("layer_norm", ::torch::dispatch(key, layer_norm));
    m.impl("layer_norm_fwd", ::torch::dispatch(key, layer_norm_forward));
    m.impl("layer_norm_bwd", ::torch::dispatch(key, layer_norm_backward));
  }
  m.impl("layer_norm",
         ::torch::dispatch(c10::DispatchKey::Meta, [](const at::Tensor& x, const at::Tensor&, const at::Tensor&,
                                                      double) { return at::empty_like(x); }));
  m.impl("layer_norm_fwd", ::torch::dispatch(c10::DispatchKey::Meta, forward_meta));
  m.impl("layer_norm_bwd", ::torch::dispatch(c10::DispatchKey::Meta, backward_meta));
  m.impl("layer_norm", ::torch::dispatch(c10::DispatchKey::Autograd,
                                         [](const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                            double eps) { return LayerNormGrad::apply(x, weight, bias, eps); }));
}
