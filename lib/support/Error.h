// Two error channels (as in Halide): user_error for the user's mistakes, TILEDSL_CHECK for ours.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

#include "tiledsl/error.h"

namespace tiledsl {

// "file.cpp:12: error in kernel 'k': load: <message>"
template <class... Args>
[[noreturn]] void user_error(const std::string& where, const std::string& kernel, const std::string& op,
                             fmt::format_string<Args...> f, Args&&... args) {
  std::string msg = where.empty() ? std::string("error") : where + ": error";
  if (!kernel.empty()) msg += " in kernel '" + kernel + "'";
  msg += ": ";
  if (!op.empty()) msg += op + ": ";
  msg += fmt::format(f, std::forward<Args>(args)...);
  throw Error(msg);
}

namespace detail {
// The file's base name only: no path of the machine that built the library in a message.
constexpr const char* base_name(const char* path) {
  const char* base = path;
  for (const char* p = path; *p; ++p)
    if (*p == '/') base = p + 1;
  return base;
}

template <class... Args>
[[noreturn]] void internal_error(const char* file, int line, Args&&... args) {
  std::string msg = fmt::format("tiledsl internal error at {}:{}: ", base_name(file), line);
  ((msg += fmt::format("{}", std::forward<Args>(args))), ...);
  throw InternalError(msg);
}
}  // namespace detail

}  // namespace tiledsl

#define TILEDSL_CHECK(cond, ...)                                                                                    \
  do {                                                                                                              \
    if (!(cond)) ::tiledsl::detail::internal_error(__FILE__, __LINE__, "check failed: " #cond ": ", ##__VA_ARGS__); \
  } while (0)
