// Canonicalisation: constant folding and exact algebraic simplification of the tile IR.
#pragma once

#include "ir/IR.h"

namespace tiledsl::passes {

// Rewrites `f` in place; returns whether anything changed (the IR is untouched otherwise).
//  - Folds arithmetic, bitwise ops, comparisons, neg/not/abs and casts whose operands are
//    constants (or splats of constants) into one constant (or one splat of it), with exactly
//    the interpreter's semantics: integers wrap to their width, floats round to their dtype
//    (f16, bf16, f32 and f64 only; a NaN result is left unfolded).
//  - Applies the identities that hold bit for bit: x + 0 and x - 0 for integers, x * 1 for
//    every type (never x + 0.0 for floats: -0.0 + 0.0 is +0.0).
//  - select with a constant condition becomes the chosen operand; broadcast, reshape or
//    expand_dims of a splat becomes one splat; broadcast, reshape, cast and bitcast to the
//    operand's own type disappear.
// Replaced ops are erased; the constants and splats they read are left for dce.
bool canonicalize(ir::Function& f);

}  // namespace tiledsl::passes
