#include "tiledsl/autotune.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "runtime/Files.h"
#include "runtime/ThreadPool.h"
#include "runtime/cuda/DiskCache.h"
#include "runtime/cuda/Driver.h"
#include "support/Env.h"

namespace tiledsl {

std::string Config::str() const {
  std::string s;
  for (const auto& [k, v] : constexprs) s += fmt::format("{}={}, ", k, v);
  return s + fmt::format("num_warps={}, num_stages={}", num_warps, num_stages);
}

size_t Args::index(std::string_view name) const {
  const auto& p = k_.params();
  auto it = std::find(p.begin(), p.end(), name);
  if (it == p.end()) throw Error(fmt::format("kernel '{}': autotune: no parameter named '{}'", k_.name(), name));
  return static_cast<size_t>(it - p.begin());
}

int64_t Args::integer(std::string_view name) const {
  const auto& a = args_[index(name)];
  if (a.kind != detail::LaunchArg::integer)
    throw Error(fmt::format("kernel '{}': autotune: argument '{}' is not an integer", k_.name(), name));
  return a.i;
}

const Tensor& Args::tensor(std::string_view name) const {
  const auto& a = args_[index(name)];
  if (a.kind != detail::LaunchArg::tensor)
    throw Error(fmt::format("kernel '{}': autotune: argument '{}' is not a tensor", k_.name(), name));
  return *a.t;
}

namespace {
// A launch's full argument list (the user's and the tuned constexprs): fixed storage for the usual
// kernel, the heap for one with more than 64 parameters.
struct ArgBuffer {
  std::array<detail::LaunchArg, 64> fixed;
  std::vector<detail::LaunchArg> heap;
  std::span<detail::LaunchArg> get(size_t n) {
    if (n <= fixed.size()) return {fixed.data(), n};
    heap.resize(n);
    return heap;
  }
};
}  // namespace

struct Autotuner::Impl {
  explicit Impl(Kernel k) : kernel(std::move(k)) {}
  Kernel kernel;
  std::vector<Config> configs;
  std::vector<std::string> key;
  AutotuneOptions options;
  std::string where;
  std::vector<bool> tuned_param;  // per kernel parameter: supplied by the configs
  size_t user_arity = 0;

  std::vector<std::vector<int64_t>> values;  // per config: each parameter's constexpr value (tuned ones)

  std::mutex mu;
  std::map<std::vector<int64_t>, size_t> chosen;  // tuning key -> config index
  std::atomic<size_t> tunings{0};

  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(fmt::format("{}: error in kernel '{}': autotune: {}", where, kernel.name(), msg));
  }

  // The kernel's full argument list: the user's arguments with config `c`'s constexprs inserted.
  // No allocation: a tuned launch costs what an untuned one does.
  std::span<detail::LaunchArg> full_args(std::span<const detail::LaunchArg> user, size_t c, ArgBuffer& buffer) const {
    if (user.size() != user_arity) {
      std::vector<std::string> names;
      for (size_t i = 0; i < tuned_param.size(); ++i)
        if (!tuned_param[i]) names.push_back(kernel.params()[i]);
      fail(fmt::format("expects {} arguments ({}) but got {}; the tuned constexprs come from the configs", user_arity,
                       fmt::join(names, ", "), user.size()));
    }
    std::span<detail::LaunchArg> out = buffer.get(tuned_param.size());
    size_t u = 0;
    for (size_t i = 0; i < tuned_param.size(); ++i)
      out[i] = tuned_param[i] ? detail::LaunchArg{detail::LaunchArg::integer, nullptr, values[c][i], 0} : user[u++];
    return out;
  }

  // The tuning key: the named arguments' values (tensor shapes), every tensor's dtype and device.
  void tuning_key(std::span<const detail::LaunchArg> full, std::vector<int64_t>& out) const {
    out.clear();
    Args a(kernel, full);
    for (const auto& name : key) {
      const auto& p = kernel.params();
      size_t i = static_cast<size_t>(std::find(p.begin(), p.end(), name) - p.begin());
      const auto& arg = full[i];
      if (arg.kind == detail::LaunchArg::tensor)
        for (int64_t d : arg.t->shape()) out.push_back(d);
      else
        out.push_back(arg.kind == detail::LaunchArg::integer ? arg.i : static_cast<int64_t>(arg.f * 1e6));
      out.push_back(-1);  // separator
    }
    for (const auto& arg : full)
      if (arg.kind == detail::LaunchArg::tensor) {
        out.push_back(static_cast<int64_t>(arg.t->dtype()));
        out.push_back(static_cast<int64_t>(arg.t->device().kind()));
        out.push_back(arg.t->device().index());
      }
  }
};

