// Op tests, part 2: dot, reductions, scans, atomics, block pointers, loops and branches, random
// numbers, printing and hints; then tracing (the specialisation cache) and the interpreter's
// independence from its thread count. Part 1 is test_ops.cpp.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "attention_kernel.h"
#include "matmul_kernel.h"
#include "ops_util.h"
#include "runtime/Interpreter.h"

using namespace opt;

namespace {
using tl::_;
using tl::newaxis;

// f32 fma in k order, from `init`: tl::dot in the interpreter and on the FMA path (f32 inputs,
// and 16-bit blocks too small for the tensor cores), bit for bit. The inputs first go through
// `precision` (the dot's input_precision; tf32 is the default on f32 inputs and changes nothing
// for 16-bit ones): tf32 rounds them (to nearest, ties away, 10 mantissa bits); tf32x3 also keeps
// the tf32 rounding of the rest and adds, per k, lo*hi, hi*lo, then hi*hi (docs/language.md).
float tf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
  std::memcpy(&x, &u, 4);
  return x;
}
template <class T>
std::vector<float> dot_ref(const std::vector<H<T>>& a, const std::vector<H<T>>& b, std::vector<float> c, int M, int N,
                           int K, const std::string& precision = "tf32") {
  auto split = [&](float x) {
    float hi = precision == "ieee" ? x : tf32(x);
    return std::pair{hi, precision == "tf32x3" ? tf32(x - hi) : 0.0f};
  };
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float s = c[m * N + n];
      for (int k = 0; k < K; ++k) {
        auto [a_hi, a_lo] = split(static_cast<float>(a[m * K + k]));
        auto [b_hi, b_lo] = split(static_cast<float>(b[k * N + n]));
        if (precision == "tf32x3") s = std::fma(a_hi, b_lo, std::fma(a_lo, b_hi, s));
        s = std::fma(a_hi, b_hi, s);
      }
      c[m * N + n] = s;
    }
  return c;
}

// Within the bound of any f32 summation order: |got - exact| <= 2 K 2^-24 (|c| + sum_k |a b|),
// with `exact` in double, of the inputs rounded to tf32 (the default input_precision; 16-bit
// values are exact in tf32). The contract of tl::dot on tensor cores, which sum in their own
// order (docs/language.md); the interpreter's k-order sum meets it too.
template <class T>
void require_within_dot_bound(const std::vector<float>& got, const std::vector<H<T>>& a, const std::vector<H<T>>& b,
                              const std::vector<float>& c, int M, int N, int K) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double exact = c[m * N + n], magnitude = std::fabs(c[m * N + n]);
      for (int k = 0; k < K; ++k) {
        double p = static_cast<double>(tf32(static_cast<float>(a[m * K + k]))) * tf32(static_cast<float>(b[k * N + n]));
        exact += p;
        magnitude += std::fabs(p);
      }
      double bound = 2.0 * K * 0x1p-24 * magnitude;
      INFO("element (" << m << ", " << n << ") of " << M << "x" << N << ", K " << K);
      REQUIRE(std::fabs(got[m * N + n] - exact) <= bound);
    }
}

