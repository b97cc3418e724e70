// Pointers made from addresses (Triton's x.to(tl.pointer_type(T))): Triton's grouped-GEMM
// tutorial, line for line, whose matrices arrive as tensors of 64-bit addresses; pointers back to
// integers; and what a pointer conversion rejects. Both backends ([interp]; TILEDSL_BACKEND=gpu).
#include <random>

#include "ops_util.h"

using namespace opt;
using tl::_;
using tl::newaxis;

namespace {
// Triton's 08-grouped-gemm kernel: one persistent program per "SM" walks the tiles of every
// problem of the group; problem g's sizes, leading dimensions and matrices come from tensors.
const tl::Kernel grouped_matmul = tl::kernel(
    "grouped_matmul",
    {"group_a_ptrs", "group_b_ptrs", "group_c_ptrs", "group_gemm_sizes", "g_lds", "group_size", "NUM_SM",
     "BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"},
    [](tl::Ptr<int64_t> group_a_ptrs, tl::Ptr<int64_t> group_b_ptrs, tl::Ptr<int64_t> group_c_ptrs,
       tl::Ptr<int32_t> group_gemm_sizes, tl::Ptr<int32_t> g_lds, tl::Int group_size, tl::Constexpr NUM_SM,
       tl::Constexpr BLOCK_SIZE_M, tl::Constexpr BLOCK_SIZE_N, tl::Constexpr BLOCK_SIZE_K) {
      tl::Int tile_idx = tl::program_id(0);
      tl::Int last_problem_end = 0;
      tl::range(0, group_size, [&](tl::Int g) {
        // the problem's sizes
        tl::Int gm = tl::load(group_gemm_sizes + g * 3);
        tl::Int gn = tl::load(group_gemm_sizes + g * 3 + 1);
        tl::Int gk = tl::load(group_gemm_sizes + g * 3 + 2);
        auto num_m_tiles = tl::cdiv(gm, BLOCK_SIZE_M);
        auto num_n_tiles = tl::cdiv(gn, BLOCK_SIZE_N);
        auto num_tiles = num_m_tiles * num_n_tiles;
        // the tiles of this problem that this program owns
        tl::while_([&] { return (tile_idx >= last_problem_end) & (tile_idx < last_problem_end + num_tiles); },
                   [&] {
                     auto k = gk;
                     auto lda = tl::load(g_lds + g * 3);
                     auto ldb = tl::load(g_lds + g * 3 + 1);
                     auto ldc = tl::load(g_lds + g * 3 + 2);
                     auto a_ptr = tl::load(group_a_ptrs + g).to<tl::PtrTo<float>>();
                     auto b_ptr = tl::load(group_b_ptrs + g).to<tl::PtrTo<float>>();
                     auto c_ptr = tl::load(group_c_ptrs + g).to<tl::PtrTo<float>>();
                     // the tile's coordinates in this problem
                     auto tile_idx_in_gemm = tile_idx - last_problem_end;
                     auto tile_m_idx = tile_idx_in_gemm / num_n_tiles;
                     auto tile_n_idx = tile_idx_in_gemm % num_n_tiles;
                     auto offs_am = tile_m_idx * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
                     auto offs_bn = tile_n_idx * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
                     auto offs_k = tl::arange(0, BLOCK_SIZE_K);
                     auto a_ptrs = a_ptr + offs_am(_, newaxis) * lda + offs_k(newaxis, _);
                     auto b_ptrs = b_ptr + offs_k(_, newaxis) * ldb + offs_bn(newaxis, _);
                     auto accumulator = tl::zeros<float>({BLOCK_SIZE_M, BLOCK_SIZE_N});
                     tl::range(0, tl::cdiv(k, BLOCK_SIZE_K), [&](tl::Int kk) {
                       // the tutorial's sizes are multiples of the blocks; these are not, hence the masks
                       auto k_left = k - kk * BLOCK_SIZE_K;
                       auto a = tl::load(a_ptrs, (offs_am(_, newaxis) < gm) & (offs_k(newaxis, _) < k_left), 0.0f);
                       auto b = tl::load(b_ptrs, (offs_k(_, newaxis) < k_left) & (offs_bn(newaxis, _) < gn), 0.0f);
                       accumulator = tl::dot(a, b, accumulator, tl::InputPrecision::ieee);
                       a_ptrs += BLOCK_SIZE_K;
                       b_ptrs += BLOCK_SIZE_K * ldb;
                     });
                     auto offs_cm = tile_m_idx * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
                     auto offs_cn = tile_n_idx * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
                     auto c_ptrs = c_ptr + ldc * offs_cm(_, newaxis) + offs_cn(newaxis, _);
                     tl::store(c_ptrs, accumulator, (offs_cm(_, newaxis) < gm) & (offs_cn(newaxis, _) < gn));
                     // go to the next tile by advancing NUM_SM
                     tile_idx += NUM_SM;
                   });
        last_problem_end = last_problem_end + num_tiles;
      });
    });

// The address of each element of a tile, as an integer, and back: p.to<int64_t>() and
// x.to<tl::PtrTo<float>>() are inverses; loads through the round trip read the same elements.
const tl::Kernel round_trip =
    tl::kernel("round_trip", {"x", "addresses", "out", "n", "BLOCK"},
               [](tl::Ptr<float> x, tl::Ptr<int64_t> addresses, tl::Ptr<float> out, tl::Int n, tl::Constexpr BLOCK) {
                 auto offs = tl::arange(0, BLOCK);
                 auto mask = offs < n;
                 auto p = x + (n - 1 - offs);  // reversed
                 auto as_int = p.to<int64_t>();
                 tl::store(addresses + offs, as_int, mask);
                 tl::store(out + offs, tl::load(as_int.to<tl::PtrTo<float>>(), mask), mask);
               });
}  // namespace

