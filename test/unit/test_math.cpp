// The libdevice functions beyond the basic ones (tl::tanh, ..., tl::pow, tl::atan2, tl::hypot),
// the float tests (isnan, isinf, signbit), clamp and umulhi, on every float dtype, through a
// masked kernel: the interpreter exactly as it computes (f32 for f32 and narrower, f64 for f64),
// and, on both backends, within a few ulps of the exact value in double.
#include <cstring>
#include <limits>

#include "ops_util.h"

using namespace opt;

namespace {
constexpr int kBlock = 256;
tl::Grid blocks(int n) { return tl::grid(tl::cdiv(n, kBlock)); }

// One-argument functions, their domains, and the exact reference in double.
struct Fn {
  const char* name;
  double lo, hi;
  double (*exact)(double);
};
double erfinv_exact(double y) {  // Newton on erf from 0: enough steps for double precision
  double x = 0;
  for (int i = 0; i < 100; ++i) {
    const double step = (std::erf(x) - y) / (2.0 / std::sqrt(M_PI) * std::exp(-x * x));
    x -= step;
    if (std::fabs(step) < 1e-17) break;
  }
  return x;
}
const Fn kUnary[] = {
    {"tanh", -6, 6, [](double x) { return std::tanh(x); }},
    {"log1p", -0.9, 20, [](double x) { return std::log1p(x); }},
    {"expm1", -5, 5, [](double x) { return std::expm1(x); }},
    {"tan", -1.4, 1.4, [](double x) { return std::tan(x); }},
    {"asin", -0.99, 0.99, [](double x) { return std::asin(x); }},
    {"acos", -0.99, 0.99, [](double x) { return std::acos(x); }},
    {"atan", -20, 20, [](double x) { return std::atan(x); }},
    {"sinh", -5, 5, [](double x) { return std::sinh(x); }},
    {"cosh", -5, 5, [](double x) { return std::cosh(x); }},
    {"asinh", -20, 20, [](double x) { return std::asinh(x); }},
    {"acosh", 1.01, 30, [](double x) { return std::acosh(x); }},
    {"atanh", -0.95, 0.95, [](double x) { return std::atanh(x); }},
    {"erfinv", -0.99, 0.99, erfinv_exact},
    {"cbrt", -50, 50, [](double x) { return std::cbrt(x); }},
    {"log10", 0.01, 1000, [](double x) { return std::log10(x); }},
    {"exp10", -3, 3, [](double x) { return std::pow(10.0, x); }},
    {"trunc", -20, 20, [](double x) { return std::trunc(x); }},
    {"round", -20, 20, [](double x) { return std::round(x); }},
};
constexpr int kUnaryCount = static_cast<int>(std::size(kUnary));
const char* const kBinary[] = {"pow", "atan2", "hypot"};

template <class T>
tl::Tile<T> apply(int op, const tl::Tile<T>& x, const tl::Tile<T>& y) {
  switch (op) {
    case 0:
      return tl::tanh(x);
    case 1:
      return tl::log1p(x);
    case 2:
      return tl::expm1(x);
    case 3:
      return tl::tan(x);
    case 4:
      return tl::asin(x);
    case 5:
      return tl::acos(x);
    case 6:
      return tl::atan(x);
    case 7:
      return tl::sinh(x);
    case 8:
      return tl::cosh(x);
    case 9:
      return tl::asinh(x);
    case 10:
      return tl::acosh(x);
    case 11:
      return tl::atanh(x);
    case 12:
      return tl::erfinv(x);
    case 13:
      return tl::cbrt(x);
    case 14:
      return tl::log10(x);
    case 15:
      return tl::exp10(x);
    case 16:
      return tl::trunc(x);
    case 17:
      return tl::round(x);
    case 18:
      return tl::pow(x, y);
    case 19:
      return tl::atan2(x, y);
    default:
      return tl::hypot(x, y);
  }
}

template <class T>
const tl::Kernel& fn_kernel() {
  static const tl::Kernel k = tl::kernel(
      "more_math", {"a", "b", "out", "n", "OP", "BLOCK"},
      [](tl::Ptr<T> a, tl::Ptr<T> b, tl::Ptr<T> out, tl::Int n, tl::Constexpr OP, tl::Constexpr BLOCK) {
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        auto mask = offs < n;
        tl::store(out + offs,
                  apply<T>(static_cast<int>(OP), tl::load(a + offs, mask, 0.5), tl::load(b + offs, mask, 0.5)), mask);
      });
  return k;
}

// The interpreter's value: the C library in the precision the dtype computes in, rounded to it
// (erfinv aside).
template <class T>
H<T> computed(int op, double x, double y) {
  auto f = [&](auto v, auto w) -> double {
    using F = decltype(v);
    if (op < kUnaryCount) {
      const std::string n = kUnary[op].name;
      if (n == "erfinv") return kUnary[op].exact(v);  // not compared exactly (the test says why)
      if (n == "exp10") return std::pow(F(10), v);
      if (n == "tanh") return std::tanh(v);
      if (n == "log1p") return std::log1p(v);
      if (n == "expm1") return std::expm1(v);
      if (n == "tan") return std::tan(v);
      if (n == "asin") return std::asin(v);
      if (n == "acos") return std::acos(v);
      if (n == "atan") return std::atan(v);
      if (n == "sinh") return std::sinh(v);
      if (n == "cosh") return std::cosh(v);
      if (n == "asinh") return std::asinh(v);
      if (n == "acosh") return std::acosh(v);
      if (n == "atanh") return std::atanh(v);
      if (n == "cbrt") return std::cbrt(v);
      if (n == "log10") return std::log10(v);
      if (n == "trunc") return std::trunc(v);
      return std::round(v);
    }
    if (op == kUnaryCount) return std::pow(v, w);
    if (op == kUnaryCount + 1) return std::atan2(v, w);
    return std::hypot(v, w);
  };
  if constexpr (std::is_same_v<T, double>)
    return f(x, y);
  else
    return round_as<T>(f(static_cast<float>(x), static_cast<float>(y)));
}

double exact(int op, double x, double y) {
  if (op < kUnaryCount) return kUnary[op].exact(x);
  if (op == kUnaryCount) return std::pow(x, y);
  if (op == kUnaryCount + 1) return std::atan2(x, y);
  return std::hypot(x, y);
}
}  // namespace