template <class T, tl::InputPrecision P = tl::InputPrecision::tf32>
const tl::Kernel& matmul_kernel() {
  static const tl::Kernel k = tl::kernel(
      "matmul", {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"},
      [](tl::Ptr<T> a, tl::Ptr<T> b, tl::Ptr<float> c, tl::Int M, tl::Int N, tl::Int K, tl::Constexpr BM,
         tl::Constexpr BN, tl::Constexpr BK) {
        auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
        auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
        auto rk = tl::arange(0, BK);
        auto acc = tl::zeros<float>({BM, BN});
        tl::range(0, K, BK, [&](tl::Int k) {
          auto ka = k + rk;
          auto x = tl::load(a + rm(_, newaxis) * K + ka(newaxis, _), (rm(_, newaxis) < M) & (ka(newaxis, _) < K), 0.0);
          auto y = tl::load(b + ka(_, newaxis) * N + rn(newaxis, _), (ka(_, newaxis) < K) & (rn(newaxis, _) < N), 0.0);
          acc = tl::dot(x, y, acc, P);  // P: f32 inputs only (the default, tf32, otherwise)
        });
        tl::store(c + rm(_, newaxis) * N + rn(newaxis, _), acc, (rm(_, newaxis) < M) & (rn(newaxis, _) < N));
      });
  return k;
}

// A matmul problem (M x K by K x N) and its launch: blocks BM x BN x BK on `warps` warps.
struct DotCase {
  int M, N, K, BM, BN, BK, warps;
};

// The matmul of int8 a [M, K] and b [K, N] added to the i32 C it reads, i32 wrapping.
const tl::Kernel& matmul_i8_kernel() {
  static const tl::Kernel k = tl::kernel(
      "matmul_i8", {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"},
      [](tl::Ptr<int8_t> a, tl::Ptr<int8_t> b, tl::Ptr<int32_t> c, tl::Int M, tl::Int N, tl::Int K, tl::Constexpr BM,
         tl::Constexpr BN, tl::Constexpr BK) {
        auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
        auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
        auto rk = tl::arange(0, BK);
        auto c_at = c + rm(_, newaxis) * N + rn(newaxis, _);
        auto c_mask = (rm(_, newaxis) < M) & (rn(newaxis, _) < N);
        auto acc = tl::load(c_at, c_mask, 0);
        tl::range(0, K, BK, [&](tl::Int k) {
          auto ka = k + rk;
          auto x = tl::load(a + rm(_, newaxis) * K + ka(newaxis, _), (rm(_, newaxis) < M) & (ka(newaxis, _) < K), 0);
          auto y = tl::load(b + ka(_, newaxis) * N + rn(newaxis, _), (ka(_, newaxis) < K) & (rn(newaxis, _) < N), 0);
          acc = tl::dot(x, y, acc);
        });
        tl::store(c_at, acc, c_mask);
      });
  return k;
}

// The PTX of `kernel` compiled for these arguments contains `instruction(arch)` (where code
// generation is built; nothing to check otherwise).
template <class... Args>
void require_instruction(const tl::Kernel& kernel, int warps,
                         const std::function<std::string(const std::string& arch)>& instruction, const Args&... args) {
#ifdef TILEDSL_ENABLE_CODEGEN
  tl::CompiledKernel compiled = kernel.compile(tl::LaunchOptions{.num_warps = warps}, args...);
  INFO(compiled.arch << ": " << instruction(compiled.arch));
  CHECK(compiled.ptx.find(instruction(compiled.arch)) != std::string::npos);
#else
  (void)kernel, (void)warps, (void)instruction, ((void)args, ...);
#endif
}
}  // namespace

TEMPLATE_TEST_CASE("dot equals f32 fma in k order, through a masked K loop", "[interp]", float, tl::f16, tl::bf16) {
  using T = TestType;
  const int M = 37, N = 29, K = 45;  // none a multiple of the 16-wide blocks
  auto a = uniform<T>(M * K, 401, -2, 2);
  auto b = uniform<T>(K * N, 402, -2, 2);
  auto c = poison<float>({M, N});
  matmul_kernel<T>()[tl::grid(tl::cdiv(M, 16), tl::cdiv(N, 16))](tensor<T>(a, {M, K}), tensor<T>(b, {K, N}), c, M, N, K,
                                                                 16, 16, 16);
  require_equal(host<float>(c), dot_ref<T>(a, b, std::vector<float>(M * N, 0.0f), M, N, K));
}

// input_precision on f32 inputs whose low mantissa bits are set: each precision gives exactly
// its reference (the interpreter's and the FMA path's k-order sum); ieee and tf32 differ; tf32x3
// is within a few ulps per product of the exact sum, and the default is tf32.
TEST_CASE("dot's input_precision: ieee, tf32 and tf32x3 on f32 inputs", "[interp]") {
  auto k = tl::kernel("precisions", {"a", "b", "ieee", "tf32", "tf32x3", "plain"},
                      [](tl::Ptr<float> a, tl::Ptr<float> b, tl::Ptr<float> o1, tl::Ptr<float> o2, tl::Ptr<float> o3,
                         tl::Ptr<float> o4) {
                        auto r32 = tl::arange(0, 32), r16 = tl::arange(0, 16);
                        auto x = tl::load(a + r32(_, newaxis) * 16 + r16(newaxis, _));  // [32, 16]
                        auto y = tl::load(b + r16(_, newaxis) * 32 + r32(newaxis, _));  // [16, 32]
                        auto offs = r32(_, newaxis) * 32 + r32(newaxis, _);
                        tl::store(o1 + offs, tl::dot(x, y, tl::InputPrecision::ieee));
                        tl::store(o2 + offs, tl::dot(x, y, tl::zeros<float>({32, 32}), tl::InputPrecision::tf32));
                        tl::store(o3 + offs, tl::dot(x, y, tl::InputPrecision::tf32x3));
                        tl::store(o4 + offs, tl::dot(x, y));
                      });
  auto a = uniform<float>(32 * 16, 441, -3, 3);
  auto b = uniform<float>(16 * 32, 442, -3, 3);
  std::vector<tl::Tensor> out;
  for (int i = 0; i < 4; ++i) out.push_back(poison<float>({32, 32}));
  k[tl::grid(1)](tensor<float>(a), tensor<float>(b), out[0], out[1], out[2], out[3]);
  const std::vector<float> zero(32 * 32, 0.0f);
  auto ieee = host<float>(out[0]), t32 = host<float>(out[1]), x3 = host<float>(out[2]);
  require_equal(ieee, dot_ref<float>(a, b, zero, 32, 32, 16, "ieee"));  // FMA on every engine
  // On the GPU, tf32 and tf32x3 run on tensor cores (mma.sync.m16n8k8.tf32), which sum in their
  // own order: tf32 is then within any f32 summation's bound of the exact sum of the tf32-rounded
  // products (rounding to nearest, ties away, as cvt.rna; truncating instead would be off by up
  // to 2^-11 of each product).
  if (!on_gpu()) {
    require_equal(t32, dot_ref<float>(a, b, zero, 32, 32, 16, "tf32"));
    require_equal(x3, dot_ref<float>(a, b, zero, 32, 32, 16, "tf32x3"));
  }
  require_equal(host<float>(out[3]), t32);
  CHECK(ieee != t32);
  for (int m = 0; m < 32; ++m)
    for (int n = 0; n < 32; ++n) {
      double exact = 0, magnitude = 0, rounded = 0;
      for (int j = 0; j < 16; ++j) {
        const double p = static_cast<double>(a[m * 16 + j]) * b[j * 32 + n];
        exact += p;
        magnitude += std::fabs(p);
        rounded += static_cast<double>(tf32(a[m * 16 + j])) * tf32(b[j * 32 + n]);
      }
      // tf32x3 drops lo*lo (2^-22 of a product) and rounds the split parts: within 2^-19 of the
      // magnitudes plus the f32 sum's own rounding; tf32 alone is off by up to 2^-10 of them.
      CHECK(std::fabs(x3[m * 32 + n] - exact) <= (0x1p-19 + 2 * 3 * 16 * 0x1p-24) * magnitude);
      CHECK(std::fabs(t32[m * 32 + n] - exact) <= (0x1p-10 + 3 * 16 * 0x1p-24) * magnitude);
      CHECK(std::fabs(t32[m * 32 + n] - rounded) <= 2 * 16 * 0x1p-24 * magnitude);
    }
}

// f32 inputs through a masked K loop on sizes that fill no block, with blocks the tensor cores
// take (mma.sync.m16n8k8 on tf32; on sm_90a wgmma.m64nNk8 for tf32 where whole warpgroups go
// along M and K is a multiple of 32, tf32x3 staying on mma.sync) and one they do not (FMA):
// tf32 within the summation bound of the exact sum of the tf32-rounded products (the rounding
// to nearest, which wgmma, reading shared memory as it is, would not do by itself), tf32x3
// within its bound of the exact product; where code generation is built, the PTX uses the
// instruction.
TEST_CASE("tf32 and tf32x3 dots on tensor cores are within their bounds through a masked K loop", "[interp]") {
  using Case = DotCase;
  for (Case t :
       {Case{70, 45, 83, 32, 32, 32, 4}, Case{100, 77, 90, 64, 64, 16, 4}, Case{37, 29, 45, 16, 16, 8, 4},
        Case{130, 141, 70, 128, 64, 32, 8}, Case{150, 130, 100, 64, 128, 32, 4}, Case{130, 141, 170, 128, 64, 64, 8}}) {
    INFO("blocks " << t.BM << "x" << t.BN << "x" << t.BK << ", " << t.warps << " warps");
    auto a = uniform<float>(static_cast<size_t>(t.M * t.K), 451 + t.M, -3, 3);
    auto b = uniform<float>(static_cast<size_t>(t.K * t.N), 452 + t.N, -3, 3);
    auto at = tensor<float>(a, {t.M, t.K}), bt = tensor<float>(b, {t.K, t.N});
    auto c1 = poison<float>({t.M, t.N}), c3 = poison<float>({t.M, t.N});
    auto grid = tl::grid(tl::cdiv(t.M, t.BM), tl::cdiv(t.N, t.BN));
    const auto& k1 = matmul_kernel<float>();
    const auto& k3 = matmul_kernel<float, tl::InputPrecision::tf32x3>();
    k1[grid].options({.num_warps = t.warps})(at, bt, c1, t.M, t.N, t.K, t.BM, t.BN, t.BK);
    k3[grid].options({.num_warps = t.warps})(at, bt, c3, t.M, t.N, t.K, t.BM, t.BN, t.BK);
    const std::vector<float> zero(static_cast<size_t>(t.M * t.N), 0.0f);
    require_within_dot_bound<float>(host<float>(c1), a, b, zero, t.M, t.N, t.K);
    auto got3 = host<float>(c3);
    for (int m = 0; m < t.M; ++m)
      for (int n = 0; n < t.N; ++n) {
        double exact = 0, magnitude = 0;
        for (int j = 0; j < t.K; ++j) {
          const double p = static_cast<double>(a[m * t.K + j]) * b[j * t.N + n];
          exact += p;
          magnitude += std::fabs(p);
        }
        INFO("element (" << m << ", " << n << ")");
        REQUIRE(std::fabs(got3[m * t.N + n] - exact) <= (0x1p-19 + 2 * 3 * t.K * 0x1p-24) * magnitude);
      }
    if (t.BM >= 32) {
      const std::string mma = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
      const bool wgmma = t.BM == 16 * t.warps && t.warps % 4 == 0 && t.BK % 32 == 0 && t.BN % 64 == 0;
      require_instruction(
          k1, t.warps,
          [&](const std::string& arch) {
            return arch == "sm_90a" && wgmma
                       ? "wgmma.mma_async.sync.aligned.m64n" + std::to_string(t.BN) + "k8.f32.tf32.tf32"
                       : mma;
          },
          at, bt, c1, t.M, t.N, t.K, t.BM, t.BN, t.BK);
      require_instruction(
          k3, t.warps, [&](const std::string&) { return mma; }, at, bt, c3, t.M, t.N, t.K, t.BM, t.BN, t.BK);
    }
  }
}

// fp8 inputs (e4m3, e5m2) on blocks the tensor cores take: mma.sync.m16n8k32 where the target has
// fp8 tensor cores (sm_89 and later), wgmma.m64nNk32 on sm_90a where a block's K is a multiple of
// 128 (the last two cases); FMA on sm_80 and in the interpreter, in k order, bit for bit. On the
// GPU the results are within the fp8 tensor cores' bound (require_within_fp8_dot_bound).
TEMPLATE_TEST_CASE("fp8 dots on tensor cores are within the fp8 accumulation bound", "[interp]", tl::f8e4m3,
                   tl::f8e5m2) {
  using T = TestType;
  using Case = DotCase;
  for (Case t :
       {Case{100, 77, 90, 64, 64, 32, 4}, Case{130, 141, 150, 128, 128, 64, 8}, Case{37, 29, 45, 16, 16, 32, 1},
        Case{70, 90, 150, 64, 32, 64, 2}, Case{150, 90, 270, 128, 64, 128, 4}, Case{130, 141, 300, 128, 128, 128, 8}}) {
    INFO("blocks " << t.BM << "x" << t.BN << "x" << t.BK << ", " << t.warps << " warps");
    auto fa = uniform<float>(static_cast<size_t>(t.M * t.K), 471 + t.M, -3, 3);
    auto fb = uniform<float>(static_cast<size_t>(t.K * t.N), 472 + t.N, -3, 3);
    std::vector<T> a(fa.begin(), fa.end()), b(fb.begin(), fb.end());
    auto c = poison<float>({t.M, t.N});
    auto at = tensor<T>(a, {t.M, t.K}), bt = tensor<T>(b, {t.K, t.N});
    matmul_kernel<T>()[tl::grid(tl::cdiv(t.M, t.BM), tl::cdiv(t.N, t.BN))].options({.num_warps = t.warps})(
        at, bt, c, t.M, t.N, t.K, t.BM, t.BN, t.BK);
    const std::vector<float> zero(static_cast<size_t>(t.M * t.N), 0.0f);
    auto got = host<float>(c);
    if (!on_gpu())
      require_equal(got, dot_ref<T>(a, b, zero, t.M, t.N, t.K));
    else
      require_within_fp8_dot_bound(got, a, b, t.M, t.N, t.K);
#ifdef TILEDSL_ENABLE_CODEGEN
    tl::CompiledKernel compiled =
        matmul_kernel<T>().compile(tl::LaunchOptions{.num_warps = t.warps}, at, bt, c, t.M, t.N, t.K, t.BM, t.BN, t.BK);
    const std::string ab = std::is_same_v<T, tl::f8e4m3> ? "e4m3" : "e5m2";
    const bool wgmma = compiled.arch == "sm_90a" && t.warps % 4 == 0 && t.BM % (16 * t.warps) == 0 && t.BK % 128 == 0 &&
                       t.BN % 64 == 0;
    INFO(compiled.arch);
    if (wgmma)
      CHECK(compiled.ptx.find("wgmma.mma_async.sync.aligned.m64n" + std::to_string(t.BN) + "k32.f32." + ab + "." +
                              ab) != std::string::npos);
    else if (compiled.arch != "sm_80")
      CHECK(compiled.ptx.find("mma.sync.aligned.m16n8k32.row.col.f32." + ab + "." + ab + ".f32") != std::string::npos);
    else
      CHECK(compiled.ptx.find("mma.sync") == std::string::npos);
#endif
  }
}

// int8 inputs sum exactly in i32, wrapping past 2^31 (C starts near the ends of the i32 range),
// through a masked K loop on sizes that fill no block: the same on the tensor cores
// (mma.sync.m16n8k32.s8) and on FMA (blocks too small for them), bit for bit.
TEST_CASE("int8 dots sum exactly in i32, wrapping, on tensor cores and FMA", "[interp]") {
  using Case = DotCase;
  for (Case t : {Case{70, 45, 100, 32, 32, 32, 4}, Case{100, 77, 150, 64, 64, 64, 4}, Case{37, 29, 45, 16, 16, 32, 4},
                 Case{130, 141, 70, 128, 64, 32, 8}}) {
    INFO("blocks " << t.BM << "x" << t.BN << "x" << t.BK << ", " << t.warps << " warps");
    auto a = uniform<int8_t>(static_cast<size_t>(t.M * t.K), 461 + t.M, -128, 127);
    auto b = uniform<int8_t>(static_cast<size_t>(t.K * t.N), 462 + t.N, -128, 127);
    auto c0 = uniform<int32_t>(static_cast<size_t>(t.M * t.N), 463, -50, 50);
    for (size_t i = 0; i < c0.size(); i += 2) c0[i] += c0[i] > 0 ? INT32_MAX - 60 : INT32_MIN + 60;
    std::vector<int32_t> want(c0);
    for (int m = 0; m < t.M; ++m)
      for (int n = 0; n < t.N; ++n) {
        uint32_t sum = static_cast<uint32_t>(c0[m * t.N + n]);
        for (int j = 0; j < t.K; ++j) sum += static_cast<uint32_t>(a[m * t.K + j] * b[j * t.N + n]);
        want[m * t.N + n] = static_cast<int32_t>(sum);
      }
    auto at = tensor<int8_t>(a, {t.M, t.K}), bt = tensor<int8_t>(b, {t.K, t.N});
    auto c = tensor<int32_t>(c0, {t.M, t.N});
    matmul_i8_kernel()[tl::grid(tl::cdiv(t.M, t.BM), tl::cdiv(t.N, t.BN))].options({.num_warps = t.warps})(
        at, bt, c, t.M, t.N, t.K, t.BM, t.BN, t.BK);
    require_equal(host<int32_t>(c), want);
    if (t.BM >= 32)
      require_instruction(
          matmul_i8_kernel(), t.warps,
          [](const std::string&) { return std::string("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"); }, at, bt, c,
          t.M, t.N, t.K, t.BM, t.BN, t.BK);
  }
}

// 16-bit inputs on blocks the tensor cores take (mma.sync.m16n8k16: M, N, K multiples of 16, 8
// and 16, one block of 16 x 8 or more per warp), through a masked K loop on sizes that fill no
// block; where code generation is built, the PTX must use the instruction. The last four cases
// are blocks wgmma takes on sm_90a (whole warpgroups along M; K and N multiples of 64): one or
// two row blocks per warp, one or two panels of K, instructions 64, 128 and 256 columns wide.
TEMPLATE_TEST_CASE("dot on tensor cores is within the summation bound of the exact product", "[interp]", tl::f16,
                   tl::bf16) {
  using T = TestType;
  using Case = DotCase;
  for (Case t :
       {Case{100, 77, 90, 64, 64, 32, 4}, Case{130, 141, 70, 128, 128, 32, 8}, Case{40, 50, 33, 32, 32, 16, 4},
        Case{37, 29, 45, 16, 16, 16, 1}, Case{70, 90, 150, 64, 32, 64, 2}, Case{130, 141, 150, 128, 128, 64, 8},
        Case{100, 200, 190, 64, 64, 64, 4}, Case{70, 300, 130, 64, 256, 64, 4}, Case{150, 90, 270, 128, 64, 128, 4}}) {
    INFO("blocks " << t.BM << "x" << t.BN << "x" << t.BK << ", " << t.warps << " warps");
    auto a = uniform<T>(static_cast<size_t>(t.M * t.K), 431 + t.M, -2, 2);
    auto b = uniform<T>(static_cast<size_t>(t.K * t.N), 432 + t.N, -2, 2);
    auto c = poison<float>({t.M, t.N});
    auto at = tensor<T>(a, {t.M, t.K}), bt = tensor<T>(b, {t.K, t.N});
    matmul_kernel<T>()[tl::grid(tl::cdiv(t.M, t.BM), tl::cdiv(t.N, t.BN))].options({.num_warps = t.warps})(
        at, bt, c, t.M, t.N, t.K, t.BM, t.BN, t.BK);
    require_within_dot_bound<T>(host<float>(c), a, b, std::vector<float>(static_cast<size_t>(t.M * t.N), 0.0f), t.M,
                                t.N, t.K);
#ifdef TILEDSL_ENABLE_CODEGEN
    tl::CompiledKernel compiled =
        matmul_kernel<T>().compile(tl::LaunchOptions{.num_warps = t.warps}, at, bt, c, t.M, t.N, t.K, t.BM, t.BN, t.BK);
    const std::string ab = std::is_same_v<T, tl::bf16> ? "bf16" : "f16";
    const bool wgmma =
        compiled.arch == "sm_90a" && t.warps % 4 == 0 && t.BM % (16 * t.warps) == 0 && t.BK % 64 == 0 && t.BN % 64 == 0;
    INFO(compiled.arch);
    if (wgmma)
      CHECK(compiled.ptx.find("wgmma.mma_async.sync.aligned.m64n" + std::to_string(std::min(t.BN, 256)) + "k16.f32." +
                              ab + "." + ab) != std::string::npos);
    else
      CHECK(compiled.ptx.find("mma.sync.aligned.m16n8k16.row.col.f32." + ab + "." + ab + ".f32") != std::string::npos);
#endif
  }
}

// Tensor-core dots (bf16 in, f32 out, 4 warps: blocks wgmma takes on sm_90a) outside a loop,
// chained through a cast (attention's S and P), and in a loop whose accumulator is rescaled
// before each dot (attention's O): the shapes where the MMA must finish within the iteration.
// The inputs are small integers, so every sum is exact on every engine and the results are
// compared exactly.
TEST_CASE("tensor-core dots outside a loop, chained, and on a rescaled accumulator are exact on small integers",
          "[interp]") {
  auto k = tl::kernel("dot_chain", {"q", "kt", "v", "s_out", "o_out", "loop_out"},
                      [](tl::Ptr<tl::bf16> q, tl::Ptr<tl::bf16> kt, tl::Ptr<tl::bf16> v, tl::Ptr<float> s_out,
                         tl::Ptr<float> o_out, tl::Ptr<float> loop_out) {
                        auto r64 = tl::arange(0, 64), r128 = tl::arange(0, 128);
                        auto x = tl::load(q + r64(_, newaxis) * 128 + r128(newaxis, _));  // [64, 128]
                        auto y = tl::load(kt + r128(_, newaxis) * 64 + r64(newaxis, _));  // [128, 64]
                        auto s = tl::dot(x, y);                                           // [64, 64]
                        tl::store(s_out + r64(_, newaxis) * 64 + r64(newaxis, _), s);
                        auto z = tl::load(v + r64(_, newaxis) * 128 + r128(newaxis, _));  // [64, 128]
                        tl::store(o_out + r64(_, newaxis) * 128 + r128(newaxis, _), tl::dot(s.to<tl::bf16>(), z));
                        auto acc = tl::zeros<float>({64, 128});
                        tl::range(0, 3, 1, [&](tl::Int i) {
                          auto zi = tl::load(v + (r64(_, newaxis) + i) * 128 + r128(newaxis, _));
                          acc = tl::dot(s.to<tl::bf16>(), zi, acc * 0.5f);
                        });
                        tl::store(loop_out + r64(_, newaxis) * 128 + r128(newaxis, _), acc);
                      });
  std::mt19937 rng(4242);
  std::uniform_int_distribution<int> pick(-1, 1);
  auto ints = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(pick(rng));
    return v;
  };
  // v has 2 extra rows: the loop reads rows i to i + 63.
  std::vector<float> q = ints(64 * 128), kt = ints(128 * 64), v = ints(66 * 128);
  auto bf = [](const std::vector<float>& x, std::vector<int64_t> shape) {
    std::vector<tl::bf16> h;
    for (float e : x) h.push_back(tl::bf16(e));
    return tensor<tl::bf16>(h, std::move(shape));
  };
  auto s_out = poison<float>({64, 64}), o_out = poison<float>({64, 128}), loop_out = poison<float>({64, 128});
  k[tl::grid(1)].options({.num_warps = 4})(bf(q, {64, 128}), bf(kt, {128, 64}), bf(v, {66, 128}), s_out, o_out,
                                           loop_out);
  std::vector<float> s(64 * 64, 0.0f), o(64 * 128, 0.0f), acc(64 * 128, 0.0f);
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 64; ++n)
      for (int j = 0; j < 128; ++j) s[m * 64 + n] += q[m * 128 + j] * kt[j * 64 + n];
  for (int i = 0; i < 3; ++i)
    for (int m = 0; m < 64; ++m)
      for (int n = 0; n < 128; ++n) {
        float sum = 0, shifted = 0;
        for (int j = 0; j < 64; ++j) {
          sum += s[m * 64 + j] * v[j * 128 + n];
          shifted += s[m * 64 + j] * v[(j + i) * 128 + n];
        }
        if (i == 0) o[m * 128 + n] = sum;
        acc[m * 128 + n] = acc[m * 128 + n] * 0.5f + shifted;
      }
  require_equal(host<float>(s_out), s);
  require_equal(host<float>(o_out), o);
  require_equal(host<float>(loop_out), acc);
}

