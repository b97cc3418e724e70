// Software pipelining: loads that feed a dot in a loop are issued one or more iterations ahead.
#pragma once

#include "ir/IR.h"

namespace tiledsl::passes {

struct PrefetchOptions {
  int num_stages = 3;  // 2 or more: prefetch
  bool wgmma = false;  // the target has warpgroup MMA (sm_90a): b may be copied K-major
  int num_warps = 4;
  bool fp8_mma = false;  // the target has fp8 tensor cores (sm_89 and later)
};

// In every `for` whose body loads tiles that reach a `dot` (through pure ops), each such load
// whose pointer, mask and other depend only on the induction variable, loop-carried values and
// values from outside the loop through pure ops is rotated by a distance d: the loop's first d
// loads are issued before the loop (each masked off entirely when its iteration does not run),
// and each iteration, before its first dot, issues the load of iteration k + d (masked off when
// that iteration does not run). The loop carries d tiles per load, the current iteration's
// first, and shifts them by one each iteration. The global memory latency of iteration k + d
// then overlaps the dots of iterations k to k + d - 1. Values are unchanged: the same addresses
// are read under the same masks, earlier.
//
// d is num_stages - 1 when every load of the loop goes as it is only into tensor-core dots, along
// the lines of their shared arrays, and reads zeros where masked (code generation copies those
// with cp.async into shared ring buffers: passes::direct_copies), else 1 (the tiles in flight
// are carried in registers). Runs when num_stages is 2 or more.
void prefetch_loads(ir::Function& f, const PrefetchOptions& opts);

}  // namespace tiledsl::passes
