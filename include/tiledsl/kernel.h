// Kernels and launches: tl::kernel(name, params, lambda) defines a kernel; kernel[grid](args...)
// traces it once per specialisation and runs it on the active backend.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tiledsl/tensor.h"
#include "tiledsl/tile.h"

namespace tiledsl {

enum class ParamKind { pointer, i32, i64, f32, constexpr_ };
struct LaunchOptions;

struct ParamSpec {
  ParamKind kind;
  DType dtype;  // pointee of a pointer, or the scalar's type
};

namespace detail {
struct TraceArg {
  ir::Value* value = nullptr;  // a kernel argument
  int64_t constant = 0;        // a constexpr value
};
using TraceFn = std::function<void(std::span<const TraceArg>)>;

struct LaunchArg {
  enum Kind { tensor, integer, floating } kind;
  const Tensor* t = nullptr;
  int64_t i = 0;
  double f = 0;
};
inline LaunchArg to_launch_arg(const Tensor& t) { return {LaunchArg::tensor, &t, 0, 0}; }
template <class A>
LaunchArg to_launch_arg(const A& a) {
  if constexpr (std::is_same_v<A, Constexpr>)
    return {LaunchArg::integer, nullptr, a.value(), 0};
  else if constexpr (std::is_integral_v<A>)
    return {LaunchArg::integer, nullptr, static_cast<int64_t>(a), 0};
  else if constexpr (std::is_floating_point_v<A>)
    return {LaunchArg::floating, nullptr, 0, static_cast<double>(a)};
  else
    static_assert(sizeof(A) == 0, "tiledsl: kernel arguments are tl::Tensor, integers, floats or bools");
}

template <class P>
struct IsPtrParam : std::false_type {};
template <class T>
struct IsPtrParam<Tile<PtrTo<T>>> : std::true_type {};

template <class P>
inline constexpr bool is_param_v =
    std::is_same_v<P, Constexpr> || std::is_same_v<P, Tile<int32_t>> || std::is_same_v<P, Tile<int64_t>> ||
    std::is_same_v<P, Tile<float>> || IsPtrParam<P>::value;

template <class P>
constexpr ParamSpec param_spec() {
  if constexpr (std::is_same_v<P, Constexpr>)
    return {ParamKind::constexpr_, DType::i64};
  else if constexpr (std::is_same_v<P, Tile<int32_t>>)
    return {ParamKind::i32, DType::i32};
  else if constexpr (std::is_same_v<P, Tile<int64_t>>)
    return {ParamKind::i64, DType::i64};
  else if constexpr (std::is_same_v<P, Tile<float>>)
    return {ParamKind::f32, DType::f32};
  else if constexpr (IsPtrParam<P>::value)
    return {ParamKind::pointer, dtype_v<typename P::element_type::pointee>};
  else {
    static_assert(sizeof(P) == 0,
                  "tiledsl: kernel parameters are tl::Ptr<T>, tl::Int, tl::Int64, tl::Float or tl::Constexpr");
    return {ParamKind::i32, DType::i32};
  }
}

// The parameter types of a lambda; a generic lambda (auto parameters) has none to read.
template <class F, class = void>
struct LambdaArgs {
  static_assert(sizeof(F) == 0,
                "tiledsl: a kernel is a lambda with typed parameters (tl::Ptr<T>, tl::Int, tl::Int64, tl::Float, "
                "tl::Constexpr); generic (auto) parameters are not supported");
  using type = std::tuple<>;
};
template <class F>
struct LambdaArgs<F, std::void_t<decltype(&F::operator())>> : LambdaArgs<decltype(&F::operator())> {};
template <class F, class = void>
inline constexpr bool has_call_operator_v = false;
template <class F>
inline constexpr bool has_call_operator_v<F, std::void_t<decltype(&F::operator())>> = true;
template <class C, class R, class... A>
struct LambdaArgs<R (C::*)(A...) const, void> {
  using type = std::tuple<std::decay_t<A>...>;
};
template <class C, class R, class... A>
struct LambdaArgs<R (C::*)(A...), void> {
  using type = std::tuple<std::decay_t<A>...>;
};

template <class P>
P make_param(const TraceArg& a) {
  if constexpr (std::is_same_v<P, Constexpr>)
    return Constexpr(a.constant);
  else
    return P(a.value);
}

// The first argument of Kernel::ir and Kernel::compile, converted implicitly from the user's
// argument so that it records where the call was written (errors name that line).
struct CallArg {
  template <class A>
  requires(!std::is_same_v<std::decay_t<A>, LaunchOptions>) CallArg(const A& a, SourceLoc loc = SourceLoc::current())
      : arg(to_launch_arg(a)), loc(loc) {}
  LaunchArg arg;
  SourceLoc loc;
};
// The same for Kernel::compile's options.
template <class O>
struct CallOptions {
  CallOptions(const O& o, SourceLoc loc = SourceLoc::current()) : options(o), loc(loc) {}
  const O& options;
  SourceLoc loc;
};

struct KernelImpl;
}  // namespace detail

struct Dim3 {
  int64_t x, y, z;
  Dim3(int64_t x, int64_t y = 1, int64_t z = 1) : x(x), y(y), z(z) {}
};

// The constexpr values of a launch, by parameter name (Triton's `meta`).
class Meta {
 public:
  // `loc`: where the grid was written, which is where a bad name is reported.
  Meta(const detail::KernelImpl& k, std::span<const detail::LaunchArg> args, SourceLoc loc = SourceLoc::current())
      : k_(k), args_(args), loc_(loc) {}
  int64_t operator[](std::string_view name) const;

