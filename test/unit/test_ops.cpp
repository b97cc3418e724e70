// Op tests, part 1: every elementwise op, conversion, creation, shape op and masked memory
// access of the kernel language, run on the interpreter and compared with a plain C++
// reference on seeded random inputs (n = 1000 with BLOCK 256, so the last block is partial).
// Part 2 (test_ops_tiles.cpp): dot, reductions, scans, atomics, block pointers, control flow,
// random numbers, debugging ops, tracing and threads.
#include "ops_util.h"

using namespace opt;

namespace {

constexpr int kN = 1000;  // not a multiple of the block: masks matter
constexpr int kBlock = 256;

tl::Grid blocks(int n) { return tl::grid(tl::cdiv(n, kBlock)); }

// --- Arithmetic -----------------------------------------------------------------------------
enum Arith { kAdd, kSub, kMul, kDiv, kRem, kMax, kMin, kNeg, kNumArith };

template <class T>
const tl::Kernel& arith_kernel() {
  static const tl::Kernel k =
      tl::kernel("arith", {"a", "b", "out", "n", "OP", "BLOCK"},
                 [](tl::Ptr<T> a, tl::Ptr<T> b, tl::Ptr<T> out, tl::Int n, tl::Constexpr OP, tl::Constexpr BLOCK) {
                   auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                   auto mask = offs < n;
                   auto x = tl::load(a + offs, mask);
                   auto y = tl::load(b + offs, mask, 1);  // masked-off divisors are 1
                   tl::Tile<T> r = x;
                   switch (static_cast<int>(OP)) {
                     case kAdd:
                       r = x + y;
                       break;
                     case kSub:
                       r = x - y;
                       break;
                     case kMul:
                       r = x * y;
                       break;
                     case kDiv:  // f16 and bf16 divide in f32 (as Triton), rounded back here
                       r = (x / y).template to<T>();
                       break;
                     case kRem:
                       r = (x % y).template to<T>();
                       break;
                     case kMax:
                       r = tl::maximum(x, y);
                       break;
                     case kMin:
                       r = tl::minimum(x, y);
                       break;
                     default:
                       r = -x;
                       break;
                   }
                   tl::store(out + offs, r, mask);
                 });
  return k;
}

template <class T>
H<T> arith_ref(int op, H<T> a, H<T> b) {
  if constexpr (is_fp<T>) {
    double x = as_double(a), y = as_double(b), r = 0;
    switch (op) {
      case kAdd:
        r = x + y;
        break;
      case kSub:
        r = x - y;
        break;
      case kMul:
        r = x * y;
        break;
      case kDiv:
        r = x / y;
        break;
      case kRem:
        r = std::fmod(x, y);
        break;
      case kMax:
        r = std::fmax(x, y);
        break;
      case kMin:
        r = std::fmin(x, y);
        break;
      default:
        r = -x;
        break;
    }
    return round_as<T>(r);
  } else {
    using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    W x = a, y = b;
    uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    switch (op) {
      case kAdd:
        return static_cast<T>(ux + uy);
      case kSub:
        return static_cast<T>(ux - uy);
      case kMul:
        return static_cast<T>(ux * uy);
      case kDiv:
        if constexpr (std::is_signed_v<T>)
          if (y == -1) return static_cast<T>(0 - ux);  // MIN / -1 wraps to MIN
        return static_cast<T>(x / y);
      case kRem:
        if constexpr (std::is_signed_v<T>)
          if (y == -1) return 0;
        return static_cast<T>(x % y);
      case kMax:
        return std::max(a, b);
      case kMin:
        return std::min(a, b);
      default:
        return static_cast<T>(0 - ux);
    }
  }
}

}  // namespace

TEMPLATE_TEST_CASE("arithmetic, negation, maximum and minimum match C++ on every dtype", "[interp]", int8_t, int16_t,
                   int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, float, double, tl::f16, tl::bf16) {
  using T = TestType;
  std::vector<H<T>> a, b;
  if constexpr (is_fp<T>) {
    a = uniform<T>(kN, 11, -100, 100);
    b = uniform<T>(kN, 12, -100, 100);
    for (auto& y : b)
      if (std::fabs(as_double(y)) < 0.01) y = T(1.25f);
  } else {
    a = random_bits<T>(kN, 11);
    b = random_bits<T>(kN, 12);
    // Small divisors too (the quotient is then not almost always 0), and never 0.
    for (size_t i = 0; i < b.size(); i += 3) b[i] = static_cast<T>(b[i] % 13);
    for (auto& y : b)
      if (y == 0) y = 3;
    if constexpr (std::is_signed_v<T>) {
      a[7] = std::numeric_limits<T>::min();
      b[7] = static_cast<T>(-1);
    }
  }
  for (int op = 0; op < kNumArith; ++op) {
    INFO("op " << op);
    auto out = poison<T>({kN});
    arith_kernel<T>()[blocks(kN)](tensor<T>(a), tensor<T>(b), out, kN, op, kBlock);
    std::vector<H<T>> want(kN);
    for (int i = 0; i < kN; ++i) want[i] = arith_ref<T>(op, a[i], b[i]);
    if constexpr (std::is_same_v<T, float>) {
      if (op == kDiv && on_gpu()) {  // div.full.f32 on the GPU, as Triton: within 2 ulp
        std::vector<double> exact(want.begin(), want.end());
        require_close(host<T>(out), exact, 0.0, 2.5e-7);
        continue;
      }
    }
    require_equal(host<T>(out), want);
  }
}

// --- Comparisons ----------------------------------------------------------------------------
namespace {
template <class T>
const tl::Kernel& compare_kernel() {
  static const tl::Kernel k =
      tl::kernel("compare", {"a", "b", "out", "n", "OP", "BLOCK"},
                 [](tl::Ptr<T> a, tl::Ptr<T> b, tl::Ptr<bool> out, tl::Int n, tl::Constexpr OP, tl::Constexpr BLOCK) {
                   auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                   auto mask = offs < n;
                   auto x = tl::load(a + offs, mask);
                   auto y = tl::load(b + offs, mask);
                   tl::Bool r = x == y;
                   switch (static_cast<int>(OP)) {
                     case 0:
                       r = x == y;
                       break;
                     case 1:
                       r = x != y;
                       break;
                     case 2:
                       r = x < y;
                       break;
                     case 3:
                       r = x <= y;
                       break;
                     case 4:
                       r = x > y;
                       break;
                     case 5:
                       r = x >= y;
                       break;
                     case 6:
                       r = x < 1;
                       break;  // a literal on the right
                     default:
                       r = 1 >= x;
                       break;  // and on the left
                   }
                   tl::store(out + offs, r, mask);
                 });
  return k;
}
}  // namespace

TEMPLATE_TEST_CASE("comparisons match C++ on every dtype", "[interp]", bool, int8_t, int16_t, int32_t, int64_t, uint8_t,
                   uint16_t, uint32_t, uint64_t, float, double, tl::f16, tl::bf16) {
  using T = TestType;
  // A small range, so that ties are frequent.
  std::vector<H<T>> a, b;
  if constexpr (is_fp<T>) {
    a = random_eighths<T>(kN, 21, -2, 2);
    b = random_eighths<T>(kN, 22, -2, 2);
    for (size_t i = 0; i < a.size(); i += 4) a[i] = b[i];
  } else if constexpr (std::is_same_v<T, bool>) {
    a = uniform<T>(kN, 21, 0, 1);
    b = uniform<T>(kN, 22, 0, 1);
  } else {
    a = uniform<T>(kN, 21, std::is_signed_v<T> ? -3 : 0, 3);
    b = uniform<T>(kN, 22, std::is_signed_v<T> ? -3 : 0, 3);
  }
  for (int op = 0; op < 8; ++op) {
    INFO("op " << op);
    auto out = poison<bool>({kN});
    compare_kernel<T>()[blocks(kN)](tensor<T>(a), tensor<T>(b), out, kN, op, kBlock);
    std::vector<uint8_t> want(kN);
    for (int i = 0; i < kN; ++i) {
      double x = as_double(a[i]), y = as_double(b[i]);
      bool r = false;
      switch (op) {
        case 0:
          r = x == y;
          break;
        case 1:
          r = x != y;
          break;
        case 2:
          r = x < y;
          break;
        case 3:
          r = x <= y;
          break;
        case 4:
          r = x > y;
          break;
        case 5:
          r = x >= y;
          break;
        case 6:
          r = x < 1;
          break;
        default:
          r = 1 >= x;
          break;
      }
      want[i] = r;
    }
    require_equal(host<bool>(out), want);
  }
}

