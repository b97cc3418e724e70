// Dead-code elimination.
#pragma once

#include "ir/IR.h"

namespace tiledsl::passes {

// Erases ops whose results are all unused and that do nothing else: Pure ops (ir::kPure, a
// reduction's or scan's region included) and `for` / `if` ops whose regions hold only Pure
// ops. Loads (not Pure: they can fault), stores, atomics, prints and asserts, and control
// flow around them, are always kept. Repeats until nothing more is dead, inside regions
// too; returns whether anything changed.
bool dce(ir::Function& f);

}  // namespace tiledsl::passes
