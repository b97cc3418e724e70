// Common-subexpression elimination.
#pragma once

#include "ir/IR.h"

namespace tiledsl::passes {

// Replaces every Pure op (ir::kPure, without regions) that repeats an earlier op of the same
// kind, operands, attributes (floats compared bit for bit) and result types by that earlier
// op, and erases it; returns whether anything changed. Scoped by regions: an op in a region
// may be replaced by one in an enclosing block before it, never by one in another region.
// Loads, atomics and every other op without the Pure trait are never merged.
bool cse(ir::Function& f);

}  // namespace tiledsl::passes
