// Kernel definition, argument checking, specialisation, the trace cache and dispatch to the
// backend.
#include "tiledsl/kernel.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "frontend/Trace.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "runtime/Backend.h"
#include "runtime/Dispatch.h"
#include "runtime/Interpreter.h"
#include "runtime/cuda/Launcher.h"
#include "support/Env.h"
#include "support/Error.h"

namespace tiledsl {

namespace detail {
// One traced specialisation.
struct Specialization {
  std::unique_ptr<ir::Function> fn;
  // Loaded GPU kernels by the launch options that change the code and the context they are
  // loaded in (one per GPU, or a caller's own context).
  std::map<std::pair<runtime::GpuCompileOptions, cuda::CUcontext>, std::shared_ptr<runtime::GpuKernel>> gpu;
  std::set<int> dumped_warps;  // TILEDSL_DUMP_DIR files written
};

struct KernelImpl {
  std::string name;
  std::vector<std::string> params;
  std::vector<ParamSpec> specs;
  TraceFn trace;
  std::string def_loc;

  std::mutex mu;
  std::map<std::vector<int64_t>, std::shared_ptr<Specialization>> cache;
  std::atomic<size_t> traces{0};
};
}  // namespace detail

namespace {
using detail::KernelImpl;
using detail::LaunchArg;

std::string where(const SourceLoc& loc) { return frontend::to_location(loc).str(); }

const char* kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::pointer:
      return "tl::Ptr";
    case ParamKind::i32:
      return "tl::Int (i32)";
    case ParamKind::i64:
      return "tl::Int64 (i64)";
    case ParamKind::f32:
      return "tl::Float (f32)";
    case ParamKind::constexpr_:
      return "tl::Constexpr";
  }
  return "?";
}

std::string arg_desc(const LaunchArg& a) {
  switch (a.kind) {
    case LaunchArg::tensor:
      return a.t->defined() ? fmt::format("a tensor of {}", name(a.t->dtype())) : "an empty tensor";
    case LaunchArg::integer:
      return fmt::format("the integer {}", a.i);
    default:
      return fmt::format("the float {}", a.f);
  }
}

// Checks count, kinds and dtypes; returns the device of the tensors (all on one), or the
// default device when there are none.
Device check_args(const KernelImpl& k, std::span<const LaunchArg> args, const SourceLoc& loc) {
  int first_tensor = -1;
  if (args.size() != k.specs.size())
    user_error(where(loc), k.name, "launch", "expects {} arguments ({}) but got {}", k.specs.size(),
               fmt::join(k.params, ", "), args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const ParamSpec& p = k.specs[i];
    const LaunchArg& a = args[i];
    auto bad = [&](const std::string& want) {
      user_error(where(loc), k.name, "launch", "argument {} ('{}') expects {}, got {}", i + 1, k.params[i], want,
                 arg_desc(a));
    };
    switch (p.kind) {
      case ParamKind::pointer:
        if (a.kind != LaunchArg::tensor || !a.t->defined() || a.t->dtype() != p.dtype)
          bad(fmt::format("a tensor of {} (tl::Ptr<{}>)", name(p.dtype), name(p.dtype)));
        if (first_tensor < 0)
          first_tensor = static_cast<int>(i);
        else if (a.t->device() != args[static_cast<size_t>(first_tensor)].t->device())
          user_error(where(loc), k.name, "launch",
                     "argument {} ('{}') is on {} but argument {} ('{}') is on {}; all "
                     "tensors of a launch must be on one device",
                     i + 1, k.params[i], name(a.t->device()), first_tensor + 1,
                     k.params[static_cast<size_t>(first_tensor)],
                     name(args[static_cast<size_t>(first_tensor)].t->device()));
        break;
      case ParamKind::i32:
        if (a.kind != LaunchArg::integer) bad(kind_name(p.kind));
        if (a.i < INT32_MIN || a.i > INT32_MAX)
          user_error(where(loc), k.name, "launch",
                     "argument {} ('{}') is a tl::Int (i32) but got {}, which does not fit "
                     "in 32 bits; declare the parameter tl::Int64",
                     i + 1, k.params[i], arg_desc(a));
        break;
      case ParamKind::i64:
      case ParamKind::constexpr_:
        if (a.kind != LaunchArg::integer) bad(kind_name(p.kind));
        break;
      case ParamKind::f32:
        if (a.kind == LaunchArg::tensor) bad(kind_name(p.kind));
        break;
    }
  }
  return first_tensor < 0 ? default_device() : args[static_cast<size_t>(first_tensor)].t->device();
}

