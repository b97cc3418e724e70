// Checks the structural and type invariants of a kernel: every use is defined before it in an
// enclosing scope, operand and result types agree with the op's rules, regions end in yield.
#pragma once

#include "ir/IR.h"

namespace tiledsl::ir {

// Throws tiledsl::Error naming the op, its location and the broken rule.
void verify(const Function& f);

}  // namespace tiledsl::ir
