// Control flow beyond tl::range and tl::if_: tl::while_ (runtime conditions, carried scalars and
// tiles, a spin lock), tl::return_if (Triton's early `return`) and tl::debug_barrier, on both
// backends (TILEDSL_BACKEND=gpu runs these [interp] cases on the GPU), against host references.
#include <algorithm>
#include <map>
#include <random>
#include <sstream>

#include "ops_util.h"

using namespace opt;
using tl::_;
using tl::newaxis;

namespace {
constexpr int kGroups = 3, kBlock = 64;

// One program per element: the number of Collatz steps to reach 1, and the largest value seen.
const tl::Kernel collatz = tl::kernel("collatz", {"x", "steps", "peak"},
                                      [](tl::Ptr<int32_t> x, tl::Ptr<int32_t> steps, tl::Ptr<int32_t> peak) {
                                        auto pid = tl::program_id(0);
                                        tl::Int n = tl::load(x + pid);
                                        tl::Int count = 0;
                                        tl::Int top = n;
                                        tl::while_([&] { return n != 1; },
                                                   [&] {
                                                     n = tl::where(n % 2 == 0, n / 2, 3 * n + 1);
                                                     top = tl::maximum(top, n);
                                                     count += 1;
                                                   });
                                        tl::store(steps + pid, count);
                                        tl::store(peak + pid, top);
                                      });

// Triton's `while tl.atomic_cas(lock, 0, 1) == 1: pass`: every program adds its row to its
// group's partial sums under the group's lock with plain loads and stores. WEAK 0: the
// atomics' default order (acq_rel); 1: the weakest that make the lock correct, acquire on
// taking it and release on giving it back.
const tl::Kernel spin_lock = tl::kernel("spin_lock", {"x", "partial", "locks", "G", "WEAK", "BLOCK"},
                                        [](tl::Ptr<float> x, tl::Ptr<float> partial, tl::Ptr<int32_t> locks,
                                           tl::Constexpr G, tl::Constexpr WEAK, tl::Constexpr BLOCK) {
                                          auto pid = tl::program_id(0);
                                          auto cols = tl::arange(0, BLOCK);
                                          auto row = tl::load(x + pid * BLOCK + cols);
                                          auto g = pid % G;
                                          const tl::AtomicOptions take{WEAK ? tl::Sem::acquire : tl::Sem::acq_rel};
                                          const tl::AtomicOptions give{WEAK ? tl::Sem::release : tl::Sem::acq_rel};
                                          tl::while_([&] { return tl::atomic_cas(locks + g, 0, 1, take) == 1; }, [] {});
                                          auto p = partial + g * BLOCK + cols;
                                          tl::store(p, tl::load(p) + row);
                                          tl::atomic_xchg(locks + g, 0, give);
                                        });

// A barrier between a load and a store: nothing else in it needs one.
const tl::Kernel with_barrier = tl::kernel("with_barrier", {"x", "out", "n", "BLOCK"},
                                           [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int n, tl::Constexpr BLOCK) {
                                             auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                                             auto v = tl::load(x + offs, offs < n);
                                             tl::debug_barrier();
                                             tl::store(out + offs, v + 1, offs < n);
                                           });

const tl::Kernel early_return =
    tl::kernel("early_return", {"x", "out", "ran", "n", "BLOCK"},
               [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Ptr<int32_t> ran, tl::Int n, tl::Constexpr BLOCK) {
                 auto pid = tl::program_id(0);
                 tl::return_if(pid * BLOCK >= n);  // a grid larger than the data
                 auto offs = pid * BLOCK + tl::arange(0, BLOCK);
                 auto mask = offs < n;
                 auto v = tl::load(x + offs, mask);
                 tl::Float total = tl::sum(v, 0);
                 tl::store(ran + pid, 1);
                 tl::return_if(total < 0);  // a second one, on a loaded value
                 tl::range(0, 3, [&](tl::Int) { v = v * 2; });
                 tl::store(out + offs, v, mask);
                 tl::store(ran + pid, 2);
               });

// Returns inside tl::if_ branches, as Triton allows them: one two ifs deep, one after a nested
// if_, one in an else branch. A return skips the rest of its branch and everything after the
// if_; what the branch assigns after a return (stage, scale) flows out of it when none is taken.
const tl::Kernel nested_return =
    tl::kernel("nested_return", {"x", "out", "ran", "n", "BLOCK"},
               [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Ptr<int32_t> ran, tl::Int n, tl::Constexpr BLOCK) {
                 auto pid = tl::program_id(0);
                 auto offs = pid * BLOCK + tl::arange(0, BLOCK);
                 auto mask = offs < n;
                 auto v = tl::load(x + offs, mask);
                 tl::Float total = tl::sum(v, 0);
                 tl::Int stage = 1;
                 tl::Float scale = 1.0f;
                 tl::if_(
                     pid % 2 == 0,
                     [&] {
                       stage = stage + 1;
                       tl::store(ran + pid, stage);
                       tl::if_(total < 0, [&] {
                         stage = stage + 1;
                         tl::store(ran + pid, stage);
                         tl::return_if(total < -4);
                         stage = stage + 10;
                         scale = scale * 3;
                       });
                       tl::return_if(total > 6);
                       stage = stage + 100;
                       scale = scale * 2;
                     },
                     [&] {
                       tl::store(ran + pid, stage);
                       tl::return_if(total > 4);
                       stage = stage + 1000;
                       scale = -scale;
                     });
                 tl::store(out + offs, v * scale, mask);
                 tl::store(ran + pid, stage + 10000);
               });

// Edge cases of returns in branches: a return_if as a branch's last statement, a branch whose
// only statement is an if_ that returns, and a store after the if_ that each return skips.
const tl::Kernel last_return = tl::kernel("last_return", {"out"}, [](tl::Ptr<int32_t> out) {
  auto pid = tl::program_id(0);
  tl::if_(
      pid % 3 == 0,
      [&] {
        tl::store(out + pid, 1);
        tl::return_if(pid < 100);
      },
      [&] { tl::if_(pid % 3 == 1, [&] { tl::return_if(pid >= 0); }); });
  tl::store(out + pid, 2);
});
}  // namespace

