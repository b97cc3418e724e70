// Shared-memory allocation: where each op's shared-memory buffer lives in one per-program arena.
#pragma once

#include "ir/IR.h"

namespace tiledsl::passes {

// Runs on a kernel with layouts (after assign_layouts): finds every op whose lowering uses a
// shared-memory buffer and how many bytes it needs (convert_layout, trans and the shape ops
// that cannot stay in registers; dot, which stages a and b in their element type; reductions
// across warps; scans; atomics, whose result may be shared with threads holding replicas),
// gives each buffer a live range (a buffer is scratch for the one op that uses it, except a
// tensor-core dot in a loop that cycles through several buffers (dot_buffers, dot_smem;
// `wgmma`: the target is sm_90a): they live as long as its loop), and packs the buffers into one arena: buffers whose
// live ranges do not overlap may share bytes, each starts at a multiple of 16 bytes (a dot's at a multiple of 1024).
// Records `smem_offset` and `smem_bytes` on each such op and the arena's size as `shared_bytes` on the function.
//
// lib/codegen places each buffer at its smem_offset in the kernel's dynamic shared memory
// (checking that its lowering needs no more than smem_bytes) and the runtime launches with
// shared_bytes of it, opting in above 48 KiB.
void allocate_shared(ir::Function& f, bool wgmma = false);

}  // namespace tiledsl::passes
