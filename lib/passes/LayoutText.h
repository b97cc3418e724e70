// The layouts' side of ir/LayoutHooks.h: reading the text Layout::str() prints, and the rules a
// kernel's layouts must follow for code generation to handle them. Installed as lib/ir's layout
// hooks when this library is linked in.
#pragma once

#include <string>
#include <string_view>

#include "ir/IR.h"

namespace tiledsl::passes {

// Whether the tiles of `f` have layouts (the verifier holds a kernel to all or none). The
// pipeline leaves the layouts of such a kernel as they are: assign-layouts and prefetch-loads
// skip it.
bool has_layouts(const ir::Function& f);

// ir::LayoutHooks::parse: blocked<spt=[..], tpw=[..], wpc=[..], order=[..]>, slice<dim=D, L>,
// mma<16x8, wpc=[M, N]>.
const ir::Layout* parse_layout(std::string_view text, size_t& used, std::string& error);

// ir::LayoutHooks::problem. Each layout must fit its tile: the tile's rank; sizes powers of two;
// 32 threads per warp; `num_warps` warps (product of wpc, or of an mma layout's warps); at most
// kMaxSizePerThread elements per thread in a blocked layout's block; an order that permutes the
// dimensions; a slice of a dimension its parent has; an mma layout on a rank-2 tile (of any
// shape: smaller tiles wrap, as [1, N] tiles that broadcast into an accumulator). And the ops' own rules: a reduction's
// results are the slice of its operands' layout along its axis, and a dot whose result has an mma layout has f16 or
// bf16 operands with M, N and K multiples of 16 * warps_m, 8 * warps_n and 16. (Rules that ask two layouts to be equal
// are in ir/Verifier.cpp: layouts are interned, so equal means identical.)
std::string layout_problem(const ir::Op& op, int& num_warps);

// The most elements one thread holds of a blocked layout's block (the product of
// size_per_thread): more is never a layout worth having (a 16-byte vector of 8-bit elements
// is 16), and the bound keeps the registers per thread to a small multiple of the elements.
inline constexpr int kMaxSizePerThread = 64;

}  // namespace tiledsl::passes
