#include "tiledsl/bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>

#include "runtime/Backend.h"
#include "runtime/cuda/Driver.h"
#include "tiledsl/error.h"

namespace tiledsl {

namespace {
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos)), hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

// Times each run with CUDA events; the L2 flush (a memset of 256 MiB, larger than any L2) runs
// before the start event.
std::vector<double> time_gpu(const cuda::Driver& d, const std::function<void()>& fn, const BenchOptions& o) {
  constexpr size_t kFlushBytes = size_t{256} << 20;
  cuda::CUdeviceptr flush = 0;
  if (o.flush_l2) cuda::check(d.cuMemAlloc(&flush, kFlushBytes), "cuMemAlloc", " (bench L2 flush buffer)");
  std::vector<cuda::CUevent> start(static_cast<size_t>(o.rep)), stop(static_cast<size_t>(o.rep));
  for (size_t i = 0; i < start.size(); ++i) {
    cuda::check(d.cuEventCreate(&start[i], 0), "cuEventCreate");
    cuda::check(d.cuEventCreate(&stop[i], 0), "cuEventCreate");
  }
  auto stream = static_cast<cuda::CUstream>(o.stream);
  for (int i = 0; i < o.warmup; ++i) fn();
  for (size_t i = 0; i < start.size(); ++i) {
    if (flush)
      cuda::check(d.cuMemsetD8Async(flush, static_cast<unsigned char>(i), kFlushBytes, stream), "cuMemsetD8Async");
    cuda::check(d.cuEventRecord(start[i], stream), "cuEventRecord");
    fn();
    cuda::check(d.cuEventRecord(stop[i], stream), "cuEventRecord");
  }
  cuda::check(d.cuStreamSynchronize(stream), "cuStreamSynchronize", " (after the benchmarked function)");
  std::vector<double> ms;
  for (size_t i = 0; i < start.size(); ++i) {
    float t = 0;
    cuda::check(d.cuEventElapsedTime(&t, start[i], stop[i]), "cuEventElapsedTime");
    ms.push_back(t);
    d.cuEventDestroy(start[i]);
    d.cuEventDestroy(stop[i]);
  }
  if (flush) d.cuMemFree(flush);
  return ms;
}

std::vector<double> time_host(const std::function<void()>& fn, const BenchOptions& o) {
  for (int i = 0; i < o.warmup; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < o.rep; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}
}  // namespace

BenchResult bench(const std::function<void()>& fn, const BenchOptions& o) {
  if (o.rep < 1 || o.warmup < 0)
    throw Error(fmt::format("bench: rep must be at least 1 and warmup at least 0, got {} and {}", o.rep, o.warmup));
  for (double q : o.quantiles)
    if (q < 0 || q > 1) throw Error(fmt::format("bench: quantile {} is outside [0, 1]", q));
  const cuda::Driver* d = default_device().is_cuda() ? cuda::driver() : nullptr;
  std::vector<double> ms = d ? time_gpu(*d, fn, o) : time_host(fn, o);
  std::sort(ms.begin(), ms.end());
  BenchResult r;
  r.median_ms = quantile(ms, 0.5);
  r.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  r.min_ms = ms.front();
  r.max_ms = ms.back();
  for (double q : o.quantiles) r.quantiles_ms.push_back(quantile(ms, q));
  return r;
}

void Report::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    throw Error(fmt::format("Report::add_row: {} cells for {} columns", cells.size(), columns_.size()));
  rows_.push_back(std::move(cells));
}

std::string Report::table() const {
  std::vector<size_t> width;
  for (const auto& c : columns_) width.push_back(c.size());
  for (const auto& r : rows_)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t i = 0; i < cells.size(); ++i) s += fmt::format("{}{:<{}}", i ? "  " : "", cells[i], width[i]);
    s.erase(s.find_last_not_of(' ') + 1);
    return s + "\n";
  };
  std::string s = line(columns_);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  s += line(rule);
  for (const auto& r : rows_) s += line(r);
  return s;
}

std::string Report::csv() const {
  auto quote = [](const std::string& c) {
    if (c.find_first_of(",\"\n") == std::string::npos) return c;
    std::string q = "\"";
    for (char ch : c) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t i = 0; i < cells.size(); ++i) s += (i ? "," : "") + quote(cells[i]);
    return s + "\n";
  };
  std::string s = line(columns_);
  for (const auto& r : rows_) s += line(r);
  return s;
}

void Report::print() const {
  std::fputs(table().c_str(), stdout);
  std::fflush(stdout);
}

void Report::write_csv(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw Error("Report::write_csv: cannot write " + path);
  out << csv();
}

}  // namespace tiledsl