// Triton's specialisation: constexpr values, and for each integer whether it is 1 or a multiple
// of 16, for each pointer whether it is 16-byte aligned; and for each integer whether it is
// non-negative (bit 4), which lets the axis analysis follow remainders of offsets built from it
// (AxisInfo.cpp).
// Fills `key` (a reused buffer: the launch path allocates nothing once warm).
void spec_key(const KernelImpl& k, std::span<const LaunchArg> args, std::vector<int64_t>& key) {
  key.clear();
  for (size_t i = 0; i < args.size(); ++i) {
    switch (k.specs[i].kind) {
      case ParamKind::pointer:
        key.push_back(reinterpret_cast<uintptr_t>(args[i].t->data_ptr()) % 16 == 0);
        break;
      case ParamKind::i32:
      case ParamKind::i64:
        key.push_back((args[i].i == 1 ? 1 : args[i].i % 16 == 0 ? 2 : 0) | (args[i].i >= 0 ? 4 : 0));
        break;
      case ParamKind::f32:
        key.push_back(0);
        break;
      case ParamKind::constexpr_:
        key.push_back(args[i].i);
        break;
    }
  }
}

ir::Type param_type(const ParamSpec& p) {
  switch (p.kind) {
    case ParamKind::pointer:
      return ir::Type::pointer(ir::Type::scalar(p.dtype));
    default:
      return ir::Type::scalar(p.dtype);
  }
}

std::unique_ptr<ir::Function> trace(KernelImpl& k, std::span<const LaunchArg> args, const std::vector<int64_t>& key) {
  auto f = std::make_unique<ir::Function>();
  f->name = k.name;
  ir::Builder b(*f);
  frontend::TraceScope scope(b);
  std::vector<detail::TraceArg> targs(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const ParamSpec& p = k.specs[i];
    if (p.kind == ParamKind::constexpr_) {
      targs[i].constant = args[i].i;
      f->attrs[k.params[i]] = args[i].i;
      continue;
    }
    ir::Value* a = f->body.add_arg(param_type(p));
    f->arg_names.push_back(k.params[i]);
    ir::Attrs attrs;
    targs[i].value = a;
    if (p.kind == ParamKind::pointer && key[i]) attrs["divisibility"] = int64_t{16};
    if (p.kind == ParamKind::i32 || p.kind == ParamKind::i64) {
      if ((key[i] & 3) == 1) {
        attrs["equal_to"] = int64_t{1};
        targs[i].value = b.constant_int(1, p.dtype, {});  // specialised: uses see the constant
      } else {
        if ((key[i] & 3) == 2) attrs["divisibility"] = int64_t{16};
        if (key[i] & 4) attrs["nonnegative"] = int64_t{1};
      }
    }
    f->arg_attrs.push_back(std::move(attrs));
  }
  k.trace(targs);
  b.close_returns();
  ir::verify(*f);
  f->number_values();
  k.traces++;
  return f;
}

// TILEDSL_DUMP_DIR: every traced kernel's IR as <dir>/<kernel>-<hash>.w<num_warps>.tir (text
// form, parseable), once per specialisation and launch width, so that the IR can be compiled
// again offline exactly as it was launched (test/ptx-examples.sh does).
void dump_ir(detail::Specialization& s, std::mutex& mu, int num_warps) {
  static const std::string dir = env::value(env::Var::TILEDSL_DUMP_DIR);
  if (dir.empty()) return;
  std::lock_guard lock(mu);
  if (!s.dumped_warps.insert(num_warps).second) return;
  std::string text = ir::print(*s.fn);
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the text: one file per specialisation
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  std::filesystem::create_directories(dir);
  std::ofstream(std::filesystem::path(dir) / fmt::format("{}-{:016x}.w{}.tir", s.fn->name, h, num_warps)) << text;
}

