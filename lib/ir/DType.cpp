#include "tiledsl/dtype.h"

#include <array>
#include <limits>

namespace tiledsl {

namespace {
constexpr std::array<std::string_view, 15> kNames = {"i1",  "i8",  "i16",  "i32", "i64", "u8",     "u16",   "u32",
                                                     "u64", "f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2"};

int bias(FloatFormat f) { return (1 << (f.exp_bits - 1)) - 1; }

double max_finite(FloatFormat f) {
  int max_exp_field = f.ieee ? (1 << f.exp_bits) - 2 : (1 << f.exp_bits) - 1;
  // e4m3: the top binade loses its all-ones mantissa to NaN.
  double top_mant = f.ieee ? 2.0 - std::ldexp(1.0, -f.man_bits) : 2.0 - std::ldexp(2.0, -f.man_bits);
  return std::ldexp(top_mant, max_exp_field - bias(f));
}

uint32_t nan_bits(FloatFormat f) {
  uint32_t all = (1u << (f.exp_bits + f.man_bits)) - 1;
  return f.ieee ? (all ^ ((1u << f.man_bits) - 1)) | (1u << (f.man_bits - 1)) : all;
}
}  // namespace

std::string_view name(DType t) { return kNames[static_cast<size_t>(t)]; }

bool parse_dtype(std::string_view s, DType& out) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == s) {
      out = static_cast<DType>(i);
      return true;
    }
  return false;
}

uint32_t encode_float(FloatFormat f, double x) {
  const uint32_t sign = std::signbit(x) ? 1u << (f.exp_bits + f.man_bits) : 0u;
  if (std::isnan(x)) return nan_bits(f);
  double a = std::fabs(x);
  const uint32_t inf = ((1u << f.exp_bits) - 1) << f.man_bits;
  const double max = max_finite(f);
  if (std::isinf(a)) return f.saturate ? sign | static_cast<uint32_t>(encode_float(f, max)) : sign | inf;
  if (a == 0) return sign;
  const int min_exp = 1 - bias(f);  // exponent of the smallest normal
  int e;
  std::frexp(a, &e);
  int unbiased = e - 1;
  double quantum = std::ldexp(1.0, (unbiased < min_exp ? min_exp : unbiased) - f.man_bits);
  double rounded = std::nearbyint(a / quantum) * quantum;  // default rounding: to nearest even
  if (rounded > max) return f.saturate ? sign | encode_float(f, max) : sign | inf;
  if (rounded < std::ldexp(1.0, min_exp))
    return sign | static_cast<uint32_t>(rounded / std::ldexp(1.0, min_exp - f.man_bits));
  std::frexp(rounded, &e);
  unbiased = e - 1;
  uint32_t mant = static_cast<uint32_t>((std::ldexp(rounded, -unbiased) - 1.0) * (1u << f.man_bits));
  return sign | (static_cast<uint32_t>(unbiased + bias(f)) << f.man_bits) | mant;
}

double decode_float(FloatFormat f, uint32_t bits) {
  const bool neg = (bits >> (f.exp_bits + f.man_bits)) & 1;
  const uint32_t exp = (bits >> f.man_bits) & ((1u << f.exp_bits) - 1);
  const uint32_t mant = bits & ((1u << f.man_bits) - 1);
  const uint32_t all_exp = (1u << f.exp_bits) - 1;
  double v;
  if (f.ieee && exp == all_exp) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!f.ieee && exp == all_exp && mant == (1u << f.man_bits) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), 1 - bias(f) - f.man_bits);
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(mant), -f.man_bits), static_cast<int>(exp) - bias(f));
  }
  return neg ? -v : v;
}

FloatFormat float_format(DType t) {
  switch (t) {
    case DType::f16:
      return kF16;
    case DType::bf16:
      return kBF16;
    case DType::f8e4m3:
      return kF8E4M3;
    default:
      return kF8E5M2;
  }
}

double round_to(DType t, double x) {
  switch (t) {
    case DType::f64:
      return x;
    case DType::f32:
      return static_cast<double>(static_cast<float>(x));
    default:
      return decode_float(float_format(t), encode_float(float_format(t), x));
  }
}

double round_toward_zero(DType t, double x) {
  if (t == DType::f64 || std::isnan(x) || std::isinf(x)) return round_to(t, x);
  double r = round_to(t, x);
  if (std::isinf(r) || std::fabs(r) > std::fabs(x)) {
    // One step toward zero: the largest finite value for an overflow, else the neighbour below in
    // magnitude (bits - 1, the formats being sign and magnitude).
    if (t == DType::f32) return static_cast<double>(std::nextafter(static_cast<float>(r), 0.0f));
    const FloatFormat f = float_format(t);
    uint32_t bits = encode_float(f, r);
    if (std::isinf(r))
      bits = encode_float(f, std::copysign(max_finite(f), x));
    else
      bits -= 1;
    r = decode_float(f, bits);
  }
  return r;
}

int64_t wrap_int(DType t, int64_t x) {
  switch (t) {
    case DType::i1:
      return x != 0;
    case DType::i8:
      return static_cast<int8_t>(x);
    case DType::i16:
      return static_cast<int16_t>(x);
    case DType::i32:
      return static_cast<int32_t>(x);
    case DType::u8:
      return static_cast<uint8_t>(x);
    case DType::u16:
      return static_cast<uint16_t>(x);
    case DType::u32:
      return static_cast<uint32_t>(x);
    default:
      return x;  // i64, and u64 kept as its bit pattern
  }
}

double load_float(DType t, const void* p) {
  switch (t) {
    case DType::f32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::f64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::f16:
    case DType::bf16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return decode_float(float_format(t), b);
    }
    default:
      return decode_float(float_format(t), *static_cast<const uint8_t*>(p));
  }
}

void store_float(DType t, void* p, double v) {
  switch (t) {
    case DType::f32: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::f64:
      std::memcpy(p, &v, 8);
      return;
    case DType::f16:
    case DType::bf16: {
      uint16_t b = static_cast<uint16_t>(encode_float(float_format(t), v));
      std::memcpy(p, &b, 2);
      return;
    }
    default:
      *static_cast<uint8_t*>(p) = static_cast<uint8_t>(encode_float(float_format(t), v));
  }
}

int64_t load_int(DType t, const void* p) {
  switch (byte_size(t)) {
    case 1: {
      uint8_t v = *static_cast<const uint8_t*>(p);
      return wrap_int(t, v);
    }
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return wrap_int(t, v);
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return wrap_int(t, v);
    }
    default: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

void store_int(DType t, void* p, int64_t v) {
  std::memcpy(p, &v, static_cast<size_t>(byte_size(t)));  // little-endian: low bytes first
}

}  // namespace tiledsl