 private:
  const detail::KernelImpl& k_;
  std::span<const detail::LaunchArg> args_;
  SourceLoc loc_;
};

// A fixed grid, or one computed from the constexpr values of each launch. It records where it
// was written, which is where launch errors point.
class Grid {
 public:
  Grid(int64_t x, int64_t y = 1, int64_t z = 1, TILEDSL_LOC) : fixed_(x, y, z), loc_(loc) {}
  Grid(Dim3 d, TILEDSL_LOC) : fixed_(d), loc_(loc) {}
  template <class F>
  requires std::is_invocable_v<F, const Meta&> Grid(F f, TILEDSL_LOC) : fixed_(0), fn_(std::move(f)), loc_(loc) {}
  Dim3 resolve(const Meta& m) const { return fn_ ? fn_(m) : fixed_; }
  const SourceLoc& loc() const { return loc_; }

 private:
  Dim3 fixed_;
  std::function<Dim3(const Meta&)> fn_;
  SourceLoc loc_;
};
inline Grid grid(int64_t x, int64_t y = 1, int64_t z = 1, TILEDSL_LOC) { return Grid(x, y, z, loc); }
template <class F>
Grid grid(F f, TILEDSL_LOC) {
  return Grid(std::move(f), loc);
}

// The default of LaunchOptions::enable_fp_fusion: TILEDSL_DEFAULT_FP_FUSION=0 turns it off
// (read once), else on.
bool default_fp_fusion();

struct LaunchOptions {
  int num_warps = 4;
  int num_stages = 3;
  void* stream = nullptr;  // a CUDA stream on the GPU backend
  // On the GPU, a * b + c may be computed as one fma, rounded once (Triton's enable_fp_fusion,
  // on by default as there). The interpreter rounds the multiply and the add each on its own, so
  // with fusion on, results may differ from the interpreter's in the last bit.
  bool enable_fp_fusion = default_fp_fusion();
};

class Kernel;

// kernel[grid] — call it with the kernel's arguments to launch.
class Launch {
 public:
  Launch(const Kernel& k, Grid g) : k_(k), grid_(std::move(g)) {}
  Launch& options(const LaunchOptions& o) {
    opts_ = o;
    return *this;
  }
  template <class... Args>
  void operator()(const Args&... args) const;

 private:
  const Kernel& k_;
  Grid grid_;
  LaunchOptions opts_;
};

// What compiling one specialisation produced (Kernel::compile): every stage's text and the
// resources of the machine code.
struct CompiledKernel {
  std::string name, arch;
  int num_warps = 4, num_stages = 3;
  bool enable_fp_fusion = true;
  std::string traced_ir;                                           // before any pass
  std::vector<std::pair<std::string, std::string>> ir_after_pass;  // (pass, IR), in pipeline order
  std::string llvm_ir, ptx;
  int registers = -1, spill_bytes = -1, shared_bytes = -1;  // -1: unknown
  std::string resources_from;                               // "driver", "ptxas", or why unknown
};

class Kernel {
 public:
  Kernel(std::string name, std::vector<std::string> params, std::vector<ParamSpec> specs, detail::TraceFn fn,
         SourceLoc loc);

