#include "support/Env.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "tiledsl/error.h"

namespace tiledsl::env {

const std::vector<Info>& all() {
  static const std::vector<Info> vars = {
#define TILEDSL_ENV(name, kind) {#name, Kind::kind},
#include "support/Env.def"
#undef TILEDSL_ENV
  };
  return vars;
}

std::string value(Var v) {
  const char* e = std::getenv(all()[static_cast<size_t>(v)].name);
  return e ? e : "";
}

bool flag(Var v, bool fallback) {
  std::string s = value(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s.empty()) return fallback;
  if (s == "1" || s == "true" || s == "on" || s == "yes") return true;
  if (s == "0" || s == "false" || s == "off" || s == "no") return false;
  throw Error(std::string(all()[static_cast<size_t>(v)].name) + " must be 1/true/on/yes or 0/false/off/no, got '" +
              value(v) + "'");
}

}  // namespace tiledsl::env