// The specialisation for these arguments, traced on first use. Entries are never removed, so
// the pointer stays valid for the kernel's lifetime.
detail::Specialization* specialise(KernelImpl& k, std::span<const LaunchArg> args) {
  thread_local std::vector<int64_t> key;
  spec_key(k, args, key);
  std::lock_guard lock(k.mu);
  auto it = k.cache.find(key);
  if (it != k.cache.end()) return it->second.get();
  auto s = std::make_shared<detail::Specialization>();
  s->fn = trace(k, args, key);
  k.cache.emplace(key, s);
  return s.get();
}
}  // namespace

namespace {
// The launch options that change the machine code: with the specialisation, what a compiled
// kernel is looked up by.
runtime::GpuCompileOptions code_options(const LaunchOptions& o) {
  return {o.num_warps, o.num_stages, o.enable_fp_fusion};
}

// The GPU path: compile and load once per (specialisation, code options), then pack the
// arguments into fixed storage and launch.
// The loaded kernel for (specialisation, code options), compiling it on first use. The compile
// runs outside the kernel's lock, so different configurations compile at once (the autotuner
// does so); two threads racing on one configuration compile it twice and keep one.
const runtime::GpuKernel* gpu_kernel(KernelImpl& k, detail::Specialization& spec, const LaunchOptions& o,
                                     const cuda::ContextScope& scope, Device device) {
  const auto key = std::pair(code_options(o), scope.context());
  {
    std::lock_guard lock(k.mu);
    if (auto it = spec.gpu.find(key); it != spec.gpu.end()) return it->second.get();
  }
  auto fresh = runtime::load_gpu_kernel(*spec.fn, key.first, device.index());
  std::lock_guard lock(k.mu);
  auto& slot = spec.gpu[key];
  if (!slot) slot = std::move(fresh);
  return slot.get();  // loaded kernels live as long as the specialisation
}

}  // namespace

bool default_fp_fusion() {
  static const bool on = [] { return env::flag(env::Var::TILEDSL_DEFAULT_FP_FUSION, true); }();
  return on;
}

int64_t Meta::operator[](std::string_view name) const {
  for (size_t i = 0; i < k_.params.size(); ++i)
    if (k_.params[i] == name) {
      if (k_.specs[i].kind != ParamKind::constexpr_)
        user_error(where(loc_), k_.name, fmt::format("Meta[\"{}\"]", name), "'{}' is {}, not a tl::Constexpr parameter",
                   name, kind_name(k_.specs[i].kind));
      return args_[i].i;
    }
  user_error(where(loc_), k_.name, fmt::format("Meta[\"{}\"]", name), "no parameter named '{}' (parameters: {})", name,
             fmt::join(k_.params, ", "));
}

Kernel::Kernel(std::string name, std::vector<std::string> params, std::vector<ParamSpec> specs, detail::TraceFn fn,
               SourceLoc loc)
    : impl_(std::make_shared<KernelImpl>()) {
  impl_->name = std::move(name);
  impl_->params = std::move(params);
  impl_->specs = std::move(specs);
  impl_->trace = std::move(fn);
  impl_->def_loc = where(loc);
  if (impl_->params.size() != impl_->specs.size())
    user_error(impl_->def_loc, impl_->name, "kernel", "{} parameter names ({}) for a lambda of {} parameters",
               impl_->params.size(), fmt::join(impl_->params, ", "), impl_->specs.size());
  if (!ir::is_identifier(impl_->name))
    user_error(impl_->def_loc, "", "kernel",
               "kernel name '{}' is not an identifier ([A-Za-z_][A-Za-z0-9_]*, at most "
               "200 characters): it names the GPU function",
               impl_->name);
  std::set<std::string> seen;
  for (const auto& p : impl_->params) {
    if (!ir::is_identifier(p))
      user_error(impl_->def_loc, impl_->name, "kernel", "parameter name '{}' is not an identifier", p);
    if (!seen.insert(p).second)
      user_error(impl_->def_loc, impl_->name, "kernel", "parameter name '{}' appears twice", p);
  }
}

namespace {
// What launching, preparing, compiling or printing a kernel checks before its arguments.
void check_call(const KernelImpl& k, const LaunchOptions* o, const SourceLoc& loc, const char* what) {
  if (frontend::tracing())
    user_error(where(loc), k.name, what,
               "called inside a kernel body while it is traced; kernels cannot launch "
               "kernels (call a C++ function that builds the tiles instead)");
  if (!o) return;
  for (const std::string& p : {ir::num_warps_problem(o->num_warps), ir::num_stages_problem(o->num_stages)})
    if (!p.empty()) user_error(where(loc), k.name, what, "{}", p);
}
}  // namespace