// --- Bitwise ops, shifts, negation, abs ------------------------------------------------------
namespace {
template <class T>
const tl::Kernel& bitwise_kernel() {
  static const tl::Kernel k =
      tl::kernel("bitwise", {"a", "b", "out", "n", "OP", "BLOCK"},
                 [](tl::Ptr<T> a, tl::Ptr<T> b, tl::Ptr<T> out, tl::Int n, tl::Constexpr OP, tl::Constexpr BLOCK) {
                   auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                   auto mask = offs < n;
                   auto x = tl::load(a + offs, mask);
                   auto y = tl::load(b + offs, mask);
                   tl::Tile<T> r = x;
                   switch (static_cast<int>(OP)) {
                     case 0:
                       r = x & y;
                       break;
                     case 1:
                       r = x | y;
                       break;
                     case 2:
                       r = x ^ y;
                       break;
                     case 3:
                       r = ~x;
                       break;
                     default:
                       if constexpr (!std::is_same_v<T, bool>) {
                         switch (static_cast<int>(OP)) {
                           case 4:
                             r = x << y;
                             break;
                           case 5:
                             r = x >> y;
                             break;
                           case 6:
                             r = -x;
                             break;
                           default:
                             r = tl::abs(x);
                             break;
                         }
                       }
                   }
                   tl::store(out + offs, r, mask);
                 });
  return k;
}
}  // namespace

TEMPLATE_TEST_CASE("bitwise ops, shifts, negation and abs match C++", "[interp]", bool, int8_t, int16_t, int32_t,
                   int64_t, uint8_t, uint16_t, uint32_t, uint64_t) {
  using T = TestType;
  constexpr bool is_bool = std::is_same_v<T, bool>;
  constexpr int width = is_bool ? 1 : 8 * sizeof(T);
  auto a = random_bits<T>(kN, 31);
  auto b = random_bits<T>(kN, 32);
  if constexpr (!is_bool)
    if constexpr (std::is_signed_v<T>) a[3] = std::numeric_limits<T>::min();  // -MIN and abs(MIN) wrap
  for (int op = 0; op < (is_bool ? 4 : 8); ++op) {
    INFO("op " << op);
    auto s = b;
    if (op == 4 || op == 5)
      for (auto& y : s) y = static_cast<T>(static_cast<uint64_t>(y) % width);  // shift counts in [0, width)
    auto out = poison<T>({kN});
    bitwise_kernel<T>()[blocks(kN)](tensor<T>(a), tensor<T>(s), out, kN, op, kBlock);
    std::vector<H<T>> want(kN);
    for (int i = 0; i < kN; ++i) {
      H<T> x = a[i], y = s[i];
      uint64_t ux = static_cast<uint64_t>(x);
      switch (op) {
        case 0:
          want[i] = static_cast<H<T>>(x & y);
          break;
        case 1:
          want[i] = static_cast<H<T>>(x | y);
          break;
        case 2:
          want[i] = static_cast<H<T>>(x ^ y);
          break;
        case 3:
          want[i] = is_bool ? !x : static_cast<H<T>>(~x);
          break;
        case 4:
          want[i] = static_cast<H<T>>(ux << y);
          break;
        case 5:
          want[i] = static_cast<H<T>>(x >> y);
          break;  // arithmetic for signed, logical for unsigned
        case 6:
          want[i] = static_cast<H<T>>(0 - ux);
          break;
        default:
          want[i] = std::is_signed_v<T> && static_cast<int64_t>(x) < 0 ? static_cast<H<T>>(0 - ux) : x;
          break;
      }
    }
    require_equal(host<T>(out), want);
  }
}

// --- Promotion ------------------------------------------------------------------------------
namespace {
template <class A, class B, class F>
auto run_binary(const std::vector<H<A>>& a, const std::vector<H<B>>& b, F f) {
  using R = typename std::invoke_result_t<F, tl::Tile<A>, tl::Tile<B>>::element_type;
  auto k = tl::kernel("binary", {"a", "b", "out", "n", "BLOCK"},
                      [f](tl::Ptr<A> pa, tl::Ptr<B> pb, tl::Ptr<R> out, tl::Int n, tl::Constexpr BLOCK) {
                        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                        auto mask = offs < n;
                        tl::store(out + offs, f(tl::load(pa + offs, mask), tl::load(pb + offs, mask)), mask);
                      });
  int n = static_cast<int>(a.size());
  auto out = poison<R>({n});
  k[blocks(n)](tensor<A>(a), tensor<B>(b), out, n, kBlock);
  return host<R>(out);
}

template <class T>
T& fake();
template <class A, class B>
using sum_type = typename decltype(fake<tl::Tile<A>>() + fake<tl::Tile<B>>())::element_type;
}  // namespace

// The documented promotion rules, as C++ types ...
static_assert(std::is_same_v<sum_type<int8_t, tl::f16>, tl::f16>);
static_assert(std::is_same_v<sum_type<uint8_t, int8_t>, uint8_t>);   // equal width: unsigned wins
static_assert(std::is_same_v<sum_type<int16_t, uint8_t>, int16_t>);  // wider wins
static_assert(std::is_same_v<sum_type<int32_t, uint32_t>, uint32_t>);
static_assert(std::is_same_v<sum_type<int64_t, int32_t>, int64_t>);
static_assert(std::is_same_v<sum_type<tl::f16, tl::bf16>, tl::f16>);  // Triton's "prefer float16"
static_assert(std::is_same_v<sum_type<int32_t, tl::bf16>, float>);    // an integer with bf16: f32
static_assert(std::is_same_v<sum_type<int32_t, tl::f16>, tl::f16>);
static_assert(std::is_same_v<decltype(fake<tl::Tile<tl::f16>>() / fake<tl::Tile<tl::f16>>())::element_type, float>);
static_assert(std::is_same_v<decltype(fake<tl::Tile<tl::bf16>>() % 2.0)::element_type, float>);
static_assert(std::is_same_v<decltype(fake<tl::Tile<tl::bf16>>() * 2.0)::element_type, tl::bf16>);
static_assert(std::is_same_v<decltype(fake<tl::Tile<uint8_t>>() / 3)::element_type, uint8_t>);
// Reductions' result types, Triton's: sums of narrow integers in 32 bits of their sign; max and
// min of narrow floats in f32 and of narrow integers in i32; cumsum and cumprod of bf16 in f32.
static_assert(std::is_same_v<decltype(tl::sum(fake<tl::Tile<uint8_t>>(), 0))::element_type, uint32_t>);
static_assert(std::is_same_v<decltype(tl::sum(fake<tl::Tile<int16_t>>(), 0))::element_type, int32_t>);
static_assert(std::is_same_v<decltype(tl::sum(fake<tl::Tile<tl::bf16>>(), 0))::element_type, tl::bf16>);
static_assert(std::is_same_v<decltype(tl::max(fake<tl::Tile<tl::f16>>(), 0))::element_type, float>);
static_assert(std::is_same_v<decltype(tl::min(fake<tl::Tile<uint8_t>>()))::element_type, int32_t>);
static_assert(std::is_same_v<decltype(tl::max(fake<tl::Tile<int64_t>>(), 0, true))::element_type, int64_t>);
static_assert(std::is_same_v<decltype(tl::cumsum(fake<tl::Tile<tl::bf16>>()))::element_type, float>);
static_assert(std::is_same_v<decltype(tl::cumsum(fake<tl::Tile<uint16_t>>()))::element_type, uint32_t>);
static_assert(std::is_same_v<decltype(tl::cumprod(fake<tl::Tile<tl::bf16>>()))::element_type, float>);
static_assert(std::is_same_v<sum_type<float, double>, double>);
static_assert(std::is_same_v<sum_type<bool, bool>, int32_t>);
static_assert(std::is_same_v<sum_type<uint32_t, float>, float>);
static_assert(std::is_same_v<decltype(fake<tl::Tile<int8_t>>() * 2.5)::element_type, float>);
static_assert(std::is_same_v<decltype(fake<tl::Tile<tl::f16>>() * 2.5)::element_type, tl::f16>);
static_assert(std::is_same_v<decltype(fake<tl::Tile<int8_t>>() + 1)::element_type, int8_t>);
static_assert(std::is_same_v<decltype(fake<tl::Bool>() & fake<tl::Bool>())::element_type, bool>);
static_assert(std::is_same_v<decltype(tl::maximum(fake<tl::Bool>(), fake<tl::Bool>()))::element_type, bool>);