  Launch operator[](Grid g) const { return Launch(*this, std::move(g)); }
  void launch(const Grid& g, const LaunchOptions& o, std::span<const detail::LaunchArg> args) const;
  // Traces and (on the GPU) compiles and loads what a launch with these options and arguments
  // would use, without launching. Thread-safe; different options compile concurrently.
  void prepare(const LaunchOptions& o, std::span<const detail::LaunchArg> args) const;

  // The traced IR text of the specialisation that these arguments select (nothing runs).
  template <class... Args>
  std::string ir(detail::CallArg first, const Args&... rest) const {
    std::array<detail::LaunchArg, 1 + sizeof...(Args)> a{first.arg, detail::to_launch_arg(rest)...};
    return ir_for(a, true, first.loc);
  }
  std::string ir(TILEDSL_LOC) const { return ir_for(std::span<const detail::LaunchArg>(), true, loc); }
  std::string ir_for(std::span<const detail::LaunchArg> args, bool locations = true,
                     SourceLoc loc = SourceLoc::current()) const;

  // Compiles (without launching) the specialisation these arguments select, for TILEDSL_ARCH or
  // the GPU present; needs no GPU. `compile(tl::LaunchOptions{.num_warps = 8}, args...)` too.
  template <class... Args>
  CompiledKernel compile(detail::CallArg first, const Args&... rest) const {
    std::array<detail::LaunchArg, 1 + sizeof...(Args)> a{first.arg, detail::to_launch_arg(rest)...};
    return compile_for({}, a, first.loc);
  }
  CompiledKernel compile(TILEDSL_LOC) const {
    return compile_for(LaunchOptions{}, std::span<const detail::LaunchArg>(), loc);
  }
  template <class... Args>
  CompiledKernel compile(detail::CallOptions<LaunchOptions> o, const Args&... args) const {
    std::array<detail::LaunchArg, sizeof...(Args)> a{detail::to_launch_arg(args)...};
    return compile_for(o.options, a, o.loc);
  }
  CompiledKernel compile_for(const LaunchOptions& o, std::span<const detail::LaunchArg> args,
                             SourceLoc loc = SourceLoc::current()) const;
  // How many times the kernel has been traced (once per specialisation).
  size_t trace_count() const;
  const std::string& name() const;
  const std::vector<std::string>& params() const;
  const std::vector<ParamSpec>& param_specs() const;
  const detail::KernelImpl& impl() const { return *impl_; }

 private:
  std::shared_ptr<detail::KernelImpl> impl_;
};

template <class... Args>
void Launch::operator()(const Args&... args) const {
  std::array<detail::LaunchArg, sizeof...(Args)> a{detail::to_launch_arg(args)...};
  k_.launch(grid_, opts_, a);
}

// Defines a kernel. `params` names the lambda's parameters, in order; their C++ types say what
// each is (tl::Ptr<T>, tl::Int, tl::Int64, tl::Float, tl::Constexpr).
template <class F>
Kernel kernel(std::string name, std::vector<std::string> params, F fn, TILEDSL_LOC) {
  using Args = typename detail::LambdaArgs<F>::type;
  constexpr size_t n = std::tuple_size_v<Args>;
  std::vector<ParamSpec> specs;
  [&]<size_t... I>(std::index_sequence<I...>) {
    (specs.push_back(detail::param_spec<std::tuple_element_t<I, Args>>()), ...);
  }
  (std::make_index_sequence<n>{});
  detail::TraceFn trace = [fn](std::span<const detail::TraceArg> a) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      // Otherwise a static_assert above has already said what is wrong.
      if constexpr (detail::has_call_operator_v<F> && (detail::is_param_v<std::tuple_element_t<I, Args>> && ...))
        fn(detail::make_param<std::tuple_element_t<I, Args>>(a[I])...);
    }
    (std::make_index_sequence<n>{});
  };
  return Kernel(std::move(name), std::move(params), std::move(specs), std::move(trace), loc);
}

}  // namespace tiledsl
