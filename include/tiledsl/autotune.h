// Autotuning (Triton's @triton.autotune in C++): a kernel plus candidate configurations
// (constexpr values, num_warps, num_stages) and the launch arguments whose values select a
// tuning. docs/autotune.md describes it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tiledsl/bench.h"
#include "tiledsl/kernel.h"

namespace tiledsl {

struct Config {
  std::map<std::string, int64_t> constexprs;  // values of the kernel's tuned tl::Constexpr parameters
  int num_warps = 4;
  int num_stages = 3;
  std::string str() const;  // "BLOCK=1024, num_warps=4, num_stages=3"
  bool operator==(const Config&) const = default;
};

// The values of one launch's arguments, by parameter name, for pruning and cost models.
class Args {
 public:
  Args(const Kernel& k, std::span<const detail::LaunchArg> args) : k_(k), args_(args) {}
  int64_t integer(std::string_view name) const;  // an integer argument
  const Tensor& tensor(std::string_view name) const;

 private:
  size_t index(std::string_view name) const;
  const Kernel& k_;
  std::span<const detail::LaunchArg> args_;
};

struct AutotuneOptions {
  // Drops configurations before timing (e.g. blocks larger than the problem). Must keep one.
  std::function<std::vector<Config>(const std::vector<Config>&, const Args&)> prune;
  // With top_k > 0, only the top_k configurations by this estimate (lower is better) are timed.
  std::function<double(const Config&, const Args&)> cost_model;
  int top_k = 0;
  BenchOptions bench{.warmup = 3, .rep = 10};
};

class Autotuner;

// tuned[grid](args...) takes the kernel's arguments without the tuned constexprs;
// tuned[grid].stream(s)(args...) launches on CUDA stream `s` (and, the first time, times the
// configurations there).
class TunedLaunch {
 public:
  TunedLaunch(const Autotuner& t, Grid g) : t_(t), grid_(std::move(g)) {}
  TunedLaunch& stream(void* s) {
    stream_ = s;
    return *this;
  }
  template <class... Args>
  void operator()(const Args&... args) const {
    std::array<detail::LaunchArg, sizeof...(Args)> a{detail::to_launch_arg(args)...};
    launch(a);
  }
  void launch(std::span<const detail::LaunchArg> args) const;

 private:
  const Autotuner& t_;
  Grid grid_;
  void* stream_ = nullptr;
};

class Autotuner {
 public:
  Autotuner(Kernel k, std::vector<Config> configs, std::vector<std::string> key, AutotuneOptions options,
            SourceLoc loc);
  TunedLaunch operator[](Grid g) const { return TunedLaunch(*this, std::move(g)); }
  // The configuration chosen for launches with these (user) arguments, if tuned already (in this
  // process or, through the disk cache, an earlier one).
  template <class... Args>
  std::optional<Config> chosen(const Args&... args) const {
    std::array<detail::LaunchArg, sizeof...(Args)> a{detail::to_launch_arg(args)...};
    return lookup(a);
  }
  std::optional<Config> lookup(std::span<const detail::LaunchArg> user_args) const;
  // The index of the configuration for these arguments, tuning (with `grid`, on `stream`)
  // first if needed.
  size_t choose(std::span<const detail::LaunchArg> user_args, const Grid& grid, void* stream = nullptr) const;
  const Kernel& kernel() const;
  // How many times configurations have been timed (tests: a second process must not tune again).
  size_t tunings() const;

  struct Impl;
  const Impl* impl() const { return impl_.get(); }

 private:
  std::shared_ptr<Impl> impl_;
};

Autotuner autotune(Kernel k, std::vector<Config> configs, std::vector<std::string> key, AutotuneOptions options = {},
                   TILEDSL_LOC);

}  // namespace tiledsl