// ... and as values.
TEST_CASE("mixed-type arithmetic promotes as documented", "[interp]") {
  {  // i8 + f16 -> f16
    auto a = uniform<int8_t>(kN, 41, -100, 100);
    auto b = uniform<tl::f16>(kN, 42, -50, 50);
    auto got = run_binary<int8_t, tl::f16>(a, b, [](auto x, auto y) { return x + y; });
    static_assert(std::is_same_v<decltype(got)::value_type, tl::f16>);
    std::vector<tl::f16> want(kN);
    for (int i = 0; i < kN; ++i) want[i] = tl::f16(static_cast<double>(a[i]) + static_cast<float>(b[i]));
    require_equal(got, want);
  }
  {  // u8 + i8 -> u8 (wraps)
    auto a = random_bits<uint8_t>(kN, 43);
    auto b = random_bits<int8_t>(kN, 44);
    auto got = run_binary<uint8_t, int8_t>(a, b, [](auto x, auto y) { return x + y; });
    static_assert(std::is_same_v<decltype(got)::value_type, uint8_t>);
    std::vector<uint8_t> want(kN);
    for (int i = 0; i < kN; ++i) want[i] = static_cast<uint8_t>(a[i] + static_cast<uint8_t>(b[i]));
    require_equal(got, want);
  }
  {  // i16 * u8 -> i16 (the u8 is zero-extended)
    auto a = random_bits<int16_t>(kN, 45);
    auto b = random_bits<uint8_t>(kN, 46);
    auto got = run_binary<int16_t, uint8_t>(a, b, [](auto x, auto y) { return x * y; });
    std::vector<int16_t> want(kN);
    for (int i = 0; i < kN; ++i) want[i] = static_cast<int16_t>(static_cast<int64_t>(a[i]) * b[i]);
    require_equal(got, want);
  }
  {  // i32 vs u32: both compare as u32, so -1 > 1
    auto a = uniform<int32_t>(kN, 47, -5, 5);
    auto b = uniform<uint32_t>(kN, 48, 0, 5);
    auto got = run_binary<int32_t, uint32_t>(a, b, [](auto x, auto y) { return x < y; });
    std::vector<uint8_t> want(kN);
    for (int i = 0; i < kN; ++i) want[i] = static_cast<uint32_t>(a[i]) < b[i];
    require_equal(got, want);
    auto sum = run_binary<int32_t, uint32_t>(a, b, [](auto x, auto y) { return x + y; });
    static_assert(std::is_same_v<decltype(sum)::value_type, uint32_t>);
    std::vector<uint32_t> wsum(kN);
    for (int i = 0; i < kN; ++i) wsum[i] = static_cast<uint32_t>(a[i]) + b[i];
    require_equal(sum, wsum);
  }
  {  // f16 * bf16 -> f16 (the bf16, integers here, converts exactly), rounded once
    auto a = uniform<tl::f16>(kN, 49, -100, 100);
    auto b = uniform<tl::bf16>(kN, 50, -100, 100);
    auto got = run_binary<tl::f16, tl::bf16>(a, b, [](auto x, auto y) { return x * y; });
    std::vector<tl::f16> want(kN);
    for (int i = 0; i < kN; ++i) want[i] = tl::f16(static_cast<float>(a[i]) * static_cast<float>(b[i]));
    require_equal(got, want);
  }
  {  // i32 * bf16 -> f32; f16 / f16 -> f32 (Triton's types)
    auto a = uniform<int32_t>(kN, 53, -3000, 3000);
    auto b = uniform<tl::bf16>(kN, 54, -100, 100);
    auto got = run_binary<int32_t, tl::bf16>(a, b, [](auto x, auto y) { return x * y; });
    std::vector<float> want(kN);
    for (int i = 0; i < kN; ++i) want[i] = static_cast<float>(a[i]) * static_cast<float>(b[i]);
    require_equal(got, want);
    auto p = uniform<tl::f16>(kN, 55, -60, 60);
    auto q = uniform<tl::f16>(kN, 56, 1, 7);
    auto quotient = run_binary<tl::f16, tl::f16>(p, q, [](auto x, auto y) { return x / y; });
    std::vector<float> wq(kN);
    for (int i = 0; i < kN; ++i) wq[i] = static_cast<float>(p[i]) / static_cast<float>(q[i]);
    if (on_gpu())  // f32 division: div.full.f32 on the GPU, within 2 ulp
      require_close(quotient, std::vector<double>(wq.begin(), wq.end()), 0, 3e-7);
    else
      require_equal(quotient, wq);
  }
  {  // f32 - f64 -> f64; i64 + i32 -> i64
    auto a = uniform<float>(kN, 51, -1, 1);
    auto b = uniform<double>(kN, 52, -1, 1);
    auto got = run_binary<float, double>(a, b, [](auto x, auto y) { return x - y; });
    std::vector<double> want(kN);
    for (int i = 0; i < kN; ++i) want[i] = static_cast<double>(a[i]) - b[i];
    require_equal(got, want);
    auto c = random_bits<int64_t>(kN, 53);
    auto d = random_bits<int32_t>(kN, 54);
    auto got64 = run_binary<int64_t, int32_t>(c, d, [](auto x, auto y) { return x + y; });
    std::vector<int64_t> want64(kN);
    for (int i = 0; i < kN; ++i)
      want64[i] = static_cast<int64_t>(static_cast<uint64_t>(c[i]) + static_cast<uint64_t>(int64_t{d[i]}));
    require_equal(got64, want64);
  }
  {  // bool + bool -> i32; bool & bool stays a mask; int tile * float literal -> f32
    auto a = uniform<bool>(kN, 55, 0, 1);
    auto b = uniform<bool>(kN, 56, 0, 1);
    auto sum = run_binary<bool, bool>(a, b, [](auto x, auto y) { return x + y; });
    auto both = run_binary<bool, bool>(a, b, [](auto x, auto y) { return x & y; });
    auto scaled =
        run_binary<int32_t, bool>(uniform<int32_t>(kN, 57, -1000, 1000), a, [](auto x, auto) { return x * 2.5; });
    auto xs = uniform<int32_t>(kN, 57, -1000, 1000);
    std::vector<int32_t> wsum(kN);
    std::vector<uint8_t> wboth(kN);
    std::vector<float> wscaled(kN);
    for (int i = 0; i < kN; ++i) {
      wsum[i] = a[i] + b[i];
      wboth[i] = a[i] && b[i];
      wscaled[i] = static_cast<float>(xs[i]) * 2.5f;
    }
    require_equal(sum, wsum);
    require_equal(both, wboth);
    require_equal(scaled, wscaled);
  }
}