TEMPLATE_TEST_CASE("libdevice's other functions match the exact values on every float dtype", "[interp]", float, double,
                   tl::f16, tl::bf16) {
  using T = TestType;
  const int n = 3001;  // not a multiple of the block: the tail is masked
  for (int op = 0; op < kUnaryCount + 3; ++op) {
    const char* name = op < kUnaryCount ? kUnary[op].name : kBinary[op - kUnaryCount];
    INFO(name);
    double lo = op < kUnaryCount ? kUnary[op].lo : 0.1, hi = op < kUnaryCount ? kUnary[op].hi : 4;
    if (op == kUnaryCount + 1) lo = -5, hi = 5;  // atan2 over every quadrant
    auto a = uniform<T>(n, 1700 + op, lo, hi), b = uniform<T>(n, 1800 + op, op == kUnaryCount ? -3 : lo, hi);
    if (op == kUnaryCount + 1)
      for (int i = 0; i < n; i += 11) b[i] = T(-static_cast<float>(as_double(b[i])));
    auto out = poison<T>({n});
    fn_kernel<T>()[blocks(n)](tensor<T>(a), tensor<T>(b), out, n, op, kBlock);
    std::vector<H<T>> want(n);
    std::vector<double> exact_values(n);
    for (int i = 0; i < n; ++i) {
      want[i] = computed<T>(op, as_double(a[i]), as_double(b[i]));
      exact_values[i] = exact(op, as_double(a[i]), as_double(b[i]));
    }
    // The interpreter is the C library exactly (but erfinv, which the C library lacks: its own
    // Newton steps, held to the tolerance below); libdevice differs in the last bits.
    if (!on_gpu() && std::string(name) != "erfinv") require_equal(host<T>(out), want);
    // A few ulps of the dtype from the exact value (f16 and bf16 round an f32 result once).
    const double tol = std::is_same_v<T, double>    ? 1e-13
                       : std::is_same_v<T, float>   ? 2e-6
                       : std::is_same_v<T, tl::f16> ? 2e-3
                                                    : 1.6e-2;
    require_close(host<T>(out), exact_values, tol, tol);
  }
}

TEST_CASE("isnan, isinf, signbit on special values; clamp; umulhi against 64-bit products", "[interp]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> xs = {0.0f, -0.0f, 1.5f, -2.0f, inf, -inf, nan, -nan, 3e38f, -1e-40f, 7.0f};
  auto r = uniform<float>(200, 1900, -10, 10);
  xs.insert(xs.end(), r.begin(), r.end());
  const int n = static_cast<int>(xs.size());
  auto tests = tl::kernel("float_tests", {"x", "out", "n", "BLOCK"},
                          [](tl::Ptr<float> x, tl::Ptr<int32_t> out, tl::Int n, tl::Constexpr BLOCK) {
                            auto offs = tl::arange(0, BLOCK);
                            auto mask = offs < n;
                            auto v = tl::load(x + offs, mask, 0.0f);
                            auto bits = tl::isnan(v).to<int32_t>() + tl::isinf(v).to<int32_t>() * 2 +
                                        tl::signbit(v).to<int32_t>() * 4;
                            tl::store(out + offs, bits, mask);
                            auto c = tl::clamp(v, -3.0f, 5.0f);
                            tl::store(x + offs, c, mask & !tl::isnan(v));
                          });
  auto x = tensor<float>(xs);
  auto out = tl::Tensor::zeros({n}, tl::DType::i32);
  tests[tl::grid(1)](x, out, n, 256);
  auto bits = out.to_host<int32_t>();
  auto clamped = x.to_host<float>();
  for (int i = 0; i < n; ++i) {
    INFO("x = " << xs[i]);
    const int want = int{std::isnan(xs[i])} + 2 * int{std::isinf(xs[i])} + 4 * int{std::signbit(xs[i])};
    CHECK(bits[i] == want);
    if (!std::isnan(xs[i])) CHECK(clamped[i] == std::min(std::max(xs[i], -3.0f), 5.0f));
  }
  auto hi =
      tl::kernel("umulhi", {"a", "b", "out", "n", "BLOCK"},
                 [](tl::Ptr<int32_t> a, tl::Ptr<int32_t> b, tl::Ptr<int32_t> out, tl::Int n, tl::Constexpr BLOCK) {
                   auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                   auto mask = offs < n;
                   tl::store(out + offs, tl::umulhi(tl::load(a + offs, mask), tl::load(b + offs, mask)), mask);
                 });
  const int m = 1001;
  auto a = uniform<int32_t>(m, 1901, INT32_MIN, INT32_MAX), b = uniform<int32_t>(m, 1902, INT32_MIN, INT32_MAX);
  auto got = tl::Tensor::zeros({m}, tl::DType::i32);
  hi[blocks(m)](tensor<int32_t>(a), tensor<int32_t>(b), got, m, kBlock);
  auto g = got.to_host<int32_t>();
  for (int i = 0; i < m; ++i) {
    const uint64_t p = uint64_t{static_cast<uint32_t>(a[i])} * static_cast<uint32_t>(b[i]);
    REQUIRE(g[i] == static_cast<int32_t>(static_cast<uint32_t>(p >> 32)));
  }
}

