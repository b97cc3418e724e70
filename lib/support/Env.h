// The registry of tiledsl's environment variables (support/Env.def) and the one way to read them.
#pragma once

#include <string>
#include <vector>

namespace tiledsl::env {

enum class Var {
#define TILEDSL_ENV(name, kind) name,
#include "support/Env.def"
#undef TILEDSL_ENV
};
enum class Kind { Flag, Value };

struct Info {
  const char* name;
  Kind kind;
};
const std::vector<Info>& all();

// The variable's value; empty when it is unset (or set to the empty string).
std::string value(Var v);
// A Flag: 1, true, on, yes -> true; 0, false, off, no -> false (any case); unset or empty ->
// `fallback`; anything else is a tiledsl::Error naming the variable.
bool flag(Var v, bool fallback);

}  // namespace tiledsl::env