// --- Conversions ----------------------------------------------------------------------------
namespace {
template <class A, class B>
std::vector<H<B>> run_cast(const std::vector<H<A>>& a) {
  return run_binary<A, A>(a, a, [](tl::Tile<A> x, tl::Tile<A>) { return x.template to<B>(); });
}

template <class A, class B>
std::vector<H<B>> run_bitcast(const std::vector<H<A>>& a) {
  return run_binary<A, A>(a, a, [](tl::Tile<A> x, tl::Tile<A>) { return tl::bitcast<B>(x); });
}

// Float to integer as the GPU's cvt.rzi.sat: truncate, saturate, NaN -> 0; to bool: x != 0.
template <class I>
I float_to_int(double x) {
  if constexpr (std::is_same_v<I, bool>) {
    return x != 0;
  } else {
    if (std::isnan(x)) return 0;
    x = std::trunc(x);
    if (x <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
    if (x >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
    return static_cast<I>(x);
  }
}

std::vector<float> float_cast_inputs() {
  auto v = uniform<float>(kN, 61, -300, 300);
  auto big = uniform<float>(kN, 62, -5e9, 5e9);
  for (int i = 0; i < kN; i += 3) v[i] = big[i];
  const float specials[] = {
      NAN,      INFINITY,      -INFINITY,     0.0f,           -0.0f,          0.5f,          -0.5f,         0.7f,
      -0.7f,    127.9f,        128.0f,        -128.5f,        -129.0f,        255.5f,        256.0f,        65535.9f,
      65536.0f, 2147483520.0f, 2147483648.0f, -2147483648.0f, -2147483904.0f, 4294967040.0f, 4294967296.0f, 9.3e18f,
      -9.3e18f, 1e-30f,        65504.0f,      65519.0f,       65520.0f,       1e-8f,         6e-8f,         3.0e38f};
  for (size_t i = 0; i < std::size(specials); ++i) v[1 + 3 * i] = specials[i];
  return v;
}
}  // namespace

TEST_CASE("to<T> converts floats to integers by truncating and saturating", "[interp]") {
  auto x = float_cast_inputs();
  auto check = [&](auto tag) {
    using I = decltype(tag);
    auto got = run_cast<float, I>(x);
    std::vector<H<I>> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = float_to_int<I>(x[i]);
    require_equal(got, want);
  };
  check(int8_t{});
  check(int16_t{});
  check(int32_t{});
  check(int64_t{});
  check(uint8_t{});
  check(uint32_t{});
  check(bool{});
}

TEST_CASE("to<T> between float types rounds to nearest even", "[interp]") {
  auto x = float_cast_inputs();
  {
    auto got = run_cast<float, tl::f16>(x);
    std::vector<tl::f16> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = tl::f16(x[i]);
    require_equal(got, want);
    // Known encodings: 1, the largest finite, the first value that overflows, a subnormal.
    std::vector<float> k{1.0f, 65504.0f, 65520.0f, -2.0f, 6e-8f, 1.0009765625f + 0.00048828125f};
    auto g = run_cast<float, tl::f16>(k);
    CHECK(g[0].bits == 0x3c00);
    CHECK(g[1].bits == 0x7bff);
    CHECK(g[2].bits == 0x7c00);
    CHECK(g[3].bits == 0xc000);
    CHECK(g[4].bits == 0x0001);
    CHECK(g[5].bits == 0x3c02);  // tie between 0x3c01 and 0x3c02 goes to even
  }
  {
    auto got = run_cast<float, tl::bf16>(x);
    std::vector<tl::bf16> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = tl::bf16(x[i]);
    require_equal(got, want);
    auto g = run_cast<float, tl::bf16>(std::vector<float>{1.0f, 1.00390625f, 1.01171875f, 3.0e38f});
    CHECK(g[0].bits == 0x3f80);
    CHECK(g[1].bits == 0x3f80);  // tie to even
    CHECK(g[2].bits == 0x3f82);
    CHECK(g[3].bits == 0x7f62);
  }
  {
    auto d = uniform<double>(kN, 63, -1e5, 1e5);
    // Just above a bf16 tie by less than f32 holds: through f32 it would round to even, down.
    d[0] = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
    d[1] = -(4096.0 + 16.0 + std::ldexp(1.0, -20));
    auto got = run_cast<double, float>(d);
    auto got16 = run_cast<double, tl::f16>(d);
    auto gotb = run_cast<double, tl::bf16>(d);
    std::vector<float> want(d.size());
    std::vector<tl::f16> want16(d.size());
    std::vector<tl::bf16> wantb(d.size());
    for (size_t i = 0; i < d.size(); ++i) {
      want[i] = static_cast<float>(d[i]);
      want16[i] = tl::f16(d[i]);  // one rounding, not two
      wantb[i] = tl::bf16(d[i]);
    }
    require_equal(got, want);
    require_equal(got16, want16);
    require_equal(gotb, wantb);
    CHECK(gotb[0].bits == 0x3f81);
    CHECK(gotb[1].bits == 0xc581);
  }
  {
    auto h = uniform<tl::f16>(kN, 64, -60000, 60000);
    auto got = run_cast<tl::f16, float>(h);
    auto gotb = run_cast<tl::f16, tl::bf16>(h);
    auto gotd = run_cast<tl::f16, double>(h);
    std::vector<float> want(h.size());
    std::vector<tl::bf16> wantb(h.size());
    std::vector<double> wantd(h.size());
    for (size_t i = 0; i < h.size(); ++i) {
      want[i] = static_cast<float>(h[i]);
      wantb[i] = tl::bf16(static_cast<float>(h[i]));
      wantd[i] = static_cast<float>(h[i]);
    }
    require_equal(got, want);
    require_equal(gotb, wantb);
    require_equal(gotd, wantd);
  }
}

namespace {
// fp8 conversions of `x` (type A) to F, as bits: what the GPU's integer lowering must match.
template <class A, class F>
std::vector<uint8_t> to_fp8_bits(const std::vector<H<A>>& x) {
  return run_binary<A, A>(x, x, [](tl::Tile<A> v, tl::Tile<A>) { return tl::bitcast<uint8_t>(v.template to<F>()); });
}
template <class F, class B>
std::vector<H<B>> from_fp8_bits(const std::vector<uint8_t>& bits) {
  return run_binary<uint8_t, uint8_t>(
      bits, bits, [](tl::Tile<uint8_t> v, tl::Tile<uint8_t>) { return tl::bitcast<F>(v).template to<B>(); });
}

template <class F>
void check_fp8(tl::FloatFormat fmt) {
  std::vector<uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  // Every bit pattern to f32, f16 and f64: exact.
  auto f = from_fp8_bits<F, float>(all);
  auto h = from_fp8_bits<F, tl::f16>(all);
  auto d = from_fp8_bits<F, double>(all);
  std::vector<float> want(256);
  std::vector<tl::f16> want16(256);
  std::vector<double> want64(256);
  for (int i = 0; i < 256; ++i) {
    want64[static_cast<size_t>(i)] = tl::decode_float(fmt, static_cast<uint32_t>(i));
    want[static_cast<size_t>(i)] = static_cast<float>(want64[static_cast<size_t>(i)]);
    want16[static_cast<size_t>(i)] = tl::f16(want64[static_cast<size_t>(i)]);
  }
  require_equal(f, want);
  require_equal(h, want16);
  require_equal(d, want64);
  // f32 to fp8: random values over and past the range, specials, every value and every midpoint
  // between neighbours (ties go to even), just above and below them.
  auto x = float_cast_inputs();
  auto small = uniform<float>(kN, 65, -1.0f, 1.0f);
  x.insert(x.end(), small.begin(), small.end());
  for (int i = 0; i < 255; ++i) {
    double a = want64[static_cast<size_t>(i)], b = want64[static_cast<size_t>(i + 1)];
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b) || (i & 0x7f) == 0x7f) continue;
    float mid = static_cast<float>((a + b) / 2);
    x.insert(x.end(), {static_cast<float>(a), mid, std::nextafter(mid, -INFINITY), std::nextafter(mid, INFINITY)});
  }
  std::vector<uint8_t> want8(x.size());
  for (size_t i = 0; i < x.size(); ++i) want8[i] = static_cast<uint8_t>(tl::encode_float(fmt, x[i]));
  require_equal(to_fp8_bits<float, F>(x), want8);
  // From f16 and f64 (one rounding, not two) and from integers.
  std::vector<tl::f16> xh(x.size());
  std::vector<double> xd(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    xh[i] = tl::f16(x[i]);
    xd[i] = static_cast<double>(x[i]) * (1 + 1e-12);  // not an f32: rounding it first would differ
  }
  std::vector<uint8_t> wanth(x.size()), wantd(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    wanth[i] = static_cast<uint8_t>(tl::encode_float(fmt, static_cast<float>(xh[i])));
    wantd[i] = static_cast<uint8_t>(tl::encode_float(fmt, xd[i]));
  }
  require_equal(to_fp8_bits<tl::f16, F>(xh), wanth);
  require_equal(to_fp8_bits<double, F>(xd), wantd);
  auto xi = uniform<int32_t>(kN, 66, -70000, 70000);
  std::vector<uint8_t> wanti(xi.size());
  for (size_t i = 0; i < xi.size(); ++i) wanti[i] = static_cast<uint8_t>(tl::encode_float(fmt, xi[i]));
  require_equal(to_fp8_bits<int32_t, F>(xi), wanti);
}
}  // namespace

