// The kernel language: typed handles over traced IR values and the ops a kernel body calls.
// Element types are C++ types, so most dtype mistakes are compile errors; shapes are checked
// while tracing, and every op records the caller's std::source_location so that an error names
// the user's file and line. docs/language.md documents every op.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <source_location>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tiledsl/dtype.h"
#include "tiledsl/error.h"

namespace tiledsl {

namespace ir {
class Value;
}

using SourceLoc = std::source_location;
#define TILEDSL_LOC ::tiledsl::SourceLoc loc = ::tiledsl::SourceLoc::current()

// Element marker for pointers: Tile<PtrTo<float>> is a tile of pointers to float.
template <class T>
struct PtrTo {
  using pointee = T;
};

// A value fixed when the kernel is traced (Triton's tl.constexpr). The kernel is specialised on it.
class Constexpr {
 public:
  constexpr Constexpr(int64_t v) : v_(v) {}
  constexpr operator int64_t() const { return v_; }
  constexpr int64_t value() const { return v_; }

 private:
  int64_t v_;
};

enum class BinOp { add, sub, mul, div, rem, max, min, band, bor, bxor, shl, shr };
enum class UnOp { neg, bnot, exp, exp2, log, log2, sqrt, rsqrt, sin, cos, floor, ceil, erf, abs };
enum class CmpPred { eq, ne, lt, le, gt, ge };

// Every traced handle registers itself while it lives, so that tl::range and tl::if_ can find
// the variables a body assigns (they become loop-carried values or if results).
class Handle {
 public:
  ir::Value* value() const { return v_; }

 protected:
  explicit Handle(ir::Value* v) : v_(v) { link(); }
  Handle(const Handle& o) : v_(o.v_) { link(); }
  Handle& operator=(const Handle& o) {
    v_ = o.v_;
    return *this;
  }
  ~Handle() { unlink(); }

 private:
  void link();
  void unlink();
  friend struct HandleAccess;
  ir::Value* v_;
  Handle* prev_ = nullptr;
  Handle* next_ = nullptr;
};

template <class T>
class Tile;
// How a float converts to a narrower float (Triton's fp_downcast_rounding): to nearest even, or
// toward zero.
enum class Rounding { rtne, rtz };

namespace detail {
using V = ir::Value*;

template <class T>
struct IsPtr : std::false_type {};
template <class T>
struct IsPtr<PtrTo<T>> : std::true_type {};
template <class T>
inline constexpr bool is_ptr_v = IsPtr<T>::value;

template <class T>
constexpr bool is_float_elem() {
  if constexpr (is_ptr_v<T>)
    return false;
  else
    return is_float(dtype_v<T>);
}
template <class T>
constexpr bool is_int_elem() {  // integers and bool
  if constexpr (is_ptr_v<T>)
    return false;
  else
    return is_int(dtype_v<T>);
}
template <class T>
inline constexpr bool is_float_v = is_float_elem<T>();
template <class T>
inline constexpr bool is_int_v = is_int_elem<T>();

template <DType D>
struct CppOf;
template <>
struct CppOf<DType::i1> {
  using type = bool;
};
template <>
struct CppOf<DType::i8> {
  using type = int8_t;
};
template <>
struct CppOf<DType::i16> {
  using type = int16_t;
};
template <>
struct CppOf<DType::i32> {
  using type = int32_t;
};
template <>
struct CppOf<DType::i64> {
  using type = int64_t;
};
template <>
struct CppOf<DType::u8> {
  using type = uint8_t;
};
template <>
struct CppOf<DType::u16> {
  using type = uint16_t;
};
template <>
struct CppOf<DType::u32> {
  using type = uint32_t;
};
template <>
struct CppOf<DType::u64> {
  using type = uint64_t;
};
template <>
struct CppOf<DType::f16> {
  using type = f16;
};
template <>
struct CppOf<DType::bf16> {
  using type = bf16;
};
template <>
struct CppOf<DType::f32> {
  using type = float;
};
template <>
struct CppOf<DType::f64> {
  using type = double;
};
template <>
struct CppOf<DType::f8e4m3> {
  using type = f8e4m3;
};
template <>
struct CppOf<DType::f8e5m2> {
  using type = f8e5m2;
};
template <DType D>
using cpp_t = typename CppOf<D>::type;

// The element type of `a op b` for arithmetic ops: pointer +/- integer stays a pointer;
// otherwise promotion, with booleans becoming i32.
template <class T, class U>
constexpr auto arith_result() {
  if constexpr (is_ptr_v<T>) {
    static_assert(is_int_v<U> && !std::is_same_v<U, bool>, "tiledsl: only integers can be added to a pointer tile");
    return std::type_identity<T>{};
  } else if constexpr (is_ptr_v<U>) {
    static_assert(is_int_v<T> && !std::is_same_v<T, bool>, "tiledsl: only integers can be added to a pointer tile");
    return std::type_identity<U>{};
  } else {
    constexpr DType d = promote(dtype_v<T>, dtype_v<U>);
    return std::type_identity<cpp_t<d == DType::i1 ? DType::i32 : d>>{};
  }
}
template <class T, class U>
using arith_t = typename decltype(arith_result<T, U>())::type;
template <class T, class U>
using promote_t = cpp_t<promote(dtype_v<T>, dtype_v<U>)>;
// The element type of a binary op: as arith_t, except that max, min, bitwise ops and shifts of two
// booleans stay boolean (the IR keeps them i1), so `mask_a & mask_b` is a mask.
template <BinOp K, class T, class U>
constexpr auto binop_result() {
  if constexpr (K >= BinOp::max && !is_ptr_v<T> && !is_ptr_v<U>) {
    if constexpr (promote(dtype_v<T>, dtype_v<U>) == DType::i1)
      return std::type_identity<bool>{};
    else
      return arith_result<T, U>();
  } else {
    return arith_result<T, U>();
  }
}
template <BinOp K, class T, class U>
using binop_t = typename decltype(binop_result<K, T, U>())::type;
// `/` and `%`: f16 and bf16 compute (and give) f32, as Triton's, and integers of different
// signedness are rejected, as Triton rejects them.
template <BinOp K, class T, class U>
constexpr auto arith_op_result() {
  if constexpr ((K == BinOp::div || K == BinOp::rem) && !is_ptr_v<T> && !is_ptr_v<U>) {
    static_assert(!(is_int_v<T> && is_int_v<U> && !std::is_same_v<T, bool> && !std::is_same_v<U, bool> &&
                    std::is_unsigned_v<T> != std::is_unsigned_v<U>),
                  "tiledsl: / and % on integers of different signedness (Triton rejects them); convert one first");
    return std::type_identity<cpp_t<div_promote(dtype_v<binop_t<K, T, U>>)>>{};
  } else {
    return std::type_identity<binop_t<K, T, U>>{};
  }
}
template <BinOp K, class T, class U>
using arith_op_t = typename decltype(arith_op_result<K, T, U>())::type;

template <class S>
concept Literal = std::is_arithmetic_v<S> || std::is_same_v<S, Constexpr>;

// The element type a C++ literal takes next to a tile of T: the tile's own type when both are
// integers or T is a float; f32 for a float literal beside integers.
template <class T, class S>
constexpr auto literal_type() {
  constexpr bool lit_float = std::is_floating_point_v<S>;
  if constexpr (is_ptr_v<T>) {
    static_assert(!lit_float, "tiledsl: only integers can be added to a pointer tile");
    return std::type_identity<int32_t>{};
  } else if constexpr (is_float_v<T>) {
    return std::type_identity<T>{};
  } else if constexpr (lit_float) {
    return std::type_identity<float>{};
  } else if constexpr (std::is_same_v<T, bool>) {
    return std::type_identity<std::conditional_t<std::is_same_v<S, bool>, bool, int32_t>>{};
  } else {
    return std::type_identity<T>{};
  }
}
template <class T, class S>
using literal_t = typename decltype(literal_type<T, S>())::type;
// The type a C++ literal takes beside a tile of T in `op`: literal_t, except that a float
// literal divides an f16 or bf16 tile as the f32 it then computes in.
template <BinOp K, class T, class S>
using op_literal_t = std::conditional_t<(K == BinOp::div || K == BinOp::rem) && std::is_floating_point_v<S> &&
                                            (std::is_same_v<T, f16> || std::is_same_v<T, bf16>),
                                        float, literal_t<T, S>>;

// Untyped operations (lib/frontend/Ops.cpp): each builds checked IR in the current trace.
V constant(double v, DType t, const SourceLoc& loc);
V constant_int(int64_t v, DType t, const SourceLoc& loc);
template <class L, class S>
V literal(S v, const SourceLoc& loc) {
  if constexpr (std::is_floating_point_v<S>)
    return constant(static_cast<double>(v), dtype_v<L>, loc);
  else if constexpr (std::is_same_v<S, Constexpr>)
    return constant_int(v.value(), dtype_v<L>, loc);
  else
    return constant_int(static_cast<int64_t>(v), dtype_v<L>, loc);
}
V binary(BinOp op, V a, V b, const SourceLoc& loc);
V compare(CmpPred p, V a, V b, const SourceLoc& loc);
V unary(UnOp op, V a, const SourceLoc& loc);
V cast(V a, DType t, const SourceLoc& loc);
V cast_toward_zero(V a, DType t, const SourceLoc& loc);
V to_pointer(V a, DType pointee, const SourceLoc& loc);
V from_pointer(V a, DType t, const SourceLoc& loc);
V bitcast(V a, DType t, const SourceLoc& loc);
V program_id(int axis, const SourceLoc& loc);
V num_programs(int axis, const SourceLoc& loc);
V arange(int64_t start, int64_t end, const SourceLoc& loc);
V full(const std::vector<int64_t>& shape, V scalar, const SourceLoc& loc, const char* op);
V broadcast_to(V v, const std::vector<int64_t>& shape, const SourceLoc& loc);
V expand_dims(V v, int axis, const SourceLoc& loc);
V reshape(V v, const std::vector<int64_t>& shape, const SourceLoc& loc);
V trans(V v, const std::vector<int64_t>& perm, const SourceLoc& loc);
V gather(V src, V index, int axis, const SourceLoc& loc);
std::vector<V> inline_asm(const std::string& asm_text, const std::string& constraints, const std::vector<V>& args,
                          const std::vector<DType>& results, bool pure, int pack, const SourceLoc& loc);
V select(V c, V a, V b, const SourceLoc& loc);
V fma(V a, V b, V c, const SourceLoc& loc);
V math(const char* fn, V a, const SourceLoc& loc);
V math(const char* fn, V a, V b, const SourceLoc& loc);
V load(V p, V mask, V other, const SourceLoc& loc, const char* cache = "", const char* eviction = "",
       bool is_volatile = false);
void store(V p, V v, V mask, const SourceLoc& loc, const char* cache = "", const char* eviction = "");
V atomic_rmw(const char* kind, V p, V v, V mask, const SourceLoc& loc, const char* sem = "", const char* scope = "");
V atomic_cas(V p, V cmp, V v, const SourceLoc& loc, const char* sem = "", const char* scope = "");
// `input_precision`: "ieee", "tf32", "tf32x3", or empty for the default (tf32 on f32 inputs).
V dot(V a, V b, V acc, const SourceLoc& loc, const char* input_precision = "");
using Combine = std::function<std::vector<V>(std::span<V const> lhs, std::span<V const> rhs)>;
std::vector<V> reduce(const std::vector<V>& in, int axis, const Combine& combine, const SourceLoc& loc,
                      const char* name);
std::vector<V> scan(const std::vector<V>& in, int axis, bool reverse, const Combine& combine, const SourceLoc& loc,
                    const char* name);
V multiple_of(V v, const std::vector<int64_t>& values, const SourceLoc& loc);
V max_contiguous(V v, const std::vector<int64_t>& values, const SourceLoc& loc);
void print(const std::string& prefix, bool hex, const std::vector<V>& values, const SourceLoc& loc);
void device_assert(V cond, const std::string& msg, const SourceLoc& loc);
void assume(V cond, const SourceLoc& loc);
void static_check(bool cond, const std::string& msg, const SourceLoc& loc);
[[noreturn]] void fail(const char* op, const std::string& msg, const SourceLoc& loc);
void for_loop(V lo, V hi, V step, const std::function<void(V)>& body, const SourceLoc& loc, int num_stages = 0,
              int unroll = 0);
void if_else(V cond, const std::function<void()>& then_fn, const std::function<void()>& else_fn, const SourceLoc& loc);
void while_loop(const std::function<V()>& cond, const std::function<void()>& body, const SourceLoc& loc);
void return_if(V cond, const SourceLoc& loc);
void debug_barrier(const SourceLoc& loc);
std::vector<int64_t> shape(V v);
std::string type_str(V v);  // "tile<16x64xf32>", "i32"
DType dtype(V v);

// Captures the source location of an operator expression through an implicit conversion.
template <class T>
struct At {
  const Tile<T>& t;
  SourceLoc loc;
  At(const Tile<T>& t, SourceLoc loc = SourceLoc::current()) : t(t), loc(loc) {}
};
}  // namespace detail

// Index markers for x(tl::_, tl::newaxis).
struct IndexMarker {
  int kind;  // 0: keep a dimension, 1: insert a new one of size 1, 2: absent
};
inline constexpr IndexMarker _{0};
inline constexpr IndexMarker newaxis{1};

template <class T>
class Tile : public Handle {
 public:
  using element_type = T;
  explicit Tile(ir::Value* v) : Handle(v) {}
  // A scalar constant: `tl::Float x = 1.0f;`.
  template <detail::Literal S>
  requires(!detail::is_ptr_v<T>) Tile(S v, TILEDSL_LOC) : Handle(detail::literal<T>(v, loc)) {}
  Tile(const Tile&) = default;
  Tile& operator=(const Tile&) = default;

