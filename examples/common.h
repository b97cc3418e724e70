// Shared by the examples: random inputs, error measurement and the one-line report
// "name  backend  max_err  OK|FAIL" that scripts/run-examples.sh collects.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <tiledsl/tiledsl.h>

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

// Prints the report line and returns the process exit code.
inline int report(const std::string& name, double max_err, double tol) {
  bool ok = max_err <= tol;
  std::printf("%-22s %-12s max_err=%-10.3g %s\n", name.c_str(), "interpreter", max_err, ok ? "OK" : "FAIL");
  return ok ? 0 : 1;
}

inline int run(const std::string& name, int (*body)()) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::printf("%-22s %-12s %s\nerror: %s\n", name.c_str(), "interpreter", "FAIL", e.what());
    return 1;
  }
}

}  // namespace example