TEST_CASE("fp8: every bit pattern decodes exactly; f32, f16, f64 and integers encode as the interpreter rounds",
          "[interp]") {
  SECTION("e4m3") { check_fp8<tl::f8e4m3>(tl::kF8E4M3); }
  SECTION("e5m2") { check_fp8<tl::f8e5m2>(tl::kF8E5M2); }
  SECTION("e4m3 to e5m2 and back") {
    std::vector<uint8_t> all(256);
    for (int i = 0; i < 256; ++i) all[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
    auto got = run_binary<uint8_t, uint8_t>(all, all, [](tl::Tile<uint8_t> v, tl::Tile<uint8_t>) {
      return tl::bitcast<uint8_t>(tl::bitcast<tl::f8e4m3>(v).to<tl::f8e5m2>());
    });
    std::vector<uint8_t> want(256);
    for (int i = 0; i < 256; ++i)
      want[static_cast<size_t>(i)] =
          static_cast<uint8_t>(tl::encode_float(tl::kF8E5M2, tl::decode_float(tl::kF8E4M3, static_cast<uint32_t>(i))));
    require_equal(got, want);
  }
}

TEST_CASE("to<T> between integer types wraps and extends as C does", "[interp]") {
  auto i32 = random_bits<int32_t>(kN, 71);
  auto i64 = random_bits<int64_t>(kN, 72);
  auto i8 = random_bits<int8_t>(kN, 73);
  auto u32 = random_bits<uint32_t>(kN, 74);
  auto u8 = random_bits<uint8_t>(kN, 75);
  for (int i = 0; i < kN; i += 5) i32[i] = static_cast<int32_t>(i % 3);  // zeros and ones for -> bool
  auto map = [](const auto& in, auto fn) {
    std::vector<decltype(fn(in[0]))> out;
    for (auto v : in) out.push_back(fn(v));
    return out;
  };
  require_equal(run_cast<int32_t, int8_t>(i32), map(i32, [](int32_t v) { return static_cast<int8_t>(v); }));
  require_equal(run_cast<int64_t, int32_t>(i64), map(i64, [](int64_t v) { return static_cast<int32_t>(v); }));
  require_equal(run_cast<int8_t, uint32_t>(i8), map(i8, [](int8_t v) { return static_cast<uint32_t>(v); }));
  require_equal(run_cast<uint32_t, int64_t>(u32), map(u32, [](uint32_t v) { return static_cast<int64_t>(v); }));
  require_equal(run_cast<uint8_t, int16_t>(u8), map(u8, [](uint8_t v) { return static_cast<int16_t>(v); }));
  require_equal(run_cast<int32_t, bool>(i32), map(i32, [](int32_t v) { return static_cast<uint8_t>(v != 0); }));
  auto b = uniform<bool>(kN, 76, 0, 1);
  require_equal(run_cast<bool, int32_t>(b), map(b, [](uint8_t v) { return static_cast<int32_t>(v); }));
  require_equal(run_cast<bool, float>(b), map(b, [](uint8_t v) { return static_cast<float>(v); }));
}

TEST_CASE("to<T> from integers to floats rounds once to nearest even", "[interp]") {
  auto i32 = random_bits<int32_t>(kN, 81);
  auto u32 = random_bits<uint32_t>(kN, 82);
  auto i64 = random_bits<int64_t>(kN, 83);
  auto i8 = random_bits<int8_t>(kN, 84);
  i32[0] = 16777217;                                     // between two floats: ties to even
  i64[0] = (int64_t{1} << 60) + (int64_t{1} << 36) + 1;  // rounding through double would give 2^60
  i64[1] = (int64_t{1} << 60) + (int64_t{1} << 52) + 1;  // likewise for bf16
  i64[2] = std::numeric_limits<int64_t>::min();
  i64[3] = -((int64_t{1} << 40) + (int64_t{1} << 32) + 7);  // above a bf16 tie: away from zero
  u32[0] = 0xffffffffu;
  u32[1] = (1u << 31) + (1u << 23) + 1;  // through f32 (a tie there too) bf16 would round twice
  i32[1] = (1 << 24) + (1 << 16) + 1;
  auto map = [](const auto& in, auto fn) {
    std::vector<decltype(fn(in[0]))> out;
    for (auto v : in) out.push_back(fn(v));
    return out;
  };
  require_equal(run_cast<int32_t, float>(i32), map(i32, [](int32_t v) { return static_cast<float>(v); }));
  require_equal(run_cast<uint32_t, float>(u32), map(u32, [](uint32_t v) { return static_cast<float>(v); }));
  require_equal(run_cast<int64_t, float>(i64), map(i64, [](int64_t v) { return static_cast<float>(v); }));
  require_equal(run_cast<int64_t, double>(i64), map(i64, [](int64_t v) { return static_cast<double>(v); }));
  require_equal(run_cast<int8_t, tl::f16>(i8), map(i8, [](int8_t v) { return tl::f16(static_cast<float>(v)); }));
  // bf16 from i64: round the exact integer once (via long double, which holds every i64).
  auto bf = run_cast<int64_t, tl::bf16>(i64);
  CHECK(bf[0].bits == tl::bf16(static_cast<float>(i64[0])).bits);
  CHECK(static_cast<double>(static_cast<float>(bf[1])) == std::ldexp(1.0, 60) + std::ldexp(1.0, 53));
  CHECK(static_cast<double>(static_cast<float>(bf[3])) == -(std::ldexp(1.0, 40) + std::ldexp(1.0, 33)));
  // Every 32- and 64-bit integer, rounded once (the exact value, as a double or long double).
  auto long_bf16 = [](long double v) {
    // bf16 keeps 8 significant bits: round the exact value to them, ties to even.
    if (v == 0) return tl::bf16(0.0f);
    int e;
    long double m = std::frexp(v, &e);  // v = m 2^e, 0.5 <= |m| < 1
    long double scaled = std::ldexp(m, 8), r = std::nearbyint(scaled);
    return tl::bf16(static_cast<double>(std::ldexp(r, e - 8)));
  };
  auto check_bf16 = [&](const auto& in) {
    auto got = run_cast<typename std::decay_t<decltype(in)>::value_type, tl::bf16>(in);
    for (size_t i = 0; i < in.size(); ++i) {
      INFO("element " << i << ": " << in[i]);
      REQUIRE(got[i].bits == long_bf16(static_cast<long double>(in[i])).bits);
    }
  };
  check_bf16(i32);
  check_bf16(u32);
  check_bf16(i64);
  check_bf16(random_bits<uint64_t>(kN, 85));
}

TEST_CASE("bitcast reinterprets the bits", "[interp]") {
  auto f = uniform<float>(kN, 91, -1e6, 1e6);
  auto bits = [](auto from, auto to) {
    std::memcpy(&to, &from, sizeof(to));
    return to;
  };
  {
    std::vector<uint32_t> want(kN);
    std::vector<int32_t> wanti(kN);
    for (int i = 0; i < kN; ++i) {
      want[i] = bits(f[i], uint32_t{});
      wanti[i] = bits(f[i], int32_t{});
    }
    require_equal(run_bitcast<float, uint32_t>(f), want);
    require_equal(run_bitcast<float, int32_t>(f), wanti);
    require_equal(run_bitcast<uint32_t, float>(want), f);
  }
  {
    auto d = uniform<double>(kN, 92, -1e100, 1e100);
    std::vector<int64_t> want(kN);
    for (int i = 0; i < kN; ++i) want[i] = bits(d[i], int64_t{});
    require_equal(run_bitcast<double, int64_t>(d), want);
    require_equal(run_bitcast<int64_t, double>(want), d);
  }
  {
    auto h = uniform<tl::f16>(kN, 93, -1000, 1000);
    auto b = uniform<tl::bf16>(kN, 94, -1e20, 1e20);
    std::vector<int16_t> wh(kN);
    std::vector<uint16_t> wb(kN);
    for (int i = 0; i < kN; ++i) {
      wh[i] = static_cast<int16_t>(h[i].bits);
      wb[i] = b[i].bits;
    }
    require_equal(run_bitcast<tl::f16, int16_t>(h), wh);
    require_equal(run_bitcast<tl::bf16, uint16_t>(b), wb);
    require_equal(run_bitcast<int16_t, tl::f16>(wh), h);
    auto u8 = random_bits<uint8_t>(kN, 95);
    std::vector<int8_t> w8(kN);
    for (int i = 0; i < kN; ++i) w8[i] = static_cast<int8_t>(u8[i]);
    require_equal(run_bitcast<uint8_t, int8_t>(u8), w8);
  }
}

// --- Math -----------------------------------------------------------------------------------
namespace {
enum Math { kExp, kExp2, kLog, kLog2, kSqrt, kRsqrt, kSin, kCos, kAbs, kFloor, kCeil, kErf, kFma, kSigmoid, kNumMath };

template <class T>
const tl::Kernel& math_kernel() {
  static const tl::Kernel k = tl::kernel(
      "math", {"a", "b", "c", "out", "n", "OP", "BLOCK"},
      [](tl::Ptr<T> a, tl::Ptr<T> b, tl::Ptr<T> c, tl::Ptr<T> out, tl::Int n, tl::Constexpr OP, tl::Constexpr BLOCK) {
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        auto mask = offs < n;
        auto x = tl::load(a + offs, mask, 1.0);
        tl::Tile<T> r = x;
        switch (static_cast<int>(OP)) {
          case kExp:
            r = tl::exp(x);
            break;
          case kExp2:
            r = tl::exp2(x);
            break;
          case kLog:
            r = tl::log(x);
            break;
          case kLog2:
            r = tl::log2(x);
            break;
          case kSqrt:
            r = tl::sqrt(x);
            break;
          case kRsqrt:
            r = tl::rsqrt(x);
            break;
          case kSin:
            r = tl::sin(x);
            break;
          case kCos:
            r = tl::cos(x);
            break;
          case kAbs:
            r = tl::abs(x);
            break;
          case kFloor:
            r = tl::floor(x);
            break;
          case kCeil:
            r = tl::ceil(x);
            break;
          case kErf:
            r = tl::erf(x);
            break;
          case kFma:
            r = tl::fma(x, tl::load(b + offs, mask), tl::load(c + offs, mask));
            break;
          default:
            r = tl::sigmoid(x);
            break;
        }
        tl::store(out + offs, r, mask);
      });
  return k;
}

// f64 computes in double; f32 and narrower compute in f32, then round to T (as the GPU does).
template <class T>
H<T> math_ref(int op, double x, double y, double z) {
  if constexpr (std::is_same_v<T, double>) {
    switch (op) {
      case kExp:
        return std::exp(x);
      case kExp2:
        return std::exp2(x);
      case kLog:
        return std::log(x);
      case kLog2:
        return std::log2(x);
      case kSqrt:
        return std::sqrt(x);
      case kRsqrt:
        return 1.0 / std::sqrt(x);
      case kSin:
        return std::sin(x);
      case kCos:
        return std::cos(x);
      case kAbs:
        return std::fabs(x);
      case kFloor:
        return std::floor(x);
      case kCeil:
        return std::ceil(x);
      case kErf:
        return std::erf(x);
      case kFma:
        return std::fma(x, y, z);
      default:
        return 1.0 / (1.0 + std::exp(-x));
    }
  } else {
    auto rnd = [](double v) { return as_double(round_as<T>(v)); };
    float v = static_cast<float>(x);
    double r = 0;
    switch (op) {
      case kExp:
        r = std::exp(v);
        break;
      case kExp2:
        r = std::exp2(v);
        break;
      case kLog:
        r = std::log(v);
        break;
      case kLog2:
        r = std::log2(v);
        break;
      case kSqrt:
        r = std::sqrt(v);
        break;
      case kRsqrt:
        r = 1.0f / std::sqrt(v);
        break;
      case kSin:
        r = std::sin(v);
        break;
      case kCos:
        r = std::cos(v);
        break;
      case kAbs:
        r = std::fabs(v);
        break;
      case kFloor:
        r = std::floor(v);
        break;
      case kCeil:
        r = std::ceil(v);
        break;
      case kErf:
        r = std::erf(v);
        break;
      case kFma:
        r = std::fma(v, static_cast<float>(y), static_cast<float>(z));
        break;
      default: {  // 1 / (1 + exp(-x)), each step rounded to T
        double e = rnd(std::exp(-v));
        r = 1.0 / rnd(1.0 + e);
      }
    }
    return round_as<T>(r);
  }
}
}  // namespace

TEMPLATE_TEST_CASE("math functions match the C library on every float dtype", "[interp]", float, double, tl::f16,
                   tl::bf16) {
  using T = TestType;
  for (int op = 0; op < kNumMath; ++op) {
    INFO("op " << op);
    double lo = -10, hi = 10;
    if (op == kLog || op == kLog2 || op == kSqrt || op == kRsqrt) lo = 0.01, hi = 50;
    if (op == kErf) lo = -3, hi = 3;
    auto a = uniform<T>(kN, 100 + op, lo, hi);
    auto b = uniform<T>(kN, 200 + op, -10, 10);
    auto c = uniform<T>(kN, 300 + op, -10, 10);
    if (op == kFloor || op == kCeil)
      for (int i = 0; i < kN; i += 7) a[i] = T(static_cast<float>(i % 21 - 10));  // integers stay put
    auto out = poison<T>({kN});
    math_kernel<T>()[blocks(kN)](tensor<T>(a), tensor<T>(b), tensor<T>(c), out, kN, op, kBlock);
    std::vector<H<T>> want(kN);
    for (int i = 0; i < kN; ++i) want[i] = math_ref<T>(op, as_double(a[i]), as_double(b[i]), as_double(c[i]));
    if (!on_gpu()) require_equal(host<T>(out), want);  // the GPU's libdevice differs in the last bits
    // And close to the exact value, so the reference itself is sane.
    std::vector<double> exact(kN);
    for (int i = 0; i < kN; ++i)
      exact[i] = as_double(math_ref<double>(op, as_double(a[i]), as_double(b[i]), as_double(c[i])));
    double tol = std::is_same_v<T, double>    ? 1e-15
                 : std::is_same_v<T, float>   ? 1e-6
                 : std::is_same_v<T, tl::f16> ? 2e-3
                                              : 1.6e-2;
    require_close(host<T>(out), exact, op == kFma ? 20 * tol : tol, 2 * tol);
  }
}

// --- fp fusion ------------------------------------------------------------------------------
template <class T>
const tl::Kernel& muladd_kernel() {
  static const tl::Kernel k = tl::kernel(
      "muladd", {"a", "b", "c", "out", "n", "BLOCK"},
      [](tl::Ptr<T> a, tl::Ptr<T> b, tl::Ptr<T> c, tl::Ptr<T> out, tl::Int n, tl::Constexpr BLOCK) {
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        auto mask = offs < n;
        tl::store(out + offs, tl::load(a + offs, mask) * tl::load(b + offs, mask) + tl::load(c + offs, mask), mask);
      });
  return k;
}

TEMPLATE_TEST_CASE(
    "a * b + c is rounded once on the GPU with enable_fp_fusion, twice without it and in the interpreter", "[interp]",
    float, double) {
  using T = TestType;
  auto a = uniform<T>(kN, 121, -4, 4), b = uniform<T>(kN, 122, -4, 4), c = uniform<T>(kN, 123, -4, 4);
  std::vector<T> fused(kN), apart(kN);
  int differ = 0;
  for (int i = 0; i < kN; ++i) {
    fused[i] = std::fma(a[i], b[i], c[i]);
    volatile T product = a[i] * b[i];  // rounded here, whatever the host compiler contracts
    apart[i] = product + c[i];
    differ += !same(fused[i], apart[i]);
  }
  REQUIRE(differ > kN / 20);  // the inputs tell one rounding from two
  for (bool fusion : {true, false}) {
    INFO("enable_fp_fusion " << fusion);
    auto out = poison<T>({kN});
    muladd_kernel<T>()[blocks(kN)].options({.enable_fp_fusion = fusion})(tensor<T>(a), tensor<T>(b), tensor<T>(c), out,
                                                                         kN, kBlock);
    require_equal(host<T>(out), on_gpu() && fusion ? fused : apart);
  }
}

// --- where, cdiv, zeros/full ----------------------------------------------------------------
// Run only by ctest (unit.fp-fusion-env.*), each in a process of its own, because the default is
// read once per process: TILEDSL_TEST_EXPECT_FP_FUSION says what TILEDSL_DEFAULT_FP_FUSION, set
// or unset by the test's environment, must make the default.
TEST_CASE("TILEDSL_DEFAULT_FP_FUSION sets the default of enable_fp_fusion", "[.fp-fusion-env]") {
  const char* expect = std::getenv("TILEDSL_TEST_EXPECT_FP_FUSION");
  REQUIRE(expect != nullptr);
  const bool on = std::string_view(expect) == "on";
  REQUIRE((on || std::string_view(expect) == "off"));
  CHECK(tl::default_fp_fusion() == on);
  CHECK(tl::LaunchOptions{}.enable_fp_fusion == on);
}

TEST_CASE("where selects elementwise with promotion and broadcasting", "[interp]") {
  auto c = uniform<bool>(kN, 111, 0, 1);
  auto a = uniform<int32_t>(kN, 112, -1000, 1000);
  auto x = uniform<float>(kN, 113, -5, 5);
  auto got = run_binary<int32_t, bool>(a, c, [](auto v, auto m) { return tl::where(m, v, 0.5f); });
  static_assert(std::is_same_v<decltype(got)::value_type, float>);
  auto gotf = run_binary<float, bool>(x, c, [](auto v, auto m) { return tl::where(m, -v, v * 2); });
  auto goti = run_binary<int32_t, bool>(a, c, [](auto v, auto m) { return tl::where(!m, 7, v); });
  std::vector<float> want(kN), wantf(kN);
  std::vector<int32_t> wanti(kN);
  for (int i = 0; i < kN; ++i) {
    want[i] = c[i] ? static_cast<float>(a[i]) : 0.5f;
    wantf[i] = c[i] ? -x[i] : x[i] * 2;
    wanti[i] = !c[i] ? 7 : a[i];
  }
  require_equal(got, want);
  require_equal(gotf, wantf);
  require_equal(goti, wanti);
}

TEST_CASE("maximum and minimum with literals; cdiv on tiles and integers", "[interp]") {
  static_assert(tl::cdiv(1000, 256) == 4 && tl::cdiv(1024, 256) == 4 && tl::cdiv(1, 256) == 1);
  auto a = uniform<int32_t>(kN, 121, 0, 100000);
  auto f = uniform<float>(kN, 122, -3, 3);
  auto got = run_binary<int32_t, int32_t>(a, a, [](auto x, auto) { return tl::cdiv(x, 7); });
  auto got64 =
      run_binary<int32_t, int32_t>(a, a, [](auto x, auto) { return tl::cdiv(x.template to<int64_t>(), x + 1); });
  auto relu = run_binary<float, float>(f, f, [](auto x, auto) { return tl::maximum(x, 0.0f); });
  auto clip = run_binary<float, float>(f, f, [](auto x, auto) { return tl::minimum(1, tl::maximum(-1, x)); });
  std::vector<int32_t> want(kN);
  std::vector<int64_t> want64(kN);
  std::vector<float> wrelu(kN), wclip(kN);
  for (int i = 0; i < kN; ++i) {
    want[i] = (a[i] + 6) / 7;
    want64[i] = (int64_t{a[i]} + a[i]) / (int64_t{a[i]} + 1);
    wrelu[i] = std::max(f[i], 0.0f);
    wclip[i] = std::min(1.0f, std::max(-1.0f, f[i]));
  }
  require_equal(got, want);
  require_equal(got64, want64);
  require_equal(relu, wrelu);
  require_equal(clip, wclip);
}

TEST_CASE("zeros, full, zeros_like and full_like fill tiles", "[interp]") {
  auto k = tl::kernel(
      "fill", {"out", "out16", "outi"}, [](tl::Ptr<float> out, tl::Ptr<tl::f16> out16, tl::Ptr<int8_t> outi) {
        auto r = tl::arange(0, 4)(tl::_, tl::newaxis);
        auto c = tl::arange(0, 8)(tl::newaxis, tl::_);
        auto idx = r * 8 + c;
        auto z = tl::zeros<float>({4, 8});
        auto f = tl::full<float>({4, 8}, 2.5);
        tl::store(out + idx, z + f + idx);  // 2.5 + idx
        tl::store(out + 32 + idx, tl::full_like(f, -1.25) * (idx + 1));
        tl::store(out16 + idx, tl::full<tl::f16>({4, 8}, 0.1));
        tl::store(outi + idx, tl::zeros_like(tl::full<int8_t>({4, 8}, 3)) + tl::full<int8_t>({1, 8}, -7));
      });
  auto out = poison<float>({64});
  auto out16 = poison<tl::f16>({32});
  auto outi = poison<int8_t>({32});
  k[tl::grid(1)](out, out16, outi);
  std::vector<float> want(64);
  for (int i = 0; i < 32; ++i) {
    want[i] = 2.5f + i;
    want[32 + i] = -1.25f * (i + 1);
  }
  require_equal(host<float>(out), want);
  require_equal(host<tl::f16>(out16), std::vector<tl::f16>(32, tl::f16(0.1)));
  require_equal(host<int8_t>(outi), std::vector<int8_t>(32, -7));
}

// --- Shapes: broadcasting, newaxis, expand_dims, reshape, trans -------------------------------
TEST_CASE("2-D tiles with partial edges: outer sums through x(_, newaxis) and masks", "[interp]") {
  // out[i][j] = a[i] * 10 + b[j] over a 37 x 53 matrix, in 16 x 32 blocks.
  auto k = tl::kernel("outer", {"a", "b", "out", "M", "N", "BM", "BN"},
                      [](tl::Ptr<float> a, tl::Ptr<float> b, tl::Ptr<float> out, tl::Int M, tl::Int N, tl::Constexpr BM,
                         tl::Constexpr BN) {
                        auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
                        auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
                        auto x = tl::load(a + rm, rm < M);
                        auto y = tl::load(b + rn, rn < N);
                        auto mask = (rm(tl::_, tl::newaxis) < M) & (rn(tl::newaxis, tl::_) < N);
                        auto v = x(tl::_, tl::newaxis) * 10 + tl::expand_dims(y, 0);
                        tl::store(out + rm(tl::_, tl::newaxis) * N + rn(tl::newaxis, tl::_), v, mask);
                      });
  const int M = 37, N = 53;
  auto a = uniform<float>(M, 131, -1, 1);
  auto b = uniform<float>(N, 132, -1, 1);
  auto out = poison<float>({M, N});
  k[tl::grid(tl::cdiv(M, 16), tl::cdiv(N, 32))](tensor<float>(a), tensor<float>(b), out, M, N, 16, 32);
  std::vector<float> want(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) want[i * N + j] = a[i] * 10 + b[j];
  require_equal(host<float>(out), want);
}

TEST_CASE("broadcast_to, expand_dims, reshape, trans and permute move elements", "[interp]") {
  auto k = tl::kernel("shapes", {"x", "out"}, [](tl::Ptr<int32_t> x, tl::Ptr<int32_t> out) {
    auto i = tl::arange(0, 128);
    auto v = tl::load(x + i);
    // [128] -> [8, 16] -> trans [16, 8] -> flat
    auto t = tl::trans(tl::reshape(v, {8, 16}));
    tl::store(out + i, tl::reshape(t, {128}));
    // [128] -> [2, 4, 16] -> permute (2, 0, 1) -> [16, 2, 4] -> flat
    auto p = tl::permute(tl::reshape(v, {2, 4, 16}), {2, 0, 1});
    tl::store(out + 128 + i, tl::reshape(p, {128}));
    // [16] -> expand_dims(1) [16, 1] -> broadcast_to [16, 8] -> flat
    auto col = tl::expand_dims(tl::load(x + tl::arange(0, 16)), 1);
    tl::store(out + 256 + i, tl::reshape(tl::broadcast_to(col, {16, 8}), {128}));
    // trans of a 2-D tile with the explicit permutation, stored through 2-D pointers
    auto r = tl::arange(0, 8), c = tl::arange(0, 16);
    auto m = tl::load(x + r(tl::_, tl::newaxis) * 16 + c(tl::newaxis, tl::_));  // [8, 16]
    tl::store(out + 384 + c(tl::_, tl::newaxis) * 8 + r(tl::newaxis, tl::_), tl::trans(m, {1, 0}));
    // a scalar broadcast into a tile
    tl::store(out + 512 + i, tl::broadcast_to(tl::load(x + 5), {128}));
  });
  auto x = uniform<int32_t>(128, 141, -100000, 100000);
  auto out = poison<int32_t>({640});
  k[tl::grid(1)](tensor<int32_t>(x), out);
  std::vector<int32_t> want(640);
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 8; ++b) want[a * 8 + b] = x[b * 16 + a];
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 4; ++c) want[128 + (a * 2 + b) * 4 + c] = x[(b * 4 + c) * 16 + a];
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 8; ++b) want[256 + a * 8 + b] = x[a];
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 8; ++b) want[384 + a * 8 + b] = x[b * 16 + a];
  for (int j = 0; j < 128; ++j) want[512 + j] = x[5];
  require_equal(host<int32_t>(out), want);
}