// Two compile errors a Triton user met (issue 18): where() with two literals, and a tensor from a
// std::vector<bool>. Both work now: a tile of the mask's shape, one byte per bool.
TEST_CASE("where with two literals, on a mask loaded from a tensor made of std::vector<bool>", "[interp]") {
  std::vector<bool> flags(777);
  for (size_t i = 0; i < flags.size(); ++i) flags[i] = (i * 7919) % 5 < 2;
  auto m = tl::Tensor::from_host(flags);
  CHECK(m.dtype() == tl::DType::i1);
  CHECK(m.to_host<bool>() == flags);
  auto k = tl::kernel("where_literals", {"m", "out", "iout", "n", "BLOCK"},
                      [](tl::Ptr<bool> m, tl::Ptr<float> out, tl::Ptr<int32_t> iout, tl::Int n, tl::Constexpr BLOCK) {
                        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                        auto mask = offs < n;
                        auto flag = tl::load(m + offs, mask, false);
                        tl::store(out + offs, tl::where(flag, 0.0f, -1e6f), mask);
                        tl::store(iout + offs, tl::where(flag, 3, -4), mask);
                      });
  auto out = tl::Tensor::zeros({777}), iout = tl::Tensor::zeros({777}, tl::DType::i32);
  k[blocks(777)](m, out, iout, 777, kBlock);
  auto got = out.to_host<float>();
  auto igot = iout.to_host<int32_t>();
  for (size_t i = 0; i < flags.size(); ++i) {
    REQUIRE(got[i] == (flags[i] ? 0.0f : -1e6f));
    REQUIRE(igot[i] == (flags[i] ? 3 : -4));
  }
}

// keep_dims on reductions, xor_sum, and propagate_nan on maximum/minimum (issue 18).
TEST_CASE("reductions with keep_dims, xor_sum, and maximum/minimum propagating NaNs", "[interp]") {
  const int rows = 13, cols = 64;
  auto xs = uniform<float>(rows * cols, 1950, -5, 5);
  auto is = uniform<int32_t>(rows * cols, 1951, INT32_MIN, INT32_MAX);
  auto k = tl::kernel("keep", {"x", "i", "sums", "maxes", "mins", "xors", "ROWS", "COLS"},
                      [](tl::Ptr<float> x, tl::Ptr<int32_t> i, tl::Ptr<float> sums, tl::Ptr<float> maxes,
                         tl::Ptr<float> mins, tl::Ptr<int32_t> xors, tl::Constexpr ROWS, tl::Constexpr COLS) {
                        auto r = tl::arange(0, 16), c = tl::arange(0, COLS);
                        auto rmask = r(tl::_, tl::newaxis) < ROWS;
                        auto at = r(tl::_, tl::newaxis) * COLS + c(tl::newaxis, tl::_);
                        auto v = tl::load(x + at, rmask, 0.0f);
                        auto s = tl::sum(v, 1, true), mx = tl::max(v, 1, true), mn = tl::min(v, 1, true);
                        static_assert(std::is_same_v<decltype(s), tl::Tile<float>>);
                        auto r1 = tl::expand_dims(r, 1);
                        tl::store(sums + r1, s, r1 < ROWS);
                        tl::store(maxes + r1, mx, r1 < ROWS);
                        tl::store(mins + r1, mn, r1 < ROWS);
                        auto iv = tl::load(i + at, rmask, 0);
                        tl::store(xors + r, tl::xor_sum(iv, 1), r < ROWS);
                      });
  auto sums = tl::Tensor::zeros({rows}), maxes = tl::Tensor::zeros({rows}), mins = tl::Tensor::zeros({rows});
  auto xors = tl::Tensor::zeros({rows}, tl::DType::i32);
  k[tl::grid(1)](tensor<float>(xs), tensor<int32_t>(is), sums, maxes, mins, xors, rows, cols);
  auto s = sums.to_host<float>(), mx = maxes.to_host<float>(), mn = mins.to_host<float>();
  auto xr = xors.to_host<int32_t>();
  for (int r = 0; r < rows; ++r) {
    double want = 0;
    float hi = -INFINITY, lo = INFINITY;
    int32_t x = 0;
    for (int c = 0; c < cols; ++c) {
      want += xs[r * cols + c];
      hi = std::max(hi, xs[r * cols + c]);
      lo = std::min(lo, xs[r * cols + c]);
      x ^= is[r * cols + c];
    }
    CHECK(std::fabs(s[r] - want) <= 1e-4);
    CHECK(mx[r] == hi);
    CHECK(mn[r] == lo);
    CHECK(xr[r] == x);
  }

  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {1, nan, 3, nan, -0.5f, 7}, b = {2, 5, nan, nan, -1, 7};
  auto p = tl::kernel("nans", {"a", "b", "out", "PROPAGATE"},
                      [](tl::Ptr<float> a, tl::Ptr<float> b, tl::Ptr<float> out, tl::Constexpr PROPAGATE) {
                        auto offs = tl::arange(0, 8);
                        auto m = offs < 6;
                        auto x = tl::load(a + offs, m, 0.0f), y = tl::load(b + offs, m, 0.0f);
                        auto how = PROPAGATE ? tl::PropagateNan::all : tl::PropagateNan::none;
                        tl::store(out + offs, tl::maximum(x, y, how), m);
                        tl::store(out + 8 + offs, tl::minimum(x, y, how), m);
                        tl::store(out + 16 + offs, tl::clamp(x, tl::full<float>({8}, -0.75), y, how), m);
                      });
  for (int propagate : {0, 1}) {
    auto out = tl::Tensor::zeros({24});
    p[tl::grid(1)](tensor<float>(a), tensor<float>(b), out, propagate);
    auto o = out.to_host<float>();
    for (size_t j = 0; j < a.size(); ++j) {
      INFO("propagate " << propagate << ", element " << j);
      const bool any_nan = std::isnan(a[j]) || std::isnan(b[j]);
      if (propagate && any_nan) {
        CHECK(std::isnan(o[j]));
        CHECK(std::isnan(o[8 + j]));
      } else {
        CHECK((std::isnan(o[j]) ? std::isnan(std::fmax(a[j], b[j])) : o[j] == std::fmax(a[j], b[j])));
        CHECK((std::isnan(o[8 + j]) ? std::isnan(std::fmin(a[j], b[j])) : o[8 + j] == std::fmin(a[j], b[j])));
      }
      // clamp(x, -0.75, y): a NaN x is NaN with PropagateNan::all; NaN bounds are ignored.
      const float clamped = std::fmin(std::fmax(a[j], -0.75f), b[j]);
      if (propagate && std::isnan(a[j]))
        CHECK(std::isnan(o[16 + j]));
      else
        CHECK((std::isnan(o[16 + j]) ? std::isnan(clamped) : o[16 + j] == clamped));
    }
  }
}