namespace {
// Small integers (-3 to 3) in A and B, so that every product and sum is exact in f32 and C
// rounded to T (bf16: once, to 8 significant bits; f16 represents these sums exactly) is known.
struct ExactProduct {
  tl::Tensor a, b;
  std::vector<float> rounded;
};
template <class T>
ExactProduct exact_product(int M, int N, int K, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(-3, 3);
  std::vector<float> a(M * K), b(K * N);
  for (float& x : a) x = static_cast<float>(pick(rng));
  for (float& x : b) x = static_cast<float>(pick(rng));
  auto narrow = [](const std::vector<float>& x, std::vector<int64_t> shape) {
    std::vector<T> h;
    for (float e : x) h.push_back(T(e));
    return tensor<T>(h, std::move(shape));
  };
  std::vector<float> want(M * N, 0.0f);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n) want[m * N + n] += a[m * K + k] * b[k * N + n];
  std::vector<float> rounded;
  for (float x : want) rounded.push_back(static_cast<float>(T(x)));
  return {narrow(a, {M, K}), narrow(b, {K, N}), rounded};
}
template <class T>
std::vector<float> narrow_host(const tl::Tensor& t) {
  std::vector<float> got;
  for (T x : host<T>(t)) got.push_back(static_cast<float>(x));
  return got;
}
struct MatmulConfig {
  int bm, bn, bk, warps, stages;
};
}  // namespace

// `kernel` (T in, T out) on sizes that fill no block, for each of `configs`: C must be the exact
// product rounded to T.
template <class T>
void require_exact_matmul(const tl::Kernel& kernel, std::initializer_list<MatmulConfig> configs, unsigned seed) {
  const int M = 150, N = 200, K = 190;
  auto p = exact_product<T>(M, N, K, seed);
  for (MatmulConfig c : configs) {
    INFO("blocks " << c.bm << "x" << c.bn << "x" << c.bk << ", " << c.warps << " warps, num_stages " << c.stages);
    auto out = poison<T>({M, N});
    kernel[tl::cdiv(M, c.bm) * tl::cdiv(N, c.bn)].options({.num_warps = c.warps, .num_stages = c.stages})(
        p.a, p.b, out, M, N, K, K, 1, N, 1, N, 1, c.bm, c.bn, c.bk, 8);
    require_equal(narrow_host<T>(out), p.rounded);
  }
}

// The matmul example's kernel with a bf16 C (the accumulator rounded as it is stored, straight
// from the tensor cores' registers: the epilogue), with blocks for wgmma (sm_90a), mma.sync and
// several pipeline depths.
TEST_CASE("matmul with a bf16 C stores the exact product rounded to bf16", "[interp]") {
  require_exact_matmul<tl::bf16>(matmul::matmul_bf16_out,
                                 {{128, 128, 64, 8, 3}, {64, 64, 32, 4, 2}, {64, 128, 64, 4, 4}}, 977);
}

// The same with f16 in and out (Triton's tutorial's matmul), whose sums here are exact in f16.
TEST_CASE("matmul with f16 inputs and C stores the exact product", "[interp]") {
  require_exact_matmul<tl::f16>(matmul::matmul_f16_out,
                                {{128, 128, 64, 8, 3}, {64, 64, 32, 4, 2}, {128, 256, 64, 8, 3}}, 983);
}

// The persistent matmul (one flat loop over a program's tiles and their k steps, the
// accumulator cleared at each tile's first step, the epilogue under an if): fewer programs than
// tiles, so that each program ends tiles and starts others in one loop; sizes that fill no block,
// one set divisible by 16 (cp.async copies in flight across tiles on sm_90a) and one not; blocks
// for wgmma (its accumulator cleared by the MMAs' scale-d flag, the epilogue waiting in the if)
// and for mma.sync.
TEST_CASE("persistent matmul stores the exact product rounded to bf16", "[interp]") {
  for (auto [M, N, K] : {std::array<int, 3>{272, 400, 336}, {150, 200, 190}}) {
    auto p = exact_product<tl::bf16>(M, N, K, 991);
    for (MatmulConfig c : {MatmulConfig{128, 128, 64, 8, 3}, MatmulConfig{128, 256, 64, 8, 2},
                           MatmulConfig{64, 64, 32, 4, 2}, MatmulConfig{64, 128, 64, 4, 4}})
      for (int programs : {1, 3, 5}) {
        INFO(M << "x" << N << "x" << K << ", blocks " << c.bm << "x" << c.bn << "x" << c.bk << ", " << c.warps
               << " warps, num_stages " << c.stages << ", " << programs << " programs");
        auto out = poison<tl::bf16>({M, N});
        matmul::matmul_bf16_out_persistent[programs].options({.num_warps = c.warps, .num_stages = c.stages})(
            p.a, p.b, out, M, N, K, K, 1, N, 1, N, 1, c.bm, c.bn, c.bk, 8);
        require_equal(narrow_host<tl::bf16>(out), p.rounded);
      }
  }
}

