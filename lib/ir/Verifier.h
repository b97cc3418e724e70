// Checks every invariant the passes and code generation rely on, so that whatever passes the
// verifier compiles and whatever does not is one line naming the op, its location and the broken
// rule: every use is defined before it in an enclosing scope; every type is well formed (tile
// dimensions powers of two, at most kMaxTileElements elements, pointers to scalars); each op has
// the operands, results, regions and attributes its line in ir/Ops.def declares, of the kinds it
// declares, and the types, ranks and axes of its own rule; regions end in yield; kernel and
// parameter names are identifiers.
#pragma once

#include <cstdint>
#include <string>

#include "ir/IR.h"

namespace tiledsl::ir {

// The largest tile: 2^20 elements, as Triton's TRITON_MAX_TENSOR_NUMEL.
inline constexpr int64_t kMaxTileElements = int64_t{1} << 20;
// Enough dimensions for a 2^20-element tile viewed as dimensions of size 2 (tl::sort's and
// tl::flip's hypercube) beside a few others.
inline constexpr size_t kMaxTileRank = 24;
// How deeply regions may nest (loops in loops, branches in loops, ...); the parser stops there too.
inline constexpr int kMaxRegionDepth = 64;
// Philox rounds: Triton uses 10; the bound keeps the unrolled rounds a sensible size.
inline constexpr int64_t kMaxPhiloxRounds = 64;
// Warps per program: a power of two, at most 32 (1024 threads, the CUDA limit per block).
inline constexpr int kMaxNumWarps = 32;
// Pipeline stages: 1 to 8.
inline constexpr int kMaxNumStages = 8;
// The most iterations one unrolled copy of a loop body may hold (tl::RangeOptions::unroll).
inline constexpr int kMaxUnroll = 64;

// Throws tiledsl::Error naming the op, its location and the broken rule. A kernel whose tiles
// have layouts (all of them, or none) is held to the layouts' rules too (ir/LayoutHooks.h):
// among them, every layout is for `num_warps` warps, the kernel's (0: for the warps of its
// first layout).
void verify(const Function& f, int num_warps = 0);

// What is wrong with a launch's num_warps or num_stages, or "" when nothing is: the one rule for
// the front end, code generation and the tools.
std::string num_warps_problem(int64_t num_warps);
std::string num_stages_problem(int64_t num_stages);

// Throws tiledsl::Error unless `num_warps` is a power of two from 1 to kMaxNumWarps; `where`
// prefixes the message (a tool's name, or the user's file:line).
void check_num_warps(int64_t num_warps, const std::string& where);

}  // namespace tiledsl::ir
