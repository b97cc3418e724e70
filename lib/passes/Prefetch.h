// Software pipelining in registers: loads that feed a dot in a loop are issued one iteration
// ahead.
#pragma once

#include "ir/IR.h"

namespace tiledsl::passes {

// In every `for` whose body loads tiles that reach a `dot` (through pure ops), each such load
// whose pointer, mask and other depend only on the induction variable, loop-carried values and
// values from outside the loop through pure ops is rotated: the loop's first load is issued
// before the loop (masked off entirely when the loop runs no iteration), and each iteration,
// before its first dot, issues the load of the next iteration (masked off in the last one),
// which the loop carries. The global memory latency of iteration k + 1 then overlaps the dot of
// iteration k. Values are unchanged: the same addresses are read under the same masks, earlier.
// Runs when `num_stages` is 2 or more.
void prefetch_loads(ir::Function& f, int num_stages);

}  // namespace tiledsl::passes