// The attention example's kernel with the blocks tiledsl-bench finds fastest on the H200 (128
// query rows x 64 keys on 8 warps): on sm_90a both dots run on wgmma, Q staged once, K (a
// column-major tile, read K-major) and V copied by cp.async into two buffers each. Against
// softmax(Q K^T scale) V in double, on lengths that fill no block (every key block masked) and
// that fill whole key blocks (EVEN_N: no mask unless causal); 64 x 128 blocks on 4 warps too. P is rounded to bf16
// before the second dot (a relative error up to 2^-9 per weight), hence the tolerance.
TEST_CASE("attention forward on tensor cores matches softmax(Q K^T) V", "[interp]") {
  const int heads = 2;
  // (n, BLOCK_M, BLOCK_N, num_warps, num_stages): 64 x 128 blocks take two stages so that K's and V's
  // buffers fit sm_90's 227 KiB; 8.x targets have less (sm_80 163 KiB, sm_89 99 KiB), and the blocks
  // that exceed it are reported and skipped there: the 64 x 64 ones fit every target.
  for (auto [n, block_m, block_n, warps, stages] :
       {std::array<int, 5>{150, 128, 64, 8, 3}, {192, 128, 64, 8, 3}, {256, 64, 128, 4, 2}, {200, 64, 64, 4, 2}})
    for (int head_dim : {64, 128})
      for (int causal : {0, 1}) {
        INFO("n " << n << ", blocks " << block_m << "x" << block_n << ", head dim " << head_dim
                  << (causal ? ", causal" : ""));
        auto q = tl::Tensor::randn({1, heads, n, head_dim}, 71 + head_dim, tl::DType::bf16);
        auto k = tl::Tensor::randn({1, heads, n, head_dim}, 72 + head_dim, tl::DType::bf16);
        auto v = tl::Tensor::randn({1, heads, n, head_dim}, 73 + head_dim, tl::DType::bf16);
        auto o = poison<float>({1, heads, n, head_dim});
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
#ifdef TILEDSL_ENABLE_CODEGEN
        // Blocks whose buffers exceed an 8.x target's shared memory (sm_80: 163 KiB, sm_89: 99 KiB)
        // are reported and skipped there; on sm_90 every configuration must fit.
        try {
          attention::attention_kernel.compile(tl::LaunchOptions{.num_warps = warps, .num_stages = stages}, q, k, v, o,
                                              1.0f, heads * n * head_dim, n * head_dim, head_dim, 1, heads, n, head_dim,
                                              block_m, block_n, causal, n % block_n == 0);
        } catch (const tl::Error& e) {
          const std::string what = e.what();
          if (what.find("bytes of shared memory; sm_8") == std::string::npos) throw;
          WARN("skipped: " << what);
          continue;
        }
#endif
        auto launch = attention::attention_kernel[tl::grid(tl::cdiv(n, block_m), heads)].options(
            {.num_warps = warps, .num_stages = stages});
        launch(q, k, v, o, scale, heads * n * head_dim, n * head_dim, head_dim, 1, heads, n, head_dim, block_m, block_n,
               causal, n % block_n == 0);
        auto qs = q.to_double(), ks = k.to_double(), vs = v.to_double();
        auto got = host<float>(o);
        double worst = 0;
        std::vector<double> s(n);
        for (int h = 0; h < heads; ++h)
          for (int i = 0; i < n; ++i) {
            const size_t base = static_cast<size_t>(h) * n * head_dim;
            const int last = causal ? i : n - 1;
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j <= last; ++j) {
              double d = 0;
              for (int c = 0; c < head_dim; ++c) d += qs[base + i * head_dim + c] * ks[base + j * head_dim + c];
              mx = std::max(mx, s[j] = d * scale);
            }
            for (int j = 0; j <= last; ++j) sum += (s[j] = std::exp(s[j] - mx));
            for (int c = 0; c < head_dim; ++c) {
              double want = 0;
              for (int j = 0; j <= last; ++j) want += s[j] * vs[base + j * head_dim + c];
              worst = std::max(worst, std::fabs(want / sum - got[base + i * head_dim + c]));
            }
          }
        CHECK(worst < 1e-2);
        // O stored as bf16 (Triton's form): the same values, rounded once to nearest even (on the
        // GPU, where another build of the same arithmetic may differ in the last f32 bit, within
        // one bf16 step).
        auto o16 = poison<tl::bf16>({1, heads, n, head_dim});
        attention::attention_kernel_bf16[tl::grid(tl::cdiv(n, block_m), heads)].options(
            {.num_warps = warps, .num_stages = stages})(q, k, v, o16, scale, heads * n * head_dim, n * head_dim,
                                                        head_dim, 1, heads, n, head_dim, block_m, block_n, causal,
                                                        n % block_n == 0);
        auto got16 = host<tl::bf16>(o16);
        for (size_t i = 0; i < got.size(); ++i) {
          INFO("element " << i << ": f32 O " << got[i] << ", bf16 O " << static_cast<float>(got16[i]));
          if (on_gpu())
            REQUIRE(std::fabs(static_cast<float>(got16[i]) - got[i]) <= 0x1p-8 * std::fabs(got[i]) + 1e-30);
          else
            REQUIRE(got16[i].bits == tl::bf16(got[i]).bits);
        }
#ifdef TILEDSL_ENABLE_CODEGEN
        tl::CompiledKernel c = attention::attention_kernel.compile(
            tl::LaunchOptions{.num_warps = warps, .num_stages = stages}, q, k, v, o, scale, heads * n * head_dim,
            n * head_dim, head_dim, 1, heads, n, head_dim, block_m, block_n, causal, n % block_n == 0);
        if (c.arch == "sm_90a") {  // Q K^T: 64 rows of BLOCK_N scores per instruction
          CHECK(c.ptx.find("wgmma.mma_async.sync.aligned.m64n" + std::to_string(block_n) + "k16.f32.bf16.bf16") !=
                std::string::npos);
          CHECK(c.ptx.find("cp.async.cg.shared.global") != std::string::npos);
        }
#endif
      }
}

// f32 inputs, default precision (tf32): the interpreter's k-order sum exactly; on the GPU, whose
// tensor cores may take the dot, within the summation bound (require_within_dot_bound).
void require_f32_dot(const std::vector<float>& got, const std::vector<float>& a, const std::vector<float>& b,
                     const std::vector<float>& c, int M, int N, int K) {
  if (on_gpu())
    require_within_dot_bound<float>(got, a, b, c, M, N, K);
  else
    require_equal(got, dot_ref<float>(a, b, c, M, N, K));
}

// 128x64 and 64x128 f32 blocks stage 64 KiB in shared memory: more than the 48 KiB a kernel
// gets without opting in (on the GPU: dynamic shared memory and the attribute above 48 KiB),
// on the tensor cores (tf32) and on FMA (ieee).
TEST_CASE("dot with blocks that need more than 48 KiB of shared memory", "[interp]") {
  const int M = 133, N = 131, K = 150;
  auto a = uniform<float>(M * K, 421, -2, 2);
  auto b = uniform<float>(K * N, 422, -2, 2);
  auto c = poison<float>({M, N}), c_ieee = poison<float>({M, N});
  auto at = tensor<float>(a, {M, K}), bt = tensor<float>(b, {K, N});
  auto grid = tl::grid(tl::cdiv(M, 128), tl::cdiv(N, 128));
  matmul_kernel<float>()[grid].options({.num_warps = 8})(at, bt, c, M, N, K, 128, 128, 64);
  matmul_kernel<float, tl::InputPrecision::ieee>()[grid].options({.num_warps = 8})(at, bt, c_ieee, M, N, K, 128, 128,
                                                                                   64);
  const std::vector<float> zero(M * N, 0.0f);
  require_f32_dot(host<float>(c), a, b, zero, M, N, K);
  require_equal(host<float>(c_ieee), dot_ref<float>(a, b, zero, M, N, K, "ieee"));
}

TEST_CASE("dot with and without an accumulator, on non-square tiles", "[interp]") {
  auto k =
      tl::kernel("dot2", {"a", "b", "c", "out", "out2"},
                 [](tl::Ptr<float> a, tl::Ptr<float> b, tl::Ptr<float> c, tl::Ptr<float> out, tl::Ptr<float> out2) {
                   auto r32 = tl::arange(0, 32), r16 = tl::arange(0, 16), r64 = tl::arange(0, 64);
                   auto x = tl::load(a + r32(_, newaxis) * 16 + r16(newaxis, _));  // [32, 16]
                   auto y = tl::load(b + r16(_, newaxis) * 64 + r64(newaxis, _));  // [16, 64]
                   auto offs = r32(_, newaxis) * 64 + r64(newaxis, _);
                   tl::store(out + offs, tl::dot(x, y, tl::load(c + offs)));
                   tl::store(out2 + offs, tl::dot(x, y));
                 });
  auto a = uniform<float>(32 * 16, 411, -3, 3);
  auto b = uniform<float>(16 * 64, 412, -3, 3);
  auto c = uniform<float>(32 * 64, 413, -3, 3);
  auto out = poison<float>({32, 64}), out2 = poison<float>({32, 64});
  k[tl::grid(1)](tensor<float>(a), tensor<float>(b), tensor<float>(c), out, out2);
  require_f32_dot(host<float>(out), a, b, c, 32, 64, 16);
  require_f32_dot(host<float>(out2), a, b, std::vector<float>(32 * 64, 0.0f), 32, 64, 16);
}

// --- Reductions -----------------------------------------------------------------------------
namespace {
constexpr int kR = 16, kC = 32, kTiles = 3;  // kTiles programs, each reducing one [16, 32] tile

enum Red {
  kSum0,
  kSum1,
  kSumAll,
  kSumNeg,
  kMax0,
  kMax1,
  kMaxAll,
  kMin0,
  kMin1,
  kMinAll,
  kArgmax0,
  kArgmax1,
  kArgmin0,
  kArgmin1,
  kGeneric0,
  kGeneric1,
  kNumRed
};

template <class T>
const tl::Kernel& reduce_kernel() {
  using S = tl::detail::sum_t<T>;
  static const tl::Kernel k =
      tl::kernel("reductions", {"x", "sums", "vals", "idx", "OP"},
                 [](tl::Ptr<T> x, tl::Ptr<S> sums, tl::Ptr<T> vals, tl::Ptr<int32_t> idx, tl::Constexpr OP) {
                   auto pid = tl::program_id(0);
                   auto r = tl::arange(0, kR), c = tl::arange(0, kC);
                   auto v = tl::load(x + pid * (kR * kC) + r(_, newaxis) * kC + c(newaxis, _));
                   auto base = pid * (kR * kC);
                   // The generic reduction: a user lambda, associative and commutative.
                   auto combine = [](tl::Tile<T> p, tl::Tile<T> q) {
                     if constexpr (is_fp<T>)
                       return tl::maximum(p, q);
                     else
                       return p ^ q;
                   };
                   switch (static_cast<int>(OP)) {
                     case kSum0:
                       tl::store(sums + base + c, tl::sum(v, 0));
                       break;
                     case kSum1:
                       tl::store(sums + base + r, tl::sum(v, 1));
                       break;
                     case kSumAll:
                       tl::store(sums + base, tl::sum(v));
                       break;
                     case kSumNeg:
                       tl::store(sums + base + r, tl::sum(v, -1));
                       break;
                     case kMax0:
                       tl::store(vals + base + c, tl::max(v, 0));
                       break;
                     case kMax1:
                       tl::store(vals + base + r, tl::max(v, 1));
                       break;
                     case kMaxAll:
                       tl::store(vals + base, tl::max(v));
                       break;
                     case kMin0:
                       tl::store(vals + base + c, tl::min(v, 0));
                       break;
                     case kMin1:
                       tl::store(vals + base + r, tl::min(v, 1));
                       break;
                     case kMinAll:
                       tl::store(vals + base, tl::min(v));
                       break;
                     case kArgmax0:
                       tl::store(idx + base + c, tl::argmax(v, 0));
                       break;
                     case kArgmax1:
                       tl::store(idx + base + r, tl::argmax(v, 1));
                       break;
                     case kArgmin0:
                       tl::store(idx + base + c, tl::argmin(v, 0));
                       break;
                     case kArgmin1:
                       tl::store(idx + base + r, tl::argmin(v, 1));
                       break;
                     case kGeneric0:
                       tl::store(vals + base + c, tl::reduce(v, 0, combine));
                       break;
                     default:
                       tl::store(vals + base + r, tl::reduce(v, 1, combine));
                       break;
                   }
                 });
  return k;
}

// Values chosen so that every partial sum is exact in T (the result does not depend on the
// order of the reduction), with frequent ties for argmax/argmin.
template <class T>
std::vector<H<T>> reduce_inputs(uint64_t seed) {
  size_t n = kTiles * kR * kC;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
    return random_eighths<T>(n, seed, -4, 4);
  else if constexpr (std::is_same_v<T, tl::f16>)
    return uniform<T>(n, seed, -3, 3);  // rounded to integers below
  else if constexpr (std::is_same_v<T, tl::bf16>)
    return uniform<T>(n, seed, -1, 1);
  else if constexpr (sizeof(T) == 1)
    return uniform<T>(n, seed, std::is_signed_v<T> ? -20 : 0, 20);
  else
    return random_bits<T>(n, seed);
}
}  // namespace