TEST_CASE("tl::while_ runs on a runtime condition with carried scalars", "[interp]") {
  const int n = 301;
  auto x = uniform<int32_t>(n, 811, 1, 5000);
  x[7] = 1;  // a loop that runs no iteration
  auto steps = poison<int32_t>({n});
  auto peak = poison<int32_t>({n});
  collatz[tl::grid(n)](tensor<int32_t>(x), steps, peak);
  std::vector<int32_t> want_steps(n, 0), want_peak(n);
  for (int i = 0; i < n; ++i) {
    int32_t v = x[i], top = v;
    for (; v != 1; ++want_steps[i]) top = std::max(top, v = v % 2 == 0 ? v / 2 : 3 * v + 1);
    want_peak[i] = top;
  }
  require_equal(host<int32_t>(steps), want_steps);
  require_equal(host<int32_t>(peak), want_peak);
}

TEST_CASE("tl::while_ carries tiles, and the condition reads them", "[interp]") {
  // Halve a masked row until its largest magnitude is below `limit`; count the halvings.
  auto k = tl::kernel("halve", {"x", "out", "rounds", "n", "limit", "BLOCK"},
                      [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Ptr<int32_t> rounds, tl::Int n, tl::Float limit,
                         tl::Constexpr BLOCK) {
                        auto pid = tl::program_id(0);
                        auto cols = tl::arange(0, BLOCK);
                        auto mask = cols < n;
                        auto row = tl::load(x + pid * n + cols, mask, 0.0f);
                        tl::Int r = 0;
                        tl::while_([&] { return tl::max(tl::abs(row), 0) >= limit; },
                                   [&] {
                                     row = row * 0.5f;
                                     r = r + 1;
                                   });
                        tl::store(out + pid * n + cols, row, mask);
                        tl::store(rounds + pid, r);
                      });
  const int rows = 37, n = 93;
  const float limit = 0.75f;
  auto x = random_eighths<float>(rows * n, 823, -300, 300);
  auto out = poison<float>({rows * n});
  auto rounds = poison<int32_t>({rows});
  k[tl::grid(rows)](tensor<float>(x), out, rounds, n, limit, 128);
  std::vector<float> want(x);
  std::vector<int32_t> want_rounds(rows, 0);
  for (int r = 0; r < rows; ++r) {
    auto first = want.begin() + r * n;
    auto magnitude = [&] {
      float m = 0;
      for (int c = 0; c < n; ++c) m = std::max(m, std::fabs(first[c]));
      return m;
    };
    while (magnitude() >= limit) {
      for (int c = 0; c < n; ++c) first[c] *= 0.5f;
      ++want_rounds[r];
    }
  }
  require_equal(host<float>(out), want);
  require_equal(host<int32_t>(rounds), want_rounds);
}