// --- Loads and stores -----------------------------------------------------------------------
TEMPLATE_TEST_CASE("load with mask and other, store with mask", "[interp]", bool, int8_t, int32_t, int64_t, uint16_t,
                   uint32_t, uint64_t, float, double, tl::f16, tl::bf16) {
  using T = TestType;
  // Every third element is masked off (not just a tail): loads give `other`, stores skip it.
  auto k = tl::kernel("masked", {"x", "out", "copy", "n", "BLOCK"},
                      [](tl::Ptr<T> x, tl::Ptr<T> out, tl::Ptr<T> copy, tl::Int n, tl::Constexpr BLOCK) {
                        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                        auto inside = offs < n;
                        auto keep = inside & (offs % 3 != 0);
                        auto v = tl::load(x + offs, keep, 1);
                        tl::store(out + offs, v, inside);  // masked-off elements read as `other`
                        tl::store(copy + offs, tl::load(x + offs, inside), keep);
                      });
  auto x = uniform<T>(kN, 151, -100, 100);
  auto out = poison<T>({kN});
  auto copy = poison<T>({kN});
  auto before = host<T>(copy);
  k[blocks(kN)](tensor<T>(x), out, copy, kN, kBlock);
  std::vector<H<T>> want(kN), wcopy(kN);
  for (int i = 0; i < kN; ++i) {
    want[i] = i % 3 != 0 ? x[i] : static_cast<H<T>>(T(1.0f));
    wcopy[i] = i % 3 != 0 ? x[i] : before[i];
  }
  require_equal(host<T>(out), want);
  require_equal(host<T>(copy), wcopy);
}