TEMPLATE_TEST_CASE("sum, max, min, argmax, argmin and tl::reduce over each axis", "[interp]", float, double, tl::f16,
                   tl::bf16, int8_t, uint8_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t) {
  using T = TestType;
  using S = tl::detail::sum_t<T>;
  auto x = reduce_inputs<T>(501);
  if constexpr (std::is_same_v<T, tl::f16> || std::is_same_v<T, tl::bf16>)
    for (auto& v : x) v = T(std::round(static_cast<float>(v)));
  if constexpr (!is_fp<T> && sizeof(T) > 1)  // ties for arg reductions in wide integers too
    for (size_t i = 0; i < x.size(); i += 5) x[i] = static_cast<T>(i % 3);
  auto at = [&](int t, int i, int j) { return x[(t * kR + i) * kC + j]; };
  const int total = kTiles * kR * kC;
  for (int op = 0; op < kNumRed; ++op) {
    INFO("op " << op);
    auto sums = poison<S>({total});
    auto vals = poison<T>({total});
    auto idx = poison<int32_t>({total});
    auto want_s = host<S>(sums);
    auto want_v = host<T>(vals);
    auto want_i = host<int32_t>(idx);
    reduce_kernel<T>()[tl::grid(kTiles)](tensor<T>(x), sums, vals, idx, op);
    for (int t = 0; t < kTiles; ++t) {
      int base = t * kR * kC;
      // Sums in double (exact for these inputs) or wrapping unsigned arithmetic for integers.
      auto sum_of = [&](auto pick, int len) {
        if constexpr (is_fp<T>) {
          double s = 0;
          for (int q = 0; q < len; ++q) s += as_double(pick(q));
          return static_cast<H<S>>(round_as<S>(s));
        } else {
          uint64_t s = 0;
          for (int q = 0; q < len; ++q) s += static_cast<uint64_t>(static_cast<int64_t>(pick(q)));
          return static_cast<S>(s);
        }
      };
      auto better = [&](H<T> p, H<T> q, bool is_max) {
        return is_max ? as_double(p) > as_double(q) : as_double(p) < as_double(q);
      };
      auto extreme = [&](auto pick, int len, bool is_max) {
        H<T> e = pick(0);
        for (int q = 1; q < len; ++q)
          if (better(pick(q), e, is_max)) e = pick(q);
        return e;
      };
      auto arg = [&](auto pick, int len, bool is_max) {
        int e = 0;
        for (int q = 1; q < len; ++q)
          if (better(pick(q), pick(e), is_max)) e = q;  // ties keep the smallest index
        return e;
      };
      auto generic = [&](auto pick, int len) {
        H<T> e = pick(0);
        for (int q = 1; q < len; ++q) {
          if constexpr (is_fp<T>)
            e = as_double(pick(q)) > as_double(e) ? pick(q) : e;
          else
            e = static_cast<T>(e ^ pick(q));
        }
        return e;
      };
      for (int j = 0; j < kC; ++j) {
        auto col = [&](int q) { return at(t, q, j); };
        if (op == kSum0) want_s[base + j] = sum_of(col, kR);
        if (op == kMax0) want_v[base + j] = extreme(col, kR, true);
        if (op == kMin0) want_v[base + j] = extreme(col, kR, false);
        if (op == kArgmax0) want_i[base + j] = arg(col, kR, true);
        if (op == kArgmin0) want_i[base + j] = arg(col, kR, false);
        if (op == kGeneric0) want_v[base + j] = generic(col, kR);
      }
      for (int i = 0; i < kR; ++i) {
        auto row = [&](int q) { return at(t, i, q); };
        if (op == kSum1 || op == kSumNeg) want_s[base + i] = sum_of(row, kC);
        if (op == kMax1) want_v[base + i] = extreme(row, kC, true);
        if (op == kMin1) want_v[base + i] = extreme(row, kC, false);
        if (op == kArgmax1) want_i[base + i] = arg(row, kC, true);
        if (op == kArgmin1) want_i[base + i] = arg(row, kC, false);
        if (op == kGeneric1) want_v[base + i] = generic(row, kC);
      }
      auto all = [&](int q) { return x[base + q]; };
      if (op == kSumAll) want_s[base] = sum_of(all, kR * kC);
      if (op == kMaxAll) want_v[base] = extreme(all, kR * kC, true);
      if (op == kMinAll) want_v[base] = extreme(all, kR * kC, false);
    }
    require_equal(host<S>(sums), want_s);
    require_equal(host<T>(vals), want_v);
    require_equal(host<int32_t>(idx), want_i);
  }
}

TEST_CASE("sum of general f32 values is close to the exact sum; max ignores the masked tail", "[interp]") {
  auto k = tl::kernel("rowsum", {"x", "sums", "maxs", "n", "BLOCK"},
                      [](tl::Ptr<float> x, tl::Ptr<float> sums, tl::Ptr<float> maxs, tl::Int n, tl::Constexpr BLOCK) {
                        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                        auto mask = offs < n;
                        tl::store(sums + tl::program_id(0), tl::sum(tl::load(x + offs, mask, 0.0f)));
                        tl::store(maxs + tl::program_id(0), tl::max(tl::load(x + offs, mask, -INFINITY), 0));
                      });
  const int n = 1000, block = 256, blocks = 4;
  auto x = uniform<float>(n, 511, -100, 50);
  auto sums = poison<float>({blocks}), maxs = poison<float>({blocks});
  k[tl::grid(blocks)](tensor<float>(x), sums, maxs, n, block);
  std::vector<double> want(blocks, 0.0);
  std::vector<float> wmax(blocks, -INFINITY);
  for (int i = 0; i < n; ++i) {
    want[i / block] += x[i];
    wmax[i / block] = std::max(wmax[i / block], x[i]);
  }
  require_close(host<float>(sums), want, 1e-3, 1e-5);
  require_equal(host<float>(maxs), wmax);
}

// --- Scans ----------------------------------------------------------------------------------
TEMPLATE_TEST_CASE("cumsum and associative_scan, forward and reverse, over each axis", "[interp]", float, int32_t,
                   int8_t, tl::f16) {
  using T = TestType;
  using S = tl::detail::sum_t<T>;
  auto k = tl::kernel("scans", {"x", "sums", "vals", "OP"},
                      [](tl::Ptr<T> x, tl::Ptr<S> sums, tl::Ptr<T> vals, tl::Constexpr OP) {
                        auto r = tl::arange(0, 8), c = tl::arange(0, 32);
                        auto offs = r(_, newaxis) * 32 + c(newaxis, _);
                        auto v = tl::load(x + offs);
                        auto biggest = [](tl::Tile<T> p, tl::Tile<T> q) { return tl::maximum(p, q); };
                        int op = static_cast<int>(OP);
                        if (op < 4)
                          tl::store(sums + offs, tl::cumsum(v, op % 2, op >= 2));
                        else
                          tl::store(vals + offs, tl::associative_scan(v, op % 2, biggest, op >= 6));
                      });
  std::vector<H<T>> x;
  if constexpr (is_fp<T>)
    x = random_eighths<T>(256, 521, -4, 4);
  else
    x = uniform<T>(256, 521, -60, 60);
  for (int op = 0; op < 8; ++op) {
    INFO("op " << op);
    int axis = op % 2;
    bool reverse = (op / 2) % 2 == 1;
    auto sums = poison<S>({256});
    auto vals = poison<T>({256});
    auto want_s = host<S>(sums);
    auto want_v = host<T>(vals);
    k[tl::grid(1)](tensor<T>(x), sums, vals, op);
    int len = axis == 0 ? 8 : 32, lanes = axis == 0 ? 32 : 8;
    for (int l = 0; l < lanes; ++l) {
      double s = 0;
      double m = -1e300;
      for (int step = 0; step < len; ++step) {
        int q = reverse ? len - 1 - step : step;
        int flat = axis == 0 ? q * 32 + l : l * 32 + q;
        s += as_double(x[flat]);
        m = std::max(m, as_double(x[flat]));
        if (op < 4)
          want_s[flat] = static_cast<H<S>>(round_as<S>(s));
        else
          want_v[flat] = static_cast<H<T>>(round_as<T>(m));
      }
    }
    require_equal(host<S>(sums), want_s);
    require_equal(host<T>(vals), want_v);
  }
}

TEST_CASE("cumsum over 1-D blocks with a masked tail", "[interp]") {
  auto k =
      tl::kernel("cumsum1d", {"x", "out", "rev", "n", "BLOCK"},
                 [](tl::Ptr<int32_t> x, tl::Ptr<int32_t> out, tl::Ptr<int32_t> rev, tl::Int n, tl::Constexpr BLOCK) {
                   auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                   auto mask = offs < n;
                   auto v = tl::load(x + offs, mask, 0);
                   tl::store(out + offs, tl::cumsum(v), mask);
                   tl::store(rev + offs, tl::cumsum(v, 0, true), mask);
                 });
  const int n = 1000, block = 256;
  auto x = uniform<int32_t>(n, 531, -1000, 1000);
  auto out = poison<int32_t>({n}), rev = poison<int32_t>({n});
  k[tl::grid(tl::cdiv(n, block))](tensor<int32_t>(x), out, rev, n, block);
  std::vector<int32_t> want(n), wrev(n);
  for (int b = 0; b < n; b += block) {
    int end = std::min(n, b + block), s = 0;
    for (int i = b; i < end; ++i) want[i] = s += x[i];
    s = 0;
    for (int i = end - 1; i >= b; --i) wrev[i] = s += x[i];
  }
  require_equal(host<int32_t>(out), want);
  require_equal(host<int32_t>(rev), wrev);
}

// --- Atomics --------------------------------------------------------------------------------
namespace {
// Element i of the n-element input applies op to slot i % kSlots; 8 programs of 128 share the
// same kSlots addresses. The old values come back in `olds`.
constexpr int kSlots = 7, kAtomicBlock = 128;

template <class T>
const tl::Kernel& atomic_kernel() {
  static const tl::Kernel k =
      tl::kernel("atomics", {"x", "slots", "olds", "n", "OP", "BLOCK"},
                 [](tl::Ptr<T> x, tl::Ptr<T> slots, tl::Ptr<T> olds, tl::Int n, tl::Constexpr OP, tl::Constexpr BLOCK) {
                   auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                   auto mask = offs < n;
                   auto v = tl::load(x + offs, mask);
                   auto p = slots + offs % kSlots;
                   tl::Tile<T> old = v;
                   switch (static_cast<int>(OP)) {
                     case 0:
                       old = tl::atomic_add(p, v, mask);
                       break;
                     case 1:
                       old = tl::atomic_max(p, v, mask);
                       break;
                     case 2:
                       old = tl::atomic_min(p, v, mask);
                       break;
                     case 3:
                       old = tl::atomic_xchg(p, v, mask);
                       break;
                     default:
                       if constexpr (!is_fp<T>) {
                         if (OP == 4) old = tl::atomic_and(p, v, mask);
                         if (OP == 5) old = tl::atomic_or(p, v, mask);
                         if (OP == 6) old = tl::atomic_xor(p, v, mask);
                       }
                   }
                   tl::store(olds + offs, old, mask);
                 });
  return k;
}
}  // namespace