// rand4x and randn4x (issue 18): the uniforms are the documented transform of randint4x's four
// outputs, bit for bit; the normals Box-Muller on pairs of them, within a few f32 ulps of the
// host's.
TEST_CASE("rand4x and randn4x from randint4x's outputs", "[interp]") {
  const int n = 1000;
  auto k = tl::kernel("rand4", {"ints", "unis", "norms", "seed", "n", "BLOCK"},
                      [](tl::Ptr<uint32_t> ints, tl::Ptr<float> unis, tl::Ptr<float> norms, tl::Int seed, tl::Int n,
                         tl::Constexpr BLOCK) {
                        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                        auto mask = offs < n;
                        auto r = tl::randint4x(seed, offs);
                        auto u = tl::rand4x(seed, offs);
                        auto z = tl::randn4x(seed, offs);
                        for (int q = 0; q < 4; ++q) {
                          tl::store(ints + q * n + offs, r[static_cast<size_t>(q)], mask);
                          tl::store(unis + q * n + offs, u[static_cast<size_t>(q)], mask);
                          tl::store(norms + q * n + offs, z[static_cast<size_t>(q)], mask);
                        }
                        tl::store(norms + 4 * n + offs, tl::randn(seed, offs), mask);
                        tl::store(unis + 4 * n + offs, tl::rand(seed, offs), mask);
                      });
  auto ints = tl::Tensor::zeros({4 * n}, tl::DType::u32), unis = tl::Tensor::zeros({5 * n}),
       norms = tl::Tensor::zeros({5 * n});
  k[blocks(n)](ints, unis, norms, 20261204, n, kBlock);
  auto iv = ints.to_host<uint32_t>();
  auto uv = unis.to_host<float>(), nv = norms.to_host<float>();
  auto uniform_of = [](uint32_t bits) {  // docs/language.md: fold, convert, times Triton's constant
    int32_t x;
    std::memcpy(&x, &bits, 4);
    const int32_t folded = x < 0 ? -x - 1 : x;
    return static_cast<float>(folded) * 4.6566127342e-10f;
  };
  for (int i = 0; i < n; ++i) {
    float u[4];
    for (int q = 0; q < 4; ++q) {
      u[q] = uniform_of(iv[static_cast<size_t>(q * n + i)]);
      REQUIRE(uv[static_cast<size_t>(q * n + i)] == u[q]);
      REQUIRE(u[q] >= 0.0f);
      REQUIRE(u[q] < 1.0f);
    }
    REQUIRE(uv[static_cast<size_t>(4 * n + i)] == u[0]);  // rand is rand4x's first
    for (int pair = 0; pair < 2; ++pair) {
      const double r = std::sqrt(-2.0 * std::log(std::max(1e-7f, u[2 * pair]))),
                   th = 6.283185307179586 * u[2 * pair + 1];
      CHECK(std::fabs(nv[static_cast<size_t>((2 * pair) * n + i)] - r * std::cos(th)) <= 1e-5 * (1 + r));
      CHECK(std::fabs(nv[static_cast<size_t>((2 * pair + 1) * n + i)] - r * std::sin(th)) <= 1e-5 * (1 + r));
    }
    REQUIRE(nv[static_cast<size_t>(4 * n + i)] == nv[static_cast<size_t>(i)]);  // randn is randn4x's first
  }
}

// static_print (once per trace, the tiles' types), ravel, and reshape with can_reorder (issue 18).
TEST_CASE("static_print prints at trace time; ravel and reshape(can_reorder) keep row-major order", "[interp]") {
  auto k = tl::kernel("shapes", {"x", "out", "ROWS"}, [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Constexpr ROWS) {
    auto r = tl::arange(0, ROWS), c = tl::arange(0, 8);
    auto v = tl::load(x + r(tl::_, tl::newaxis) * 8 + c(tl::newaxis, tl::_));
    tl::static_print("v is", v, "with ROWS =", ROWS);
    tl::store(out + tl::arange(0, ROWS * 8), tl::ravel(v));
    tl::store(out + ROWS * 8 + tl::arange(0, ROWS * 8), tl::reshape(v, {ROWS * 8}, true));
  });
  auto xs = uniform<float>(32, 1990, -1, 1);
  auto out = tl::Tensor::zeros({64});
  const std::string printed = captured_stdout([&] { k[tl::grid(2)](tensor<float>(xs), out, 4); });
  CHECK(printed == "v is tile<4x8xf32> with ROWS = 4\n");  // once: the trace, not each of the 2 programs
  auto o = out.to_host<float>();
  for (int i = 0; i < 32; ++i) {
    REQUIRE(o[static_cast<size_t>(i)] == xs[static_cast<size_t>(i)]);
    REQUIRE(o[static_cast<size_t>(32 + i)] == xs[static_cast<size_t>(i)]);
  }
}