// No update may be lost, in either order (docs/language.md).
TEST_CASE("a spin lock is a tl::while_ of atomic_cas", "[interp]") {
  constexpr int kPrograms = 97;
  auto x = random_eighths<float>(kPrograms * kBlock, 829, -4, 4);
  std::vector<float> want(kGroups * kBlock, 0.0f);
  for (int p = 0; p < kPrograms; ++p)
    for (int c = 0; c < kBlock; ++c) want[(p % kGroups) * kBlock + c] += x[p * kBlock + c];
  for (int weak : {0, 1}) {
    INFO("weakest orders: " << weak);
    auto partial = tensor<float>(std::vector<float>(kGroups * kBlock, 0.0f));
    auto locks = tensor<int32_t>(std::vector<int32_t>(kGroups, 0));
    spin_lock[tl::grid(kPrograms)](tensor<float>(x), partial, locks, kGroups, weak, kBlock);
    // Sums of eighths of this size are exact in any order.
    require_equal(host<float>(partial), want);
    require_equal(host<int32_t>(locks), std::vector<int32_t>(kGroups, 0));
  }
}

TEST_CASE("tl::return_if ends a program early, as Triton's `if ...: return`", "[interp]") {
  const int n = 1003, block = 64, programs = tl::cdiv(n, block) + 5;
  auto x = random_eighths<float>(n, 839, -8, 9);
  auto out = tensor<float>(std::vector<float>(n, -77.0f));
  auto ran = tensor<int32_t>(std::vector<int32_t>(programs, 0));
  early_return[tl::grid(programs)](tensor<float>(x), out, ran, n, block);
  std::vector<float> want(n, -77.0f);
  std::vector<int32_t> want_ran(programs, 0);
  for (int p = 0; p * block < n; ++p) {
    float total = 0;
    for (int i = p * block; i < std::min(n, (p + 1) * block); ++i) total += x[i];
    want_ran[p] = total < 0 ? 1 : 2;
    if (total < 0) continue;
    for (int i = p * block; i < std::min(n, (p + 1) * block); ++i) want[i] = x[i] * 8;
  }
  REQUIRE(std::count(want_ran.begin(), want_ran.end(), 1) > 0);  // both exits are taken
  REQUIRE(std::count(want_ran.begin(), want_ran.end(), 2) > 0);
  require_equal(host<float>(out), want);
  require_equal(host<int32_t>(ran), want_ran);
}

TEST_CASE("tl::return_if inside tl::if_ branches, nested, skips what follows the branch", "[interp]") {
  const int n = 4001, block = 32, programs = tl::cdiv(n, block);
  auto x = random_eighths<float>(n, 863, -1, 1);
  auto out = tensor<float>(std::vector<float>(n, -77.0f));
  auto ran = tensor<int32_t>(std::vector<int32_t>(programs, 0));
  nested_return[tl::grid(programs)](tensor<float>(x), out, ran, n, block);
  std::vector<float> want(n, -77.0f);
  std::vector<int32_t> want_ran(programs, 0);
  std::map<int32_t, int> paths;  // how many programs ended with each `ran` value
  for (int p = 0; p < programs; ++p) {
    const int lo = p * block, hi = std::min(n, lo + block);
    float total = 0;
    for (int i = lo; i < hi; ++i) total += x[i];
    int stage = 1;
    float scale = 1;
    bool returned = false;
    if (p % 2 == 0) {
      want_ran[p] = ++stage;
      if (total < 0) {
        want_ran[p] = ++stage;
        returned = total < -4;
        stage += 10;
        scale *= 3;
      }
      returned = returned || total > 6;
      stage += 100;
      scale *= 2;
    } else {
      want_ran[p] = stage;
      returned = total > 4;
      stage += 1000;
      scale = -scale;
    }
    if (!returned) {
      for (int i = lo; i < hi; ++i) want[i] = x[i] * scale;
      want_ran[p] = stage + 10000;
    }
    ++paths[want_ran[p]];
  }
  // Every exit is taken: 3 and 2 (the two returns of even programs), 1 (odd), and the three
  // ways through to the end.
  for (int32_t path : {1, 2, 3, 10102, 10113, 11001}) {
    INFO("path " << path);
    REQUIRE(paths[path] > 0);
  }
  require_equal(host<float>(out), want);
  require_equal(host<int32_t>(ran), want_ran);
}

TEST_CASE("tl::return_if as a branch's last statement, and in an if_ that is a branch's only statement", "[interp]") {
  const int programs = 151;
  auto out = tensor<int32_t>(std::vector<int32_t>(programs, 0));
  last_return[tl::grid(programs)](out);
  std::vector<int32_t> want(programs);
  for (int p = 0; p < programs; ++p) want[p] = p % 3 == 0 ? (p < 100 ? 1 : 2) : p % 3 == 1 ? 0 : 2;
  require_equal(host<int32_t>(out), want);
}