TEMPLATE_TEST_CASE("atomic add, max, min, xchg, and, or, xor from many programs on the same addresses", "[interp]",
                   int32_t, uint32_t, int64_t, uint64_t, float, double, tl::f16) {
  using T = TestType;
  const int n = 1000;
  std::vector<H<T>> x;
  // Positive (the add chain is increasing), and every partial sum exact in T, whatever the order.
  if constexpr (std::is_same_v<T, tl::f16>)
    for (int8_t v : uniform<int8_t>(n, 541, 1, 4)) x.push_back(T(static_cast<float>(v)));
  else if constexpr (is_fp<T>)
    x = random_eighths<T>(n, 541, 1, 4);
  else
    x = uniform<T>(n, 541, 1, 1000);
  std::vector<H<T>> init(kSlots);
  for (int s = 0; s < kSlots; ++s) init[s] = static_cast<H<T>>(T(static_cast<float>(100 + s)));
  for (int op = 0; op < (is_fp<T> ? 4 : 7); ++op) {
    INFO("op " << op);
    auto slots = tensor<T>(init);
    auto olds = poison<T>({n});
    atomic_kernel<T>()[tl::grid(tl::cdiv(n, kAtomicBlock))](tensor<T>(x), slots, olds, n, op, kAtomicBlock);
    auto got = host<T>(slots);
    auto old = host<T>(olds);
    for (int s = 0; s < kSlots; ++s) {
      // Whatever the order, the updates of one slot form a chain from its initial value to its
      // final value: {olds} + {final} == {initial} + {each old combined with its input}.
      std::multiset<double> lhs{as_double(got[s])}, rhs{as_double(init[s])};
      double fin = as_double(init[s]);
      for (int i = s; i < n; i += kSlots) {
        double o = as_double(old[i]), v = as_double(x[i]);
        lhs.insert(o);
        switch (op) {
          case 0:
            rhs.insert(o + v);
            fin += v;
            break;
          case 1:
            rhs.insert(std::max(o, v));
            fin = std::max(fin, v);
            break;
          case 2:
            rhs.insert(std::min(o, v));
            fin = std::min(fin, v);
            break;
          case 3:
            rhs.insert(v);
            break;
          default:
            if constexpr (!is_fp<T>) {
              auto io = static_cast<T>(old[i]), iv = static_cast<T>(x[i]), f = static_cast<T>(fin);
              T r = op == 4 ? io & iv : op == 5 ? io | iv : io ^ iv;
              rhs.insert(static_cast<double>(r));
              fin = static_cast<double>(op == 4 ? f & iv : op == 5 ? f | iv : f ^ iv);
            }
        }
      }
      INFO("slot " << s);
      CHECK(lhs == rhs);
      if (op != 3) CHECK(as_double(got[s]) == fin);
    }
  }
}

TEST_CASE("atomic_cas lets exactly one program claim each slot", "[interp]") {
  auto k = tl::kernel("claim", {"slots", "olds", "n", "BLOCK"},
                      [](tl::Ptr<int32_t> slots, tl::Ptr<int32_t> olds, tl::Int n, tl::Constexpr BLOCK) {
                        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                        auto old = tl::atomic_cas(slots + offs % kSlots, -1, offs);
                        tl::store(olds + offs, old, offs < n);
                      });
  const int n = 1000;
  auto slots = tensor<int32_t>(std::vector<int32_t>(kSlots, -1));
  auto olds = poison<int32_t>({n});
  k[tl::grid(tl::cdiv(n, kAtomicBlock))](slots, olds, n, kAtomicBlock);
  auto got = host<int32_t>(slots);
  auto old = host<int32_t>(olds);
  for (int s = 0; s < kSlots; ++s) {
    int w = got[s];
    REQUIRE(w >= 0);
    REQUIRE(w % kSlots == s);
    for (int i = s; i < n; i += kSlots) CHECK(old[i] == (i == w ? -1 : w));
  }
}

// Triton's layer-norm-backward pattern: a lock taken with atomic_cas and released with
// atomic_xchg guards a plain load, add and store of a group's partial sums. Atomics have
// acquire-release semantics at GPU scope (docs/language.md), so no update may be lost.
TEST_CASE("a spin lock of atomic_cas and atomic_xchg protects plain loads and stores", "[interp]") {
  constexpr int kGroups = 3, kBlock = 64, kPrograms = 97, kSpins = 4096;
  auto k = tl::kernel("locked_sum", {"x", "partial", "locks", "missed", "G", "BLOCK", "SPINS"},
                      [](tl::Ptr<float> x, tl::Ptr<float> partial, tl::Ptr<int32_t> locks, tl::Ptr<int32_t> missed,
                         tl::Constexpr G, tl::Constexpr BLOCK, tl::Constexpr SPINS) {
                        auto pid = tl::program_id(0);
                        auto cols = tl::arange(0, BLOCK);
                        auto row = tl::load(x + pid * BLOCK + cols);
                        auto g = pid % G;
                        tl::Tile<bool> done = tl::full<bool>({}, false);
                        tl::range(0, SPINS, 1, [&](tl::Int) {
                          tl::if_(!done, [&] {
                            auto old = tl::atomic_cas(locks + g, 0, 1);
                            tl::if_(old == 0, [&] {
                              auto p = partial + g * BLOCK + cols;
                              tl::store(p, tl::load(p) + row);
                              tl::atomic_xchg(locks + g, 0);
                              done = tl::full<bool>({}, true);
                            });
                          });
                        });
                        tl::if_(!done, [&] { tl::atomic_add(missed, 1); });
                      });
  std::vector<float> xs(kPrograms * kBlock);
  std::mt19937 gen(11);
  for (auto& v : xs) v = static_cast<float>(gen() % 1000);  // integers: every order of sums is exact
  auto x = tensor<float>(xs);
  auto partial = tensor<float>(std::vector<float>(kGroups * kBlock, 0.0f));
  auto locks = tensor<int32_t>(std::vector<int32_t>(kGroups, 0));
  auto missed = tensor<int32_t>(std::vector<int32_t>(1, 0));
  k[tl::grid(kPrograms)](x, partial, locks, missed, kGroups, kBlock, kSpins);
  REQUIRE(host<int32_t>(missed)[0] == 0);  // every program got the lock within its spins
  auto got = host<float>(partial);
  for (int g = 0; g < kGroups; ++g)
    for (int c = 0; c < kBlock; ++c) {
      double want = 0;
      for (int p = g; p < kPrograms; p += kGroups) want += xs[static_cast<size_t>(p * kBlock + c)];
      INFO("group " << g << " column " << c);
      CHECK(got[static_cast<size_t>(g * kBlock + c)] == want);
    }
  CHECK(host<int32_t>(locks) == std::vector<int32_t>(kGroups, 0));
}

// --- Block pointers -------------------------------------------------------------------------
TEST_CASE("block pointers: boundary checks, padding and advance in a loop", "[interp]") {
  const int M = 37, N = 53;
  auto copy =
      tl::kernel("bp_copy", {"x", "out", "M", "N"}, [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int M, tl::Int N) {
        auto pm = tl::program_id(0) * 16, pn = tl::program_id(1) * 16;
        auto src = tl::make_block_ptr(x, {M, N}, {N, 1}, {pm, pn}, {16, 16}, {1, 0});
        auto dst = tl::make_block_ptr(out, {M, N}, {N, 1}, {pm, pn}, {16, 16}, {1, 0});
        tl::store(dst, tl::load(src, {0, 1}) + 1.0f, {0, 1});
      });
  auto pad =
      tl::kernel("bp_pad", {"x", "out", "M", "N"}, [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int M, tl::Int N) {
        auto src = tl::make_block_ptr(x, {M, N}, {N, 1}, {32, 48}, {16, 16}, {1, 0});
        auto r = tl::arange(0, 16);
        auto offs = r(_, newaxis) * 16 + r(newaxis, _);
        tl::store(out + offs, tl::load(src, {0, 1}, tl::Padding::nan));
        tl::store(out + 256 + offs, tl::load(src, {0, 1}));
      });
  auto rowsum =
      tl::kernel("bp_rowsum", {"x", "out", "M", "N"}, [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int M, tl::Int N) {
        auto pm = tl::program_id(0) * 16;
        auto bp = tl::make_block_ptr(x, {M, N}, {N, 1}, {pm, 0}, {16, 16}, {1, 0});
        auto acc = tl::zeros<float>({16});
        tl::range(0, N, 16, [&](tl::Int) {
          acc += tl::sum(tl::load(bp, {0, 1}), 1);
          bp = tl::advance(bp, {0, 16});
        });
        auto rows = pm + tl::arange(0, 16);
        tl::store(out + rows, acc, rows < M);
      });
  auto x = random_eighths<float>(M * N, 551, -8, 8);
  auto xt = tensor<float>(x, {M, N});
  {
    auto out = poison<float>({M, N});
    copy[tl::grid(tl::cdiv(M, 16), tl::cdiv(N, 16))](xt, out, M, N);
    std::vector<float> want(M * N);
    for (int i = 0; i < M * N; ++i) want[i] = x[i] + 1.0f;
    require_equal(host<float>(out), want);
  }
  {
    auto out = poison<float>({512});
    pad[tl::grid(1)](xt, out, M, N);
    std::vector<float> want(512);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        bool in = 32 + i < M && 48 + j < N;
        want[i * 16 + j] = in ? x[(32 + i) * N + 48 + j] : NAN;
        want[256 + i * 16 + j] = in ? x[(32 + i) * N + 48 + j] : 0.0f;
      }
    require_equal(host<float>(out), want);
  }
  {
    auto out = poison<float>({M});
    rowsum[tl::grid(tl::cdiv(M, 16))](xt, out, M, N);
    std::vector<float> want(M, 0.0f);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) want[i] += x[i * N + j];
    require_equal(host<float>(out), want);
  }
}

// --- Control flow ---------------------------------------------------------------------------
TEST_CASE("tl::range carries tiles and scalars, nests, and runs zero times when empty", "[interp]") {
  // out[b, c] = sum over i < I, j < J of x[b, i, j, c], plus a loop-carried counter, a 64-bit
  // loop variable and a loop whose bound is a runtime argument (zero trips when trips == 0).
  auto k = tl::kernel(
      "loops", {"x", "out", "counts", "I", "J", "trips"},
      [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Ptr<int64_t> counts, tl::Int I, tl::Int J, tl::Int trips) {
        auto b = tl::program_id(0);
        auto c = tl::arange(0, 16);
        auto acc = tl::zeros<float>({16});
        tl::Int count = 0;
        tl::range(0, I, [&](tl::Int i) {
          auto row = tl::zeros<float>({16});
          tl::range(0, J, [&](tl::Int j) {
            row += tl::load(x + ((b * I + i) * J + j) * 16 + c);
            count = count + 1;
          });
          acc = acc + row;
        });
        tl::store(out + b * 16 + c, acc);
        tl::Int64 total = 0;
        tl::range(tl::Int64(int64_t{3}), int64_t{3} + trips, [&](tl::Int64 t) { total = total + t; });
        tl::Int64 stepped = 0;
        tl::range(1, 20, 4, [&](tl::Int s) { stepped = stepped * 100 + s; });  // 1, 5, 9, 13, 17
        tl::store(counts + b * 3, count.to<int64_t>());
        tl::store(counts + b * 3 + 1, total);
        tl::store(counts + b * 3 + 2, stepped);
      });
  const int B = 3, I = 5, J = 3;
  auto x = random_eighths<float>(B * I * J * 16, 561, -4, 4);
  for (int trips : {0, 4}) {
    auto out = poison<float>({B * 16});
    auto counts = poison<int64_t>({B * 3});
    k[tl::grid(B)](tensor<float>(x), out, counts, I, J, trips);
    std::vector<float> want(B * 16, 0.0f);
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < I; ++i) {
        std::vector<float> row(16, 0.0f);
        for (int j = 0; j < J; ++j)
          for (int c = 0; c < 16; ++c) row[c] += x[((b * I + i) * J + j) * 16 + c];
        for (int c = 0; c < 16; ++c) want[b * 16 + c] += row[c];
      }
    require_equal(host<float>(out), want);
    int64_t total = 0;
    for (int t = 3; t < 3 + trips; ++t) total += t;
    std::vector<int64_t> wc;
    for (int b = 0; b < B; ++b) wc.insert(wc.end(), {I * J, total, 105091317});
    require_equal(host<int64_t>(counts), wc);
  }
}

