// Integer division by a divisor that does not change in a loop, which codegen rewrites as a
// multiply (lib/codegen/InvariantDivision.h): the algorithm itself on host integers against C++'s
// / and %, and kernels that divide inside a loop by a kernel argument and by a tile loaded before
// the loop, against the interpreter's defined results (on the GPU, the rewritten code runs).
#include "codegen/InvariantDivision.h"
#include "ops_util.h"

using namespace opt;
namespace division = tiledsl::codegen::division;

namespace {

// InvariantDivision.h's operations on host integers (32-bit, wrapping).
struct Host {
  using Value = uint32_t;
  Value k(uint32_t v) { return v; }
  Value add(Value x, Value y) { return x + y; }
  Value sub(Value x, Value y) { return x - y; }
  Value xor_(Value x, Value y) { return x ^ y; }
  Value lshr(Value x, Value y) { return x >> y; }
  Value ashr(Value x, Value y) { return static_cast<uint32_t>(static_cast<int32_t>(x) >> y); }
  Value umin(Value x, Value y) { return std::min(x, y); }
  Value clz(Value x) { return x == 0 ? 32 : static_cast<uint32_t>(__builtin_clz(x)); }
  Value is_negative(Value x) { return static_cast<int32_t>(x) < 0; }
  Value equal(Value x, Value y) { return x == y; }
  Value select(Value c, Value x, Value y) { return c ? x : y; }
  Value mulhi(Value x, Value y) { return static_cast<uint32_t>((uint64_t{x} * y) >> 32); }
  Value wide_quotient(Value l, Value d) { return static_cast<uint32_t>((((uint64_t{1} << l) - d) << 32) / d); }
};

// Divisors at every magnitude and the edges of both signednesses.
std::vector<uint32_t> divisors(uint64_t seed, int random) {
  std::vector<uint32_t> d = {1,          2,          3,          5,          7,          10,         64,
                             641,        1000003,    0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff,
                             0xfffffff9, 0x40000000, 0x40000001, 0x3fffffff, 0xc0000000, 0x80000003};
  std::mt19937_64 g(seed);
  for (int i = 0; i < random; ++i) {
    uint32_t v = static_cast<uint32_t>(g()) >> (g() % 32);
    d.push_back(v ? v : 1);
  }
  return d;
}
std::vector<uint32_t> dividends(uint64_t seed, int random) {
  std::vector<uint32_t> n = {0, 1, 2, 3, 0x7fffffff, 0x80000000, 0x80000001, 0xffffffff, 0xfffffffe, 641, 1000002};
  std::mt19937_64 g(seed);
  for (int i = 0; i < random; ++i) n.push_back(static_cast<uint32_t>(g()) >> (g() % 32));
  return n;
}

// The interpreter's definitions: a zero divisor gives all bits set (quotient) or the dividend
// (remainder); MIN / -1 wraps to MIN, its remainder 0.
template <class T>
T quotient(T x, T y) {
  if (y == 0) return static_cast<T>(-1);
  if constexpr (std::is_signed_v<T>)
    if (y == -1) return static_cast<T>(0u - static_cast<uint32_t>(x));
  return static_cast<T>(x / y);
}
template <class T>
T remainder(T x, T y) {
  if (y == 0) return x;
  if constexpr (std::is_signed_v<T>)
    if (y == -1) return 0;
  return static_cast<T>(x % y);
}

// q[i] = x[i] / d, r[i] = x[i] % d with d a kernel argument; q2, r2 by the tile dt loaded before
// the loop. One program walks the whole array in BLOCK steps: a loop the divisors do not change in.
template <class T>
const tl::Kernel& divide_in_loop_kernel() {
  static const tl::Kernel k = tl::kernel("divide_in_loop", {"x", "dt", "q", "r", "q2", "r2", "n", "d", "BLOCK"},
                                         [](tl::Ptr<T> x, tl::Ptr<T> dt, tl::Ptr<T> q, tl::Ptr<T> r, tl::Ptr<T> q2,
                                            tl::Ptr<T> r2, tl::Int n, tl::Int d, tl::Constexpr BLOCK) {
                                           auto lanes = tl::arange(0, BLOCK);
                                           auto per_lane = tl::load(dt + lanes);
                                           auto scalar = d.to<T>();
                                           tl::range(0, tl::cdiv(n, BLOCK), [&](tl::Int i) {
                                             auto offs = i * BLOCK + lanes;
                                             auto mask = offs < n;
                                             auto v = tl::load(x + offs, mask);
                                             tl::store(q + offs, v / scalar, mask);
                                             tl::store(r + offs, v % scalar, mask);
                                             tl::store(q2 + offs, v / per_lane, mask);
                                             tl::store(r2 + offs, v % per_lane, mask);
                                           });
                                         });
  return k;
}

}  // namespace