namespace {
Device device_of(std::span<const detail::LaunchArg> full) {
  for (const auto& a : full)
    if (a.kind == detail::LaunchArg::tensor) return a.t->device();
  return default_device();
}

bool print_autotuning() { return env::flag(env::Var::TILEDSL_PRINT_AUTOTUNING, false); }

// The on-disk record of a choice: keyed by the kernel's traced IR (of the first config that
// traces), the key values, the GPU and the compiler version, holding the chosen config's text
// (checked against the configs on reading).
// The config line of a record; nothing when there is none or the file is not a small regular
// file (a FIFO or a device must not block or flood the launch).
std::optional<std::string> read_record(const std::filesystem::path& p) {
  auto text = runtime::read_regular_file(p, 4096);
  if (!text) return std::nullopt;
  return text->substr(0, text->find('\n'));
}

std::filesystem::path record_path(const Autotuner::Impl& t, std::span<const detail::LaunchArg> user,
                                  const std::vector<int64_t>& key) {
  std::string ir;
  for (size_t c = 0; c < t.configs.size() && ir.empty(); ++c) {
    ArgBuffer buf;
    try {
      ir = t.kernel.ir_for(t.full_args(user, c, buf), /*locations=*/false);
    } catch (const Error&) {
      // this config does not trace; the next one may
    }
  }
  ArgBuffer dbuf;
  const Device device = device_of(t.full_args(user, 0, dbuf));
  std::string gpu = device.is_cuda() ? cuda::device_info(device.index()).name : "cpu";
  std::string all = fmt::format("{}\n{}\n{}\n{}", ir, fmt::join(key, ","), gpu, fmt::join(t.kernel.params(), ","));
  std::string h = runtime::hash128(all);
  return std::filesystem::path(runtime::cache_dir()) / "autotune" / (t.kernel.name() + "-" + h + ".txt");
}
}  // namespace

Autotuner::Autotuner(Kernel k, std::vector<Config> configs, std::vector<std::string> key, AutotuneOptions options,
                     SourceLoc loc)
    : impl_(std::make_shared<Impl>(std::move(k))) {
  Impl& t = *impl_;
  t.configs = std::move(configs);
  t.key = std::move(key);
  t.options = std::move(options);
  t.where = fmt::format("{}:{}", std::filesystem::path(loc.file_name()).filename().string(), loc.line());
  if (t.configs.empty()) t.fail("needs at least one config");
  std::set<std::string> tuned;
  for (const auto& c : t.configs)
    for (const auto& [name, v] : c.constexprs) tuned.insert(name);
  const auto& params = t.kernel.params();
  for (size_t i = 0; i < params.size(); ++i) {
    bool is_tuned = tuned.count(params[i]) != 0;
    if (is_tuned && t.kernel.param_specs()[i].kind != ParamKind::constexpr_)
      t.fail(fmt::format("configs set '{}', which is not a tl::Constexpr parameter", params[i]));
    t.tuned_param.push_back(is_tuned);
    if (!is_tuned) ++t.user_arity;
  }
  for (const auto& c : t.configs) {
    std::vector<int64_t> v(params.size(), 0);
    for (size_t i = 0; i < params.size(); ++i) {
      if (!t.tuned_param[i]) continue;
      auto it = c.constexprs.find(params[i]);
      if (it == c.constexprs.end()) t.fail(fmt::format("config {{{}}} gives no value for '{}'", c.str(), params[i]));
      v[i] = it->second;
    }
    t.values.push_back(std::move(v));
  }
  for (const auto& name : tuned)
    if (std::find(params.begin(), params.end(), name) == params.end())
      t.fail(fmt::format("configs set '{}', which is not a parameter (parameters: {})", name, fmt::join(params, ", ")));
  for (const auto& name : t.key) {
    auto it = std::find(params.begin(), params.end(), name);
    if (it == params.end()) t.fail(fmt::format("key names '{}', which is not a parameter", name));
    if (t.tuned_param[static_cast<size_t>(it - params.begin())])
      t.fail(fmt::format("key names '{}', which the configs set", name));
  }
}

const Kernel& Autotuner::kernel() const { return impl_->kernel; }
size_t Autotuner::tunings() const { return impl_->tunings; }

std::optional<Config> Autotuner::lookup(std::span<const detail::LaunchArg> user) const {
  Impl& t = *impl_;
  ArgBuffer buf;
  auto full = t.full_args(user, 0, buf);
  std::vector<int64_t> key;
  t.tuning_key(full, key);
  std::lock_guard lock(t.mu);
  if (auto it = t.chosen.find(key); it != t.chosen.end()) return t.configs[it->second];
  if (auto line = read_record(record_path(t, user, key)))
    for (const auto& c : t.configs)
      if (c.str() == *line) return c;
  return std::nullopt;
}

