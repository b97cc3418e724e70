// tiledsl::torch from C++ (LibTorch): views of torch tensors, and the sigmoid custom op of
// examples/torch/sigmoid_op.cpp (compiled into this test) through torch's dispatcher, with
// autograd. On CPU tensors the kernels run on the interpreter; where torch sees a GPU, on it too.
#define CATCH_CONFIG_MAIN
#include <ATen/ATen.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "tiledsl/torch.h"

namespace tl = tiledsl;

namespace {
// out[i, j] = 2 * x[i, j] + 1 through both tensors' strides.
const tl::Kernel& affine() {
  static const tl::Kernel k =
      tl::kernel("torch_affine", {"x", "out", "M", "N", "sxm", "sxn", "som", "son", "BLOCK"},
                 [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int M, tl::Int N, tl::Int sxm, tl::Int sxn, tl::Int som,
                    tl::Int son, tl::Constexpr BLOCK) {
                   auto r = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK), c = tl::arange(0, BLOCK);
                   auto mask = (r(tl::_, tl::newaxis) < M) & (c(tl::newaxis, tl::_) < N);
                   auto v = tl::load(x + r(tl::_, tl::newaxis) * sxm + c(tl::newaxis, tl::_) * sxn, mask);
                   tl::store(out + r(tl::_, tl::newaxis) * som + c(tl::newaxis, tl::_) * son, v * 2.0f + 1.0f, mask);
                 });
  return k;
}

std::vector<at::Device> devices() {
  std::vector<at::Device> d{at::kCPU};
  if (torch::cuda::is_available()) d.emplace_back(at::kCUDA, 0);
  return d;
}

c10::TypedOperatorHandle<at::Tensor(const at::Tensor&)> sigmoid_op() {
  return c10::Dispatcher::singleton()
      .findSchemaOrThrow("tiledsl_examples::sigmoid", "")
      .typed<at::Tensor(const at::Tensor&)>();
}
}  // namespace

TEST_CASE("from_tensor: a strided torch tensor is a view a kernel reads and writes in place") {
  for (const at::Device& dev : devices()) {
    INFO(dev.str());
    at::Tensor base = torch::randn({37, 53}, torch::TensorOptions().device(dev));
    at::Tensor x = base.t();  // 53 x 37, strides (1, 53)
    at::Tensor out = torch::full({53, 64}, -7.0f, torch::TensorOptions().device(dev)).narrow(1, 5, 37);
    tl::Tensor tx = tl::torch::from_tensor(x), tout = tl::torch::from_tensor(out);
    CHECK(tx.data_ptr() == x.data_ptr());
    CHECK(tx.shape() == std::vector<int64_t>{53, 37});
    CHECK(tx.strides() == std::vector<int64_t>{1, 53});
    CHECK(tx.device() == (dev.is_cpu() ? tl::Device::cpu : tl::Device::cuda(0)));
    affine()[tl::grid(tl::cdiv(53, 64))].options({.stream = tl::torch::current_stream(x)})(
        tx, tout, 53, 37, 1, 53, static_cast<int>(out.stride(0)), 1, 64);
    if (dev.is_cuda()) torch::cuda::synchronize();
    CHECK(torch::equal(out.cpu(), (x * 2 + 1).cpu()));
  }
}

TEST_CASE("from_tensor: the view keeps torch's storage alive; dtypes map both ways; unknown ones are errors") {
  tl::Tensor view;
  {
    at::Tensor t = torch::arange(1000, torch::kInt32);
    view = tl::torch::from_tensor(t);
  }  // the torch tensor is gone; its storage is not
  CHECK(view.to_host<int32_t>()[999] == 999);
  for (auto [st, d] : std::vector<std::pair<at::ScalarType, tl::DType>>{{at::kFloat, tl::DType::f32},
                                                                        {at::kBFloat16, tl::DType::bf16},
                                                                        {at::kHalf, tl::DType::f16},
                                                                        {at::kLong, tl::DType::i64},
                                                                        {at::kByte, tl::DType::u8},
                                                                        {at::kBool, tl::DType::i1}}) {
    CHECK(tl::torch::dtype_of(torch::zeros({2}, st)) == d);
    CHECK(tl::torch::scalar_type(d) == st);
  }
  CHECK_THROWS_WITH(tl::torch::from_tensor(torch::zeros({2}, at::kComplexFloat)),
                    Catch::Contains("no tiledsl dtype for torch's ComplexFloat"));
  CHECK_THROWS_WITH(tl::torch::from_tensor(at::Tensor()), Catch::Contains("an undefined tensor"));
}

TEST_CASE("the sigmoid custom op: forward and gradient against torch's, f32 and f64, odd sizes") {
  for (const at::Device& dev : devices())
    for (auto dtype : {at::kFloat, at::kDouble}) {
      INFO(dev.str() << " " << c10::toString(dtype));
      at::Tensor x = (torch::randn({3, 1001}, torch::TensorOptions().dtype(dtype).device(dev)) * 4).requires_grad_();
      at::Tensor w = torch::randn({3, 1001}, torch::TensorOptions().dtype(dtype).device(dev));
      at::Tensor y = sigmoid_op().call(x);
      (y * w).sum().backward();
      at::Tensor x_ref = x.detach().clone().requires_grad_();
      at::Tensor y_ref = torch::sigmoid(x_ref);
      (y_ref * w).sum().backward();
      const double tol = dtype == at::kFloat ? 1e-6 : 1e-14;
      CHECK(torch::allclose(y, y_ref, tol, tol));
      CHECK(torch::allclose(x.grad(), x_ref.grad(), tol, tol));
    }
}