TEST_CASE("Triton's grouped GEMM: matrices passed as tensors of addresses", "[interp]") {
  struct Problem {
    int m, n, k;
  };
  const std::vector<Problem> problems{{37, 45, 29}, {64, 16, 33}, {17, 70, 50}, {5, 3, 100}};
  const int g = static_cast<int>(problems.size());
  std::vector<tl::Tensor> as, bs, cs;
  std::vector<std::vector<float>> ha, hb;
  std::vector<int64_t> a_addr, b_addr, c_addr;
  std::vector<int32_t> sizes, lds;
  uint64_t seed = 991;
  for (const auto& p : problems) {
    ha.push_back(uniform<float>(static_cast<size_t>(p.m) * p.k, seed++, -1, 1));
    hb.push_back(uniform<float>(static_cast<size_t>(p.k) * p.n, seed++, -1, 1));
    as.push_back(tensor<float>(ha.back()));
    bs.push_back(tensor<float>(hb.back()));
    cs.push_back(poison<float>({static_cast<int64_t>(p.m) * p.n}));
    a_addr.push_back(reinterpret_cast<int64_t>(as.back().data_ptr()));
    b_addr.push_back(reinterpret_cast<int64_t>(bs.back().data_ptr()));
    c_addr.push_back(reinterpret_cast<int64_t>(cs.back().data_ptr()));
    sizes.insert(sizes.end(), {p.m, p.n, p.k});
    lds.insert(lds.end(), {p.k, p.n, p.n});
  }
  const int num_sm = 5;  // fewer programs than tiles: each walks several, across problems
  grouped_matmul[tl::grid(num_sm)](tensor<int64_t>(a_addr), tensor<int64_t>(b_addr), tensor<int64_t>(c_addr),
                                   tensor<int32_t>(sizes), tensor<int32_t>(lds), g, num_sm, 16, 16, 16);
  for (int q = 0; q < g; ++q) {
    INFO("problem " << q);
    const auto& p = problems[static_cast<size_t>(q)];
    std::vector<double> want(static_cast<size_t>(p.m) * p.n, 0.0);
    for (int i = 0; i < p.m; ++i)
      for (int j = 0; j < p.n; ++j)
        for (int kk = 0; kk < p.k; ++kk)
          want[static_cast<size_t>(i) * p.n + j] +=
              double(ha[q][static_cast<size_t>(i) * p.k + kk]) * hb[q][static_cast<size_t>(kk) * p.n + j];
    // f32 fma in k order against the exact sum: |error| <= k 2^-24 sum |a b| (each |a b| <= 1).
    require_close(host<float>(cs[static_cast<size_t>(q)]), want, p.k * 6e-8 * p.k, 0);
  }
}

TEST_CASE("pointers convert to 64-bit integers and back", "[interp]") {
  const int n = 93;
  auto x = uniform<float>(n, 995, -9, 9);
  auto xt = tensor<float>(x);
  auto addresses = poison<int64_t>({128});
  auto out = poison<float>({n});
  round_trip[tl::grid(1)](xt, addresses, out, n, 128);
  std::vector<float> want(x.rbegin(), x.rend());
  require_equal(host<float>(out), want);
  if (!on_gpu()) {  // on the host the addresses are the tensor's own (on the GPU, the device's)
    auto got = host<int64_t>(addresses);
    const auto base = reinterpret_cast<int64_t>(xt.data_ptr());
    for (int i = 0; i < n; ++i) REQUIRE(got[i] == base + 4 * (n - 1 - i));
  }
}

TEST_CASE("a pointer made from an address outside every tensor is an error naming the line", "[interp]") {
  if (on_gpu()) return;  // a wild address on the GPU is undefined
  auto k = tl::kernel("wild", {"addresses", "out"}, [](tl::Ptr<int64_t> addresses, tl::Ptr<float> out) {
    auto offs = tl::arange(0, 4);
    auto p = tl::load(addresses + offs).to<tl::PtrTo<float>>();
    tl::store(out + offs, tl::load(p));
  });
  std::vector<int64_t> wild{8, 16, 24, 32};
  auto out = poison<float>({4});
  CHECK_THROWS_WITH(k[tl::grid(1)](tensor<int64_t>(wild), out),
                    Catch::Contains("test_pointers.cpp") && Catch::Contains("access through an invalid pointer"));
}