size_t Autotuner::choose(std::span<const detail::LaunchArg> user, const Grid& grid, void* stream) const {
  Impl& t = *impl_;
  ArgBuffer buf;
  auto full = t.full_args(user, 0, buf);
  thread_local std::vector<int64_t> key;
  t.tuning_key(full, key);
  std::lock_guard lock(t.mu);
  if (auto it = t.chosen.find(key); it != t.chosen.end()) return it->second;

  auto record = record_path(t, user, key);
  if (auto line = read_record(record))
    for (size_t i = 0; i < t.configs.size(); ++i)
      if (t.configs[i].str() == *line) return t.chosen[key] = i;

  Args args(t.kernel, full);
  std::vector<size_t> candidates;
  if (t.options.prune) {
    for (const Config& kept : t.options.prune(t.configs, args))
      for (size_t i = 0; i < t.configs.size(); ++i)
        if (t.configs[i].str() == kept.str()) candidates.push_back(i);
  } else {
    for (size_t i = 0; i < t.configs.size(); ++i) candidates.push_back(i);
  }
  if (candidates.empty()) t.fail("the prune hook kept none of the configs");
  if (t.options.cost_model && t.options.top_k > 0 && static_cast<size_t>(t.options.top_k) < candidates.size()) {
    std::stable_sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) {
      return t.options.cost_model(t.configs[a], args) < t.options.cost_model(t.configs[b], args);
    });
    candidates.resize(static_cast<size_t>(t.options.top_k));
  }

  const Device device = device_of(full);
  const bool gpu = device.is_cuda();
  // The context the launches use (the caller's, where it is on the tensors' GPU): the compile
  // threads load the kernels into it too.
  std::optional<cuda::ContextScope> scope;
  if (gpu) scope.emplace(device.index());
  // Compile every candidate first, on as many threads as the machine has; timing is sequential.
  std::vector<std::exception_ptr> compile_error(t.configs.size());
  if (gpu && candidates.size() > 1) {
    std::atomic<size_t> next{0};
    const cuda::CUcontext ctx = scope->context();
    auto worker = [&] {
      if (const cuda::Driver* d = cuda::driver()) d->cuCtxSetCurrent(ctx);
      for (size_t n; (n = next++) < candidates.size();) {
        size_t i = candidates[n];
        ArgBuffer cbuf;
        try {
          t.kernel.prepare({t.configs[i].num_warps, t.configs[i].num_stages, nullptr}, t.full_args(user, i, cbuf));
        } catch (...) {
          compile_error[i] = std::current_exception();
        }
      }
    };
    size_t threads = std::min<size_t>(candidates.size(), std::max(1u, std::thread::hardware_concurrency()));
    runtime::run_team(static_cast<int>(threads), worker);
  }
  Report report({"config", "median ms", "status"});
  std::optional<size_t> best;
  double best_ms = 1e300;
  std::vector<std::string> reasons;
  for (size_t i : candidates) {
    const Config& c = t.configs[i];
    ArgBuffer cbuf;
    auto cfull = t.full_args(user, i, cbuf);
    try {
      if (compile_error[i]) std::rethrow_exception(compile_error[i]);
      if (!gpu) {  // the interpreter: the first config that traces, untimed (docs/autotune.md)
        t.kernel.ir_for(cfull);
        best = i;
        report.add_row({c.str(), "-", "chosen without timing (interpreter)"});
        break;
      }
      LaunchOptions lo{c.num_warps, c.num_stages, stream};
      auto run = [&] { t.kernel.launch(grid, lo, cfull); };
      run();  // compiles, and fails here if the config cannot run on this GPU
      BenchOptions bo = t.options.bench;
      bo.stream = stream;
      double ms = bench(run, bo).median_ms;
      report.add_row({c.str(), fmt::format("{:.4f}", ms), "ok"});
      if (ms < best_ms) {
        best_ms = ms;
        best = i;
      }
    } catch (const InternalError&) {
      throw;                    // our bug, not the config's: it must be seen
    } catch (const Error& e) {  // the config cannot run (shared memory, registers, ...)
      report.add_row({c.str(), "-", std::string("skipped: ") + e.what()});
      reasons.push_back(c.str() + ": " + e.what());
    }
  }
  ++t.tunings;
  if (print_autotuning()) {
    std::printf("tiledsl: autotuning kernel '%s' (key %s) on %s\n", t.kernel.name().c_str(),
                fmt::format("{}", fmt::join(key, ",")).c_str(),
                gpu ? cuda::device_info(device.index()).name.c_str() : "the interpreter");
    report.print();
  }
  if (!best) t.fail(fmt::format("no config can run:\n  {}", fmt::join(reasons, "\n  ")));
  std::error_code ec;
  std::filesystem::create_directories(record.parent_path(), ec);
  runtime::write_file_atomically(record, t.configs[*best].str() + "\n");  // failure: tune again next time
  return t.chosen[key] = *best;
}

void TunedLaunch::launch(std::span<const detail::LaunchArg> user) const {
  size_t c = t_.choose(user, grid_, stream_);
  const Config& config = t_.impl()->configs[c];
  ArgBuffer buf;
  auto full = t_.impl()->full_args(user, c, buf);
  t_.kernel().launch(grid_, {config.num_warps, config.num_stages, stream_}, full);
}

Autotuner autotune(Kernel k, std::vector<Config> configs, std::vector<std::string> key, AutotuneOptions options,
                   SourceLoc loc) {
  return Autotuner(std::move(k), std::move(configs), std::move(key), std::move(options), loc);
}

}  // namespace tiledsl