  std::vector<int64_t> shape() const { return detail::shape(value()); }
  int rank() const { return static_cast<int>(shape().size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape()) n *= d;
    return n;
  }

  // Triton's x.to(dtype, fp_downcast_rounding="rtz"): x.to<tl::f16>(tl::Rounding::rtz) rounds
  // toward zero (a float to a narrower float, not fp8); rtne is the default.
  template <class U>
  Tile<U> to(Rounding rounding, TILEDSL_LOC) const {
    static_assert(detail::is_float_v<T> && detail::is_float_v<U>, "tiledsl: rounding applies to float conversions");
    if (rounding == Rounding::rtne) return to<U>(loc);
    return Tile<U>(detail::cast_toward_zero(value(), dtype_v<U>, loc));
  }
  // Conversion to another element type (Triton's x.to(dtype)).
  template <class U>
  Tile<U> to(TILEDSL_LOC) const {
    if constexpr (detail::is_ptr_v<U>) {
      // Triton's x.to(tl.pointer_type(T)): from a 64-bit integer (an address, as Triton's grouped
      // GEMM passes its matrices) or another pointer.
      static_assert(detail::is_ptr_v<T> || std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>,
                    "tiledsl: only 64-bit integers and pointers convert to pointers");
      return Tile<U>(detail::to_pointer(value(), dtype_v<typename U::pointee>, loc));
    } else if constexpr (detail::is_ptr_v<T>) {
      static_assert(std::is_same_v<U, int64_t> || std::is_same_v<U, uint64_t>,
                    "tiledsl: a pointer converts to int64_t or uint64_t only");
      return Tile<U>(detail::from_pointer(value(), dtype_v<U>, loc));
    } else {
      return Tile<U>(detail::cast(value(), dtype_v<U>, loc));
    }
  }

  // x(tl::_, tl::newaxis): keep or insert dimensions (Triton's x[:, None]).
  Tile operator()(IndexMarker i0, IndexMarker i1 = {2}, IndexMarker i2 = {2}, IndexMarker i3 = {2}, TILEDSL_LOC) const {
    ir::Value* v = value();
    int axis = 0;
    for (IndexMarker m : {i0, i1, i2, i3}) {
      if (m.kind == 1) v = detail::expand_dims(v, axis, loc);
      if (m.kind != 2) ++axis;
    }
    return Tile(v);
  }

  // Friends taking detail::At, as the binary operators, so that an error names the user's line.
  friend Tile operator-(detail::At<T> a) { return Tile(detail::unary(UnOp::neg, a.t.value(), a.loc)); }
  friend Tile operator~(detail::At<T> a) {
    static_assert(detail::is_int_v<T>, "tiledsl: ~ needs an integer or boolean tile");
    return Tile(detail::unary(UnOp::bnot, a.t.value(), a.loc));
  }
  friend Tile operator!(detail::At<T> a) {
    static_assert(std::is_same_v<T, bool>, "tiledsl: ! needs a boolean tile; use ~ for bitwise not");
    return Tile(detail::unary(UnOp::bnot, a.t.value(), a.loc));
  }

#define TILEDSL_ARITH(OP, KIND, CHECK)                                                             \
  template <class U>                                                                               \
  friend auto operator OP(detail::At<T> a, const Tile<U>& b) {                                     \
    CHECK(T, U);                                                                                   \
    using R = detail::arith_op_t<BinOp::KIND, T, U>;                                               \
    return Tile<R>(detail::binary(BinOp::KIND, a.t.value(), b.value(), a.loc));                    \
  }                                                                                                \
  template <detail::Literal S>                                                                     \
  friend auto operator OP(detail::At<T> a, S b) {                                                  \
    using L = detail::op_literal_t<BinOp::KIND, T, S>;                                             \
    CHECK(T, L);                                                                                   \
    using R = detail::arith_op_t<BinOp::KIND, T, L>;                                               \
    return Tile<R>(detail::binary(BinOp::KIND, a.t.value(), detail::literal<L>(b, a.loc), a.loc)); \
  }                                                                                                \
  template <detail::Literal S>                                                                     \
  friend auto operator OP(S a, detail::At<T> b) {                                                  \
    using L = detail::op_literal_t<BinOp::KIND, T, S>;                                             \
    CHECK(L, T);                                                                                   \
    using R = detail::arith_op_t<BinOp::KIND, L, T>;                                               \
    return Tile<R>(detail::binary(BinOp::KIND, detail::literal<L>(a, b.loc), b.t.value(), b.loc)); \
  }
#define TILEDSL_NO_CHECK(A, B) (void)0
#define TILEDSL_NO_PTR(A, B)                                  \
  static_assert(!detail::is_ptr_v<A> && !detail::is_ptr_v<B>, \
                "tiledsl: pointer tiles support only + and - with integers")
#define TILEDSL_INT_ONLY(A, B)                              \
  static_assert(detail::is_int_v<A> && detail::is_int_v<B>, \
                "tiledsl: bitwise ops and shifts need integer or boolean tiles")
  TILEDSL_ARITH(+, add, TILEDSL_NO_CHECK)
  TILEDSL_ARITH(-, sub, TILEDSL_NO_CHECK)
  TILEDSL_ARITH(*, mul, TILEDSL_NO_PTR)
  TILEDSL_ARITH(/, div, TILEDSL_NO_PTR)
  TILEDSL_ARITH(%, rem, TILEDSL_NO_PTR)
  TILEDSL_ARITH(&, band, TILEDSL_INT_ONLY)
  TILEDSL_ARITH(|, bor, TILEDSL_INT_ONLY)
  TILEDSL_ARITH(^, bxor, TILEDSL_INT_ONLY)
  TILEDSL_ARITH(<<, shl, TILEDSL_INT_ONLY)
  TILEDSL_ARITH(>>, shr, TILEDSL_INT_ONLY)
#undef TILEDSL_ARITH

#define TILEDSL_CMP(OP, PRED)                                                                            \
  template <class U>                                                                                     \
  friend Tile<bool> operator OP(detail::At<T> a, const Tile<U>& b) {                                     \
    return Tile<bool>(detail::compare(CmpPred::PRED, a.t.value(), b.value(), a.loc));                    \
  }                                                                                                      \
  template <detail::Literal S>                                                                           \
  friend Tile<bool> operator OP(detail::At<T> a, S b) {                                                  \
    using L = detail::literal_t<T, S>;                                                                   \
    return Tile<bool>(detail::compare(CmpPred::PRED, a.t.value(), detail::literal<L>(b, a.loc), a.loc)); \
  }                                                                                                      \
  template <detail::Literal S>                                                                           \
  friend Tile<bool> operator OP(S a, detail::At<T> b) {                                                  \
    using L = detail::literal_t<T, S>;                                                                   \
    return Tile<bool>(detail::compare(CmpPred::PRED, detail::literal<L>(a, b.loc), b.t.value(), b.loc)); \
  }
  TILEDSL_CMP(==, eq)
  TILEDSL_CMP(!=, ne)
  TILEDSL_CMP(<, lt)
  TILEDSL_CMP(<=, le)
  TILEDSL_CMP(>, gt)
  TILEDSL_CMP(>=, ge)
#undef TILEDSL_CMP
};

// Compound assignment: `acc += x` is `acc = acc + x` (the element type must not change).
#define TILEDSL_COMPOUND(OP)                                                                                         \
  template <class T, class U>                                                                                        \
  Tile<T>& operator OP##=(Tile<T>& a, const U& b) {                                                                  \
    static_assert(std::is_same_v<decltype(a OP b), Tile<T>>, "tiledsl: x " #OP                                       \
                                                             "= y would change the element type of x; convert y to " \
                                                             "x's element type first (y.to<T>())");                  \
    if constexpr (std::is_same_v<decltype(a OP b), Tile<T>>) a = a OP b;                                             \
    return a;                                                                                                        \
  }
TILEDSL_COMPOUND(+)
TILEDSL_COMPOUND(-)
TILEDSL_COMPOUND(*)
TILEDSL_COMPOUND(/)
#undef TILEDSL_COMPOUND

using Int = Tile<int32_t>;
using Int64 = Tile<int64_t>;
using Float = Tile<float>;
using Bool = Tile<bool>;
template <class T>
using Ptr = Tile<PtrTo<T>>;

// Anything usable where an integer scalar is expected: tl::Int, tl::Int64, a constexpr or a C++ integer.
struct IntArg {
  ir::Value* v;
  IntArg(const Tile<int32_t>& t) : v(t.value()) {}
  IntArg(const Tile<int64_t>& t) : v(t.value()) {}
  IntArg(Constexpr c, TILEDSL_LOC) : v(detail::constant_int(c.value(), DType::i32, loc)) {}
  template <std::integral I>
  IntArg(I i, TILEDSL_LOC)
      : v(detail::constant_int(static_cast<int64_t>(i), (i >= INT32_MIN && i <= INT32_MAX) ? DType::i32 : DType::i64,
                               loc)) {}
};

