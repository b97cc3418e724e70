// Options of memory operations: atomics' memory order and scope (Triton's sem= and scope=), and
// loads' and stores' cache hints (cache_modifier, eviction_policy, volatile). The results on
// both backends (TILEDSL_BACKEND=gpu runs these [interp] cases on the GPU) against host
// references, and the fences and instructions each option compiles to.
#include <algorithm>

#include "ops_util.h"

using namespace opt;

namespace {
constexpr int kBins = 17, kBlock = 128;

// A histogram of x % kBins by one atomic_add per element, in the order and scope given; the
// f32 histogram counts with float adds (exact for these counts).
const tl::Kernel histogram = tl::kernel(
    "histogram", {"x", "counts", "fcounts", "n", "SEM", "SCOPE", "BLOCK"},
    [](tl::Ptr<int32_t> x, tl::Ptr<int32_t> counts, tl::Ptr<float> fcounts, tl::Int n, tl::Constexpr sem,
       tl::Constexpr scope, tl::Constexpr BLOCK) {
      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      auto bin = tl::load(x + offs, mask, 0) % kBins;
      const tl::AtomicOptions order{static_cast<tl::Sem>(sem.value()), static_cast<tl::Scope>(scope.value())};
      tl::atomic_add(counts + bin, 1, mask, order);
      tl::atomic_add(fcounts + bin, 1.0f, mask, order);
    });

// One atomic_add: where its fences fall in the PTX.
const tl::Kernel counter = tl::kernel(
    "counter", {"x", "counts", "SEM", "SCOPE", "BLOCK"},
    [](tl::Ptr<int32_t> x, tl::Ptr<int32_t> counts, tl::Constexpr sem, tl::Constexpr scope, tl::Constexpr BLOCK) {
      auto bin = tl::load(x + tl::arange(0, BLOCK)) % kBins;
      tl::atomic_add(counts + bin, 1, {static_cast<tl::Sem>(sem.value()), static_cast<tl::Scope>(scope.value())});
    });

// out = 2 x + 1 through a load and a store with the hints given (each a tl::Cache or
// tl::Eviction as a number), masked where MASKED is 1.
template <class T>
tl::Kernel hinted_copy() {
  return tl::kernel("hinted_copy",
                    {"x", "out", "n", "LOAD_CACHE", "STORE_CACHE", "EVICTION", "VOLATILE", "MASKED", "BLOCK"},
                    [](tl::Ptr<T> x, tl::Ptr<T> out, tl::Int n, tl::Constexpr load_cache, tl::Constexpr store_cache,
                       tl::Constexpr eviction, tl::Constexpr is_volatile, tl::Constexpr masked, tl::Constexpr BLOCK) {
                      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                      const tl::LoadOptions lo{static_cast<tl::Cache>(load_cache.value()),
                                               static_cast<tl::Eviction>(eviction.value()), is_volatile.value() != 0};
                      const tl::StoreOptions so{static_cast<tl::Cache>(store_cache.value()),
                                                static_cast<tl::Eviction>(eviction.value())};
                      if (masked.value()) {
                        auto v = tl::load(x + offs, offs < n, 0, lo);
                        tl::store(out + offs, v * 2 + 1, offs < n, so);
                      } else {
                        auto v = tl::load(x + offs, lo);
                        tl::store(out + offs, v * 2 + 1, so);
                      }
                    });
}
}  // namespace

TEST_CASE("cache hints keep loads' and stores' values", "[interp]") {
  using C = tl::Cache;
  using E = tl::Eviction;
  struct Case {
    C load, store;
    E eviction;
    bool is_volatile;
  };
  const Case cases[] = {{C::ca, C::wb, E::normal, false},
                        {C::cg, C::cg, E::evict_first, false},
                        {C::cv, C::cs, E::evict_last, false},
                        {C::none, C::wt, E::normal, true},
                        {C::none, C::none, E::evict_first, false}};
  auto run = [&](auto zero, int n, int block, uint64_t seed) {
    using T = decltype(zero);
    auto x = uniform<T>(static_cast<size_t>(n), seed, 0, 100);
    std::vector<H<T>> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = static_cast<H<T>>(static_cast<T>(x[i]) * 2 + 1);
    static const tl::Kernel k = hinted_copy<T>();
    for (const Case& c : cases)
      for (int masked : {0, 1}) {
        INFO("load " << static_cast<int>(c.load) << " store " << static_cast<int>(c.store) << " eviction "
                     << static_cast<int>(c.eviction) << " volatile " << c.is_volatile << " masked " << masked);
        auto out = poison<T>({masked ? n : block * tl::cdiv(n, block)});
        auto in = masked ? tensor<T>(x) : tensor<T>([&] {
          auto padded = x;
          padded.resize(static_cast<size_t>(block * tl::cdiv(n, block)), H<T>{});
          return padded;
        }());
        k[tl::grid(tl::cdiv(n, block))](in, out, n, static_cast<int>(c.load), static_cast<int>(c.store),
                                        static_cast<int>(c.eviction), c.is_volatile ? 1 : 0, masked, block);
        auto got = host<T>(out);
        got.resize(x.size());
        require_equal(got, want);
      }
  };
  run(float{}, 1001, 256, 921);
  run(tl::f16{}, 333, 128, 923);
  run(uint8_t{}, 517, 64, 929);  // 1-byte elements: the GPU drops the hints but volatile
}