// div_rn and fdiv(ieee_rounding = true) are IEEE division on both backends (div.rn on the GPU),
// bit for bit; fdiv without it is `/` (within 2 ulp on the GPU); f16 divides in f32, as `/`.
// sqrt_rn is sqrt, rounded to nearest on both.
TEST_CASE("div_rn, fdiv and sqrt_rn round as Triton's", "[interp]") {
  auto k =
      tl::kernel("divisions", {"a", "b", "rn", "ieee", "fast", "root", "half", "n", "BLOCK"},
                 [](tl::Ptr<float> a, tl::Ptr<float> b, tl::Ptr<float> rn, tl::Ptr<float> ieee, tl::Ptr<float> fast,
                    tl::Ptr<float> root, tl::Ptr<float> half, tl::Int n, tl::Constexpr BLOCK) {
                   auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                   auto mask = offs < n;
                   auto x = tl::load(a + offs, mask, 1.0f), y = tl::load(b + offs, mask, 1.0f);
                   tl::store(rn + offs, tl::div_rn(x, y), mask);
                   tl::store(ieee + offs, tl::fdiv(x, y, true), mask);
                   tl::store(fast + offs, tl::fdiv(x, y), mask);
                   tl::store(root + offs, tl::sqrt_rn(tl::abs(x)), mask);
                   auto q = tl::fdiv(x.to<tl::f16>(), y.to<tl::f16>(), true);
                   static_assert(std::is_same_v<decltype(q), tl::Tile<float>>);
                   tl::store(half + offs, q, mask);
                 });
  const int n = 1000;
  auto a = uniform<float>(n, 961, -1e4, 1e4), b = uniform<float>(n, 962, 0.01, 300);
  for (int i = 0; i < n; i += 2) b[i] = -b[i];
  auto rn = poison<float>({n}), ieee = poison<float>({n}), fast = poison<float>({n}), root = poison<float>({n}),
       half = poison<float>({n});
  k[blocks(n)](tensor<float>(a), tensor<float>(b), rn, ieee, fast, root, half, n, kBlock);
  std::vector<float> want(n), want_root(n), want_half(n);
  for (int i = 0; i < n; ++i) {
    want[i] = a[i] / b[i];
    want_root[i] = std::sqrt(std::fabs(a[i]));
    want_half[i] = static_cast<float>(tl::f16(a[i])) / static_cast<float>(tl::f16(b[i]));
  }
  require_equal(host<float>(rn), want);
  require_equal(host<float>(ieee), want);
  require_equal(host<float>(root), want_root);
  require_equal(host<float>(half), want_half);
  if (on_gpu())
    require_close(host<float>(fast), std::vector<double>(want.begin(), want.end()), 0, 3e-7);
  else
    require_equal(host<float>(fast), want);
}

// Reductions and scans over tuples of tiles (Triton's tl.reduce / tl.associative_scan on tuples),
// max/min with their indices (return_indices=True), argmax/argmin with tie_break_left and
// keep_dims: integers and ties, so that both backends are exact whatever the combining order.
TEST_CASE("reductions and scans over tuples; max with its index", "[interp]") {
  constexpr int kRows = 4, kCols = 64;
  auto k = tl::kernel(
      "tuples", {"x", "y", "best", "where", "total", "mixed", "h", "vmax", "imax", "vmin", "imin", "kept", "n"},
      [](tl::Ptr<int32_t> x, tl::Ptr<int32_t> y, tl::Ptr<int32_t> best, tl::Ptr<int32_t> where, tl::Ptr<int32_t> total,
         tl::Ptr<int32_t> mixed, tl::Ptr<int32_t> h, tl::Ptr<float> vmax, tl::Ptr<int32_t> imax, tl::Ptr<float> vmin,
         tl::Ptr<int32_t> imin, tl::Ptr<int32_t> kept, tl::Int n) {
        auto r = tl::arange(0, kRows), c = tl::arange(0, kCols);
        auto mask = c(tl::newaxis, tl::_) < n;
        auto offs = r(tl::_, tl::newaxis) * n + c(tl::newaxis, tl::_);
        auto a = tl::load(x + offs, mask, -1000), b = tl::load(y + offs, mask, 0);
        auto idx = tl::broadcast_to(c(tl::newaxis, tl::_), {kRows, kCols});
        // argmax with its value, ties to the smallest index, as a user writes it.
        auto [m, i] = tl::reduce(std::tuple{a, idx}, 1, [](auto v1, auto i1, auto v2, auto i2) {
          auto pick = (v1 > v2) | ((v1 == v2) & (i1 < i2));
          return std::tuple{tl::where(pick, v1, v2), tl::where(pick, i1, i2)};
        });
        tl::store(best + r, m);
        tl::store(where + r, i);
        // Two sums at once, kept dims.
        auto [s, t] = tl::reduce(
            std::tuple{a, b}, 1,
            [](auto a1, auto b1, auto a2, auto b2) {
              return std::tuple{a1 + a2, b1 ^ b2};
            },
            true);
        static_assert(std::is_same_v<decltype(s), tl::Tile<int32_t>>);
        tl::store(total + r(tl::_, tl::newaxis), s);
        tl::store(mixed + r(tl::_, tl::newaxis), t);
        // h_j = a_j h_{j-1} + b_j (h_{-1} = 0): a scan over (a, b) pairs composing affine maps.
        auto [ha, hb] = tl::associative_scan(std::tuple{a, b}, 1, [](auto a1, auto b1, auto a2, auto b2) {
          return std::tuple{a1 * a2, a2 * b1 + b2};
        });
        tl::store(h + offs, hb, mask);
        auto af = a.to<tl::bf16>();
        auto [mx, ix] = tl::max(af, 1, tl::ReturnIndices{});
        static_assert(std::is_same_v<decltype(mx), tl::Tile<float>>);  // bf16 compares in f32, as Triton
        auto above = tl::where(mask, a, 1000);                         // padding that is never the smallest
        auto [mn, in] = tl::min(above.to<float>(), 1, tl::ReturnIndices{.tie_break_left = false});
        tl::store(vmax + r, mx);
        tl::store(imax + r, ix);
        tl::store(vmin + r, mn);
        tl::store(imin + r, in);
        tl::store(kept + r(tl::_, tl::newaxis), tl::argmin(above, 1, true, true));
      });
  const int n = 53;
  auto x = uniform<int32_t>(kRows * n, 971, -20, 20);  // small values: many ties
  auto y = uniform<int32_t>(kRows * n, 972, -1000, 1000);
  std::vector<tl::Tensor> outs;
  for (int i = 0; i < 4; ++i) outs.push_back(poison<int32_t>({kRows}));
  auto h = poison<int32_t>({kRows * n});
  auto vmax = poison<float>({kRows}), vmin = poison<float>({kRows});
  auto imax = poison<int32_t>({kRows}), imin = poison<int32_t>({kRows}), kept = poison<int32_t>({kRows});
  k[tl::grid(1)](tensor<int32_t>(x), tensor<int32_t>(y), outs[0], outs[1], outs[2], outs[3], h, vmax, imax, vmin, imin,
                 kept, n);
  std::vector<int32_t> best, where, total, mixed, want_h, arg_min;
  std::vector<float> fmax, fmin;
  for (int r = 0; r < kRows; ++r) {
    const int32_t* a = &x[r * n];
    const int32_t* b = &y[r * n];
    const int hi = static_cast<int>(std::max_element(a, a + n) - a);  // the first of the largest
    const int lo = static_cast<int>(std::min_element(a, a + n) - a);
    best.push_back(a[hi]);
    where.push_back(hi);
    fmax.push_back(static_cast<float>(a[hi]));
    fmin.push_back(static_cast<float>(a[lo]));
    arg_min.push_back(lo);
    // Padding: a = -1000 and b = 0 past n (the sum and the xor count them as such).
    int32_t sum = -1000 * (kCols - n), x_or = 0, state = 0;
    for (int j = 0; j < n; ++j) {
      sum += a[j];
      x_or ^= b[j];
      state = static_cast<int32_t>(static_cast<uint32_t>(a[j]) * static_cast<uint32_t>(state) +
                                   static_cast<uint32_t>(b[j]));
      want_h.push_back(state);
    }
    total.push_back(sum);
    mixed.push_back(x_or);
  }
  require_equal(host<int32_t>(outs[0]), best);
  require_equal(host<int32_t>(outs[1]), where);
  require_equal(host<int32_t>(outs[2]), total);
  require_equal(host<int32_t>(outs[3]), mixed);
  require_equal(host<int32_t>(h), want_h);
  require_equal(host<float>(vmax), fmax);
  require_equal(host<int32_t>(imax), where);
  require_equal(host<float>(vmin), fmin);
  require_equal(host<int32_t>(imin), arg_min);
  require_equal(host<int32_t>(kept), arg_min);
}