TEST_CASE("tl::if_ picks a branch per program; variables assigned in it flow out", "[interp]") {
  auto k = tl::kernel("branches", {"x", "out", "n", "BLOCK"},
                      [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int n, tl::Constexpr BLOCK) {
                        auto pid = tl::program_id(0);
                        auto offs = pid * BLOCK + tl::arange(0, BLOCK);
                        auto mask = offs < n;
                        auto v = tl::load(x + offs, mask);
                        tl::Float scale = 1.0f;
                        tl::if_(
                            pid % 2 == 0, [&] { v = v * 2; },
                            [&] {
                              v = v - 1;
                              scale = 3.0f;
                            });
                        tl::if_(pid == 3, [&] { v = -v; });  // no else
                        tl::range(0, 2, [&](tl::Int i) {
                          tl::if_(i == 1, [&] { v = v + 0.5f; });  // inside a loop
                        });
                        tl::store(out + offs, v * scale, mask);
                      });
  const int n = 1000, block = 128;
  auto x = random_eighths<float>(n, 571, -8, 8);
  auto out = poison<float>({n});
  k[tl::grid(tl::cdiv(n, block))](tensor<float>(x), out, n, block);
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) {
    int pid = i / block;
    float v = pid % 2 == 0 ? x[i] * 2 : x[i] - 1, scale = pid % 2 == 0 ? 1.0f : 3.0f;
    if (pid == 3) v = -v;
    v += 0.5f;
    want[i] = v * scale;
  }
  require_equal(host<float>(out), want);
}

// --- Random numbers -------------------------------------------------------------------------
TEST_CASE("Philox4x32-10 matches the Random123 known-answer vectors", "[interp]") {
  using tiledsl::runtime::philox4x32;
  CHECK(philox4x32({0, 0, 0, 0}, {0, 0}, 10) ==
        std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}, 10) ==
        std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  // The kernel's randint4x with seed 0 at offset 0 is the first vector.
  auto k = tl::kernel("kat", {"out"}, [](tl::Ptr<uint32_t> out) {
    auto r = tl::randint4x(0, tl::zeros<int32_t>({1}));
    for (int q = 0; q < 4; ++q) tl::store(out + q + tl::arange(0, 1), r[static_cast<size_t>(q)]);
  });
  auto out = poison<uint32_t>({4});
  k[tl::grid(1)](out);
  require_equal(host<uint32_t>(out), std::vector<uint32_t>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
}

// 64-bit offsets run Philox4x64 (as Triton's philox on u64 counters), key (seed, 0); n_rounds
// sets the rounds of either width. rand on 64 bits folds the i64 and scales by 2^-63 in f32.
TEST_CASE("Philox4x64 for 64-bit offsets and n_rounds, against known answers", "[interp]") {
  using tiledsl::runtime::philox4x32;
  using tiledsl::runtime::philox4x64;
  CHECK(philox4x64({0, 0, 0, 0}, {0, 0}, 10) == std::array<uint64_t, 4>{0x16554d9eca36314cull, 0xdb20fe9d672d0fdcull,
                                                                        0xd7e772cee186176bull, 0x7e68b68aec7ba23bull});
  const uint64_t ones = ~uint64_t{0};
  CHECK(philox4x64({ones, ones, ones, ones}, {ones, ones}, 10) ==
        std::array<uint64_t, 4>{0x87b092c3013fe90bull, 0x438c3c67be8d0224ull, 0x9cc7d7c69cd777b6ull,
                                0xa09caebf594f0ba0ull});
  auto k = tl::kernel("rng64", {"offsets", "bits", "bits7", "small7", "u", "seed", "n", "BLOCK"},
                      [](tl::Ptr<int64_t> offsets, tl::Ptr<uint64_t> bits, tl::Ptr<uint64_t> bits7,
                         tl::Ptr<uint32_t> small7, tl::Ptr<float> u, tl::Int64 seed, tl::Int n, tl::Constexpr BLOCK) {
                        auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                        auto mask = i < n;
                        auto offs = tl::load(offsets + i, mask, 0);
                        auto r = tl::randint4x(seed, offs);
                        static_assert(std::is_same_v<decltype(r[0]), tl::Tile<uint64_t>&>);
                        for (int q = 0; q < 4; ++q) tl::store(bits + i * 4 + q, r[static_cast<size_t>(q)], mask);
                        tl::store(bits7 + i, tl::randint(seed, offs, 7), mask);
                        tl::store(small7 + i, tl::randint(seed, offs.to<int32_t>(), 7), mask);
                        tl::store(u + i, tl::rand(seed, offs), mask);
                      });
  const int n = 777, block = 256;
  std::vector<int64_t> offsets(n);
  std::mt19937_64 gen(981);
  for (auto& o : offsets) o = static_cast<int64_t>(gen() >> 1);  // past 2^32: both halves count
  offsets[0] = 0;
  for (int64_t seed : {int64_t{0}, int64_t{0x123456789abcdefLL}}) {
    INFO("seed " << seed);
    auto bits = poison<uint64_t>({4 * n}), bits7 = poison<uint64_t>({n}), u = poison<float>({n});
    auto small7 = poison<uint32_t>({n});
    k[tl::grid(tl::cdiv(n, block))](tensor<int64_t>(offsets), bits, bits7, small7, u, seed, n, block);
    std::vector<uint64_t> want(4 * n), want7(n);
    std::vector<uint32_t> want_small(n);
    std::vector<float> wu(n);
    const uint64_t s = static_cast<uint64_t>(seed);
    for (int i = 0; i < n; ++i) {
      const uint64_t o = static_cast<uint64_t>(offsets[i]);
      auto r = philox4x64({o, 0, 0, 0}, {s, 0}, 10);
      for (int q = 0; q < 4; ++q) want[4 * i + q] = r[static_cast<size_t>(q)];
      want7[i] = philox4x64({o, 0, 0, 0}, {s, 0}, 7)[0];
      want_small[i] = philox4x32({static_cast<uint32_t>(o), 0, 0, 0},
                                 {static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32)}, 7)[0];
      const int64_t x = static_cast<int64_t>(r[0]);
      wu[i] = static_cast<float>(x < 0 ? -(x + 1) : x) * 1.0842020432385337e-19f;
      REQUIRE(wu[i] < 1.0f);
    }
    if (seed == 0) CHECK(host<uint64_t>(bits)[0] == 0x16554d9eca36314cull);
    require_equal(host<uint64_t>(bits), want);
    require_equal(host<uint64_t>(bits7), want7);
    require_equal(host<uint32_t>(small7), want_small);
    require_equal(host<float>(u), wu);
  }
}

TEST_CASE("randint, rand and randn are Philox bit for bit, with plausible statistics", "[interp]") {
  auto k = tl::kernel("rng", {"ints", "ints4", "u", "z", "seed", "n", "BLOCK"},
                      [](tl::Ptr<uint32_t> ints, tl::Ptr<uint32_t> ints4, tl::Ptr<float> u, tl::Ptr<float> z,
                         tl::Int seed, tl::Int n, tl::Constexpr BLOCK) {
                        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                        auto mask = offs < n;
                        tl::store(ints + offs, tl::randint(seed, offs), mask);
                        auto r = tl::randint4x(seed, offs);
                        for (int q = 0; q < 4; ++q) tl::store(ints4 + offs * 4 + q, r[static_cast<size_t>(q)], mask);
                        tl::store(u + offs, tl::rand(seed, offs), mask);
                        tl::store(z + offs, tl::randn(seed, offs), mask);
                      });
  const int n = 5000, block = 1024;
  for (int seed : {0, 12345, 2147483647}) {
    INFO("seed " << seed);
    auto ints = poison<uint32_t>({n}), ints4 = poison<uint32_t>({4 * n});
    auto u = poison<float>({n}), z = poison<float>({n});
    k[tl::grid(tl::cdiv(n, block))](ints, ints4, u, z, seed, n, block);
    std::vector<uint32_t> want(n), want4(4 * n);
    std::vector<float> wu(n);
    for (int i = 0; i < n; ++i) {
      auto r = tiledsl::runtime::philox4x32({static_cast<uint32_t>(i), 0, 0, 0}, {static_cast<uint32_t>(seed), 0}, 10);
      want[i] = r[0];
      for (int q = 0; q < 4; ++q) want4[4 * i + q] = r[static_cast<size_t>(q)];
      int32_t s = static_cast<int32_t>(r[0]);
      wu[i] = static_cast<float>(s < 0 ? ~s : s) * 4.6566127342e-10f;  // documented u32 -> [0, 1)
    }
    require_equal(host<uint32_t>(ints), want);
    require_equal(host<uint32_t>(ints4), want4);
    auto got_u = host<float>(u);
    require_equal(got_u, wu);
    double mean = 0;
    for (float v : got_u) {
      REQUIRE(v >= 0.0f);
      REQUIRE(v < 1.0f);
      mean += v;
    }
    mean /= n;
    CHECK(std::fabs(mean - 0.5) < 0.02);  // sd of the mean: 0.004
    auto got_z = host<float>(z);
    double zm = 0, zv = 0;
    for (float v : got_z) {
      REQUIRE(std::isfinite(v));
      zm += v;
    }
    zm /= n;
    for (float v : got_z) zv += (v - zm) * (v - zm);
    zv /= n - 1;
    CHECK(std::fabs(zm) < 0.06);        // sd of the mean: 0.014
    CHECK(std::fabs(zv - 1.0) < 0.08);  // sd of the variance: 0.02
  }
}

// --- Printing and hints ---------------------------------------------------------------------
TEST_CASE("device_print writes each element with its program and index", "[interp]") {
  auto k = tl::kernel("printer", {"x", "f"}, [](tl::Ptr<int32_t> x, tl::Ptr<float> f) {
    auto i = tl::arange(0, 4);
    auto v = tl::load(x + tl::program_id(0) * 4 + i);
    tl::device_print(tl::Print("v="), v);
    tl::device_print(tl::Print("h=", true), v + 0);
    tl::device_print(tl::Print("f="), tl::load(f + i));
  });
  auto x = tensor<int32_t>({3, -1, 255, 7, 10, 11, 12, 13});
  auto f = tensor<float>({0.5f, -2.25f, 1e-3f, 7.0f});
  std::string s = captured_stdout([&] {
    k[tl::grid(2)](x, f);
    host<int32_t>(x);  // a blocking copy: the GPU's printf buffer is written out
  });
  CHECK(s.find("pid (0, 0, 0) idx [0] v=3\n") != std::string::npos);
  CHECK(s.find("pid (0, 0, 0) idx [1] v=-1\n") != std::string::npos);
  CHECK(s.find("pid (0, 0, 0) idx [2] h=0xff\n") != std::string::npos);
  CHECK(s.find("pid (1, 0, 0) idx [3] v=13\n") != std::string::npos);
  CHECK(s.find("pid (1, 0, 0) idx [1] f=-2.25\n") != std::string::npos);
  CHECK(s.find("pid (0, 0, 0) idx [2] f=0.001\n") != std::string::npos);
  // 2 programs x 3 prints x 4 elements, each once (one owner per element on the GPU too)
  CHECK(std::count(s.begin(), s.end(), '\n') == 24);
}

