// Integer division by a divisor that does not change in a loop, as a multiply: Granlund and
// Montgomery, "Division by Invariant Integers using Multiplication" (PLDI 1994), section 4. The
// constants are computed once before the loop (one 64-bit division there); each division in the
// loop is then a high multiply, two subtractions or additions and two shifts, where the GPU's
// div.s32 is a sequence of about 25 instructions (a reciprocal in float and corrections).
//
// The arithmetic is written once, over an `A` that supplies the operations: the LLVM pass
// (InvariantDivision.cpp) builds IR with it, and the unit tests run the same steps on host
// integers against `/` and `%`.
//
// A provides `using Value`, 32-bit operations k(uint32_t), add, sub, xor_, lshr, ashr, mulhi
// (unsigned, the high half), umin, clz (32 for 0), is_negative, select(cond, a, b), equal; and
// the one 64-bit step wide_quotient(l, d): floor(2^32 (2^l - d) / d) for 1 <= d < 2^32, l the
// smallest with 2^l >= d.
#pragma once

#include <cstdint>

namespace tiledsl::codegen::division {

template <class V>
struct Magic {
  V multiplier, shift1, shift2;
};

// The constants for an unsigned divisor d; d = 0 is read as 1 (the caller's division by zero is
// guarded or undefined, and the constants are computed before the loop whether it runs or not).
template <class A>
Magic<typename A::Value> unsigned_magic(A& a, typename A::Value d) {
  d = a.select(a.equal(d, a.k(0)), a.k(1), d);
  auto l = a.sub(a.k(32), a.clz(a.sub(d, a.k(1))));  // ceil(log2 d): 0 for 1, 32 above 2^31
  auto m = a.add(a.wide_quotient(l, d), a.k(1));     // < 2^32: (2^l - d) < d
  auto shift1 = a.umin(l, a.k(1));
  return {m, shift1, a.sub(l, shift1)};
}

// floor(n / d) for unsigned 32-bit n: t = mulhi(m, n), q = (t + ((n - t) >> shift1)) >> shift2
// (the sum cannot overflow: n - t is halved first).
template <class A>
typename A::Value unsigned_divide(A& a, typename A::Value n, const Magic<typename A::Value>& m) {
  auto t = a.mulhi(m.multiplier, n);
  return a.lshr(a.add(t, a.lshr(a.sub(n, t), m.shift1)), m.shift2);
}

// |d| as unsigned (2^31 for the most negative d), whose constants signed_divide takes.
template <class A>
typename A::Value magnitude(A& a, typename A::Value d) {
  return a.select(a.is_negative(d), a.sub(a.k(0), d), d);
}

// n / d rounded toward zero (C's and Triton's signed division), `m` the constants of |d|: the
// quotient of the magnitudes, negated when the signs differ. MIN / -1 wraps to MIN.
template <class A>
typename A::Value signed_divide(A& a, typename A::Value n, typename A::Value d, const Magic<typename A::Value>& m) {
  auto q = unsigned_divide(a, magnitude(a, n), m);
  auto sign = a.ashr(a.xor_(n, d), a.k(31));  // all ones when the signs differ
  return a.sub(a.xor_(q, sign), sign);
}

}  // namespace tiledsl::codegen::division
