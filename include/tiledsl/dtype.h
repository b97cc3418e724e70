// Element types: the runtime enum (DType), the C++ types that name them in kernels, and the
// bit-exact conversions of the narrow float formats (round to nearest even, as the GPU does).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace tiledsl {

enum class DType : uint8_t {
  i1,
  i8,
  i16,
  i32,
  i64,
  u8,
  u16,
  u32,
  u64,
  f16,
  bf16,
  f32,
  f64,
  f8e4m3,
  f8e5m2,
};

constexpr bool is_float(DType t) { return t >= DType::f16; }
constexpr bool is_int(DType t) { return t <= DType::u64; }
constexpr bool is_unsigned(DType t) { return t >= DType::u8 && t <= DType::u64; }
constexpr bool is_signed_int(DType t) { return t >= DType::i8 && t <= DType::i64; }
// fp8 values are stored, loaded, converted and selected; arithmetic on them needs a cast first.
constexpr bool is_fp8(DType t) { return t == DType::f8e4m3 || t == DType::f8e5m2; }

constexpr int bit_width(DType t) {
  switch (t) {
    case DType::i1:
      return 1;
    case DType::i8:
    case DType::u8:
    case DType::f8e4m3:
    case DType::f8e5m2:
      return 8;
    case DType::i16:
    case DType::u16:
    case DType::f16:
    case DType::bf16:
      return 16;
    case DType::i32:
    case DType::u32:
    case DType::f32:
      return 32;
    case DType::i64:
    case DType::u64:
    case DType::f64:
      return 64;
  }
  return 0;
}
// Bytes one element occupies in memory (i1 is stored as one byte).
constexpr int byte_size(DType t) { return t == DType::i1 ? 1 : bit_width(t) / 8; }

std::string_view name(DType t);

// Numeric promotion of two dtypes, Triton's rules (docs/language.md, "Type promotion"): floats
// beat integers, wider beats narrower, f16 with bf16 (or e4m3 with e5m2) meet in f16, an integer
// with bf16 meets in f32, and at equal integer width unsigned wins, as in C. (`/` and `%` then
// compute f16 and bf16 in f32: div_promote.)
constexpr DType promote(DType a, DType b) {
  if (a == b) return a;
  if (is_float(a) && is_float(b)) {
    if (a == DType::f64 || b == DType::f64) return DType::f64;
    if (bit_width(a) != bit_width(b)) return bit_width(a) > bit_width(b) ? a : b;
    return DType::f16;  // f16 with bf16, e4m3 with e5m2
  }
  if (is_float(a) || is_float(b)) {
    const DType f = is_float(a) ? a : b;
    return f == DType::bf16 ? DType::f32 : f;
  }
  if (a == DType::i1) return b;
  if (b == DType::i1) return a;
  if (bit_width(a) != bit_width(b)) return bit_width(a) > bit_width(b) ? a : b;
  return is_unsigned(a) ? a : b;
}
// The type `/` and `%` compute in for operands of type t (after promotion): f16 and bf16 in f32,
// as Triton (PTX has no 16-bit division); the result has that type.
constexpr DType div_promote(DType t) { return t == DType::f16 || t == DType::bf16 ? DType::f32 : t; }
// Parses the names printed by name(); returns false when `s` names no dtype.
bool parse_dtype(std::string_view s, DType& out);

// --- Narrow float formats -------------------------------------------------------------------

// A binary float format with `exp_bits` exponent and `man_bits` mantissa bits.
// `ieee`: the all-ones exponent means inf/NaN (f16, bf16, e5m2); otherwise only S.1111.111
// is NaN and there is no infinity (e4m3, "fn" variant). `saturate`: overflow goes to the largest
// finite value instead of infinity (the .satfinite conversions PTX uses for fp8).
struct FloatFormat {
  int exp_bits, man_bits;
  bool ieee, saturate;
};
inline constexpr FloatFormat kF16{5, 10, true, false};
inline constexpr FloatFormat kBF16{8, 7, true, false};
inline constexpr FloatFormat kF8E4M3{4, 3, false, true};
inline constexpr FloatFormat kF8E5M2{5, 2, true, true};