// Triton's inline_asm_elementwise: on the GPU the user's PTX runs per element (a funnel shift,
// rotating each u32 left by a per-element amount, and an f32 fma in one instruction); the
// interpreter cannot run PTX and says so, naming the line. The PTX is checked either way.
TEST_CASE("inline_asm_elementwise runs PTX per element on the GPU", "[interp]") {
  auto k = tl::kernel(
      "inline_asm", {"x", "s", "f", "rot", "fma", "lo", "hi", "bytes", "halves", "n", "BLOCK"},
      [](tl::Ptr<uint32_t> x, tl::Ptr<uint32_t> s, tl::Ptr<float> f, tl::Ptr<uint32_t> rot, tl::Ptr<float> fma,
         tl::Ptr<uint32_t> lo, tl::Ptr<uint32_t> hi, tl::Ptr<uint8_t> bytes, tl::Ptr<tl::f16> halves, tl::Int n,
         tl::Constexpr BLOCK) {
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        auto mask = offs < n;
        auto v = tl::load(x + offs, mask, 0u), by = tl::load(s + offs, mask, 0u);
        tl::store(rot + offs,
                  tl::inline_asm_elementwise<uint32_t>("shf.l.wrap.b32 $0, $1, $1, $2;", "=r,r,r", std::tuple{v, by}),
                  mask);
        auto a = tl::load(f + offs, mask, 0.0f);
        tl::Float two = 2.0f;
        tl::store(fma + offs,
                  tl::inline_asm_elementwise<float>("fma.rn.f32 $0, $1, $2, $3;", "=f,f,f,f", std::tuple{a, two, a}),
                  mask);
        // Two results (Triton's tuple dtype): the halves of a u64.
        auto wide = (v.to<uint64_t>() << 32) | by.to<uint64_t>();
        auto [low, high] =
            tl::inline_asm_elementwise<uint32_t, uint32_t>("mov.b64 {$0, $1}, $2;", "=r,=r,l", std::tuple{wide});
        tl::store(lo + offs, low, mask);
        tl::store(hi + offs, high, mask);
        // pack 4: four u8 in one 32-bit register (each byte's low bit flipped); pack 2: two f16.
        auto u8 = (v & 0xffu).to<uint8_t>();
        tl::store(bytes + offs,
                  tl::inline_asm_elementwise<uint8_t>("xor.b32 $0, $1, 0x01010101;", "=r,r", std::tuple{u8}, true, 4),
                  mask);
        auto h = a.to<tl::f16>();
        tl::store(halves + offs,
                  tl::inline_asm_elementwise<tl::f16>("add.rn.f16x2 $0, $1, $2;", "=r,r,r", std::tuple{h, h}, true, 2),
                  mask);
      });
  const int n = 301;
  auto x = random_bits<uint32_t>(n, 1001), s = uniform<uint32_t>(n, 1002, 0, 31);
  auto f = uniform<float>(n, 1003, -100, 100);
  auto rot = poison<uint32_t>({n});
  auto fma = poison<float>({n});
  auto lo = poison<uint32_t>({n}), hi = poison<uint32_t>({n});
  auto bytes = poison<uint8_t>({n});
  auto halves = poison<tl::f16>({n});
  auto launch = [&] {
    k[blocks(n)](tensor<uint32_t>(x), tensor<uint32_t>(s), tensor<float>(f), rot, fma, lo, hi, bytes, halves, n,
                 kBlock);
  };
  if (!on_gpu()) {
    CHECK_THROWS_WITH(launch(), Catch::Contains("test_math.cpp") && Catch::Contains("runs on the GPU only"));
  } else {
    launch();
    std::vector<uint32_t> want(n);
    std::vector<float> wfma(n);
    for (int i = 0; i < n; ++i) {
      want[i] = s[i] ? (x[i] << s[i]) | (x[i] >> (32 - s[i])) : x[i];
      wfma[i] = std::fma(f[i], 2.0f, f[i]);
    }
    require_equal(host<uint32_t>(rot), want);
    require_equal(host<float>(fma), wfma);
    require_equal(host<uint32_t>(lo), s);
    require_equal(host<uint32_t>(hi), x);
    std::vector<uint8_t> wbytes(n);
    std::vector<tl::f16> whalves(n);
    for (int i = 0; i < n; ++i) {
      wbytes[i] = static_cast<uint8_t>((x[i] & 0xff) ^ 1);
      whalves[i] = tl::f16(2.0f * static_cast<float>(tl::f16(f[i])));
    }
    require_equal(host<uint8_t>(bytes), wbytes);
    require_equal(host<tl::f16>(halves), whalves);
  }
#ifdef TILEDSL_ENABLE_CODEGEN
  tl::CompiledKernel c =
      k.compile(tensor<uint32_t>(x), tensor<uint32_t>(s), tensor<float>(f), rot, fma, lo, hi, bytes, halves, n, kBlock);
  CHECK(c.ptx.find("shf.l.wrap.b32") != std::string::npos);
  CHECK(c.ptx.find("mov.b64 {") != std::string::npos);
  CHECK(c.ptx.find("xor.b32") != std::string::npos);
  CHECK(c.ptx.find("add.rn.f16x2") != std::string::npos);
  CHECK(c.ptx.find("fma.rn.f32") != std::string::npos);
#endif
}

