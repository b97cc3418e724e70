#include "runtime/Dispatch.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>

#include "runtime/Interpreter.h"
#include "support/Env.h"
#include "support/Error.h"

namespace tiledsl::runtime {

using detail::LaunchArg;

void launch_on_gpu(const GpuKernel& k, std::span<const ParamSpec> specs, std::span<const LaunchArg> args, Dim3 grid,
                   void* stream) {
  // Fixed storage for the usual kernel; one with more parameters packs into the heap.
  std::array<GpuArg, 64> fixed;
  std::vector<GpuArg> heap;
  if (args.size() > fixed.size()) heap.resize(args.size());
  std::span<GpuArg> packed = heap.empty() ? std::span(fixed) : std::span(heap);
  size_t n = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    uint64_t bits = 0;
    switch (specs[i].kind) {
      case ParamKind::constexpr_:
        continue;
      case ParamKind::pointer:
        bits = reinterpret_cast<uintptr_t>(args[i].t->data_ptr());
        break;
      case ParamKind::f32: {
        float f = static_cast<float>(args[i].kind == LaunchArg::floating ? args[i].f : static_cast<double>(args[i].i));
        std::memcpy(&bits, &f, 4);
        break;
      }
      default:
        bits = static_cast<uint64_t>(args[i].i);
    }
    packed[n++] = {bits};
  }
  launch_gpu_kernel(k, std::span(packed.data(), n), {grid.x, grid.y, grid.z}, stream);
}

void launch_in_interpreter(const ir::Function& f, std::span<const ParamSpec> specs, std::span<const std::string> names,
                           std::span<const LaunchArg> args, Dim3 grid, const std::string& where) {
  std::vector<InterpArg> iargs;
  for (size_t i = 0; i < args.size(); ++i) {
    InterpArg a;
    a.kind = InterpArg::integer;
    a.name = names[i];
    switch (specs[i].kind) {
      case ParamKind::constexpr_:
        continue;
      case ParamKind::pointer:
        a.kind = InterpArg::pointer;
        a.base = args[i].t->data_ptr();
        a.bytes = args[i].t->span_bytes();  // a strided view (Tensor::from_blob) spans more
        break;
      case ParamKind::f32:
        a.kind = InterpArg::floating;
        a.f = args[i].kind == LaunchArg::floating ? args[i].f : static_cast<double>(args[i].i);
        break;
      default:
        a.i = args[i].i;
    }
    iargs.push_back(std::move(a));
  }
  try {
    interpret(f, iargs, {grid.x, grid.y, grid.z}, default_interpreter_threads());
  } catch (const std::bad_alloc&) {
    user_error(where, f.name, "launch",
               "the interpreter ran out of host memory for the kernel's tiles (each value of a program is held "
               "whole; use smaller tiles)");
  }
}

namespace {
std::atomic<int64_t> compared{0}, not_comparable{0};
}  // namespace

// Floats: |a - b| <= tol * (|a| + |b| + scale), with scale the largest magnitude in the tensor
// (a sum's rounding depends on its order, so it is relative to its terms, not to the result) and
// tol 2^-17 (64 ulps of f32, the precision kernels compute in), or 2 ulps of a narrower dtype
// (two f32 values a few ulps apart can round to neighbouring f16s), of the tensor's or of one the
// kernel rounds an intermediate to (rounded_bits); NaN only against NaN.
std::string first_difference(const Tensor& gpu, const Tensor& host, int rounded_bits) {
  const DType t = gpu.dtype();
  const size_t n = static_cast<size_t>(gpu.numel()), size = static_cast<size_t>(byte_size(t));
  std::vector<char> g(gpu.nbytes());
  gpu.copy_to_host(g.data());
  const char* h = static_cast<const char*>(host.data_ptr());
  if (!is_float(t)) {
    for (size_t i = 0; i < n; ++i)
      if (std::memcmp(&g[i * size], h + i * size, size) != 0)
        return fmt::format("element {}: GPU {}, interpreter {}", i, load_int(t, &g[i * size]),
                           load_int(t, h + i * size));
    return "";
  }
  int man_bits = t == DType::f32 ? 23 : t == DType::f64 ? 52 : float_format(t).man_bits;
  double tol = std::max({std::ldexp(1.0, -17), std::ldexp(1.0, 1 - man_bits), std::ldexp(1.0, 1 - rounded_bits)}),
         scale = 0;
  for (size_t i = 0; i < n; ++i)
    if (double v = std::fabs(load_float(t, h + i * size)); std::isfinite(v)) scale = std::max(scale, v);
  for (size_t i = 0; i < n; ++i) {
    double a = load_float(t, &g[i * size]), b = load_float(t, h + i * size);
    bool same = std::isnan(a) || std::isnan(b)   ? std::isnan(a) && std::isnan(b)
                : std::isinf(a) || std::isinf(b) ? a == b
                                                 : std::fabs(a - b) <= tol * (std::fabs(a) + std::fabs(b) + scale);
    if (!same) return fmt::format("element {}: GPU {}, interpreter {}", i, a, b);
  }
  return "";
}