// The format of f16, bf16, f8e4m3 or f8e5m2.
FloatFormat float_format(DType t);
uint32_t encode_float(FloatFormat f, double x);  // round to nearest even
double decode_float(FloatFormat f, uint32_t bits);

// Storage types for kernels and tensors. Arithmetic on them happens in f32, as in Triton.
#define TILEDSL_NARROW_FLOAT(Name, Format, Bits)                                      \
  struct Name {                                                                       \
    Bits bits = 0;                                                                    \
    Name() = default;                                                                 \
    Name(float x) : bits(static_cast<Bits>(encode_float(Format, x))) {}               \
    Name(double x) : bits(static_cast<Bits>(encode_float(Format, x))) {}              \
    operator float() const { return static_cast<float>(decode_float(Format, bits)); } \
    static Name from_bits(Bits b) {                                                   \
      Name n;                                                                         \
      n.bits = b;                                                                     \
      return n;                                                                       \
    }                                                                                 \
  };
TILEDSL_NARROW_FLOAT(f16, kF16, uint16_t)
TILEDSL_NARROW_FLOAT(bf16, kBF16, uint16_t)
TILEDSL_NARROW_FLOAT(f8e4m3, kF8E4M3, uint8_t)
TILEDSL_NARROW_FLOAT(f8e5m2, kF8E5M2, uint8_t)
#undef TILEDSL_NARROW_FLOAT

// Maps a C++ element type to its DType. Unsupported types fail with a readable message.
template <class T>
struct DTypeOf {
  static_assert(sizeof(T) == 0,
                "tiledsl: unsupported element type; use bool, (u)int8/16/32/64_t, float, double, "
                "tl::f16, tl::bf16, tl::f8e4m3 or tl::f8e5m2");
};
#define TILEDSL_DTYPE_OF(T, D)               \
  template <>                                \
  struct DTypeOf<T> {                        \
    static constexpr DType value = DType::D; \
  };
TILEDSL_DTYPE_OF(bool, i1)
TILEDSL_DTYPE_OF(int8_t, i8)
TILEDSL_DTYPE_OF(int16_t, i16)
TILEDSL_DTYPE_OF(int32_t, i32)
TILEDSL_DTYPE_OF(int64_t, i64)
TILEDSL_DTYPE_OF(uint8_t, u8)
TILEDSL_DTYPE_OF(uint16_t, u16)
TILEDSL_DTYPE_OF(uint32_t, u32)
TILEDSL_DTYPE_OF(uint64_t, u64)
TILEDSL_DTYPE_OF(f16, f16)
TILEDSL_DTYPE_OF(bf16, bf16)
TILEDSL_DTYPE_OF(float, f32)
TILEDSL_DTYPE_OF(double, f64)
TILEDSL_DTYPE_OF(f8e4m3, f8e4m3)
TILEDSL_DTYPE_OF(f8e5m2, f8e5m2)
#undef TILEDSL_DTYPE_OF
template <class T>
inline constexpr DType dtype_v = DTypeOf<T>::value;

// Rounds `x` to the nearest value representable in `t` (floats), or wraps it to `t`'s width
// (integers, as two's complement). Used by the interpreter after every operation.
double round_to(DType t, double x);
// The same, rounding toward zero (Triton's fp_downcast_rounding="rtz"): never up in magnitude.
double round_toward_zero(DType t, double x);
int64_t wrap_int(DType t, int64_t x);

// Reads/writes one element of dtype `t` at `p` as double (floats) or int64 (integers).
double load_float(DType t, const void* p);
void store_float(DType t, void* p, double v);
int64_t load_int(DType t, const void* p);
void store_int(DType t, void* p, int64_t v);

}  // namespace tiledsl
