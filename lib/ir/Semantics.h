// The value semantics of the elementwise ops on one element: what the interpreter computes and
// what canonicalize folds, in one place so the two cannot drift apart. Integers are held as
// int64 wrapped to their dtype's width (u64 as its bit pattern); floats as double rounded to
// their dtype. docs/language.md states the same rules for users.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "ir/IR.h"

namespace tiledsl::ir {

// add sub mul div rem maximum minimum and or xor shl shr on integers of dtype `d`: wrapping, C's
// truncating division, division by zero defined (quotient all bits set, remainder the dividend),
// MIN / -1 wrapping, shifts by the width or more giving 0 (or the sign).
int64_t int_binary(OpKind k, DType d, int64_t a, int64_t b);
// The same ops on floats, computed exactly and rounded once to `d`.
double float_binary(OpKind k, DType d, double a, double b);
// The math op's function `fn` (tanh, log1p, ...; erfinv by Newton steps on erf) of `x`, and
// math2's (pow, atan2, hypot) of `a` and `b`, in the precision the GPU computes `d` in (f64 for
// f64, f32 for the rest), not yet rounded to `d`.
// The number of output ('=') and input constraints in an inline-asm constraint string ("=r,r,r";
// clobbers, "~{memory}", count as neither).
std::pair<int, int> constraint_counts(const std::string& constraints);
double math_fn(const std::string& fn, DType d, double x);
double math2_fn(const std::string& fn, DType d, double a, double b);
// neg, abs, not on integers of dtype `d`.
int64_t int_unary(OpKind k, DType d, int64_t a);
// A comparison `pred` ("eq", "ne", "lt", "le", "gt", "ge"); NaN compares unequal to everything.
bool compare_ints(const std::string& pred, DType d, int64_t a, int64_t b);
bool compare_floats(const std::string& pred, double a, double b);
// Conversions between dtypes, as the GPU's cvt: float to integer truncates and saturates (NaN
// becomes 0), float to bool is x != 0, integer to float rounds once to nearest even.
int64_t float_to_int(DType to, double x);
double int_to_float(DType from, int64_t x, DType to);
// An f32 rounded to tf32 (10 mantissa bits) to nearest, ties away from zero, as the GPU's
// cvt.rna.tf32.f32: the bits plus 2^12, the low 13 cleared (a carry may reach the exponent, up to
// infinity); infinities and NaN unchanged. What dot's input_precision tf32 and tf32x3 apply to
// f32 inputs.
float round_to_tf32(float x);
// Why an atomic `kind` ("add", ..., "xchg", "cas") on elements of `d` cannot run at `scope`, or
// empty: at system scope the GPU has atom instructions for 32- and 64-bit integers, f32 and f64
// add, exchange and compare-and-swap, and f16 and bf16 add (the other combinations run as
// compare-and-swap loops, which only the GPU-scope path builds).
std::string atomic_scope_problem(const std::string& kind, DType d, const std::string& scope);
// The accumulator's (and result's) dtype of a dot of `in` inputs: i32 for i8, f32 otherwise.
inline DType dot_accumulator(DType in) { return in == DType::i8 ? DType::i32 : DType::f32; }

}  // namespace tiledsl::ir