// --- Creation -------------------------------------------------------------------------------
inline Tile<int32_t> program_id(int axis, TILEDSL_LOC) { return Tile<int32_t>(detail::program_id(axis, loc)); }
inline Tile<int32_t> num_programs(int axis, TILEDSL_LOC) { return Tile<int32_t>(detail::num_programs(axis, loc)); }
inline Tile<int32_t> arange(int64_t start, int64_t end, TILEDSL_LOC) {
  return Tile<int32_t>(detail::arange(start, end, loc));
}
template <class T>
Tile<T> full(const std::vector<int64_t>& shape, double value, TILEDSL_LOC) {
  return Tile<T>(detail::full(shape, detail::constant(value, dtype_v<T>, loc), loc, "full"));
}
template <class T>
Tile<T> zeros(const std::vector<int64_t>& shape, TILEDSL_LOC) {
  return Tile<T>(detail::full(shape, detail::constant(0, dtype_v<T>, loc), loc, "zeros"));
}
template <class T>
Tile<T> zeros_like(const Tile<T>& x, TILEDSL_LOC) {
  return Tile<T>(detail::full(x.shape(), detail::constant(0, dtype_v<T>, loc), loc, "zeros_like"));
}
template <class T>
Tile<T> full_like(const Tile<T>& x, double value, TILEDSL_LOC) {
  return Tile<T>(detail::full(x.shape(), detail::constant(value, dtype_v<T>, loc), loc, "full_like"));
}

// --- Shapes ---------------------------------------------------------------------------------
template <class T>
Tile<T> broadcast_to(const Tile<T>& x, const std::vector<int64_t>& shape, TILEDSL_LOC) {
  return Tile<T>(detail::broadcast_to(x.value(), shape, loc));
}
template <class T>
Tile<T> expand_dims(const Tile<T>& x, int axis, TILEDSL_LOC) {
  return Tile<T>(detail::expand_dims(x.value(), axis, loc));
}
template <class T>
Tile<T> reshape(const Tile<T>& x, const std::vector<int64_t>& shape, TILEDSL_LOC) {
  return Tile<T>(detail::reshape(x.value(), shape, loc));
}
// Triton's reshape(x, shape, can_reorder=True) lets the compiler pick the element order; the
// row-major order is one it may pick, so the flag changes nothing here.
template <class T>
Tile<T> reshape(const Tile<T>& x, const std::vector<int64_t>& shape, bool /*can_reorder*/, TILEDSL_LOC) {
  return Tile<T>(detail::reshape(x.value(), shape, loc));
}
// The elements as one dimension, row-major (Triton's tl.ravel).
template <class T>
Tile<T> ravel(const Tile<T>& x, TILEDSL_LOC) {
  return Tile<T>(detail::reshape(x.value(), {x.numel()}, loc));
}
// Reverses the dimensions (a 2-D transpose), or permutes them as `perm` says.
template <class T>
Tile<T> trans(const Tile<T>& x, const std::vector<int64_t>& perm = {}, TILEDSL_LOC) {
  return Tile<T>(detail::trans(x.value(), perm, loc));
}
template <class T>
Tile<T> permute(const Tile<T>& x, const std::vector<int64_t>& perm, TILEDSL_LOC) {
  return Tile<T>(detail::trans(x.value(), perm, loc));
}
// Triton's tl.inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack): the PTX
// `asm_text` runs once per element, `$0` the result (of type R) and `$1`, `$2`, ... the elements of
// `args` (a std::tuple of tiles and scalars, broadcast to one shape), with LLVM inline-asm
// constraints in their order ("=r,r,r": "r" for 32-bit integers, "l" 64-bit, "h" 16-bit, "f" f32,
// "d" f64). Several result types (Triton's tuple dtype) give a std::tuple of tiles, `$0`, `$1`...
// the results and the arguments after them. pack 2 or 4 hands each call that many elements in one
// register per operand and result (pack x the element width: 16, 32 or 64 bits; "=r,r" for four
// u8). GPU only: the interpreter cannot execute PTX. Never merged or removed by the passes.
//   auto y = tl::inline_asm_elementwise<uint32_t>("shf.l.wrap.b32 $0, $1, $1, $2;", "=r,r,r", std::tuple{x, n});
template <class... R, class... T>
auto inline_asm_elementwise(const std::string& asm_text, const std::string& constraints,
                            const std::tuple<Tile<T>...>& args, bool is_pure = true, int pack = 1, TILEDSL_LOC) {
  static_assert(sizeof...(R) >= 1, "tl::inline_asm_elementwise: name the result type(s): <float>, <R1, R2>");
  std::vector<detail::V> vs = std::apply([](const auto&... x) { return std::vector<detail::V>{x.value()...}; }, args);
  std::vector<detail::V> out = detail::inline_asm(asm_text, constraints, vs, {dtype_v<R>...}, is_pure, pack, loc);
  if constexpr (sizeof...(R) == 1)
    return Tile<R...>(out[0]);
  else
    return [&]<size_t... I>(std::index_sequence<I...>) { return std::tuple<Tile<R>...>{Tile<R>(out[I])...}; }
  (std::index_sequence_for<R...>{});
}
// Triton's tl.gather: the elements of `src` picked along `axis` by `index` (an integer tile of
// src's rank, whose other dimensions are src's): result[i][j] = src[index[i][j]][j] for axis 0.
// The result has the index's shape. An index outside src's dimension is an error in the
// interpreter and undefined on the GPU.
template <class T, class I>
Tile<T> gather(const Tile<T>& src, const Tile<I>& index, int axis, TILEDSL_LOC) {
  return Tile<T>(detail::gather(src.value(), index.value(), axis, loc));
}
template <class U, class T>
Tile<U> bitcast(const Tile<T>& x, TILEDSL_LOC) {
  static_assert(sizeof(U) == sizeof(T) && std::is_same_v<U, bool> == std::is_same_v<T, bool>,
                "tiledsl: bitcast needs types of one bit width");
  return Tile<U>(detail::bitcast(x.value(), dtype_v<U>, loc));
}