TEST_CASE("cache hints compile to the PTX qualifiers", "[ptx]") {
  const tl::Device cpu = tl::Device::cpu;
  static const tl::Kernel k = hinted_copy<float>();
  auto ptx = [&](tl::Cache load, tl::Cache store, tl::Eviction e, bool is_volatile, int masked) {
    return k
        .compile(tl::LaunchOptions{}, tl::Tensor::zeros({256}, tl::DType::f32, cpu),
                 tl::Tensor::zeros({256}, tl::DType::f32, cpu), 256, static_cast<int>(load), static_cast<int>(store),
                 static_cast<int>(e), is_volatile ? 1 : 0, masked, 256)
        .ptx;
  };
  using C = tl::Cache;
  using E = tl::Eviction;
  const std::string cg = ptx(C::cg, C::cs, E::normal, false, 0);
  CHECK(cg.find("ld.global.cg.v4.f32") != std::string::npos);
  CHECK(cg.find("st.global.cs.v4.f32") != std::string::npos);
  const std::string first = ptx(C::cv, C::wt, E::evict_first, false, 1);
  CHECK(first.find("createpolicy.fractional.L2::evict_first.b64") != std::string::npos);
  CHECK(first.find("ld.global.cv.L2::cache_hint.v4.f32") != std::string::npos);
  CHECK(first.find("st.global.wt.L2::cache_hint.v4.f32") != std::string::npos);
  const std::string last = ptx(C::none, C::none, E::evict_last, false, 1);
  CHECK(last.find("createpolicy.fractional.L2::evict_last.b64") != std::string::npos);
  const std::string vol = ptx(C::none, C::none, E::normal, true, 0);
  CHECK(vol.find("ld.volatile.global.v4.f32") != std::string::npos);
  const std::string plain = ptx(C::none, C::none, E::normal, false, 0);
  CHECK(plain.find("createpolicy") == std::string::npos);
  CHECK(plain.find("ld.global.v4.f32") != std::string::npos);
}

TEST_CASE("atomics count the same in every order and scope", "[interp]") {
  const int n = 3001;
  auto x = uniform<int32_t>(n, 907, 0, 1 << 20);
  std::vector<int32_t> want(kBins, 0);
  for (int v : x) ++want[v % kBins];
  std::vector<float> fwant(want.begin(), want.end());
  for (tl::Sem sem : {tl::Sem::relaxed, tl::Sem::acquire, tl::Sem::release, tl::Sem::acq_rel})
    for (tl::Scope scope : {tl::Scope::cta, tl::Scope::gpu, tl::Scope::sys}) {
      INFO("sem " << static_cast<int>(sem) << " scope " << static_cast<int>(scope));
      auto counts = tensor<int32_t>(std::vector<int32_t>(kBins, 0));
      auto fcounts = tensor<float>(std::vector<float>(kBins, 0.0f));
      histogram[tl::grid(tl::cdiv(n, kBlock))](tensor<int32_t>(x), counts, fcounts, n, static_cast<int>(sem),
                                               static_cast<int>(scope), kBlock);
      require_equal(host<int32_t>(counts), want);
      require_equal(host<float>(fcounts), fwant);
    }
}

TEST_CASE("each memory order compiles to its fences, each scope to its instructions", "[ptx]") {
  const tl::Device cpu = tl::Device::cpu;
  auto ptx = [&](tl::Sem sem, tl::Scope scope) {
    return counter
        .compile(tl::LaunchOptions{}, tl::Tensor::zeros({kBlock}, tl::DType::i32, cpu),
                 tl::Tensor::zeros({kBins}, tl::DType::i32, cpu), static_cast<int>(sem), static_cast<int>(scope),
                 kBlock)
        .ptx;
  };
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  const std::string relaxed = ptx(tl::Sem::relaxed, tl::Scope::gpu);
  CHECK(count(relaxed, "fence.") == 0);
  CHECK(count(relaxed, "atom.global.add.u32") > 0);
  // acq_rel fences before the atoms and after them (LLVM may copy a fence into both sides of a
  // branch, so positions are checked, not counts); release only before, acquire only after.
  const std::string cta = ptx(tl::Sem::acq_rel, tl::Scope::cta);
  CHECK(cta.find("fence.acq_rel.cta") < cta.find("atom."));
  CHECK(cta.rfind("fence.acq_rel.cta") > cta.rfind("atom."));
  CHECK(count(cta, "fence.acq_rel.gpu") == 0);
  const std::string release = ptx(tl::Sem::release, tl::Scope::gpu);
  CHECK(release.find("fence.acq_rel.gpu") < release.find("atom."));
  CHECK(release.rfind("fence.") < release.rfind("atom."));
  const std::string sys = ptx(tl::Sem::acquire, tl::Scope::sys);
  CHECK(sys.find("fence.") > sys.find("atom."));
  CHECK(sys.rfind("fence.acq_rel.sys") > sys.rfind("atom."));
  CHECK(count(sys, "atom.relaxed.sys.global.add.u32") > 0);
  CHECK(count(sys, "atom.global.add") == 0);
  const std::string floats =
      histogram
          .compile(tl::LaunchOptions{}, tl::Tensor::zeros({8}, tl::DType::i32, cpu),
                   tl::Tensor::zeros({kBins}, tl::DType::i32, cpu), tl::Tensor::zeros({kBins}, tl::DType::f32, cpu), 8,
                   static_cast<int>(tl::Sem::relaxed), static_cast<int>(tl::Scope::sys), kBlock)
          .ptx;
  CHECK(count(floats, "atom.relaxed.sys.global.add.f32") > 0);
}
