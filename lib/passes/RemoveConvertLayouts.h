// Removal of redundant layout conversions, after layout assignment (passes/AssignLayouts.h).
#pragma once

#include "ir/IR.h"

namespace tiledsl::passes {

// Rewrites the convert_layout ops of `f` in place; returns whether anything changed.
//  - A conversion to the layout its operand already has is removed.
//  - A conversion of a conversion reads the first one's operand: convert(convert(x)) is one
//    conversion of x, or none when x already has the final layout.
//  - A conversion of a splat or an arange is replaced by the same op computed in the target
//    layout (no shared-memory round trip: codegen builds both from thread indices).
//  - A conversion of an integer, boolean or pointer elementwise op whose operands are, a few
//    ops down, splats, aranges and constants only (index arithmetic) is replaced by the op on converted operands, which
//    the rule above then computes again in the target layout.
//  - A conversion whose readers all sit in one branch of a later if in its block moves into
//    that branch (it runs only where needed: a persistent matmul's epilogue).
// Conversions and pure ops left without users are erased.
bool remove_convert_layouts(ir::Function& f);

}  // namespace tiledsl::passes