// --- Math -----------------------------------------------------------------------------------
#define TILEDSL_FLOAT_UNARY(fn, KIND)                                                               \
  template <class T>                                                                                \
  Tile<T> fn(const Tile<T>& x, TILEDSL_LOC) {                                                       \
    static_assert(detail::is_float_v<T>,                                                            \
                  "tl::" #fn ": needs a floating-point tile; convert it first with x.to<float>()"); \
    return Tile<T>(detail::unary(UnOp::KIND, x.value(), loc));                                      \
  }
TILEDSL_FLOAT_UNARY(exp, exp)
TILEDSL_FLOAT_UNARY(exp2, exp2)
TILEDSL_FLOAT_UNARY(log, log)
TILEDSL_FLOAT_UNARY(log2, log2)
TILEDSL_FLOAT_UNARY(sqrt, sqrt)
TILEDSL_FLOAT_UNARY(rsqrt, rsqrt)
TILEDSL_FLOAT_UNARY(sin, sin)
TILEDSL_FLOAT_UNARY(cos, cos)
TILEDSL_FLOAT_UNARY(floor, floor)
TILEDSL_FLOAT_UNARY(ceil, ceil)
TILEDSL_FLOAT_UNARY(erf, erf)
#undef TILEDSL_FLOAT_UNARY

template <class T>
Tile<T> abs(const Tile<T>& x, TILEDSL_LOC) {
  static_assert(!detail::is_ptr_v<T>, "tl::abs: needs a number tile");
  return Tile<T>(detail::unary(UnOp::abs, x.value(), loc));
}
// 1 / (1 + exp(-x))
template <class T>
Tile<T> sigmoid(const Tile<T>& x, TILEDSL_LOC) {
  static_assert(detail::is_float_v<T>, "tl::sigmoid: needs a floating-point tile");
  auto one = detail::constant(1.0, dtype_v<T>, loc);
  auto e = detail::unary(UnOp::exp, detail::unary(UnOp::neg, x.value(), loc), loc);
  return Tile<T>(detail::binary(BinOp::div, one, detail::binary(BinOp::add, one, e, loc), loc));
}

namespace detail {
template <class X>
V as_value(const X& x, DType like, const SourceLoc& loc) {
  if constexpr (Literal<X>) {
    if constexpr (std::is_floating_point_v<X>)
      return constant(static_cast<double>(x), is_float(like) ? like : DType::f32, loc);
    else
      return constant_int(static_cast<int64_t>(x), like == DType::i1 ? DType::i32 : like, loc);
  } else {
    return x.value();
  }
}
template <class X>
struct ElemOf {
  using type = void;
};
template <class T>
struct ElemOf<Tile<T>> {
  using type = T;
};
// The element type operand A takes beside B. Chosen with if constexpr, not std::conditional_t, which
// would instantiate literal_t<void, Tile> for a tile A and fail to compile `where(mask, x, 0.0f)`.
template <class A, class B>
constexpr auto pair_elem() {
  if constexpr (Literal<A>)
    return std::type_identity<literal_t<typename ElemOf<B>::type, A>>{};
  else
    return std::type_identity<typename ElemOf<A>::type>{};
}
template <class A, class B>
using pair_elem_t = typename decltype(pair_elem<A, B>())::type;
template <class A, class B>
using binary_elem_t = arith_t<pair_elem_t<A, B>, pair_elem_t<B, A>>;
template <class X>
concept TileOrLiteral = Literal<X> || !std::is_void_v<typename ElemOf<X>::type>;
template <class A, class B>
V binary_any(BinOp op, const A& a, const B& b, const SourceLoc& loc) {
  static_assert(!(Literal<A> && Literal<B>), "tiledsl: at least one operand must be a tile");
  if constexpr (Literal<A>) {
    V vb = b.value();
    return binary(op, as_value(a, dtype_v<typename ElemOf<B>::type>, loc), vb, loc);
  } else {
    V va = a.value();
    return binary(op, va, as_value(b, dtype_v<typename ElemOf<A>::type>, loc), loc);
  }
}
}  // namespace detail

template <detail::TileOrLiteral A, detail::TileOrLiteral B>
auto maximum(const A& a, const B& b, TILEDSL_LOC) {
  using E = detail::binop_t<BinOp::max, detail::pair_elem_t<A, B>, detail::pair_elem_t<B, A>>;
  return Tile<E>(detail::binary_any(BinOp::max, a, b, loc));
}
template <detail::TileOrLiteral A, detail::TileOrLiteral B>
auto minimum(const A& a, const B& b, TILEDSL_LOC) {
  using E = detail::binop_t<BinOp::min, detail::pair_elem_t<A, B>, detail::pair_elem_t<B, A>>;
  return Tile<E>(detail::binary_any(BinOp::min, a, b, loc));
}
namespace detail {
// where()'s element type for two literals (tl::where(mask, 0.0f, -1e6f)): f32 if either is a
// floating-point literal (C++ doubles too, as Triton's Python floats), else i64 if either is a
// 64-bit integer, else i32.
template <class A, class B>
using literal_pair_t = std::conditional_t<
    std::is_floating_point_v<A> || std::is_floating_point_v<B>, float,
    std::conditional_t<(std::is_integral_v<A> && sizeof(A) == 8) || (std::is_integral_v<B> && sizeof(B) == 8), int64_t,
                       int32_t>>;
template <class A, class B>
constexpr auto where_elem() {
  if constexpr (Literal<A> && Literal<B>)
    return std::type_identity<literal_pair_t<A, B>>{};
  else
    return std::type_identity<promote_t<pair_elem_t<A, B>, pair_elem_t<B, A>>>{};
}
}  // namespace detail

// Elementwise choice: cond ? a : b, with broadcasting (two literals give a tile of cond's shape).
template <detail::TileOrLiteral A, detail::TileOrLiteral B>
auto where(const Tile<bool>& cond, const A& a, const B& b, TILEDSL_LOC) {
  using E = typename decltype(detail::where_elem<A, B>())::type;
  return Tile<E>(
      detail::select(cond.value(), detail::as_value(a, dtype_v<E>, loc), detail::as_value(b, dtype_v<E>, loc), loc));
}
template <class T>
Tile<T> fma(const Tile<T>& a, const Tile<T>& b, const Tile<T>& c, TILEDSL_LOC) {
  static_assert(detail::is_float_v<T>, "tl::fma: needs floating-point tiles");
  return Tile<T>(detail::fma(a.value(), b.value(), c.value(), loc));
}

// The rest of the libdevice set Triton's kernels call (tl.math.* / libdevice.*), on float tiles;
// f16 and bf16 compute in f32, as the GPU does. round: halves away from zero.
#define TILEDSL_MATH_FN(fn)                                                                         \
  template <class T>                                                                                \
  Tile<T> fn(const Tile<T>& x, TILEDSL_LOC) {                                                       \
    static_assert(detail::is_float_v<T>,                                                            \
                  "tl::" #fn ": needs a floating-point tile; convert it first with x.to<float>()"); \
    return Tile<T>(detail::math(#fn, x.value(), loc));                                              \
  }
TILEDSL_MATH_FN(tanh)
TILEDSL_MATH_FN(log1p)
TILEDSL_MATH_FN(expm1)
TILEDSL_MATH_FN(tan)
TILEDSL_MATH_FN(asin)
TILEDSL_MATH_FN(acos)
TILEDSL_MATH_FN(atan)
TILEDSL_MATH_FN(sinh)
TILEDSL_MATH_FN(cosh)
TILEDSL_MATH_FN(asinh)
TILEDSL_MATH_FN(acosh)
TILEDSL_MATH_FN(atanh)
TILEDSL_MATH_FN(erfinv)
TILEDSL_MATH_FN(cbrt)
TILEDSL_MATH_FN(log10)
TILEDSL_MATH_FN(exp10)
TILEDSL_MATH_FN(trunc)
TILEDSL_MATH_FN(round)
#undef TILEDSL_MATH_FN
#define TILEDSL_MATH_FN2(fn)                                                                                 \
  template <detail::TileOrLiteral A, detail::TileOrLiteral B>                                                \
  auto fn(const A& a, const B& b, TILEDSL_LOC) {                                                             \
    using E = detail::promote_t<detail::pair_elem_t<A, B>, detail::pair_elem_t<B, A>>;                       \
    static_assert(detail::is_float_v<E>, "tl::" #fn ": needs floating-point tiles; convert them first");     \
    return Tile<E>(                                                                                          \
        detail::math(#fn, detail::as_value(a, dtype_v<E>, loc), detail::as_value(b, dtype_v<E>, loc), loc)); \
  }
TILEDSL_MATH_FN2(pow)
TILEDSL_MATH_FN2(atan2)
TILEDSL_MATH_FN2(hypot)
TILEDSL_MATH_FN2(div_rn)  // a / b rounded to nearest (Triton's tl.math.div_rn); `/` on f32 is within 2 ulp
#undef TILEDSL_MATH_FN2
// Triton's tl.fdiv(x, y, ieee_rounding): `/`, or div_rn when ieee_rounding; f16 and bf16 divide
// in f32 and give f32, as `/` does.
template <detail::TileOrLiteral A, detail::TileOrLiteral B>
auto fdiv(const A& a, const B& b, bool ieee_rounding = false, TILEDSL_LOC) {
  using P = detail::promote_t<detail::pair_elem_t<A, B>, detail::pair_elem_t<B, A>>;
  static_assert(detail::is_float_v<P>, "tl::fdiv: needs floating-point tiles");
  using E = detail::cpp_t<div_promote(dtype_v<P>)>;
  auto operand = [&](const auto& x) { return detail::cast(detail::as_value(x, dtype_v<E>, loc), dtype_v<E>, loc); };
  if (ieee_rounding) return Tile<E>(detail::math("div_rn", operand(a), operand(b), loc));
  return Tile<E>(detail::binary(BinOp::div, operand(a), operand(b), loc));
}
// Triton's tl.math.sqrt_rn: tl::sqrt is already rounded to nearest (sqrt.rn) on the GPU.
template <class T>
Tile<T> sqrt_rn(const Tile<T>& x, TILEDSL_LOC) {
  return sqrt(x, loc);
}

// Tests of floats (true where x is NaN, is infinite, has its sign bit set: -0.0 and NaNs with
// the bit too), and clamp(x, lo, hi) = minimum(maximum(x, lo), hi).
template <class T>
Tile<bool> isnan(const Tile<T>& x, TILEDSL_LOC) {
  static_assert(detail::is_float_v<T>, "tl::isnan: needs a floating-point tile");
  return Tile<bool>(detail::compare(CmpPred::ne, x.value(), x.value(), loc));
}
template <class T>
Tile<bool> isinf(const Tile<T>& x, TILEDSL_LOC) {
  static_assert(detail::is_float_v<T>, "tl::isinf: needs a floating-point tile");
  return Tile<bool>(detail::compare(CmpPred::eq, detail::unary(UnOp::abs, x.value(), loc),
                                    detail::as_value(HUGE_VAL, dtype_v<T>, loc), loc));
}
template <class T>
Tile<bool> signbit(const Tile<T>& x, TILEDSL_LOC) {
  static_assert(detail::is_float_v<T> && sizeof(T) >= 2, "tl::signbit: needs an f16, bf16, f32 or f64 tile");
  using I = std::conditional_t<sizeof(T) == 2, int16_t, std::conditional_t<sizeof(T) == 4, int32_t, int64_t>>;
  return Tile<bool>(detail::compare(CmpPred::lt, detail::bitcast(x.value(), dtype_v<I>, loc),
                                    detail::as_value(0, dtype_v<I>, loc), loc));
}
template <detail::TileOrLiteral X, detail::TileOrLiteral L, detail::TileOrLiteral H>
auto clamp(const X& x, const L& lo, const H& hi, TILEDSL_LOC) {
  return minimum(maximum(x, lo, loc), hi, loc);
}
// Triton's propagate_nan on maximum and minimum: with PropagateNan::all a NaN operand gives NaN
// (the plain forms ignore NaNs, as fmax).
enum class PropagateNan { none, all };
namespace detail {
// `r` (a's and b's maximum or minimum), or the NaN of a or b where there is one and `p` says so.
template <class T>
Tile<T> with_nans(const Tile<T>& a, const Tile<T>& b, const Tile<T>& r, PropagateNan p, const SourceLoc& loc) {
  if constexpr (!is_float_v<T>) {
    return r;
  } else {
    if (p == PropagateNan::none) return r;
    V pick_b = select(isnan(b, loc).value(), b.value(), r.value(), loc);
    return Tile<T>(select(isnan(a, loc).value(), a.value(), pick_b, loc));
  }
}
}  // namespace detail
template <class T>
Tile<T> maximum(const Tile<T>& a, const Tile<T>& b, PropagateNan p, TILEDSL_LOC) {
  return detail::with_nans(a, b, Tile<T>(detail::binary(BinOp::max, a.value(), b.value(), loc)), p, loc);
}
template <class T>
Tile<T> minimum(const Tile<T>& a, const Tile<T>& b, PropagateNan p, TILEDSL_LOC) {
  return detail::with_nans(a, b, Tile<T>(detail::binary(BinOp::min, a.value(), b.value(), loc)), p, loc);
}
// Triton's clamp(x, lo, hi, propagate_nan): with PropagateNan::all a NaN in x gives NaN (a NaN
// bound is undefined there; here it is ignored, as the plain form does).
template <class T>
Tile<T> clamp(const Tile<T>& x, const Tile<T>& lo, const Tile<T>& hi, PropagateNan p, TILEDSL_LOC) {
  Tile<T> r = minimum(maximum(x, lo, loc), hi, loc);
  if constexpr (!detail::is_float_v<T>)
    return r;
  else
    return p == PropagateNan::all ? Tile<T>(detail::select(isnan(x, loc).value(), x.value(), r.value(), loc)) : r;
}
// The high 32 bits of the 64-bit product of two 32-bit integers taken as unsigned (CUDA's
// __umulhi; Triton's tl.umulhi), in the operands' type.
template <class T>
Tile<T> umulhi(const Tile<T>& a, const Tile<T>& b, TILEDSL_LOC) {
  static_assert(std::is_integral_v<T> && sizeof(T) == 4, "tl::umulhi: needs 32-bit integer tiles");
  auto wide = [&](const Tile<T>& v) {
    return detail::cast(detail::bitcast(v.value(), DType::u32, loc), DType::u64, loc);
  };
  detail::V product = detail::binary(BinOp::mul, wide(a), wide(b), loc);
  detail::V high = detail::binary(BinOp::shr, product, detail::as_value(32, DType::u64, loc), loc);
  return Tile<T>(detail::bitcast(detail::cast(high, DType::u32, loc), dtype_v<T>, loc));
}
// Ceiling division: on C++ integers at trace time, or on integer tiles.
constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
template <class T, detail::TileOrLiteral U>
auto cdiv(const Tile<T>& a, const U& b, TILEDSL_LOC) {
  static_assert(detail::is_int_v<T>, "tl::cdiv: needs integers");
  using R = detail::binary_elem_t<Tile<T>, U>;
  auto vb = detail::as_value(b, dtype_v<T>, loc);
  auto num = detail::binary(BinOp::sub, detail::binary(BinOp::add, a.value(), vb, loc),
                            detail::constant_int(1, dtype_v<T>, loc), loc);
  return Tile<R>(detail::binary(BinOp::div, num, vb, loc));
}

// --- Memory ---------------------------------------------------------------------------------
// Cache hints, Triton's cache_modifier and eviction_policy (and volatile, on loads):
//   tl::load(p, mask, 0.0f, {.cache = tl::Cache::cg, .eviction = tl::Eviction::evict_first})
// Loads take ca, cg or cv; stores wb, cg, cs or wt; another is a trace-time error. They are
// hints: the GPU drops them on 1-byte and pointer elements (but for volatile) and on the copies
// that feed tensor cores; the interpreter has no cache.
enum class Cache { none, ca, cg, cv, cs, wb, wt };
enum class Eviction { normal, evict_first, evict_last };
struct LoadOptions {
  Cache cache = Cache::none;
  Eviction eviction = Eviction::normal;
  bool is_volatile = false;  // ld.volatile: read memory at this point, every time
};
struct StoreOptions {
  Cache cache = Cache::none;
  Eviction eviction = Eviction::normal;
};
namespace detail {
inline const char* cache_name(Cache c) {
  static const char* names[] = {"", "ca", "cg", "cv", "cs", "wb", "wt"};
  return names[static_cast<int>(c)];
}
inline const char* eviction_name(Eviction e) {
  static const char* names[] = {"", "evict_first", "evict_last"};
  return names[static_cast<int>(e)];
}
}  // namespace detail
template <class T>
Tile<T> load(const Tile<PtrTo<T>>& ptr, const LoadOptions& o, TILEDSL_LOC) {
  return Tile<T>(detail::load(ptr.value(), nullptr, nullptr, loc, detail::cache_name(o.cache),
                              detail::eviction_name(o.eviction), o.is_volatile));
}
template <class T>
Tile<T> load(const Tile<PtrTo<T>>& ptr, const Tile<bool>& mask, const LoadOptions& o, TILEDSL_LOC) {
  return Tile<T>(detail::load(ptr.value(), mask.value(), nullptr, loc, detail::cache_name(o.cache),
                              detail::eviction_name(o.eviction), o.is_volatile));
}
template <class T, detail::TileOrLiteral O>
Tile<T> load(const Tile<PtrTo<T>>& ptr, const Tile<bool>& mask, const O& other, const LoadOptions& o, TILEDSL_LOC) {
  return Tile<T>(detail::load(ptr.value(), mask.value(), detail::as_value(other, dtype_v<T>, loc), loc,
                              detail::cache_name(o.cache), detail::eviction_name(o.eviction), o.is_volatile));
}
template <class T>
Tile<T> load(const Tile<PtrTo<T>>& ptr, TILEDSL_LOC) {
  return load(ptr, LoadOptions{}, loc);
}
template <class T>
Tile<T> load(const Tile<PtrTo<T>>& ptr, const Tile<bool>& mask, TILEDSL_LOC) {
  return load(ptr, mask, LoadOptions{}, loc);
}
template <class T, detail::TileOrLiteral O>
Tile<T> load(const Tile<PtrTo<T>>& ptr, const Tile<bool>& mask, const O& other, TILEDSL_LOC) {
  return load(ptr, mask, other, LoadOptions{}, loc);
}
template <class X>
Tile<float> load(const X&, ...) {  // returns a tile so that no second error follows the assert
  static_assert(sizeof(X) == 0, "tl::load: the first argument must be a pointer tile (tl::Ptr<T> plus offsets)");
  return Tile<float>(static_cast<ir::Value*>(nullptr));
}
template <class T, detail::TileOrLiteral X>
void store(const Tile<PtrTo<T>>& ptr, const X& value, const Tile<bool>& mask, const StoreOptions& o, TILEDSL_LOC) {
  detail::store(ptr.value(), detail::as_value(value, dtype_v<T>, loc), mask.value(), loc, detail::cache_name(o.cache),
                detail::eviction_name(o.eviction));
}
template <class T, detail::TileOrLiteral X>
void store(const Tile<PtrTo<T>>& ptr, const X& value, const StoreOptions& o, TILEDSL_LOC) {
  detail::store(ptr.value(), detail::as_value(value, dtype_v<T>, loc), nullptr, loc, detail::cache_name(o.cache),
                detail::eviction_name(o.eviction));
}
template <class T, detail::TileOrLiteral X>
void store(const Tile<PtrTo<T>>& ptr, const X& value, TILEDSL_LOC) {
  store(ptr, value, StoreOptions{}, loc);
}
template <class T, detail::TileOrLiteral X>
void store(const Tile<PtrTo<T>>& ptr, const X& value, const Tile<bool>& mask, TILEDSL_LOC) {
  store(ptr, value, mask, StoreOptions{}, loc);
}

// The memory order and scope of an atomic: Triton's `sem=` and `scope=`. The default is
// Triton's, acquire-release at GPU scope: tl::atomic_add(p, v, mask, {.sem = tl::Sem::relaxed}).
enum class Sem { acq_rel, acquire, release, relaxed };
enum class Scope { gpu, cta, sys };
struct AtomicOptions {
  Sem sem = Sem::acq_rel;
  Scope scope = Scope::gpu;
};
namespace detail {
inline const char* sem_name(Sem s) {
  static const char* names[] = {"acq_rel", "acquire", "release", "relaxed"};
  return names[static_cast<int>(s)];
}
inline const char* scope_name(Scope s) {
  static const char* names[] = {"gpu", "cta", "sys"};
  return names[static_cast<int>(s)];
}

template <class T, class X>
Tile<T> atomic_call(const char* kind, const Tile<PtrTo<T>>& ptr, const X& value, V mask, const AtomicOptions& o,
                    const SourceLoc& loc) {
  return Tile<T>(
      atomic_rmw(kind, ptr.value(), as_value(value, dtype_v<T>, loc), mask, loc, sem_name(o.sem), scope_name(o.scope)));
}
}  // namespace detail

#define TILEDSL_ATOMIC(fn, kind)                                                                            \
  template <class T, detail::TileOrLiteral X>                                                               \
  Tile<T> fn(const Tile<PtrTo<T>>& ptr, const X& value, const Tile<bool>& mask, const AtomicOptions& order, \
             TILEDSL_LOC) {                                                                                 \
    return detail::atomic_call(kind, ptr, value, mask.value(), order, loc);                                 \
  }                                                                                                         \
  template <class T, detail::TileOrLiteral X>                                                               \
  Tile<T> fn(const Tile<PtrTo<T>>& ptr, const X& value, const Tile<bool>& mask, TILEDSL_LOC) {              \
    return detail::atomic_call(kind, ptr, value, mask.value(), {}, loc);                                    \
  }                                                                                                         \
  template <class T, detail::TileOrLiteral X>                                                               \
  Tile<T> fn(const Tile<PtrTo<T>>& ptr, const X& value, const AtomicOptions& order, TILEDSL_LOC) {          \
    return detail::atomic_call(kind, ptr, value, nullptr, order, loc);                                      \
  }                                                                                                         \
  template <class T, detail::TileOrLiteral X>                                                               \
  Tile<T> fn(const Tile<PtrTo<T>>& ptr, const X& value, TILEDSL_LOC) {                                      \
    return detail::atomic_call(kind, ptr, value, nullptr, {}, loc);                                         \
  }
TILEDSL_ATOMIC(atomic_add, "add")
TILEDSL_ATOMIC(atomic_max, "max")
TILEDSL_ATOMIC(atomic_min, "min")
TILEDSL_ATOMIC(atomic_xchg, "xchg")
TILEDSL_ATOMIC(atomic_and, "and")
TILEDSL_ATOMIC(atomic_or, "or")
TILEDSL_ATOMIC(atomic_xor, "xor")
#undef TILEDSL_ATOMIC
// Where *ptr == cmp, writes val; returns the old values.
template <class T, detail::TileOrLiteral C, detail::TileOrLiteral X>
Tile<T> atomic_cas(const Tile<PtrTo<T>>& ptr, const C& cmp, const X& val, const AtomicOptions& order, TILEDSL_LOC) {
  return Tile<T>(detail::atomic_cas(ptr.value(), detail::as_value(cmp, dtype_v<T>, loc),
                                    detail::as_value(val, dtype_v<T>, loc), loc, detail::sem_name(order.sem),
                                    detail::scope_name(order.scope)));
}
template <class T, detail::TileOrLiteral C, detail::TileOrLiteral X>
Tile<T> atomic_cas(const Tile<PtrTo<T>>& ptr, const C& cmp, const X& val, TILEDSL_LOC) {
  return atomic_cas(ptr, cmp, val, AtomicOptions{}, loc);
}

// --- Block pointers (Triton's make_block_ptr) ------------------------------------------------
namespace detail {
// A vector of handles whose assignment assigns element by element. A moved-in buffer would
// destroy the handles that tl::range and tl::if_ registered, so `bp = tl::advance(bp, ...)` in a
// loop body would neither be carried nor leave valid handles behind.
template <class H>
struct HandleList : std::vector<H> {
  using std::vector<H>::vector;
  HandleList() = default;
  HandleList(const HandleList&) = default;
  HandleList(HandleList&&) = default;
  HandleList& operator=(const HandleList& o) {
    if (o.size() != this->size())
      static_cast<std::vector<H>&>(*this) = o;
    else
      for (size_t i = 0; i < o.size(); ++i) (*this)[i] = o[i];
    return *this;
  }
  HandleList& operator=(HandleList&& o) { return *this = static_cast<const HandleList&>(o); }
};
}  // namespace detail

// A view of a 2-D (or N-D) region of a strided tensor: loads and stores of the whole block,
// with optional boundary checks. Traced as plain pointer arithmetic and masks.
template <class T>
struct BlockPtr {
  Tile<PtrTo<T>> base;
  detail::HandleList<Tile<int64_t>> shape, strides, offsets;
  std::vector<int64_t> block_shape, order;
};
enum class Padding { zero, nan };

namespace detail {
Tile<int64_t> to_i64(const IntArg& a, const SourceLoc& loc);
// Pointers and in-bounds mask of a block; `checked` lists the dimensions to check.
std::pair<V, V> block_ptr_addresses(V base, const std::vector<Tile<int64_t>>& shape,
                                    const std::vector<Tile<int64_t>>& strides,
                                    const std::vector<Tile<int64_t>>& offsets, const std::vector<int64_t>& block_shape,
                                    const std::vector<int>& checked, const SourceLoc& loc);
void check_block_ptr(size_t rank, size_t strides, size_t offsets, const std::vector<int64_t>& block_shape,
                     const std::vector<int64_t>& order, const SourceLoc& loc);
// Pointers and in-bounds mask of a descriptor's gather or scatter: rows `rows` (1-D), columns
// [column, column + block_shape[1]) of a 2-D descriptor whose block has one row.
std::pair<V, V> descriptor_rows(const char* what, V base, const std::vector<Tile<int64_t>>& shape,
                                const std::vector<Tile<int64_t>>& strides, const std::vector<int64_t>& block_shape,
                                V rows, V column, const SourceLoc& loc);
template <class T, class... U>
inline constexpr bool one_of_v = (std::is_same_v<T, U> || ...);
}  // namespace detail

template <class T>
BlockPtr<T> make_block_ptr(const Tile<PtrTo<T>>& base, const std::vector<IntArg>& shape,
                           const std::vector<IntArg>& strides, const std::vector<IntArg>& offsets,
                           const std::vector<int64_t>& block_shape, const std::vector<int64_t>& order, TILEDSL_LOC) {
  detail::check_block_ptr(shape.size(), strides.size(), offsets.size(), block_shape, order, loc);
  BlockPtr<T> bp{base, {}, {}, {}, block_shape, order};
  for (const auto& s : shape) bp.shape.push_back(detail::to_i64(s, loc));
  for (const auto& s : strides) bp.strides.push_back(detail::to_i64(s, loc));
  for (const auto& s : offsets) bp.offsets.push_back(detail::to_i64(s, loc));
  return bp;
}
template <class T>
BlockPtr<T> advance(const BlockPtr<T>& bp, const std::vector<IntArg>& deltas, TILEDSL_LOC) {
  detail::check_block_ptr(bp.shape.size(), bp.strides.size(), deltas.size(), bp.block_shape, bp.order, loc);
  BlockPtr<T> out = bp;
  for (size_t i = 0; i < deltas.size(); ++i)
    out.offsets[i] =
        Tile<int64_t>(detail::binary(BinOp::add, bp.offsets[i].value(), detail::to_i64(deltas[i], loc).value(), loc));
  return out;
}
template <class T>
Tile<T> load(const BlockPtr<T>& bp, const std::vector<int>& boundary_check = {}, Padding padding = Padding::zero,
             TILEDSL_LOC) {
  auto [ptr, mask] = detail::block_ptr_addresses(bp.base.value(), bp.shape, bp.strides, bp.offsets, bp.block_shape,
                                                 boundary_check, loc);
  if (!mask) return Tile<T>(detail::load(ptr, nullptr, nullptr, loc));
  double pad = padding == Padding::nan ? std::numeric_limits<double>::quiet_NaN() : 0.0;
  return Tile<T>(detail::load(ptr, mask, detail::constant(pad, dtype_v<T>, loc), loc));
}
template <class T, class U>
void store(const BlockPtr<T>& bp, const Tile<U>& value, const std::vector<int>& boundary_check = {}, TILEDSL_LOC) {
  auto [ptr, mask] = detail::block_ptr_addresses(bp.base.value(), bp.shape, bp.strides, bp.offsets, bp.block_shape,
                                                 boundary_check, loc);
  detail::store(ptr, value.value(), mask, loc);
}

// Triton's tensor descriptors: tl::make_tensor_descriptor(base, shape, strides, block_shape), then
// desc.load({i, j}) and desc.store({i, j}, value) move the block at those offsets; elements outside
// `shape` load as zeros and are not stored, the bounds Hopper's TMA checks. Row-major block
// pointers checked on every dimension (the TMA copy engine itself is not used yet).
// desc.atomic_add({i, j}, value) (and atomic_min, _max, _and, _or, _xor) combine the block into
// memory element by element, outside `shape` nothing, and return nothing (TMA's reduce); the
// element types are Triton's. desc.gather(rows, j) loads rows `rows` (a 1-D integer tile) of
// columns [j, j + block_shape[1]) of a 2-D descriptor whose block has one row; desc.scatter(value,
// rows, j) stores them. Each is plain pointer arithmetic and a mask here.
template <class T>
struct TensorDescriptor {
  BlockPtr<T> block;  // at offsets 0
  Tile<T> load(const std::vector<IntArg>& offsets, TILEDSL_LOC) const {
    return tiledsl::load(advance(block, offsets, loc), all_dims(), Padding::zero, loc);
  }
  template <class U>
  void store(const std::vector<IntArg>& offsets, const Tile<U>& value, TILEDSL_LOC) const {
    tiledsl::store(advance(block, offsets, loc), value, all_dims(), loc);
  }
  // Triton's element types for each: add on u32, i32, u64, f32, f16, bf16; min and max on u32,
  // i32, u64, i64, f16, bf16; the bitwise ones on u32, i32, u64, i64.
  static constexpr bool kAdd = detail::one_of_v<T, uint32_t, int32_t, uint64_t, float, f16, bf16>;
  static constexpr bool kMinMax = detail::one_of_v<T, uint32_t, int32_t, uint64_t, int64_t, f16, bf16>;
  static constexpr bool kBitwise = detail::one_of_v<T, uint32_t, int32_t, uint64_t, int64_t>;
#define TILEDSL_DESCRIPTOR_ATOMIC(fn, kind, allowed)                                                 \
  template <class U>                                                                                 \
  void fn(const std::vector<IntArg>& offsets, const Tile<U>& value, TILEDSL_LOC) const {             \
    static_assert(allowed, "tensor descriptor " #fn ": this element type is not one Triton allows"); \
    reduce(kind, offsets, value, loc);                                                               \
  }
  TILEDSL_DESCRIPTOR_ATOMIC(atomic_add, "add", kAdd)
  TILEDSL_DESCRIPTOR_ATOMIC(atomic_min, "min", kMinMax)
  TILEDSL_DESCRIPTOR_ATOMIC(atomic_max, "max", kMinMax)
  TILEDSL_DESCRIPTOR_ATOMIC(atomic_and, "and", kBitwise)
  TILEDSL_DESCRIPTOR_ATOMIC(atomic_or, "or", kBitwise)
  TILEDSL_DESCRIPTOR_ATOMIC(atomic_xor, "xor", kBitwise)
#undef TILEDSL_DESCRIPTOR_ATOMIC
  template <class I>
  Tile<T> gather(const Tile<I>& rows, const IntArg& column, TILEDSL_LOC) const {
    auto [ptr, mask] = rows_addresses("gather", rows, column, loc);
    return tiledsl::load(ptr, mask, T(0), loc);
  }
  template <class U, class I>
  void scatter(const Tile<U>& value, const Tile<I>& rows, const IntArg& column, TILEDSL_LOC) const {
    auto [ptr, mask] = rows_addresses("scatter", rows, column, loc);
    tiledsl::store(ptr, value, mask, loc);
  }
  std::vector<int> all_dims() const {
    std::vector<int> d(block.block_shape.size());
    for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<int>(i);
    return d;
  }

 private:
  template <class U>
  void reduce(const char* kind, const std::vector<IntArg>& offsets, const Tile<U>& value, const SourceLoc& loc) const {
    static_assert(std::is_same_v<U, T>, "tensor descriptor atomics: the value's element type must be the descriptor's");
    BlockPtr<T> at = advance(block, offsets, loc);
    auto [ptr, mask] =
        detail::block_ptr_addresses(at.base.value(), at.shape, at.strides, at.offsets, at.block_shape, all_dims(), loc);
    detail::atomic_call(kind, Tile<PtrTo<T>>(ptr), value, mask, {}, loc);
  }
  template <class I>
  std::pair<Tile<PtrTo<T>>, Tile<bool>> rows_addresses(const char* what, const Tile<I>& rows, const IntArg& column,
                                                       const SourceLoc& loc) const {
    static_assert(std::is_integral_v<I>, "tensor descriptor gather/scatter: the rows are an integer tile");
    auto [ptr, mask] = detail::descriptor_rows(what, block.base.value(), block.shape, block.strides, block.block_shape,
                                               rows.value(), detail::to_i64(column, loc).value(), loc);
    return {Tile<PtrTo<T>>(ptr), Tile<bool>(mask)};
  }
};
template <class T>
TensorDescriptor<T> make_tensor_descriptor(const Tile<PtrTo<T>>& base, const std::vector<IntArg>& shape,
                                           const std::vector<IntArg>& strides, const std::vector<int64_t>& block_shape,
                                           TILEDSL_LOC) {
  std::vector<IntArg> zeros;
  std::vector<int64_t> order;
  for (size_t d = block_shape.size(); d-- > 0;) {
    zeros.push_back(IntArg(0, loc));
    order.push_back(static_cast<int64_t>(d));  // row-major: the last dimension fastest
  }
  return {make_block_ptr(base, shape, strides, zeros, block_shape, order, loc)};
}

// --- Dot, reductions, scans -----------------------------------------------------------------
// How a dot of f32 inputs multiplies (Triton's input_precision): ieee, exact products; tf32, each
// input first rounded to tf32 (10 mantissa bits, to nearest, ties away); tf32x3, each input split
// into a tf32 part and the tf32 rounding of the rest, and the three larger partial products
// summed (close to ieee on tensor cores). The default for f32 inputs is tf32, as Triton's.
// f16 and bf16 inputs are exact in tf32: the choice changes nothing for them.
enum class InputPrecision { ieee, tf32, tf32x3 };
namespace detail {
inline const char* precision_name(InputPrecision p) {
  return p == InputPrecision::ieee ? "ieee" : p == InputPrecision::tf32 ? "tf32" : "tf32x3";
}
}  // namespace detail

// a [M, K] @ b [K, N] with f32 accumulation; f16, bf16, f32 or fp8 (f8e4m3, f8e5m2) inputs of one
// dtype (int8 below). 3-D tiles [B, M, K] @ [B, K, N] are a batch of dots (Triton's 3-D dot).
namespace detail {
template <class T>
inline constexpr bool dot_input_v = std::is_same_v<T, f16> || std::is_same_v<T, bf16> || std::is_same_v<T, float> ||
                                    std::is_same_v<T, f8e4m3> || std::is_same_v<T, f8e5m2>;
}  // namespace detail
#define TILEDSL_DOT_INPUTS                                                                                 \
  static_assert(detail::dot_input_v<T>,                                                                    \
                "tl::dot: inputs must be tl::f16, tl::bf16, float, tl::f8e4m3 or tl::f8e5m2 tiles of one " \
                "type")
template <class T>
Tile<float> dot(const Tile<T>& a, const Tile<T>& b, TILEDSL_LOC) {
  TILEDSL_DOT_INPUTS;
  return Tile<float>(detail::dot(a.value(), b.value(), nullptr, loc));
}
template <class T>
Tile<float> dot(const Tile<T>& a, const Tile<T>& b, const Tile<float>& acc, TILEDSL_LOC) {
  TILEDSL_DOT_INPUTS;
  return Tile<float>(detail::dot(a.value(), b.value(), acc.value(), loc));
}
template <class T>
Tile<float> dot(const Tile<T>& a, const Tile<T>& b, InputPrecision input_precision, TILEDSL_LOC) {
  TILEDSL_DOT_INPUTS;
  return Tile<float>(detail::dot(a.value(), b.value(), nullptr, loc, detail::precision_name(input_precision)));
}
template <class T>
Tile<float> dot(const Tile<T>& a, const Tile<T>& b, const Tile<float>& acc, InputPrecision input_precision,
                TILEDSL_LOC) {
  TILEDSL_DOT_INPUTS;
  return Tile<float>(detail::dot(a.value(), b.value(), acc.value(), loc, detail::precision_name(input_precision)));
}
// Triton's out_dtype=tl.float16 (f16 or fp8 inputs): an f16 accumulator. The products sum in f32
// and the result rounds to f16 once per dot; Triton's tensor cores accumulate in f16 inside the
// dot, so its sums round more often (ours are as close to the exact value, or closer).
template <class T>
Tile<f16> dot(const Tile<T>& a, const Tile<T>& b, const Tile<f16>& acc, TILEDSL_LOC) {
  static_assert(std::is_same_v<T, f16> || std::is_same_v<T, f8e4m3> || std::is_same_v<T, f8e5m2>,
                "tl::dot: an f16 accumulator (Triton's out_dtype=tl.float16) takes f16 or fp8 inputs");
  detail::V sum = detail::dot(a.value(), b.value(), detail::cast(acc.value(), DType::f32, loc), loc);
  return Tile<f16>(detail::cast(sum, DType::f16, loc));
}
#undef TILEDSL_DOT_INPUTS

// int8 inputs: exact products summed in i32 (wrapping on overflow, as the tensor cores'
// mma.sync.m16n8k32.s32.s8.s8.s32 do), the accumulator an i32 tile. input_precision does not apply.
inline Tile<int32_t> dot(const Tile<int8_t>& a, const Tile<int8_t>& b, TILEDSL_LOC) {
  return Tile<int32_t>(detail::dot(a.value(), b.value(), nullptr, loc));
}
inline Tile<int32_t> dot(const Tile<int8_t>& a, const Tile<int8_t>& b, const Tile<int32_t>& acc, TILEDSL_LOC) {
  return Tile<int32_t>(detail::dot(a.value(), b.value(), acc.value(), loc));
}

// Inputs of two element types: a readable error instead of a failed template deduction.
template <class T, class U, class... Acc>
requires(!std::is_same_v<T, U>) Tile<float> dot(const Tile<T>& a, const Tile<U>&, const Acc&...) {
  static_assert(std::is_same_v<T, U>,
                "tl::dot: both inputs must have one element type (tl::f16, tl::bf16, float or int8_t); "
                "convert one first, e.g. b.to<float>()");
  return Tile<float>(a.value());
}

// Generic reduction with a user combine function (Triton's tl.reduce): combine(Tile<T>, Tile<T>) -> Tile<T>
// on scalars; it must be associative and commutative.
template <class T, class F>
Tile<T> reduce(const Tile<T>& x, int axis, F combine, TILEDSL_LOC) {
  auto fn = [&](std::span<detail::V const> l, std::span<detail::V const> r) {
    return std::vector<detail::V>{Tile<T>(combine(Tile<T>(l[0]), Tile<T>(r[0]))).value()};
  };
  return Tile<T>(detail::reduce({x.value()}, axis, fn, loc, "reduce")[0]);
}
template <class T, class F>
Tile<T> associative_scan(const Tile<T>& x, int axis, F combine, bool reverse = false, TILEDSL_LOC) {
  auto fn = [&](std::span<detail::V const> l, std::span<detail::V const> r) {
    return std::vector<detail::V>{Tile<T>(combine(Tile<T>(l[0]), Tile<T>(r[0]))).value()};
  };
  return Tile<T>(detail::scan({x.value()}, axis, reverse, fn, loc, "associative_scan")[0]);
}

// Reductions and scans over several tiles at once (Triton's tuples): `xs` is a std::tuple of tiles of
// one shape; combine(a0, a1, ..., b0, b1, ...) takes the running values of both sides, each a
// scalar tile of its input's type, and returns a std::tuple of the combined ones, of the same
// types. Argmax with its value is
//   auto [m, i] = tl::reduce(std::tuple{x, idx}, 1, [](auto v1, auto i1, auto v2, auto i2) {...});
// and a linear recurrence h = a h + b is a scan over (a, b).
namespace detail {
template <class Tuple, class F, size_t... I>
std::vector<V> combine_tuple(F& combine, std::span<V const> l, std::span<V const> r, std::index_sequence<I...>) {
  auto out = combine(std::tuple_element_t<I, Tuple>(l[I])..., std::tuple_element_t<I, Tuple>(r[I])...);
  static_assert(std::is_same_v<decltype(out), Tuple>,
                "tl::reduce / tl::associative_scan: the combine function must return a std::tuple of tiles of the "
                "inputs' types, in their order");
  return {std::get<I>(out).value()...};
}
template <class Tuple, size_t... I>
Tuple tuple_of(const std::vector<V>& v, std::index_sequence<I...>) {
  return Tuple{std::tuple_element_t<I, Tuple>(v[I])...};
}
// Runs `op(values, combine)` (detail::reduce or detail::scan) on the tuple's tiles and returns
// its results as a tuple of the same types.
template <class... T, class F, class Op>
std::tuple<Tile<T>...> over_tuple(const std::tuple<Tile<T>...>& xs, F& combine, Op op) {
  using Tuple = std::tuple<Tile<T>...>;
  auto seq = std::index_sequence_for<T...>{};
  std::vector<V> in = std::apply([](const auto&... x) { return std::vector<V>{x.value()...}; }, xs);
  Combine fn = [&](std::span<V const> l, std::span<V const> r) { return combine_tuple<Tuple>(combine, l, r, seq); };
  return tuple_of<Tuple>(op(in, fn), seq);
}
}  // namespace detail
template <class... T, class F>
std::tuple<Tile<T>...> reduce(const std::tuple<Tile<T>...>& xs, int axis, F combine, bool keep_dims = false,
                              TILEDSL_LOC) {
  return detail::over_tuple(xs, combine, [&](const std::vector<detail::V>& in, const detail::Combine& fn) {
    std::vector<detail::V> out = detail::reduce(in, axis, fn, loc, "reduce");
    const int rank = std::get<0>(xs).rank();
    if (keep_dims)
      for (auto& v : out) v = detail::expand_dims(v, axis < 0 ? axis + rank : axis, loc);
    return out;
  });
}
template <class... T, class F>
std::tuple<Tile<T>...> associative_scan(const std::tuple<Tile<T>...>& xs, int axis, F combine, bool reverse = false,
                                        TILEDSL_LOC) {
  return detail::over_tuple(xs, combine, [&](const std::vector<detail::V>& in, const detail::Combine& fn) {
    return detail::scan(in, axis, reverse, fn, loc, "associative_scan");
  });
}

namespace detail {
template <class T>
Tile<T> reduce_all(const Tile<T>& x, BinOp op, const SourceLoc& loc, const char* name) {
  auto flat = x.rank() == 1 ? x.value() : reshape(x.value(), {x.numel()}, loc);
  return Tile<T>(reduce(
      {flat}, 0, [&](auto l, auto r) { return std::vector<V>{binary(op, l[0], r[0], loc)}; }, loc, name)[0]);
}
template <class T>
Tile<T> reduce_axis(const Tile<T>& x, int axis, BinOp op, const SourceLoc& loc, const char* name) {
  return Tile<T>(reduce(
      {x.value()}, axis, [&](auto l, auto r) { return std::vector<V>{binary(op, l[0], r[0], loc)}; }, loc, name)[0]);
}
Tile<int32_t> arg_reduce(V x, int axis, bool is_max, const SourceLoc& loc);
// The extreme value along `axis` and its index (the smallest among ties), as Triton's
// max(x, axis, return_indices=True): bf16 compares in f32.
std::pair<V, V> arg_reduce_with_value(V x, int axis, bool is_max, const SourceLoc& loc);
// Triton's result types: sum (and cumsum) of integers narrower than 32 bits in i32 or u32 by their
// sign; max and min of floats narrower than 32 bits in f32 and of such integers in i32; cumsum
// and cumprod of bf16 in f32.
template <class T>
using sum_t = std::conditional_t<is_int_v<T> && sizeof(T) < 4 && !std::is_same_v<T, bool>,
                                 std::conditional_t<std::is_unsigned_v<T>, uint32_t, int32_t>,
                                 std::conditional_t<std::is_same_v<T, bool>, int32_t, T>>;
template <class T>
using max_t = std::conditional_t<is_float_v<T> && sizeof(T) < 4, float,
                                 std::conditional_t<is_int_v<T> && sizeof(T) < 4, int32_t, T>>;
template <class T>
using scan_t = std::conditional_t<std::is_same_v<T, bf16>, float, T>;
}  // namespace detail

// Sums over `axis` (the axis disappears), or over everything into a scalar. Narrow integers sum in i32.
template <class T>
Tile<detail::sum_t<T>> sum(const Tile<T>& x, int axis, TILEDSL_LOC) {
  return detail::reduce_axis(x.template to<detail::sum_t<T>>(loc), axis, BinOp::add, loc, "sum");
}
template <class T>
Tile<detail::sum_t<T>> sum(const Tile<T>& x, TILEDSL_LOC) {
  return detail::reduce_all(x.template to<detail::sum_t<T>>(loc), BinOp::add, loc, "sum");
}
template <class T>
Tile<detail::max_t<T>> max(const Tile<T>& x, int axis, TILEDSL_LOC) {
  return detail::reduce_axis(x.template to<detail::max_t<T>>(loc), axis, BinOp::max, loc, "max");
}
template <class T>
Tile<detail::max_t<T>> max(const Tile<T>& x, TILEDSL_LOC) {
  return detail::reduce_all(x.template to<detail::max_t<T>>(loc), BinOp::max, loc, "max");
}
template <class T>
Tile<detail::max_t<T>> min(const Tile<T>& x, int axis, TILEDSL_LOC) {
  return detail::reduce_axis(x.template to<detail::max_t<T>>(loc), axis, BinOp::min, loc, "min");
}
template <class T>
Tile<detail::max_t<T>> min(const Tile<T>& x, TILEDSL_LOC) {
  return detail::reduce_all(x.template to<detail::max_t<T>>(loc), BinOp::min, loc, "min");
}
// Triton's keep_dims=True: the reduced axis stays, of size 1.
namespace detail {
template <class R, class T>
R kept(const R& r, const Tile<T>& x, int axis, bool keep_dims, const SourceLoc& loc) {
  return keep_dims ? R(expand_dims(r.value(), axis < 0 ? axis + x.rank() : axis, loc)) : r;
}
}  // namespace detail
template <class T>
auto sum(const Tile<T>& x, int axis, bool keep_dims, TILEDSL_LOC) {
  return detail::kept(sum(x, axis, loc), x, axis, keep_dims, loc);
}
template <class T>
Tile<detail::max_t<T>> max(const Tile<T>& x, int axis, bool keep_dims, TILEDSL_LOC) {
  return detail::kept(max(x, axis, loc), x, axis, keep_dims, loc);
}
template <class T>
Tile<detail::max_t<T>> min(const Tile<T>& x, int axis, bool keep_dims, TILEDSL_LOC) {
  return detail::kept(min(x, axis, loc), x, axis, keep_dims, loc);
}
// XOR of every element along `axis` (Triton's tl.xor_sum), on integer tiles.
template <class T>
Tile<T> xor_sum(const Tile<T>& x, int axis, TILEDSL_LOC) {
  static_assert(detail::is_int_v<T>, "tl::xor_sum: needs an integer tile");
  return detail::reduce_axis(x, axis, BinOp::bxor, loc, "xor_sum");
}
template <class T>
Tile<T> xor_sum(const Tile<T>& x, int axis, bool keep_dims, TILEDSL_LOC) {
  return detail::kept(xor_sum(x, axis, loc), x, axis, keep_dims, loc);
}
// Index of the largest (smallest) element along `axis`; ties go to the smallest index.
template <class T>
Tile<int32_t> argmax(const Tile<T>& x, int axis, TILEDSL_LOC) {
  return detail::arg_reduce(x.value(), axis, true, loc);
}
template <class T>
Tile<int32_t> argmin(const Tile<T>& x, int axis, TILEDSL_LOC) {
  return detail::arg_reduce(x.value(), axis, false, loc);
}
// Triton's tie_break_left and keep_dims: ties always go to the smallest index (tie_break_left =
// false lets Triton pick any of them, which this is too), the same on both backends.
template <class T>
Tile<int32_t> argmax(const Tile<T>& x, int axis, bool /*tie_break_left*/, bool keep_dims = false, TILEDSL_LOC) {
  return detail::kept(argmax(x, axis, loc), x, axis, keep_dims, loc);
}
template <class T>
Tile<int32_t> argmin(const Tile<T>& x, int axis, bool /*tie_break_left*/, bool keep_dims = false, TILEDSL_LOC) {
  return detail::kept(argmin(x, axis, loc), x, axis, keep_dims, loc);
}
// Triton's max(x, axis, return_indices=True, return_indices_tie_break_left=, keep_dims=):
//   auto [value, index] = tl::max(x, axis, tl::ReturnIndices{});
struct ReturnIndices {
  bool tie_break_left = true;  // ties go to the smallest index either way
  bool keep_dims = false;
};
namespace detail {
template <class T>
using with_index_t = std::conditional_t<std::is_same_v<T, bf16>, float, T>;
template <class T>
std::pair<Tile<with_index_t<T>>, Tile<int32_t>> value_and_index(const Tile<T>& x, int axis, bool is_max,
                                                                const ReturnIndices& r, const SourceLoc& loc) {
  auto [v, i] = arg_reduce_with_value(x.template to<with_index_t<T>>(loc).value(), axis, is_max, loc);
  return {kept(Tile<with_index_t<T>>(v), x, axis, r.keep_dims, loc), kept(Tile<int32_t>(i), x, axis, r.keep_dims, loc)};
}
}  // namespace detail
template <class T>
std::pair<Tile<detail::with_index_t<T>>, Tile<int32_t>> max(const Tile<T>& x, int axis, const ReturnIndices& r,
                                                            TILEDSL_LOC) {
  return detail::value_and_index(x, axis, true, r, loc);
}
template <class T>
std::pair<Tile<detail::with_index_t<T>>, Tile<int32_t>> min(const Tile<T>& x, int axis, const ReturnIndices& r,
                                                            TILEDSL_LOC) {
  return detail::value_and_index(x, axis, false, r, loc);
}
template <class T>
Tile<detail::sum_t<detail::scan_t<T>>> cumsum(const Tile<T>& x, int axis = 0, bool reverse = false, TILEDSL_LOC) {
  using R = detail::sum_t<detail::scan_t<T>>;
  auto y = x.template to<R>(loc);
  return Tile<R>(detail::scan(
      {y.value()}, axis, reverse,
      [&](auto l, auto r) { return std::vector<detail::V>{detail::binary(BinOp::add, l[0], r[0], loc)}; }, loc,
      "cumsum")[0]);
}
template <class T>
Tile<detail::scan_t<T>> cumprod(const Tile<T>& x, int axis = 0, bool reverse = false, TILEDSL_LOC) {
  return Tile<detail::scan_t<T>>(detail::scan(
      {x.template to<detail::scan_t<T>>(loc).value()}, axis, reverse,
      [&](auto l, auto r) { return std::vector<detail::V>{detail::binary(BinOp::mul, l[0], r[0], loc)}; }, loc,
      "cumprod")[0]);
}
// Softmax along the last axis (Triton's tl.softmax).
template <class T>
Tile<T> softmax(const Tile<T>& x, TILEDSL_LOC) {
  static_assert(detail::is_float_v<T>, "tl::softmax: needs a floating-point tile");
  int last = x.rank() - 1;
  auto m = Tile<T>(detail::expand_dims(detail::reduce_axis(x, last, BinOp::max, loc, "max").value(), last, loc));
  auto e = exp(Tile<T>(detail::binary(BinOp::sub, x.value(), m.value(), loc)), loc);
  auto s = Tile<T>(detail::expand_dims(detail::reduce_axis(e, last, BinOp::add, loc, "sum").value(), last, loc));
  return Tile<T>(detail::binary(BinOp::div, e.value(), s.value(), loc));
}

// --- Random numbers (Philox; docs/language.md defines every bit) -----------------------------
// As Triton's: 32-bit offsets drive Philox 4x32 (u32 results), 64-bit offsets Philox 4x64 (u64
// results, the seed's 64 bits as the first key word); `n_rounds` rounds (Triton's default 10).
namespace detail {
std::array<V, 4> philox(V seed, V offsets, int rounds, const SourceLoc& loc);
// Random bits to a uniform f32 in [0, 1), Triton's uint_to_uniform_float (32 or 64 bits).
V uniform(V bits, const SourceLoc& loc);
// Box-Muller on two uniforms (Triton's pair_uniform_to_normal); `both` false skips the sine.
std::array<V, 2> pair_to_normal(V u1, V u2, bool both, const SourceLoc& loc);
template <class O>
concept RandomOffset = std::is_integral_v<O> && !std::is_same_v<O, bool>;
template <class O>
using random_t = std::conditional_t<sizeof(O) == 8, uint64_t, uint32_t>;
}  // namespace detail
template <detail::RandomOffset O>
std::array<Tile<detail::random_t<O>>, 4> randint4x(const IntArg& seed, const Tile<O>& offsets, int n_rounds = 10,
                                                   TILEDSL_LOC) {
  using R = Tile<detail::random_t<O>>;
  auto r = detail::philox(seed.v, offsets.value(), n_rounds, loc);
  return {R(r[0]), R(r[1]), R(r[2]), R(r[3])};
}
template <detail::RandomOffset O>
Tile<detail::random_t<O>> randint(const IntArg& seed, const Tile<O>& offsets, int n_rounds = 10, TILEDSL_LOC) {
  return randint4x(seed, offsets, n_rounds, loc)[0];
}
// Uniform in [0, 1).
template <detail::RandomOffset O>
Tile<float> rand(const IntArg& seed, const Tile<O>& offsets, int n_rounds = 10, TILEDSL_LOC) {
  return Tile<float>(detail::uniform(randint(seed, offsets, n_rounds, loc).value(), loc));
}
// Standard normal (Box-Muller on the first two Philox outputs).
template <detail::RandomOffset O>
Tile<float> randn(const IntArg& seed, const Tile<O>& offsets, int n_rounds = 10, TILEDSL_LOC) {
  auto r = randint4x(seed, offsets, n_rounds, loc);
  return Tile<float>(
      detail::pair_to_normal(detail::uniform(r[0].value(), loc), detail::uniform(r[1].value(), loc), false, loc)[0]);
}
// Triton's rand4x and randn4x: four uniforms from the four Philox outputs; four normals, Box-Muller
// on (u1, u2) and (u3, u4), each pair giving r cos(theta) and r sin(theta).
template <detail::RandomOffset O>
std::array<Tile<float>, 4> rand4x(const IntArg& seed, const Tile<O>& offsets, int n_rounds = 10, TILEDSL_LOC) {
  auto r = randint4x(seed, offsets, n_rounds, loc);
  return {Tile<float>(detail::uniform(r[0].value(), loc)), Tile<float>(detail::uniform(r[1].value(), loc)),
          Tile<float>(detail::uniform(r[2].value(), loc)), Tile<float>(detail::uniform(r[3].value(), loc))};
}
template <detail::RandomOffset O>
std::array<Tile<float>, 4> randn4x(const IntArg& seed, const Tile<O>& offsets, int n_rounds = 10, TILEDSL_LOC) {
  auto u = rand4x(seed, offsets, n_rounds, loc);
  auto a = detail::pair_to_normal(u[0].value(), u[1].value(), true, loc),
       c = detail::pair_to_normal(u[2].value(), u[3].value(), true, loc);
  return {Tile<float>(a[0]), Tile<float>(a[1]), Tile<float>(c[0]), Tile<float>(c[1])};
}

// --- Hints and debugging --------------------------------------------------------------------
// Promise that each element (per dimension) is a multiple of `n`; used by axis analysis.
template <class T>
Tile<T> multiple_of(const Tile<T>& x, std::vector<int64_t> n, TILEDSL_LOC) {
  return Tile<T>(detail::multiple_of(x.value(), n, loc));
}
// Triton's tl.max_constancy: a promise that runs of `n` elements are equal. Accepted; the axis
// analysis does not use it yet (a hint may be ignored).
template <class T>
Tile<T> max_constancy(const Tile<T>& x, std::vector<int64_t> /*n*/, TILEDSL_LOC) {
  (void)loc;
  return x;
}
// Promise that runs of `n` consecutive elements (per dimension) are contiguous.
template <class T>
Tile<T> max_contiguous(const Tile<T>& x, std::vector<int64_t> n, TILEDSL_LOC) {
  return Tile<T>(detail::max_contiguous(x.value(), n, loc));
}
// Triton's tl.static_print: prints, once per trace (not per program), its arguments: strings and
// numbers as they are, tiles as their type ("tile<16x64xf32>").
template <class... Args>
void static_print(const Args&... args) {
  std::string line;
  auto one = [&](const auto& a) {
    using A = std::decay_t<decltype(a)>;
    if (!line.empty()) line += ' ';
    if constexpr (std::is_convertible_v<A, std::string>)
      line += std::string(a);
    else if constexpr (std::is_arithmetic_v<A>)
      line += std::to_string(a);
    else if constexpr (std::is_same_v<A, Constexpr>)
      line += std::to_string(a.value());
    else
      line += detail::type_str(a.value());
  };
  (one(args), ...);
  std::printf("%s\n", line.c_str());
}
// A trace-time check on constexpr values (named with a trailing _ because static_assert is a keyword).
inline void static_assert_(bool cond, const std::string& msg = "", TILEDSL_LOC) {
  detail::static_check(cond, msg, loc);
}
inline void device_assert(const Tile<bool>& cond, const std::string& msg = "", TILEDSL_LOC) {
  detail::device_assert(cond.value(), msg, loc);
}
// Triton's tl.assume: a fact about the kernel's values (`tl::assume(pid_m >= 0)`) that the
// compiler may rely on; today, that integers compared `>= c` or `> c` with c >= -1 are non-negative,
// which lets remainders of offsets keep their runs (docs/language.md). The interpreter checks it
// (an error naming the line when it does not hold); on the GPU a false fact is undefined behaviour.
inline void assume(const Tile<bool>& cond, TILEDSL_LOC) { detail::assume(cond.value(), loc); }
// Prints every element of each tile, prefixed with the program id and element index.
struct Print {
  std::string prefix;
  bool hex = false;
  SourceLoc loc;
  Print(std::string prefix, bool hex = false, TILEDSL_LOC) : prefix(std::move(prefix)), hex(hex), loc(loc) {}
};
template <class... Ts>
void device_print(const Print& p, const Tile<Ts>&... xs) {
  detail::print(p.prefix, p.hex, {xs.value()...}, p.loc);
}

// --- Control flow ---------------------------------------------------------------------------
// for (iv = lo; iv < hi; iv += step) body(iv). Variables the body assigns become loop-carried
// values: the body is traced twice, once to find them and once to build the loop.
// The options of one loop, Triton's tl.range(..., num_stages=, loop_unroll_factor=); 0 leaves
// each as it is: num_stages for this loop's software pipelining instead of the launch's, and
// how many copies of the body LLVM's unroller makes. `flatten` and `warp_specialize` are
// Triton's scheduling hints, accepted so that ported loops keep their spelling; tiledsl applies
// neither (the results are the same either way).
struct RangeOptions {
  int num_stages = 0;
  int unroll = 0;
  bool flatten = false;
  bool warp_specialize = false;
};
template <class Body>
void range(const IntArg& lo, const IntArg& hi, const IntArg& step, const RangeOptions& options, Body&& body,
           TILEDSL_LOC) {
  detail::for_loop(
      lo.v, hi.v, step.v,
      [&](detail::V iv) {
        if (detail::dtype(iv) == DType::i64) {
          if constexpr (std::is_invocable_v<Body, Tile<int64_t>>)
            body(Tile<int64_t>(iv));
          else
            detail::fail("range", "the bounds are 64-bit; take the loop variable as tl::Int64", loc);
        } else {
          if constexpr (std::is_invocable_v<Body, Tile<int32_t>>)
            body(Tile<int32_t>(iv));
          else
            body(Tile<int64_t>(detail::cast(iv, DType::i64, loc)));
        }
      },
      loc, options.num_stages, options.unroll);
}
template <class Body>
void range(const IntArg& lo, const IntArg& hi, const IntArg& step, Body&& body, TILEDSL_LOC) {
  range(lo, hi, step, RangeOptions{}, std::forward<Body>(body), loc);
}
template <class Body>
void range(const IntArg& lo, const IntArg& hi, Body&& body, TILEDSL_LOC) {
  range(lo, hi, IntArg(1, loc), std::forward<Body>(body), loc);
}
// if (cond) then_fn(); else else_fn(); variables either branch assigns become the if's results.
template <class Then, class Else>
void if_(const Tile<bool>& cond, Then&& then_fn, Else&& else_fn, TILEDSL_LOC) {
  detail::if_else(cond.value(), std::forward<Then>(then_fn), std::forward<Else>(else_fn), loc);
}
template <class Then>
void if_(const Tile<bool>& cond, Then&& then_fn, TILEDSL_LOC) {
  detail::if_else(
      cond.value(), std::forward<Then>(then_fn), [] {}, loc);
}
// while (cond()) body(); cond returns a boolean scalar, computed again before every iteration
// from the variables the body assigns (those become loop-carried values, as in tl::range; the
// condition itself may not assign any). Triton's `while cond:`; a spin lock is
//   tl::while_([&] { return tl::atomic_cas(lock, 0, 1) == 1; }, [] {});
template <class Cond, class Body>
void while_(Cond&& cond, Body&& body, TILEDSL_LOC) {
  static_assert(std::is_same_v<std::decay_t<std::invoke_result_t<Cond&>>, Tile<bool>>,
                "tl::while_: the condition must return a tl::Tile<bool> (a boolean scalar)");
  detail::while_loop([&] { return cond().value(); }, [&] { body(); }, loc);
}
// Triton's early `if cond: return`: when the boolean scalar `cond` holds, the program ends here.
// In the kernel's body and in tl::if_ branches, nested or not (a return in a branch also skips
// what follows the if_); not inside tl::range or tl::while_, as in Triton.
inline void return_if(const Tile<bool>& cond, TILEDSL_LOC) { detail::return_if(cond.value(), loc); }
// Every thread of the program waits here for the others (bar.sync; tl.debug_barrier).
inline void debug_barrier(TILEDSL_LOC) { detail::debug_barrier(loc); }

}  // namespace tiledsl
