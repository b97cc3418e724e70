// Layout assignment: gives every tile value of a kernel a distributed layout (passes/Layouts.h).
#pragma once

#include "ir/IR.h"

namespace tiledsl::passes {

// Rewrites `f` in place so that every tile type carries a layout. Loads and stores anchor the
// layouts: a blocked layout coalesced along the last dimension, with as many contiguous
// elements per thread as the axis analysis allows (up to 16 bytes). Those layouts flow
// backwards to the values that feed the anchors (through elementwise ops, broadcasts, and
// expand_dims, which takes the slice of its result's layout), so address arithmetic is
// computed where it is used. Reductions produce the slice of their operand's layout. Where
// a value is wanted in two layouts, a convert_layout op is inserted before the second use
// (an arange or a splat is computed again instead). Loop-carried values and if results keep
// one layout on every path. A kernel whose tiles have layouts already is left as it is.
// `fp8_mma`: fp8 dots may run on tensor cores (sm_89 and later).
void assign_layouts(ir::Function& f, int num_warps, bool wgmma = false, bool fp8_mma = false);

}  // namespace tiledsl::passes
