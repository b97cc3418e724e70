// Shared by the examples: random inputs, error measurement and the one-line report
// "name  backend  max_err  OK|FAIL" that scripts/run-examples.sh collects.
#pragma once

#include <tiledsl/tiledsl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace example {

// Largest |got - want| / (atol/rtol-scaled) style error; NaN anywhere counts as infinite.
inline double max_abs_error(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double e = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double d = std::fabs(got[i] - want[i]);
    if (std::isnan(d)) return INFINITY;
    e = std::max(e, d);
  }
  return e;
}

// The smallest power of two >= n (Triton's triton.next_power_of_2): tile sizes must be powers of two.
inline int64_t next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

// Largest |got - want| / max(|want|, floor): relative error where the reference is large, absolute
// error scaled by 1/floor where it is near zero (so sign changes do not divide by tiny numbers).
inline double max_rel_error(const std::vector<double>& got, const std::vector<double>& want, double floor = 1e-6) {
  if (got.size() != want.size()) return INFINITY;
  double e = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double d = std::fabs(got[i] - want[i]) / std::max(std::fabs(want[i]), floor);
    if (std::isnan(d)) return INFINITY;
    e = std::max(e, d);
  }
  return e;
}

// Where the example's tensors, and so its kernels, run.
inline const char* backend() { return tiledsl::default_device().is_cuda() ? "gpu" : "interpreter"; }

// Prints the report line and returns the process exit code.
inline int report(const std::string& name, double max_err, double tol) {
  bool ok = max_err <= tol;
  std::printf("%-22s %-12s max_err=%-10.3g %s\n", name.c_str(), backend(), max_err, ok ? "OK" : "FAIL");
  return ok ? 0 : 1;
}

inline int run(const std::string& name, int (*body)()) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::printf("%-22s %-12s %s\nerror: %s\n", name.c_str(), "-", "FAIL", e.what());
    return 1;
  }
}

}  // namespace example