TEST_CASE("inline_asm_elementwise checks its constraints against its arguments", "[interp]") {
  auto run = [](const char* constraints, int pack) {
    auto k = tl::kernel("bad_asm", {"x"}, [&](tl::Ptr<uint32_t> x) {
      auto v = tl::load(x + tl::arange(0, 16));
      tl::store(x + tl::arange(0, 16),
                tl::inline_asm_elementwise<uint32_t>("mov.b32 $0, $1;", constraints, std::tuple{v}, true, pack));
    });
    k[tl::grid(1)](tensor<uint32_t>(std::vector<uint32_t>(16, 1)));
  };
  CHECK_THROWS_WITH(run("=r,r,r", 1), Catch::Contains("must name 1 outputs ('=...'), one per result, and 1 inputs"));
  CHECK_THROWS_WITH(run("r", 1), Catch::Contains("they name 0 and 1"));
  CHECK_THROWS_WITH(run("=r,r", 4), Catch::Contains("pack 4 of tile<16xu32> is not 16, 32 or 64 bits"));
  CHECK_THROWS_WITH(run("=r,r", 3), Catch::Contains("pack must be 1, 2 or 4"));
}

// Dots beyond the 2-D f16/bf16/f32/int8 ones: fp8 inputs (f32 fma in k order in the interpreter,
// bit for bit; the GPU's fp8 tensor cores within their bound), an f16 accumulator (Triton's out_dtype=tl.float16: f32
// sums rounded to f16 once), and 3-D batched dots with an accumulator.
TEST_CASE("dots on fp8, into f16, and batched in 3-D", "[interp]") {
  constexpr int M = 32, K = 64, N = 16, B = 4;
  auto k = tl::kernel(
      "more_dots", {"a", "b", "e4", "e5", "h", "hacc", "h_out", "x", "y", "z", "batched"},
      [](tl::Ptr<float> a, tl::Ptr<float> b, tl::Ptr<float> e4, tl::Ptr<float> e5, tl::Ptr<tl::f16> h,
         tl::Ptr<tl::f16> hacc, tl::Ptr<tl::f16> h_out, tl::Ptr<float> x, tl::Ptr<float> y, tl::Ptr<float> z,
         tl::Ptr<float> batched) {
        auto m = tl::arange(0, M), kk = tl::arange(0, K), n = tl::arange(0, N);
        auto av = tl::load(a + m(tl::_, tl::newaxis) * K + kk(tl::newaxis, tl::_));
        auto bv = tl::load(b + kk(tl::_, tl::newaxis) * N + n(tl::newaxis, tl::_));
        auto out = m(tl::_, tl::newaxis) * N + n(tl::newaxis, tl::_);
        tl::store(e4 + out, tl::dot(av.to<tl::f8e4m3>(), bv.to<tl::f8e4m3>()));
        tl::store(e5 + out, tl::dot(av.to<tl::f8e5m2>(), bv.to<tl::f8e5m2>()));
        auto acc = tl::load(hacc + out);
        tl::store(h_out + out,
                  tl::dot(tl::load(h + m(tl::_, tl::newaxis) * K + kk(tl::newaxis, tl::_)), bv.to<tl::f16>(), acc));
        // [B, M, K] x [B, K, N] + [B, M, N]
        auto bb = tl::arange(0, B);
        auto x3 = tl::load(x + bb(tl::_, tl::newaxis, tl::newaxis) * (M * K) + m(tl::newaxis, tl::_, tl::newaxis) * K +
                           kk(tl::newaxis, tl::newaxis, tl::_));
        auto y3 = tl::load(y + bb(tl::_, tl::newaxis, tl::newaxis) * (K * N) + kk(tl::newaxis, tl::_, tl::newaxis) * N +
                           n(tl::newaxis, tl::newaxis, tl::_));
        auto o3 = bb(tl::_, tl::newaxis, tl::newaxis) * (M * N) + m(tl::newaxis, tl::_, tl::newaxis) * N +
                  n(tl::newaxis, tl::newaxis, tl::_);
        tl::store(batched + o3, tl::dot(x3, y3, tl::load(z + o3), tl::InputPrecision::ieee));
      });
  auto a = uniform<float>(M * K, 1011, -2, 2), b = uniform<float>(K * N, 1012, -2, 2);
  auto h = uniform<tl::f16>(M * K, 1013, -1, 1), hacc = uniform<tl::f16>(M * N, 1014, -4, 4);
  auto x = uniform<float>(B * M * K, 1015, -1, 1), y = uniform<float>(B * K * N, 1016, -1, 1);
  auto z = uniform<float>(B * M * N, 1017, -3, 3);
  auto e4 = poison<float>({M * N}), e5 = poison<float>({M * N}), batched = poison<float>({B * M * N});
  auto h_out = poison<tl::f16>({M * N});
  k[tl::grid(1)](tensor<float>(a), tensor<float>(b), e4, e5, tensor<tl::f16>(h), tensor<tl::f16>(hacc), h_out,
                 tensor<float>(x), tensor<float>(y), tensor<float>(z), batched);
  // f32 fma in k order, as the interpreter computes these (and the GPU the ieee dot, on FMA).
  auto kdot = [](const std::vector<float>& p, const std::vector<float>& q, int m, int n, int K_, int N_, float init) {
    float s = init;
    for (int i = 0; i < K_; ++i)
      s = std::fma(p[static_cast<size_t>(m) * K_ + i], q[static_cast<size_t>(i) * N_ + n], s);
    return s;
  };
  for (auto [fmt_a, got] : {std::pair{0, &e4}, std::pair{1, &e5}}) {
    std::vector<float> pa(a.size()), pb(b.size());
    for (size_t i = 0; i < a.size(); ++i)
      pa[i] = fmt_a ? static_cast<float>(tl::f8e5m2(a[i])) : static_cast<float>(tl::f8e4m3(a[i]));
    for (size_t i = 0; i < b.size(); ++i)
      pb[i] = fmt_a ? static_cast<float>(tl::f8e5m2(b[i])) : static_cast<float>(tl::f8e4m3(b[i]));
    std::vector<float> want(M * N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) want[i * N + j] = kdot(pa, pb, i, j, K, N, 0.0f);
    INFO((fmt_a ? "e5m2" : "e4m3"));
    if (on_gpu()) {  // on fp8 tensor cores from sm_89 on (FMA before): within their bound
      require_within_fp8_dot_bound(host<float>(*got), pa, pb, M, N, K);  // pa, pb: the fp8 values
    } else {
      require_equal(host<float>(*got), want);
    }
  }
  {
    std::vector<float> ph(h.begin(), h.end()), pb(b.size());
    for (size_t i = 0; i < b.size(); ++i) pb[i] = static_cast<float>(tl::f16(b[i]));
    std::vector<tl::f16> want(M * N);
    std::vector<double> wide(M * N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        const float s = kdot(ph, pb, i, j, K, N, static_cast<float>(hacc[i * N + j]));
        want[i * N + j] = tl::f16(s);
        wide[i * N + j] = s;
      }
    if (on_gpu())  // f16 inputs go to the tensor cores: another summation order, then one rounding
      require_close(host<tl::f16>(h_out), wide, 0.07, 2e-3);
    else
      require_equal(host<tl::f16>(h_out), want);
  }
  std::vector<float> want3(B * M * N);
  for (int q = 0; q < B; ++q) {
    std::vector<float> xs(x.begin() + q * M * K, x.begin() + (q + 1) * M * K);
    std::vector<float> ys(y.begin() + q * K * N, y.begin() + (q + 1) * K * N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) want3[q * M * N + i * N + j] = kdot(xs, ys, i, j, K, N, z[q * M * N + i * N + j]);
  }
  require_equal(host<float>(batched), want3);
}