// A tile whose addresses run down its columns (a column-major matrix, as attention's K^T):
// loads and stores go in vectors along dimension 0 where the leading dimension allows (80, a
// multiple of 8; masked rows in whole runs of 8) and element by element where it does not (77).
// Transposed through registers into a row-major copy, and stored back column-major.
TEMPLATE_TEST_CASE("column-major tiles load and store along their columns", "[interp]", float, tl::bf16) {
  using T = TestType;
  auto k = tl::kernel("column_major", {"x", "out", "back", "rows", "cols", "BR", "BC"},
                      [](tl::Ptr<T> x, tl::Ptr<T> out, tl::Ptr<T> back, tl::Int rows, tl::Int cols, tl::Constexpr BR,
                         tl::Constexpr BC) {
                        auto r = tl::program_id(0) * BR + tl::arange(0, BR);
                        auto c = tl::program_id(1) * BC + tl::arange(0, BC);
                        auto mask = (r(tl::_, tl::newaxis) < rows) & (c(tl::newaxis, tl::_) < cols);
                        auto col_major = r(tl::_, tl::newaxis) + c(tl::newaxis, tl::_) * rows;
                        auto t = tl::load(x + col_major, mask, 0);
                        tl::store(out + r(tl::_, tl::newaxis) * cols + c(tl::newaxis, tl::_), t, mask);
                        tl::store(back + col_major, t + t, mask);
                      });
  for (int rows : {80, 77}) {
    const int cols = 45;
    INFO(rows << " rows");
    auto x = uniform<T>(static_cast<size_t>(rows * cols), 161 + rows, -50, 50);
    auto out = poison<T>({rows * cols}), back = poison<T>({rows * cols});
    k[tl::grid(tl::cdiv(rows, 64), tl::cdiv(cols, 16))].options({.num_warps = 4})(tensor<T>(x), out, back, rows, cols,
                                                                                  64, 16);
    std::vector<H<T>> want(x.size()), twice(x.size());
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) {
        want[static_cast<size_t>(i * cols + j)] = x[static_cast<size_t>(i + j * rows)];
        twice[static_cast<size_t>(i + j * rows)] =
            static_cast<H<T>>(T(static_cast<float>(x[static_cast<size_t>(i + j * rows)]) * 2.0f));
      }
    require_equal(host<T>(out), want);
    require_equal(host<T>(back), twice);
#ifdef TILEDSL_ENABLE_CODEGEN
    if (rows == 80) {  // 16-byte accesses down the columns
      tl::CompiledKernel c = k.compile(tl::LaunchOptions{.num_warps = 4}, tensor<T>(x), out, back, rows, cols, 64, 16);
      CHECK(c.ptx.find("ld.global.v4") != std::string::npos);
      CHECK(c.ptx.find("st.global.v4") != std::string::npos);
    }
#endif
  }
}

TEST_CASE("program_id and num_programs on a 3-D grid", "[interp]") {
  auto k = tl::kernel("ids", {"out"}, [](tl::Ptr<int32_t> out) {
    auto x = tl::program_id(0), y = tl::program_id(1), z = tl::program_id(2);
    auto nx = tl::num_programs(0), ny = tl::num_programs(1), nz = tl::num_programs(2);
    auto flat = (z * ny + y) * nx + x;
    auto lane = tl::arange(0, 4);
    auto v = tl::where(lane == 0, x, tl::where(lane == 1, y, tl::where(lane == 2, z, nx * 100 + ny * 10 + nz)));
    tl::store(out + flat * 4 + lane, v);
  });
  auto out = poison<int32_t>({3 * 5 * 2 * 4});
  k[tl::grid(3, 5, 2)](out);
  std::vector<int32_t> want;
  for (int z = 0; z < 2; ++z)
    for (int y = 0; y < 5; ++y)
      for (int x = 0; x < 3; ++x) want.insert(want.end(), {x, y, z, 352});
  require_equal(host<int32_t>(out), want);
}