void Kernel::prepare(const LaunchOptions& o, std::span<const LaunchArg> args) const {
  KernelImpl& k = *impl_;
  check_call(k, &o, SourceLoc::current(), "prepare");
  Device device = check_args(k, args, SourceLoc::current());
  auto spec = specialise(k, args);
  if (!device.is_cuda()) return;
  cuda::ContextScope scope(device.index());
  gpu_kernel(k, *spec, o, scope, device);
}

void Kernel::launch(const Grid& g, const LaunchOptions& o, std::span<const LaunchArg> args) const {
  KernelImpl& k = *impl_;
  check_call(k, &o, g.loc(), "launch");
  Device device = check_args(k, args, g.loc());
  Dim3 d = g.resolve(Meta(k, args, g.loc()));
  if (d.x <= 0 || d.y <= 0 || d.z <= 0)
    user_error(where(g.loc()), k.name, "launch",
               "grid ({}, {}, {}) has a dimension below 1; every dimension must be at least 1", d.x, d.y, d.z);
  int64_t programs = 0;
  if (__builtin_mul_overflow(d.x, d.y, &programs) || __builtin_mul_overflow(programs, d.z, &programs))
    user_error(where(g.loc()), k.name, "launch", "grid ({}, {}, {}) has more than 2^63 programs", d.x, d.y, d.z);
  if (device.is_cuda() && (d.y > 65535 || d.z > 65535 || d.x > 2147483647))
    user_error(where(g.loc()), k.name, "launch", "grid ({}, {}, {}) exceeds the GPU's limits (2^31 - 1, 65535, 65535)",
               d.x, d.y, d.z);
  auto spec = specialise(k, args);
  dump_ir(*spec, k.mu, o.num_warps);
  if (device.is_cuda()) {
    cuda::ContextScope scope(device.index());
    const runtime::GpuKernel& gk = *gpu_kernel(k, *spec, o, scope, device);
    if (runtime::compare_with_interpreter())
      return runtime::launch_compared_with_interpreter(gk, *spec->fn, k.specs, k.params, args, d, o.stream,
                                                       where(g.loc()));
    return runtime::launch_on_gpu(gk, k.specs, args, d, o.stream);
  }
  runtime::launch_in_interpreter(*spec->fn, k.specs, k.params, args, d, where(g.loc()));
}

std::string Kernel::ir_for(std::span<const LaunchArg> args, bool locations, SourceLoc loc) const {
  check_call(*impl_, nullptr, loc, "ir");
  check_args(*impl_, args, loc);
  return ir::print(*specialise(*impl_, args)->fn, {locations});
}

CompiledKernel Kernel::compile_for(const LaunchOptions& o, std::span<const LaunchArg> args, SourceLoc loc) const {
  check_call(*impl_, &o, loc, "compile");
  const Device device = check_args(*impl_, args, loc);
  const ir::Function& f = *specialise(*impl_, args)->fn;
  CompiledKernel c;
  c.name = f.name;
  c.arch = runtime::target_arch(device.index());
  c.num_warps = o.num_warps;
  c.num_stages = o.num_stages;
  c.enable_fp_fusion = o.enable_fp_fusion;
  c.traced_ir = ir::print(f);
  runtime::GpuBinary bin = runtime::compile_for_gpu(f, code_options(o), c.arch, /*keep_stages=*/true);
  c.ir_after_pass = std::move(bin.ir_after_pass);
  c.llvm_ir = std::move(bin.llvm_ir);
  c.ptx = bin.ptx;
  runtime::ResourceUsage u = runtime::resource_usage(bin, c.arch);
  c.registers = u.registers;
  c.spill_bytes = u.spill_bytes;
  c.shared_bytes = u.shared_bytes;
  c.resources_from = u.source;
  return c;
}

size_t Kernel::trace_count() const { return impl_->traces; }
const std::string& Kernel::name() const { return impl_->name; }
const std::vector<std::string>& Kernel::params() const { return impl_->params; }
const std::vector<ParamSpec>& Kernel::param_specs() const { return impl_->specs; }

}  // namespace tiledsl
