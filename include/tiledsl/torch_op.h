// Registering tiledsl kernels as PyTorch custom operators with autograd (tiledsl::torch).
//
//   at::Tensor sigmoid_fwd(const at::Tensor& x);                       // launches tiledsl kernels
//   at::Tensor sigmoid_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& y);
//   TORCH_LIBRARY(my_ops, m) { tl::torch::def_unary_op(m, "my_ops", "sigmoid", sigmoid_fwd, sigmoid_bwd); }
//
// defines torch.ops.my_ops.sigmoid(Tensor x) -> Tensor and my_ops.sigmoid_backward(Tensor dy,
// Tensor x, Tensor y) -> Tensor, each with a CPU and a CUDA kernel (the same function: tiledsl
// picks the interpreter or the GPU from the tensors), a Meta kernel (shape and dtype only, for
// torch.compile's fake tensors: the op stays opaque to it), and autograd on the first: dx =
// backward(dy, x, y), through the dispatcher, so that torch.compile and torch.jit.script see the
// two ops. The shared library is loaded from C++ by linking it, from Python with
// torch.ops.load_library(path).
#pragma once

#include <torch/autograd.h>
#include <torch/library.h>

#include <string>

#include "tiledsl/torch.h"

namespace tiledsl::torch {

using UnaryForward = at::Tensor (*)(const at::Tensor& x);
using UnaryBackward = at::Tensor (*)(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& y);

namespace detail {
// The op `qualified` (ns::name) with the signature of `F`, from the dispatcher (a lookup per call
// of the autograd kernel, whose op names are data: one hash-map find, beside a kernel launch).
template <class F>
c10::TypedOperatorHandle<F> op(const std::string& qualified) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(qualified.c_str(), "").typed<F>();
}

struct UnaryGrad : ::torch::autograd::Function<UnaryGrad> {
  static at::Tensor forward(::torch::autograd::AutogradContext* ctx, const at::Tensor& x, const std::string& fwd,
                            const std::string& bwd) {
    at::AutoDispatchBelowADInplaceOrView below;
    at::Tensor y = op<at::Tensor(const at::Tensor&)>(fwd).call(x);
    ctx->save_for_backward({x, y});
    ctx->saved_data["backward"] = bwd;
    return y;
  }
  static ::torch::autograd::tensor_list backward(::torch::autograd::AutogradContext* ctx,
                                                 ::torch::autograd::tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    const std::string bwd = ctx->saved_data["backward"].toStringRef();
    at::Tensor dy = grads[0].contiguous();
    at::Tensor dx =
        op<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>(bwd).call(dy, saved[0], saved[1]);
    return {dx, at::Tensor(), at::Tensor()};
  }
};
}  // namespace detail

// Defines ns::name and ns::name_backward in `m` (the TORCH_LIBRARY block of namespace `ns`), as
// the header's comment says.
inline void def_unary_op(::torch::Library& m, const std::string& ns, const std::string& name, UnaryForward forward,
                         UnaryBackward backward) {
  const std::string bwd = name + "_backward";
  m.def((name + "(Tensor x) -> Tensor").c_str());
  m.def((bwd + "(Tensor dy, Tensor x, Tensor y) -> Tensor").c_str());
  for (c10::DispatchKey key : {c10::DispatchKey::CPU, c10::DispatchKey::CUDA}) {
    m.impl(name.c_str(), ::torch::dispatch(key, forward));
    m.impl(bwd.c_str(), ::torch::dispatch(key, backward));
  }
  m.impl(name.c_str(),
         ::torch::dispatch(c10::DispatchKey::Meta, [](const at::Tensor& x) { return at::empty_like(x); }));
  m.impl(bwd.c_str(), ::torch::dispatch(c10::DispatchKey::Meta, [](const at::Tensor&, const at::Tensor& x,
                                                                   const at::Tensor&) { return at::empty_like(x); }));
  m.impl(name.c_str(), ::torch::dispatch(c10::DispatchKey::Autograd,
                                         [fwd = ns + "::" + name, bwd = ns + "::" + bwd](const at::Tensor& x) {
                                           return detail::UnaryGrad::apply(x, fwd, bwd);
                                         }));
}

}  // namespace tiledsl::torch