TEST_CASE("tl::debug_barrier keeps a kernel's results", "[interp]") {
  const int n = 517;
  auto x = random_eighths<float>(n, 853, -8, 8);
  auto out = poison<float>({n});
  with_barrier[tl::grid(tl::cdiv(n, 128))](tensor<float>(x), out, n, 128);
  std::vector<float> want(x);
  for (auto& v : want) v += 1;
  require_equal(host<float>(out), want);
}

// The GPU's code for the loops and the barrier above, without a GPU (what they compute is
// checked on both backends above): the lock's compare-and-swap inside a loop, acquire and
// release fences only where the weak orders put them, the barrier; no spills.
TEST_CASE("while_, return_if and debug_barrier compile to PTX", "[ptx]") {
  const tl::Device cpu = tl::Device::cpu;
  auto i32 = [&](int n) { return tl::Tensor::zeros({n}, tl::DType::i32, cpu); };
  auto f32 = [&](int n) { return tl::Tensor::zeros({n}, tl::DType::f32, cpu); };
  auto count = [](const std::string& text, const std::string& what) {
    size_t k = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++k;
    return k;
  };
  tl::CompiledKernel c = collatz.compile(tl::LaunchOptions{}, i32(8), i32(8), i32(8));
  tl::CompiledKernel lock = spin_lock.compile(tl::LaunchOptions{}, f32(64), f32(64), i32(3), kGroups, 1, kBlock);
  const std::string& ptx = lock.ptx;
  const size_t cas = ptx.find("atom.global.cas.b32");
  REQUIRE(cas != std::string::npos);
  // The loop: a branch after the compare-and-swap to a label defined before it.
  bool back = false;
  for (size_t at = ptx.find("$L__"); at < cas; at = ptx.find("$L__", at + 1)) {
    const size_t colon = ptx.find(':', at);
    if (colon > ptx.find('\n', at)) continue;  // a use of a label, not its definition
    back = back || ptx.find(ptx.substr(at, colon - at) + ";", cas) != std::string::npos;
  }
  CHECK(back);
  CHECK(ptx.find("fence.acq_rel.gpu") > cas);                                 // acquire: no fence before the first atom
  CHECK(ptx.rfind("fence.acq_rel.gpu") < ptx.rfind("atom.global.exch.b32"));  // release: none after the last
  tl::CompiledKernel bar = with_barrier.compile(tl::LaunchOptions{}, f32(64), f32(64), 64, 64);
  CHECK(count(bar.ptx, "bar.sync") == 1);
  tl::CompiledKernel early = early_return.compile(tl::LaunchOptions{}, f32(64), f32(64), i32(4), 64, 64);
  tl::CompiledKernel nested = nested_return.compile(tl::LaunchOptions{}, f32(64), f32(64), i32(2), 64, 32);
  CHECK(nested.ptx.find(".entry nested_return") != std::string::npos);
  for (const auto* k : {&c, &lock, &bar, &early, &nested})
    if (k->resources_from == "ptxas" || k->resources_from == "driver") CHECK(k->spill_bytes == 0);
}

namespace {
// A tiled matmul whose k loop takes its own pipeline depth (STAGES) and unroll count (UNROLL),
// both 0 for none, and a scalar loop unrolled by UNROLL; small integers keep every sum exact.
const tl::Kernel staged_matmul = tl::kernel(
    "staged_matmul", {"a", "b", "c", "sums", "M", "N", "K", "STAGES", "UNROLL", "BM", "BN", "BK"},
    [](tl::Ptr<tl::bf16> a, tl::Ptr<tl::bf16> b, tl::Ptr<float> c, tl::Ptr<int32_t> sums, tl::Int M, tl::Int N,
       tl::Int K, tl::Constexpr STAGES, tl::Constexpr UNROLL, tl::Constexpr BM, tl::Constexpr BN, tl::Constexpr BK) {
      auto pid = tl::program_id(0);
      auto grid_n = tl::cdiv(N, BN);
      auto rm = (pid / grid_n) * BM + tl::arange(0, BM);
      auto rn = (pid % grid_n) * BN + tl::arange(0, BN);
      auto rk = tl::arange(0, BK);
      auto acc = tl::zeros<float>({BM, BN});
      const tl::RangeOptions options{static_cast<int>(STAGES.value()), static_cast<int>(UNROLL.value())};
      tl::range(0, tl::cdiv(K, BK), 1, options, [&](tl::Int kb) {
        auto k = kb * BK + rk;
        auto x = tl::load(a + rm(_, newaxis) * K + k(newaxis, _), (rm(_, newaxis) < M) & (k(newaxis, _) < K), 0);
        auto y = tl::load(b + k(_, newaxis) * N + rn(newaxis, _), (k(_, newaxis) < K) & (rn(newaxis, _) < N), 0);
        acc = tl::dot(x, y, acc);
      });
      tl::store(c + rm(_, newaxis) * N + rn(newaxis, _), acc, (rm(_, newaxis) < M) & (rn(newaxis, _) < N));
      tl::Int total = 0;
      tl::range(0, K, 1, {.unroll = static_cast<int>(UNROLL.value()), .flatten = true, .warp_specialize = true},
                [&](tl::Int i) { total = total * 3 + i; });  // (Triton's hints, accepted)
      tl::store(sums + pid, total);
    });
}  // namespace

