// The stable text form of the IR (docs/architecture.md, "IR text"): deterministic numbering,
// one op per line, parsed back by ir/Parser.h.
#pragma once

#include <string>

#include "ir/IR.h"

namespace tiledsl::ir {

struct PrintOptions {
  bool locations = true;  // append loc("file":line:col) to every op
};

std::string print(const Function& f, PrintOptions opts = {});
std::string attr_str(const Attr& a);

}  // namespace tiledsl::ir
