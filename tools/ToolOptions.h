// Command-line values shared by tiledsl-opt and tiledsl-aot: each bad value is one line naming
// the flag, and exit status 2 (never an abort from std::stoi).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "ir/IR.h"
#include "ir/Verifier.h"
#include "tiledsl/error.h"

namespace tiledsl::tools {

[[noreturn]] inline void bad_option(const char* tool, const std::string& msg) {
  std::cerr << tool << ": " << msg << "\n";
  std::exit(2);
}

// The integer after `--flag=`, from lo to hi.
inline int int_option(const char* tool, const std::string& flag, const std::string& text, int lo, int hi) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || errno == ERANGE || *end != '\0' || v < lo || v > hi)
    bad_option(tool, flag + " takes an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
                         text + "'");
  return static_cast<int>(v);
}

inline int num_warps_option(const char* tool, const std::string& text) {
  int n = int_option(tool, "--num-warps", text, 1, ir::kMaxNumWarps);
  try {
    ir::check_num_warps(n, "--num-warps");
  } catch (const Error& e) {
    bad_option(tool, e.what());
  }
  return n;
}

inline std::string arch_option(const char* tool, const std::string& text) {
  if (text != "sm_80" && text != "sm_90" && text != "sm_90a")
    bad_option(tool, "--arch takes sm_80, sm_90 or sm_90a, got '" + text + "'");
  return text;
}

}  // namespace tiledsl::tools
