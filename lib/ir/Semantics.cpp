#include "ir/Semantics.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "support/Error.h"

namespace tiledsl::ir {

namespace {
double int_to_double(DType t, int64_t v) {
  return t == DType::u64 ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
}

template <class T>
bool compare(const std::string& p, T a, T b) {
  if (p == "eq") return a == b;
  if (p == "ne") return a != b;
  if (p == "lt") return a < b;
  if (p == "le") return a <= b;
  if (p == "gt") return a > b;
  return a >= b;
}
}  // namespace

int64_t int_binary(OpKind k, DType d, int64_t a, int64_t b) {
  const bool uns = is_unsigned(d);
  const int width = bit_width(d);
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  int64_t r = 0;
  switch (k) {
    case OpKind::Add:
      r = static_cast<int64_t>(ua + ub);
      break;
    case OpKind::Sub:
      r = static_cast<int64_t>(ua - ub);
      break;
    case OpKind::Mul:
      r = static_cast<int64_t>(ua * ub);
      break;
    case OpKind::Div:
    case OpKind::Rem:
      if (b == 0) {  // defined, as on the GPU: all bits set, remainder = dividend
        r = k == OpKind::Div ? -1 : a;
        break;
      }
      if (uns)
        r = static_cast<int64_t>(k == OpKind::Div ? ua / ub : ua % ub);
      else if (b == -1)
        r = k == OpKind::Div ? static_cast<int64_t>(0ull - ua) : 0;
      else
        r = k == OpKind::Div ? a / b : a % b;
      break;
    case OpKind::Max:
      r = uns ? static_cast<int64_t>(std::max(ua, ub)) : std::max(a, b);
      break;
    case OpKind::Min:
      r = uns ? static_cast<int64_t>(std::min(ua, ub)) : std::min(a, b);
      break;
    case OpKind::And:
      r = a & b;
      break;
    case OpKind::Or:
      r = a | b;
      break;
    case OpKind::Xor:
      r = a ^ b;
      break;
    case OpKind::Shl:
      r = ub >= static_cast<uint64_t>(width) ? 0 : static_cast<int64_t>(ua << ub);
      break;
    case OpKind::Shr:
      if (uns)
        r = ub >= static_cast<uint64_t>(width) ? 0 : static_cast<int64_t>(ua >> ub);
      else
        r = a >> std::min<uint64_t>(ub, 63);
      break;
    default:
      break;
  }
  return d == DType::i1 ? (r & 1) : wrap_int(d, r);
}

namespace {
// erf^-1 of y in (-1, 1): Giles' single-precision approximation ("Approximating the erfinv
// function", 2010), then Newton steps on erf, which converge to double precision.
double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return NAN;
  if (y == 1 || y == -1) return y * INFINITY;
  double w = -std::log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
                     0.246640727, 1.50140941})
      p = c + p * w;
    x = p * y;
  } else {
    w = std::sqrt(w) - 3.0;
    double p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                     1.00167406, 2.83297682})
      p = c + p * w;
    x = p * y;
  }
  for (int i = 0; i < 4; ++i) {
    const double slope = 2.0 / std::sqrt(M_PI) * std::exp(-x * x);
    if (slope == 0) break;
    x -= (std::erf(x) - y) / slope;
  }
  return x;
}

template <class T>
T unary_fn(const std::string& fn, T x) {
  if (fn == "tanh") return std::tanh(x);
  if (fn == "log1p") return std::log1p(x);
  if (fn == "expm1") return std::expm1(x);
  if (fn == "tan") return std::tan(x);
  if (fn == "asin") return std::asin(x);
  if (fn == "acos") return std::acos(x);
  if (fn == "atan") return std::atan(x);
  if (fn == "sinh") return std::sinh(x);
  if (fn == "cosh") return std::cosh(x);
  if (fn == "asinh") return std::asinh(x);
  if (fn == "acosh") return std::acosh(x);
  if (fn == "atanh") return std::atanh(x);
  if (fn == "erfinv") return static_cast<T>(erfinv(x));
  if (fn == "cbrt") return std::cbrt(x);
  if (fn == "log10") return std::log10(x);
  if (fn == "exp10") return std::pow(T(10), x);
  if (fn == "trunc") return std::trunc(x);
  if (fn == "round") return std::round(x);  // halves away from zero, as libdevice's round
  TILEDSL_CHECK(false, "math: unknown function ", fn);
  return x;
}

template <class T>
T binary_fn(const std::string& fn, T a, T b) {
  if (fn == "pow") return std::pow(a, b);
  if (fn == "atan2") return std::atan2(a, b);
  if (fn == "hypot") return std::hypot(a, b);
  if (fn == "div_rn") return a / b;  // in T: IEEE division, rounded to nearest
  TILEDSL_CHECK(false, "math2: unknown function ", fn);
  return a;
}
}  // namespace

