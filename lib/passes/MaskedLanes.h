// Masked lanes nobody reads: a masked load reads `other` (0 without it) where its mask is off,
// and code generation sets those elements before the load is issued. When every element the
// load produces reaches memory only through stores under the same mask (through elementwise
// ops and layout conversions, in any operand), the masked-off elements are never observed and
// need no value: vector add's loads, layer norm's loads of w and b. Any other use (a reduction,
// a loop-carried value, a store's mask, an atomic, a print) keeps them.
#pragma once

#include <unordered_set>

#include "ir/IR.h"

namespace tiledsl::passes {

// The masked loads of `f` whose masked-off elements are never observed.
std::unordered_set<const ir::Op*> loads_with_unread_masked_lanes(const ir::Function& f);

}  // namespace tiledsl::passes