TEST_CASE("multiple_of and max_contiguous are the identity", "[interp]") {
  auto k = tl::kernel("hints", {"x", "out", "n", "BLOCK"},
                      [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int n, tl::Constexpr BLOCK) {
                        auto start = tl::multiple_of(tl::program_id(0) * BLOCK, {16});
                        auto offs = tl::max_contiguous(tl::multiple_of(start + tl::arange(0, BLOCK), {16}), {BLOCK});
                        auto mask = offs < n;
                        tl::store(out + offs, tl::load(x + offs, mask), mask);
                      });
  const int n = 1000;
  auto x = uniform<float>(n, 581, -1, 1);
  auto out = poison<float>({n});
  k[tl::grid(tl::cdiv(n, 256))](tensor<float>(x), out, n, 256);
  require_equal(host<float>(out), x);
}

// 70 parameters: a launch packs every one (more than the 64 the launcher and the autotuner keep
// in fixed storage), directly and through the autotuner (which adds the tuned constexpr).
// clang-format off
TEST_CASE("a kernel with 70 parameters gets every argument, tuned or not", "[interp]") {
  auto k = tl::kernel(
      "many", {"out", "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10", "a11", "a12", "a13", "a14", "a15", "a16", "a17", "a18", "a19", "a20", "a21", "a22", "a23", "a24", "a25", "a26", "a27", "a28", "a29", "a30", "a31", "a32", "a33", "a34", "a35", "a36", "a37", "a38", "a39", "a40", "a41", "a42", "a43", "a44", "a45", "a46", "a47", "a48", "a49", "a50", "a51", "a52", "a53", "a54", "a55", "a56", "a57", "a58", "a59", "a60", "a61", "a62", "a63", "a64", "a65", "a66", "a67", "SCALE"},
      [](tl::Ptr<int32_t> out, tl::Int a0, tl::Int a1, tl::Int a2, tl::Int a3, tl::Int a4, tl::Int a5, tl::Int a6, tl::Int a7, tl::Int a8, tl::Int a9, tl::Int a10, tl::Int a11, tl::Int a12, tl::Int a13, tl::Int a14, tl::Int a15, tl::Int a16, tl::Int a17, tl::Int a18, tl::Int a19, tl::Int a20, tl::Int a21, tl::Int a22, tl::Int a23, tl::Int a24, tl::Int a25, tl::Int a26, tl::Int a27, tl::Int a28, tl::Int a29, tl::Int a30, tl::Int a31, tl::Int a32, tl::Int a33, tl::Int a34, tl::Int a35, tl::Int a36, tl::Int a37, tl::Int a38, tl::Int a39, tl::Int a40, tl::Int a41, tl::Int a42, tl::Int a43, tl::Int a44, tl::Int a45, tl::Int a46, tl::Int a47, tl::Int a48, tl::Int a49, tl::Int a50, tl::Int a51, tl::Int a52, tl::Int a53, tl::Int a54, tl::Int a55, tl::Int a56, tl::Int a57, tl::Int a58, tl::Int a59, tl::Int a60, tl::Int a61, tl::Int a62, tl::Int a63, tl::Int a64, tl::Int a65, tl::Int a66, tl::Int a67, tl::Constexpr SCALE) {
        tl::store(out + 0, a0 * SCALE + 0);
        tl::store(out + 1, a1 * SCALE + 1);
        tl::store(out + 2, a2 * SCALE + 2);
        tl::store(out + 3, a3 * SCALE + 3);
        tl::store(out + 4, a4 * SCALE + 4);
        tl::store(out + 5, a5 * SCALE + 5);
        tl::store(out + 6, a6 * SCALE + 6);
        tl::store(out + 7, a7 * SCALE + 7);
        tl::store(out + 8, a8 * SCALE + 8);
        tl::store(out + 9, a9 * SCALE + 9);
        tl::store(out + 10, a10 * SCALE + 10);
        tl::store(out + 11, a11 * SCALE + 11);
        tl::store(out + 12, a12 * SCALE + 12);
        tl::store(out + 13, a13 * SCALE + 13);
        tl::store(out + 14, a14 * SCALE + 14);
        tl::store(out + 15, a15 * SCALE + 15);
        tl::store(out + 16, a16 * SCALE + 16);
        tl::store(out + 17, a17 * SCALE + 17);
        tl::store(out + 18, a18 * SCALE + 18);
        tl::store(out + 19, a19 * SCALE + 19);
        tl::store(out + 20, a20 * SCALE + 20);
        tl::store(out + 21, a21 * SCALE + 21);
        tl::store(out + 22, a22 * SCALE + 22);
        tl::store(out + 23, a23 * SCALE + 23);
        tl::store(out + 24, a24 * SCALE + 24);
        tl::store(out + 25, a25 * SCALE + 25);
        tl::store(out + 26, a26 * SCALE + 26);
        tl::store(out + 27, a27 * SCALE + 27);
        tl::store(out + 28, a28 * SCALE + 28);
        tl::store(out + 29, a29 * SCALE + 29);
        tl::store(out + 30, a30 * SCALE + 30);
        tl::store(out + 31, a31 * SCALE + 31);
        tl::store(out + 32, a32 * SCALE + 32);
        tl::store(out + 33, a33 * SCALE + 33);
        tl::store(out + 34, a34 * SCALE + 34);
        tl::store(out + 35, a35 * SCALE + 35);
        tl::store(out + 36, a36 * SCALE + 36);
        tl::store(out + 37, a37 * SCALE + 37);
        tl::store(out + 38, a38 * SCALE + 38);
        tl::store(out + 39, a39 * SCALE + 39);
        tl::store(out + 40, a40 * SCALE + 40);
        tl::store(out + 41, a41 * SCALE + 41);
        tl::store(out + 42, a42 * SCALE + 42);
        tl::store(out + 43, a43 * SCALE + 43);
        tl::store(out + 44, a44 * SCALE + 44);
        tl::store(out + 45, a45 * SCALE + 45);
        tl::store(out + 46, a46 * SCALE + 46);
        tl::store(out + 47, a47 * SCALE + 47);
        tl::store(out + 48, a48 * SCALE + 48);
        tl::store(out + 49, a49 * SCALE + 49);
        tl::store(out + 50, a50 * SCALE + 50);
        tl::store(out + 51, a51 * SCALE + 51);
        tl::store(out + 52, a52 * SCALE + 52);
        tl::store(out + 53, a53 * SCALE + 53);
        tl::store(out + 54, a54 * SCALE + 54);
        tl::store(out + 55, a55 * SCALE + 55);
        tl::store(out + 56, a56 * SCALE + 56);
        tl::store(out + 57, a57 * SCALE + 57);
        tl::store(out + 58, a58 * SCALE + 58);
        tl::store(out + 59, a59 * SCALE + 59);
        tl::store(out + 60, a60 * SCALE + 60);
        tl::store(out + 61, a61 * SCALE + 61);
        tl::store(out + 62, a62 * SCALE + 62);
        tl::store(out + 63, a63 * SCALE + 63);
        tl::store(out + 64, a64 * SCALE + 64);
        tl::store(out + 65, a65 * SCALE + 65);
        tl::store(out + 66, a66 * SCALE + 66);
        tl::store(out + 67, a67 * SCALE + 67);
      });
  std::vector<int32_t> v(68);
  std::mt19937 g(71);
  for (auto& x : v) x = static_cast<int32_t>(g() % 100000) - 50000;
  auto check = [&](const tl::Tensor& out, int scale) {
    auto got = host<int32_t>(out);
    for (int i = 0; i < 68; ++i) REQUIRE(got[static_cast<size_t>(i)] == v[static_cast<size_t>(i)] * scale + i);
  };
  auto out = poison<int32_t>({68});
  k[tl::grid(1)](out, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15], v[16], v[17], v[18], v[19], v[20], v[21], v[22], v[23], v[24], v[25], v[26], v[27], v[28], v[29], v[30], v[31], v[32], v[33], v[34], v[35], v[36], v[37], v[38], v[39], v[40], v[41], v[42], v[43], v[44], v[45], v[46], v[47], v[48], v[49], v[50], v[51], v[52], v[53], v[54], v[55], v[56], v[57], v[58], v[59], v[60], v[61], v[62], v[63], v[64], v[65], v[66], v[67], 3);
  check(out, 3);
  auto tuned = tl::autotune(k, {tl::Config{{{"SCALE", 5}}, 4, 3}}, {});
  auto out2 = poison<int32_t>({68});
  tuned[tl::grid(1)](out2, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15], v[16], v[17], v[18], v[19], v[20], v[21], v[22], v[23], v[24], v[25], v[26], v[27], v[28], v[29], v[30], v[31], v[32], v[33], v[34], v[35], v[36], v[37], v[38], v[39], v[40], v[41], v[42], v[43], v[44], v[45], v[46], v[47], v[48], v[49], v[50], v[51], v[52], v[53], v[54], v[55], v[56], v[57], v[58], v[59], v[60], v[61], v[62], v[63], v[64], v[65], v[66], v[67]);
  check(out2, 5);
}
// clang-format on

// --- Tracing and threads --------------------------------------------------------------------
TEST_CASE("one trace per specialisation key", "[interp]") {
  auto k = tl::kernel("scale", {"x", "out", "n", "BLOCK"},
                      [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int n, tl::Constexpr BLOCK) {
                        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                        auto mask = offs < n;
                        tl::store(out + offs, tl::load(x + offs, mask) * 3, mask);
                      });
  auto x = uniform<float>(1024, 591, -1, 1);
  auto xt = tensor<float>(x);
  auto run = [&](int n, int block) {
    auto out = tensor<float>(std::vector<float>(1024, -5.0f));
    k[tl::grid(tl::cdiv(n, block))](xt, out, n, block);
    auto got = host<float>(out);
    for (int i = 0; i < 1024; ++i) REQUIRE(got[i] == (i < n ? x[i] * 3 : -5.0f));
  };
  CHECK(k.trace_count() == 0);
  run(1000, 256);
  CHECK(k.trace_count() == 1);
  run(1000, 256);
  CHECK(k.trace_count() == 1);  // same key: cached
  run(999, 256);
  CHECK(k.trace_count() == 1);  // still not a multiple of 16
  run(1000, 128);
  CHECK(k.trace_count() == 2);  // another constexpr
  run(1008, 256);
  CHECK(k.trace_count() == 3);  // n now divisible by 16
  run(1024, 256);
  CHECK(k.trace_count() == 3);
  run(1, 256);
  CHECK(k.trace_count() == 4);  // n == 1 is its own specialisation
  run(1000, 128);
  CHECK(k.trace_count() == 4);
}

TEST_CASE("results do not depend on the interpreter's thread count", "[interp]") {
  const char* saved = std::getenv("TILEDSL_INTERPRETER_THREADS");
  std::string saved_value = saved ? saved : "";
  const int M = 70, N = 45, K = 33;
  auto a = uniform<float>(M * K, 601, -1, 1);
  auto b = uniform<float>(K * N, 602, -1, 1);
  auto run = [&](const char* threads) {
    setenv("TILEDSL_INTERPRETER_THREADS", threads, 1);
    REQUIRE(tiledsl::runtime::default_interpreter_threads() == std::atoi(threads));
    auto c = poison<float>({M, N});
    matmul_kernel<float>()[tl::grid(tl::cdiv(M, 16), tl::cdiv(N, 16))](
        tensor<float>(a, {M, K}), tensor<float>(b, {K, N}), c, M, N, K, 16, 16, 16);
    return host<float>(c);
  };
  auto one = run("1");
  auto four = run("4");
  if (saved)
    setenv("TILEDSL_INTERPRETER_THREADS", saved_value.c_str(), 1);
  else
    unsetenv("TILEDSL_INTERPRETER_THREADS");
  REQUIRE(std::memcmp(one.data(), four.data(), one.size() * sizeof(float)) == 0);
  require_equal(one, dot_ref<float>(a, b, std::vector<float>(M * N, 0.0f), M, N, K));
}