std::pair<int, int> constraint_counts(const std::string& c) {
  int outs = 0, ins = 0;
  size_t start = 0;
  while (start <= c.size()) {
    size_t end = c.find(',', start);
    if (end == std::string::npos) end = c.size();
    std::string_view item(c.data() + start, end - start);
    if (!item.empty() && item[0] != '~') ++(item[0] == '=' ? outs : ins);
    start = end + 1;
  }
  return {outs, ins};
}

double math_fn(const std::string& fn, DType d, double x) {
  return d == DType::f64 ? unary_fn<double>(fn, x) : unary_fn<float>(fn, static_cast<float>(x));
}

double math2_fn(const std::string& fn, DType d, double a, double b) {
  return d == DType::f64 ? binary_fn<double>(fn, a, b)
                         : binary_fn<float>(fn, static_cast<float>(a), static_cast<float>(b));
}

double float_binary(OpKind k, DType d, double a, double b) {
  double r = 0;
  switch (k) {
    case OpKind::Add:
      r = a + b;
      break;
    case OpKind::Sub:
      r = a - b;
      break;
    case OpKind::Mul:
      r = a * b;
      break;
    case OpKind::Div:
      r = a / b;
      break;
    case OpKind::Rem:
      r = std::fmod(a, b);
      break;
    case OpKind::Max:
      r = std::fmax(a, b);
      break;
    case OpKind::Min:
      r = std::fmin(a, b);
      break;
    default:
      break;
  }
  return round_to(d, r);
}

int64_t int_unary(OpKind k, DType d, int64_t a) {
  uint64_t negated = 0ull - static_cast<uint64_t>(a);
  switch (k) {
    case OpKind::Not:
      return d == DType::i1 ? !a : wrap_int(d, ~a);
    case OpKind::Neg:
      return wrap_int(d, static_cast<int64_t>(negated));
    default:
      return is_unsigned(d) ? a : wrap_int(d, a < 0 ? static_cast<int64_t>(negated) : a);  // Abs
  }
}

bool compare_ints(const std::string& pred, DType d, int64_t a, int64_t b) {
  if (d == DType::u64) return compare(pred, static_cast<uint64_t>(a), static_cast<uint64_t>(b));
  return compare(pred, a, b);
}

bool compare_floats(const std::string& pred, double a, double b) { return compare(pred, a, b); }

int64_t float_to_int(DType to, double x) {
  // To bool: x != 0 (so 0.5 and NaN are true). Otherwise as the GPU's cvt.rzi: truncate,
  // saturate to the target range, NaN becomes 0.
  if (to == DType::i1) return x != 0;
  if (std::isnan(x)) return 0;
  x = std::trunc(x);
  if (to == DType::u64) {
    if (x <= 0) return 0;
    if (x >= 18446744073709551615.0) return static_cast<int64_t>(~uint64_t{0});
    return static_cast<int64_t>(static_cast<uint64_t>(x));
  }
  double lo, hi;
  if (is_unsigned(to)) {
    lo = 0;
    hi = std::ldexp(1.0, bit_width(to)) - 1;
  } else {
    lo = -std::ldexp(1.0, bit_width(to) - 1);
    hi = std::ldexp(1.0, bit_width(to) - 1) - 1;
  }
  if (to == DType::i64) {
    if (x >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
    if (x <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(x);
  }
  return static_cast<int64_t>(std::clamp(x, lo, hi));
}

// An integer converted to float type `to` with one rounding (as cvt.rn does). A 64-bit integer
// may not fit in double's 53 bits: it is first rounded to odd there, which keeps the final
// rounding to any narrower type exact.
double int_to_float(DType from, int64_t v, DType to) {
  if (to == DType::f64 || bit_width(from) < 64) return round_to(to, int_to_double(from, v));
  bool neg = from != DType::u64 && v < 0;
  uint64_t m = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  int shift = 0;
  while ((m >> shift) >= (uint64_t{1} << 53)) ++shift;
  uint64_t top = m >> shift;
  if (shift && (m & ((uint64_t{1} << shift) - 1))) top |= 1;  // sticky bit: round to odd
  double d = std::ldexp(static_cast<double>(top), shift);
  return round_to(to, neg ? -d : d);
}

float round_to_tf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u) return x;
  bits = (bits + 0x1000u) & 0xffffe000u;
  std::memcpy(&x, &bits, 4);
  return x;
}

std::string atomic_scope_problem(const std::string& kind, DType d, const std::string& scope) {
  if (scope != "sys") return "";
  const int bits = bit_width(d);
  if (is_int(d) && (bits == 32 || bits == 64)) return "";
  if ((d == DType::f32 || d == DType::f64) && (kind == "add" || kind == "xchg" || kind == "cas")) return "";
  if ((d == DType::f16 || d == DType::bf16) && kind == "add") return "";
  return fmt::format(
      "{} on {} has no system-scope atomic instruction (32- and 64-bit integers, f32 and f64 add, "
      "xchg and cas, f16 and bf16 add have one)",
      kind, name(d));
}

}  // namespace tiledsl::ir