TEST_CASE("division by an invariant divisor as a multiply: the algorithm against C++", "[unit]") {
  Host a;
  const std::vector<uint32_t> ns = dividends(2, 3000);
  for (uint32_t d : divisors(1, 3000)) {
    const auto m = division::unsigned_magic(a, d);
    const auto ms = division::unsigned_magic(a, division::magnitude(a, d));
    const int32_t sd = static_cast<int32_t>(d);
    for (uint32_t n : ns) {
      INFO("n = " << n << ", d = " << d);
      REQUIRE(division::unsigned_divide(a, n, m) == n / d);
      const int32_t sn = static_cast<int32_t>(n);
      REQUIRE(static_cast<int32_t>(division::signed_divide(a, n, d, ms)) == quotient(sn, sd));
    }
  }
  // A zero divisor reads as 1 (the constants are computed before the loop whatever it holds).
  REQUIRE(division::unsigned_divide(a, 12345u, division::unsigned_magic(a, 0u)) == 12345u);
}

TEMPLATE_TEST_CASE("integer division in a loop by an unchanging divisor matches the definitions", "[interp]", int32_t,
                   uint32_t) {
  using T = TestType;
  constexpr int n = 1000, block = 128;  // 8 iterations, the last one partial
  std::vector<T> x(n);
  const std::vector<uint32_t> xs = dividends(5, n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<T>(xs[static_cast<size_t>(i)]);
  // Per-lane divisors: the edges, zero and, for int32, negative ones among random ones.
  std::vector<uint32_t> ds = divisors(6, block);
  ds.resize(block);
  ds[block - 1] = 0;
  std::vector<T> dt(block);
  for (int i = 0; i < block; ++i) dt[i] = static_cast<T>(ds[static_cast<size_t>(i)]);
  for (int64_t d : {int64_t{7}, int64_t{1}, int64_t{-1}, int64_t{0}, int64_t{-1000003}, int64_t{641},
                    int64_t{INT32_MIN}, int64_t{INT32_MAX}, int64_t{3}}) {
    if (std::is_unsigned_v<T> && d < 0) continue;  // the argument converts as an i32
    INFO("d = " << d);
    auto tx = tensor<T>(x), tdt = tensor<T>(dt), q = poison<T>({n}), r = poison<T>({n}), q2 = poison<T>({n}),
         r2 = poison<T>({n});
    divide_in_loop_kernel<T>()[1](tx, tdt, q, r, q2, r2, n, static_cast<int>(d), block);
    const auto hq = host<T>(q), hr = host<T>(r), hq2 = host<T>(q2), hr2 = host<T>(r2);
    const T sd = static_cast<T>(d);
    for (int i = 0; i < n; ++i) {
      INFO("x = " << x[i] << ", lane divisor " << dt[i % block]);
      REQUIRE(hq[i] == quotient(x[i], sd));
      REQUIRE(hr[i] == remainder(x[i], sd));
      REQUIRE(hq2[i] == quotient(x[i], dt[i % block]));
      REQUIRE(hr2[i] == remainder(x[i], dt[i % block]));
    }
  }
}