namespace {
// The fewest mantissa bits of a float type `f` casts a value to (52 when it casts to none).
int rounded_bits(const ir::Function& f) {
  int bits = 52;
  ir::walk(f.body, [&](const ir::Op* op) {
    if (op->kind != ir::OpKind::Cast) return;
    const DType t = op->result()->type.dtype();
    if (is_float(t)) bits = std::min(bits, t == DType::f32 ? 23 : t == DType::f64 ? 52 : float_format(t).man_bits);
  });
  // fp8 tensor cores align each instruction's products to the largest and keep 13 accumulator
  // bits (docs/language.md): against the sum of |products| that is 2^-12, and the result of a
  // long dot can be sqrt(K) times smaller than that sum, so compare within 8 bits of its scale.
  ir::walk(f.body, [&](const ir::Op* op) {
    if (op->kind == ir::OpKind::Dot && is_fp8(op->operands[0]->type.dtype())) bits = std::min(bits, 8);
  });
  return bits;
}

bool comparable(const ir::Function& f) {
  bool ok = true;
  ir::walk(f.body, [&](const ir::Op* op) {
    ok &= op->kind != ir::OpKind::AtomicRMW && op->kind != ir::OpKind::AtomicCAS && op->kind != ir::OpKind::Print;
    ok &= op->kind != ir::OpKind::InlineAsm;  // PTX, which the interpreter cannot run
    // Addresses converted to or from pointers are the device's, which the host copies do not have.
    if (op->kind == ir::OpKind::Cast)
      ok &= !op->result()->type.element().is_pointer() && !op->operands[0]->type.element().is_pointer();
  });
  return ok;
}
}  // namespace

bool compare_with_interpreter() {
  static const bool on = [] {
    bool v = env::flag(env::Var::TILEDSL_COMPARE_INTERPRETER, false);
    if (v)  // the count shows the comparison ran, and on how much
      std::atexit([] {
        std::fprintf(stderr, "tiledsl: %lld GPU launches compared with the interpreter, %lld not comparable\n",
                     static_cast<long long>(compared.load()), static_cast<long long>(not_comparable.load()));
      });
    return v;
  }();
  return on;
}

Comparisons comparisons() { return {compared.load(), not_comparable.load()}; }

void launch_compared_with_interpreter(const GpuKernel& k, const ir::Function& f, std::span<const ParamSpec> specs,
                                      std::span<const std::string> names, std::span<const LaunchArg> args, Dim3 grid,
                                      void* stream, const std::string& where) {
  // Host copies are row-major: a strided view (Tensor::from_blob) would be addressed wrongly.
  const bool strided = std::any_of(args.begin(), args.end(), [](const LaunchArg& a) {
    return a.kind == LaunchArg::tensor && !a.t->is_contiguous();
  });
  if (!comparable(f) || strided) {
    ++not_comparable;
    return launch_on_gpu(k, specs, args, grid, stream);
  }
  // One host copy per GPU buffer, so that arguments naming one tensor still alias.
  std::map<void*, Tensor> copies;
  std::vector<LaunchArg> host_args(args.begin(), args.end());
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].kind != LaunchArg::tensor) continue;
    auto [it, fresh] = copies.try_emplace(args[i].t->data_ptr());
    if (fresh) it->second = args[i].t->to(Device::cpu);
    host_args[i].t = &it->second;
  }
  launch_on_gpu(k, specs, args, grid, stream);
  launch_in_interpreter(f, specs, names, host_args, grid, where);
  const int bits = rounded_bits(f);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].kind != LaunchArg::tensor) continue;
    if (std::string d = first_difference(*args[i].t, *host_args[i].t, bits); !d.empty())
      user_error(where, f.name, "launch",
                 "the GPU and the interpreter disagree on '{}' ({}; TILEDSL_COMPARE_INTERPRETER)", names[i], d);
  }
  ++compared;
}

}  // namespace tiledsl::runtime
