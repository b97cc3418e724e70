// The sigmoid of examples/sigmoid.cpp as a PyTorch custom operator with autograd:
// torch.ops.tiledsl_examples.sigmoid(x), its backward tiledsl_examples.sigmoid_backward, on CPU
// tensors (the interpreter) and CUDA tensors (their GPU, on torch's current stream), in f32 and
// f64 (so that torch.autograd.gradcheck can run in double). Built as a shared library: link it
// from C++, or torch.ops.load_library(path) from Python (test/torch/test_torch_ops.py).
#include <tiledsl/torch_op.h>

namespace tl = tiledsl;

namespace {
template <class T>
const tl::Kernel& sigmoid_forward_kernel() {
  static const tl::Kernel k = tl::kernel(
      "torch_sigmoid_fwd", {"x", "y", "n", "BLOCK"}, [](tl::Ptr<T> x, tl::Ptr<T> y, tl::Int64 n, tl::Constexpr BLOCK) {
        auto offs = tl::program_id(0).template to<int64_t>() * BLOCK + tl::arange(0, BLOCK);
        auto mask = offs < n;
        tl::store(y + offs, tl::sigmoid(tl::load(x + offs, mask)), mask);
      });
  return k;
}

// dx = dy * y * (1 - y): a function of the output only.
template <class T>
const tl::Kernel& sigmoid_backward_kernel() {
  static const tl::Kernel k =
      tl::kernel("torch_sigmoid_bwd", {"dy", "y", "dx", "n", "BLOCK"},
                 [](tl::Ptr<T> dy, tl::Ptr<T> y, tl::Ptr<T> dx, tl::Int64 n, tl::Constexpr BLOCK) {
                   auto offs = tl::program_id(0).template to<int64_t>() * BLOCK + tl::arange(0, BLOCK);
                   auto mask = offs < n;
                   auto s = tl::load(y + offs, mask);
                   tl::store(dx + offs, tl::load(dy + offs, mask) * s * (T(1) - s), mask);
                 });
  return k;
}

constexpr int64_t kBlock = 1024;

void check_float(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble, "tiledsl_examples::", what,
              ": float32 or float64 tensors, got ", t.scalar_type());
}

at::Tensor sigmoid_forward(const at::Tensor& input) {
  check_float(input, "sigmoid");
  const at::Tensor x = input.contiguous();
  at::Tensor y = at::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) return y;
  const auto& k = x.scalar_type() == at::kFloat ? sigmoid_forward_kernel<float>() : sigmoid_forward_kernel<double>();
  k[tl::grid(tl::cdiv(n, kBlock))].options({.stream = tl::torch::current_stream(x)})(
      tl::torch::from_tensor(x), tl::torch::from_tensor(y), n, kBlock);
  return y;
}

at::Tensor sigmoid_backward(const at::Tensor& dy_in, const at::Tensor& /*x*/, const at::Tensor& y_in) {
  check_float(dy_in, "sigmoid_backward");
  TORCH_CHECK(dy_in.sizes() == y_in.sizes() && dy_in.scalar_type() == y_in.scalar_type(),
              "tiledsl_examples::sigmoid_backward: dy and y differ in shape or dtype");
  const at::Tensor dy = dy_in.contiguous(), y = y_in.contiguous();
  at::Tensor dx = at::empty_like(y);
  const int64_t n = y.numel();
  if (n == 0) return dx;
  const auto& k = y.scalar_type() == at::kFloat ? sigmoid_backward_kernel<float>() : sigmoid_backward_kernel<double>();
  k[tl::grid(tl::cdiv(n, kBlock))].options({.stream = tl::torch::current_stream(y)})(
      tl::torch::from_tensor(dy), tl::torch::from_tensor(y), tl::torch::from_tensor(dx), n, kBlock);
  return dx;
}
}  // namespace

TORCH_LIBRARY(tiledsl_examples, m) {
  tl::torch::def_unary_op(m, "tiledsl_examples", "sigmoid", sigmoid_forward, sigmoid_backward);
}