// Triton's fp_downcast_rounding="rtz": f32 to f16 and bf16, f64 to f32 and f16, toward zero, bit for
// bit on both backends (cvt.rz on the GPU), against the nearest-even conversion next to it.
TEST_CASE("conversions rounding toward zero", "[interp]") {
  auto k = tl::kernel("rtz", {"x", "d", "h", "b", "hn", "f", "dh", "n", "BLOCK"},
                      [](tl::Ptr<float> x, tl::Ptr<double> d, tl::Ptr<tl::f16> h, tl::Ptr<tl::bf16> b,
                         tl::Ptr<tl::f16> hn, tl::Ptr<float> f, tl::Ptr<tl::f16> dh, tl::Int n, tl::Constexpr BLOCK) {
                        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                        auto mask = offs < n;
                        auto v = tl::load(x + offs, mask, 0.0f);
                        auto w = tl::load(d + offs, mask, 0.0);
                        tl::store(h + offs, v.to<tl::f16>(tl::Rounding::rtz), mask);
                        tl::store(b + offs, v.to<tl::bf16>(tl::Rounding::rtz), mask);
                        tl::store(hn + offs, v.to<tl::f16>(tl::Rounding::rtne), mask);
                        tl::store(f + offs, w.to<float>(tl::Rounding::rtz), mask);
                        tl::store(dh + offs, w.to<tl::f16>(tl::Rounding::rtz), mask);
                      });
  const int n = 999;
  auto x = uniform<float>(n, 1031, -70000, 70000);  // past f16's largest finite value (65504) too
  auto dv = uniform<double>(n, 1032, -1e5, 1e5);
  x[0] = 65530.0f;  // rounds to inf to nearest, to 65504 toward zero
  x[1] = -1e-6f;    // a subnormal in f16
  auto h = poison<tl::f16>({n}), hn = poison<tl::f16>({n}), dh = poison<tl::f16>({n});
  auto b = poison<tl::bf16>({n});
  auto f = poison<float>({n});
  k[blocks(n)](tensor<float>(x), tensor<double>(dv), h, b, hn, f, dh, n, kBlock);
  std::vector<tl::f16> wh(n), whn(n), wdh(n);
  std::vector<tl::bf16> wb(n);
  std::vector<float> wf(n);
  for (int i = 0; i < n; ++i) {
    wh[i] = tl::f16(tl::round_toward_zero(tl::DType::f16, x[i]));
    wb[i] = tl::bf16(tl::round_toward_zero(tl::DType::bf16, x[i]));
    whn[i] = tl::f16(x[i]);
    wf[i] = static_cast<float>(tl::round_toward_zero(tl::DType::f32, dv[i]));
    wdh[i] = tl::f16(tl::round_toward_zero(tl::DType::f16, dv[i]));
    // The definition, independently: never above the input in magnitude, and the next value up
    // in magnitude is above it.
    REQUIRE(std::fabs(static_cast<double>(static_cast<float>(wh[i]))) <= std::fabs(static_cast<double>(x[i])));
    REQUIRE(std::fabs(static_cast<double>(wf[i])) <= std::fabs(dv[i]));
    REQUIRE(std::fabs(static_cast<double>(std::nextafter(wf[i], std::copysign(INFINITY, wf[i])))) > std::fabs(dv[i]));
  }
  CHECK(static_cast<float>(wh[0]) == 65504.0f);
  CHECK(std::isinf(static_cast<float>(whn[0])));
  require_equal(host<tl::f16>(h), wh);
  require_equal(host<tl::bf16>(b), wb);
  require_equal(host<tl::f16>(hn), whn);
  require_equal(host<float>(f), wf);
  require_equal(host<tl::f16>(dh), wdh);
}
