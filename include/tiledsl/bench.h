// Timing GPU work the way Triton's do_bench does (CUDA events, an L2 flush before every run,
// median and quantiles), and a small table/CSV report for benchmark programs.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace tiledsl {

struct BenchOptions {
  int warmup = 25;  // untimed runs first
  int rep = 100;    // timed runs
  std::vector<double> quantiles = {0.2, 0.8};
  bool flush_l2 = true;  // overwrite a buffer larger than the L2 before each run, untimed
  // The CUDA stream `fn` launches on (null: the default stream): the flush and the events go
  // there too, so that what is timed is that stream's work.
  void* stream = nullptr;
};

struct BenchResult {
  double median_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0;
  std::vector<double> quantiles_ms;  // in the order of BenchOptions::quantiles
};

// Times `fn`: on the GPU with CUDA events around each run; without one, with the host clock.
BenchResult bench(const std::function<void()>& fn, const BenchOptions& options = {});

// A table of named columns, printed aligned and written as CSV (Triton's perf_report in spirit).
class Report {
 public:
  explicit Report(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  void add_row(std::vector<std::string> cells);
  std::string table() const;
  std::string csv() const;
  void print() const;
  void write_csv(const std::string& path) const;

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace tiledsl