TEST_CASE("tl::range's num_stages and unroll keep the loop's results", "[interp]") {
  const int M = 77, N = 91, K = 203, BM = 64, BN = 64, BK = 32;
  std::mt19937 rng(941);
  std::uniform_int_distribution<int> pick(-3, 3);
  std::vector<float> fa(M * K), fb(K * N);
  for (float& v : fa) v = static_cast<float>(pick(rng));
  for (float& v : fb) v = static_cast<float>(pick(rng));
  auto to_bf16 = [](const std::vector<float>& v, std::vector<int64_t> shape) {
    std::vector<tl::bf16> h(v.begin(), v.end());
    return tensor<tl::bf16>(h, std::move(shape));
  };
  auto at = to_bf16(fa, {M, K}), bt = to_bf16(fb, {K, N});
  std::vector<float> want(M * N, 0.0f);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n) want[m * N + n] += fa[m * K + k] * fb[k * N + n];
  int32_t total = 0;
  for (int i = 0; i < K; ++i)
    total = static_cast<int32_t>(static_cast<uint32_t>(total) * 3u + static_cast<uint32_t>(i));
  const int programs = tl::cdiv(M, BM) * tl::cdiv(N, BN);
  for (int launch_stages : {1, 3})
    for (int stages : {0, 1, 2, 4})
      for (int unroll : {0, 1, 3}) {
        INFO("launch num_stages " << launch_stages << ", loop num_stages " << stages << ", unroll " << unroll);
        auto c = poison<float>({M, N});
        auto sums = poison<int32_t>({programs});
        staged_matmul[tl::grid(programs)].options({.num_warps = 4, .num_stages = launch_stages})(
            at, bt, c, sums, M, N, K, stages, unroll, BM, BN, BK);
        require_equal(host<float>(c), want);
        require_equal(host<int32_t>(sums), std::vector<int32_t>(programs, total));
      }
}

// The loop's num_stages replaces the launch's: cp.async ring buffers appear with it and go
// without it; unroll leaves several copies of the body.
TEST_CASE("tl::range's num_stages decides the loop's pipelining", "[ptx]") {
  const tl::Device cpu = tl::Device::cpu;
  auto compile = [&](int launch_stages, int stages, int unroll) {
    return staged_matmul.compile(tl::LaunchOptions{.num_warps = 4, .num_stages = launch_stages},
                                 tl::Tensor::zeros({64, 64}, tl::DType::bf16, cpu),
                                 tl::Tensor::zeros({64, 64}, tl::DType::bf16, cpu),
                                 tl::Tensor::zeros({64, 64}, tl::DType::f32, cpu),
                                 tl::Tensor::zeros({1}, tl::DType::i32, cpu), 64, 64, 64, stages, unroll, 64, 64, 32);
  };
  CHECK(compile(1, 3, 0).ptx.find("cp.async") != std::string::npos);
  CHECK(compile(3, 1, 0).ptx.find("cp.async") == std::string::npos);
  CHECK(compile(3, 0, 0).ptx.find("cp.async") != std::string::npos);
  // The scalar loop's body multiplies by 3: three copies of it multiply by 27.
  auto times_27 = [](const std::string& ptx) {
    std::istringstream lines(ptx);
    for (std::string line; std::getline(lines, line);)
      if (line.find("mul.lo.s32") != std::string::npos && line.find(", 27;") != std::string::npos) return true;
    return false;
  };
  CHECK(times_27(compile(1, 1, 3).ptx));
  CHECK_FALSE(times_27(compile(1, 1, 1).ptx));
}
