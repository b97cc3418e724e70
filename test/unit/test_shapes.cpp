// Triton's shape functions: join, split, interleave, cat, flip, sort, topk and histogram
// (include/tiledsl/shapes.h) and gather (an op of its own), on both backends (TILEDSL_BACKEND=gpu runs these [interp]
// cases on the GPU), bit-exact against host references on random inputs loaded through masks.
#include <algorithm>
#include <cstring>
#include <functional>

#include "ops_util.h"

using namespace opt;
using tl::_;
using tl::newaxis;

namespace {
constexpr int kRows = 8, kCols = 16;          // the tiles
constexpr int kUsedRows = 7, kUsedCols = 13;  // the data: rows and columns past these load `fill`
constexpr float kFill = -2.5f;

// The [kRows, kCols] tile the kernels below load from a [kUsedRows, kUsedCols] array.
template <class T>
std::vector<H<T>> loaded(const std::vector<H<T>>& x, H<T> fill) {
  std::vector<H<T>> t(kRows * kCols, fill);
  for (int r = 0; r < kUsedRows; ++r)
    for (int c = 0; c < kUsedCols; ++c) t[r * kCols + c] = x[r * kUsedCols + c];
  return t;
}

// Loads a and b (f32 bits as u32, so NaNs and -0.0 pass untouched) and stores join, both halves
// of split(join), interleave and cat.
const tl::Kernel pieces =
    tl::kernel("pieces", {"a", "b", "joined", "first", "second", "inter", "cat"},
               [](tl::Ptr<float> a, tl::Ptr<float> b, tl::Ptr<float> joined, tl::Ptr<float> first,
                  tl::Ptr<float> second, tl::Ptr<float> inter, tl::Ptr<float> catted) {
                 auto r = tl::arange(0, kRows), c = tl::arange(0, kCols);
                 auto mask = (r(_, newaxis) < kUsedRows) & (c(newaxis, _) < kUsedCols);
                 auto in = r(_, newaxis) * kUsedCols + c(newaxis, _);
                 auto x = tl::load(a + in, mask, kFill), y = tl::load(b + in, mask, kFill);
                 auto out = r(_, newaxis) * kCols + c(newaxis, _);
                 auto j = tl::join(x, y);  // [kRows, kCols, 2]
                 auto k2 = tl::arange(0, 2);
                 tl::store(joined + out(_, _, newaxis) * 2 + k2(newaxis, newaxis, _), j);
                 auto [p, q] = tl::split(j);
                 tl::store(first + out, p);
                 tl::store(second + out, q);
                 auto c2 = tl::arange(0, 2 * kCols);
                 tl::store(inter + r(_, newaxis) * (2 * kCols) + c2(newaxis, _), tl::interleave(x, y));
                 auto r2 = tl::arange(0, 2 * kRows);
                 tl::store(catted + r2(_, newaxis) * kCols + c(newaxis, _), tl::cat(x, y, true));
               });

// flip along DIM (0, 1 or -1) of a [kRows, kCols] tile of i32 and of f32.
const tl::Kernel flipped =
    tl::kernel("flipped", {"x", "f", "out", "fout", "DIM"},
               [](tl::Ptr<int32_t> x, tl::Ptr<float> f, tl::Ptr<int32_t> out, tl::Ptr<float> fout, tl::Constexpr DIM) {
                 auto r = tl::arange(0, kRows), c = tl::arange(0, kCols);
                 auto mask = (r(_, newaxis) < kUsedRows) & (c(newaxis, _) < kUsedCols);
                 auto in = r(_, newaxis) * kUsedCols + c(newaxis, _);
                 auto o = r(_, newaxis) * kCols + c(newaxis, _);
                 tl::store(out + o, tl::flip(tl::load(x + in, mask, -7), DIM));
                 tl::store(fout + o, tl::flip(tl::load(f + in, mask, kFill), DIM));
               });

// Sorts (or takes the top K of) ROWS rows of N loaded from rows of `n` (the rest is `fill`).
template <class T>
tl::Kernel make_sorter(const char* name) {
  return tl::kernel(name, {"x", "out", "n", "fill", "ROWS", "N", "DESCENDING", "K"},
                    [](tl::Ptr<T> x, tl::Ptr<T> out, tl::Int n, tl::Constexpr fill, tl::Constexpr ROWS, tl::Constexpr N,
                       tl::Constexpr DESCENDING, tl::Constexpr K) {
                      auto r = tl::arange(0, ROWS), c = tl::arange(0, N);
                      auto v = tl::load(x + r(_, newaxis) * n + c(newaxis, _), c(newaxis, _) < n,
                                        static_cast<T>(fill.value()));
                      if (K == 0) {
                        tl::store(out + r(_, newaxis) * N + c(newaxis, _), tl::sort(v, -1, DESCENDING != 0));
                      } else {
                        auto ck = tl::arange(0, K);
                        tl::store(out + r(_, newaxis) * K + ck(newaxis, _), tl::topk(v, K));
                      }
                    });
}
const tl::Kernel sort_f32 = make_sorter<float>("sort_f32");
const tl::Kernel sort_i32 = make_sorter<int32_t>("sort_i32");
const tl::Kernel sort_u8 = make_sorter<uint8_t>("sort_u8");

template <class T>
std::vector<H<T>> as(const std::vector<uint32_t>& bits) {
  std::vector<H<T>> out(bits.size());
  std::memcpy(out.data(), bits.data(), bits.size() * sizeof(uint32_t));
  return out;
}
}  // namespace

TEST_CASE("tl::join, split, interleave and cat move every bit", "[interp]") {
  // Random bit patterns: NaNs, infinities, -0.0 and subnormals among them.
  auto a = as<float>(random_bits<uint32_t>(kUsedRows * kUsedCols, 901));
  auto b = as<float>(random_bits<uint32_t>(kUsedRows * kUsedCols, 902));
  auto joined = poison<float>({kRows * kCols * 2}), first = poison<float>({kRows * kCols}),
       second = poison<float>({kRows * kCols}), inter = poison<float>({kRows * 2 * kCols}),
       catted = poison<float>({2 * kRows * kCols});
  pieces[tl::grid(1)](tensor<float>(a), tensor<float>(b), joined, first, second, inter, catted);
  auto ta = loaded<float>(a, kFill), tb = loaded<float>(b, kFill);
  std::vector<float> want_join, want_inter, want_cat(ta);
  for (int i = 0; i < kRows * kCols; ++i) want_join.insert(want_join.end(), {ta[i], tb[i]});
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) want_inter.insert(want_inter.end(), {ta[r * kCols + c], tb[r * kCols + c]});
  want_cat.insert(want_cat.end(), tb.begin(), tb.end());
  require_equal(host<float>(joined), want_join);
  require_equal(host<float>(first), ta);
  require_equal(host<float>(second), tb);
  require_equal(host<float>(inter), want_inter);
  require_equal(host<float>(catted), want_cat);
}

TEST_CASE("tl::flip reverses one dimension", "[interp]") {
  auto x = random_bits<int32_t>(kUsedRows * kUsedCols, 911);
  auto f = as<float>(random_bits<uint32_t>(kUsedRows * kUsedCols, 912));
  auto tx = loaded<int32_t>(x, -7);
  auto tf = loaded<float>(f, kFill);
  for (int dim : {0, 1, -1}) {
    INFO("dim " << dim);
    auto out = poison<int32_t>({kRows * kCols});
    auto fout = poison<float>({kRows * kCols});
    flipped[tl::grid(1)](tensor<int32_t>(x), tensor<float>(f), out, fout, dim);
    std::vector<int32_t> want(tx.size());
    std::vector<float> fwant(tf.size());
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kCols; ++c) {
        const int from = dim == 0 ? (kRows - 1 - r) * kCols + c : r * kCols + (kCols - 1 - c);
        want[r * kCols + c] = tx[from];
        fwant[r * kCols + c] = tf[from];
      }
    require_equal(host<int32_t>(out), want);
    require_equal(host<float>(fout), fwant);
  }
}

namespace {
// Runs `kernel` on `rows` rows of `n` values (padded to N with `fill`) and compares each row with
// std::sort (k == 0) or the k largest, largest first.
template <class T>
void check_sort(const tl::Kernel& kernel, const std::vector<H<T>>& x, int rows, int n, int N, int fill, bool descending,
                int k = 0) {
  INFO("rows " << rows << ", n " << n << " of " << N << (descending ? ", descending" : "") << ", k " << k);
  const int width = k ? k : N;
  auto out = poison<T>({static_cast<int64_t>(rows) * width});
  kernel[tl::grid(1)](tensor<T>(x), out, n, fill, rows, N, descending ? 1 : 0, k);
  std::vector<H<T>> want;
  for (int r = 0; r < rows; ++r) {
    std::vector<H<T>> row(x.begin() + r * n, x.begin() + (r + 1) * n);
    row.resize(N, static_cast<H<T>>(fill));
    if (k || descending)
      std::sort(row.begin(), row.end(), std::greater<>());
    else
      std::sort(row.begin(), row.end());
    want.insert(want.end(), row.begin(), row.begin() + width);
  }
  require_equal(host<T>(out), want);
}
}  // namespace

TEST_CASE("tl::sort orders rows, ascending and descending", "[interp]") {
  // Multiples of 1/8 in a small range: many ties. Padding (fill) sorts in among the values.
  for (bool descending : {false, true}) {
    check_sort<float>(sort_f32, random_eighths<float>(4 * 57, 921, -6, 6), 4, 57, 64, 3, descending);
    check_sort<int32_t>(sort_i32, random_bits<int32_t>(2 * 250, 922), 2, 250, 256, -1, descending);
    check_sort<uint8_t>(sort_u8, random_bits<uint8_t>(4 * 31, 923), 4, 31, 32, 200, descending);
  }
  check_sort<float>(sort_f32, random_eighths<float>(2, 924, -6, 6), 1, 2, 2, 0, false);
  check_sort<float>(sort_f32, random_eighths<float>(1, 925, -6, 6), 1, 1, 1, 0, true);
}

TEST_CASE("tl::topk keeps the k largest, largest first", "[interp]") {
  for (int k : {1, 2, 8, 64})
    check_sort<float>(sort_f32, random_eighths<float>(8 * 61, 931 + k, -9, 9), 8, 61, 64, -1, true, k);
  check_sort<int32_t>(sort_i32, random_bits<int32_t>(2 * 500, 935), 2, 500, 512, 0, true, 16);
}

namespace {
// gather along AXIS of a [kRows, kCols] f32 tile (loaded through the mask) by an index tile of
// IR x IC read from `index` (as I).
template <class I>
tl::Kernel make_gatherer(const char* name) {
  return tl::kernel(name, {"x", "index", "out", "AXIS", "IR", "IC"},
                    [](tl::Ptr<float> x, tl::Ptr<I> index, tl::Ptr<float> out, tl::Constexpr AXIS, tl::Constexpr IR,
                       tl::Constexpr IC) {
                      auto r = tl::arange(0, kRows), c = tl::arange(0, kCols);
                      auto mask = (r(_, newaxis) < kUsedRows) & (c(newaxis, _) < kUsedCols);
                      auto src = tl::load(x + r(_, newaxis) * kUsedCols + c(newaxis, _), mask, kFill);
                      auto ir = tl::arange(0, IR), ic = tl::arange(0, IC);
                      auto o = ir(_, newaxis) * IC + ic(newaxis, _);
                      tl::store(out + o, tl::gather(src, tl::load(index + o), AXIS));
                    });
}
const tl::Kernel gather_i32 = make_gatherer<int32_t>("gather_i32");
const tl::Kernel gather_u8 = make_gatherer<uint8_t>("gather_u8");
const tl::Kernel gather_i64 = make_gatherer<int64_t>("gather_i64");

template <class I>
void check_gather(const tl::Kernel& kernel, int axis, int ir, int ic, uint64_t seed) {
  INFO("axis " << axis << ", index " << ir << "x" << ic);
  auto x = as<float>(random_bits<uint32_t>(kUsedRows * kUsedCols, seed));
  auto index = uniform<I>(static_cast<size_t>(ir) * ic, seed + 1, 0, (axis == 0 ? kRows : kCols) - 1);
  auto out = poison<float>({static_cast<int64_t>(ir) * ic});
  kernel[tl::grid(1)](tensor<float>(x), tensor<I>(index), out, axis, ir, ic);
  auto t = loaded<float>(x, kFill);
  std::vector<float> want;
  for (int i = 0; i < ir; ++i)
    for (int j = 0; j < ic; ++j) {
      const int at = static_cast<int>(index[i * ic + j]);
      want.push_back(axis == 0 ? t[at * kCols + j] : t[i * kCols + at]);
    }
  require_equal(host<float>(out), want);
}
}  // namespace

TEST_CASE("tl::gather picks elements along an axis by an index tile", "[interp]") {
  check_gather<int32_t>(gather_i32, 1, kRows, 32, 941);  // more indices than elements along the axis
  check_gather<int32_t>(gather_i32, 1, kRows, 4, 943);
  check_gather<uint8_t>(gather_u8, 0, 2, kCols, 945);
  check_gather<int64_t>(gather_i64, 0, 16, kCols, 947);
  if (on_gpu()) return;  // out of range: undefined on the GPU
  auto x = tensor<float>(std::vector<float>(kUsedRows * kUsedCols, 1.0f));
  std::vector<int32_t> bad(kRows * kCols, 3);
  bad[37] = kCols;
  auto out = poison<float>({kRows * kCols});
  CHECK_THROWS_WITH(gather_i32[tl::grid(1)](x, tensor<int32_t>(bad), out, 1, kRows, kCols),
                    Catch::Contains("test_shapes.cpp") && Catch::Contains("index 16 at position [2, 5]") &&
                        Catch::Contains("outside the source's 16 elements along axis 1"));
}

TEST_CASE("tl::histogram counts the values of its bins", "[interp]") {
  // Values below 0 and past the bins, and masked-off elements, are not counted.
  auto k = tl::kernel("histogram", {"x", "out", "n", "BINS"},
                      [](tl::Ptr<int32_t> x, tl::Ptr<int32_t> out, tl::Int n, tl::Constexpr BINS) {
                        auto offs = tl::arange(0, 256);
                        auto mask = offs < n;
                        tl::store(out + tl::arange(0, BINS), tl::histogram(tl::load(x + offs, mask, 0), BINS, mask));
                      });
  const int n = 201;
  auto x = uniform<int32_t>(n, 951, -3, 40);
  for (int bins : {32, 64}) {
    auto out = poison<int32_t>({bins});
    k[tl::grid(1)](tensor<int32_t>(x), out, n, bins);
    std::vector<int32_t> want(bins, 0);
    for (int v : x)
      if (v >= 0 && v < bins) ++want[v];
    require_equal(host<int32_t>(out), want);
  }
}

TEST_CASE("shape functions reject what they cannot take, naming the line", "[interp]") {
  auto run = [](auto body) {
    auto k = tl::kernel("bad_shape", {"x"}, [&](tl::Ptr<float> x) { body(tl::load(x + tl::arange(0, 8))); });
    auto x = tensor<float>(std::vector<float>(8, 1.0f));
    k[tl::grid(1)](x);
  };
  REQUIRE_THROWS_WITH(run([](tl::Tile<float> v) { (void)tl::split(v); }),
                      Catch::Contains("test_shapes.cpp") && Catch::Contains("the last dimension must have size 2"));
  REQUIRE_THROWS_WITH(run([](tl::Tile<float> v) { (void)tl::topk(v, 3); }), Catch::Contains("power of two"));
  REQUIRE_THROWS_WITH(run([](tl::Tile<float> v) { (void)tl::topk(v, 16); }),
                      Catch::Contains("k is larger than the dimension"));
  REQUIRE_THROWS_WITH(run([](tl::Tile<float> v) { (void)tl::flip(v, 1); }), Catch::Contains("dim is out of range"));
  REQUIRE_THROWS_WITH(run([](tl::Tile<float> v) {
                        (void)tl::join(v, tl::reshape(v, {2, 4}));
                      }),
                      Catch::Contains("one shape"));
  REQUIRE_THROWS_WITH(run([](tl::Tile<float> v) { (void)tl::gather(v, tl::arange(0, 4)(_, newaxis), 0); }),
                      Catch::Contains("must be tiles of one rank"));
  REQUIRE_THROWS_WITH(run([](tl::Tile<float> v) { (void)tl::gather(v, v, 0); }),
                      Catch::Contains("the index must be an integer tile"));
}

#ifdef TILEDSL_ENABLE_CODEGEN
// What the interpreter runs must compile: the kernels above, through the whole GPU pipeline (for
// TILEDSL_ARCH, or the GPU present, or sm_90 without one), to PTX that needs no local memory.
TEST_CASE("the shape functions compile for the GPU without local memory", "[interp]") {
  auto f = tensor<float>(std::vector<float>(4 * kRows * kCols, 0.0f));
  auto i32 = tensor<int32_t>(std::vector<int32_t>(1024, 0));
  auto u8 = tensor<uint8_t>(std::vector<uint8_t>(1024, 0));
  std::vector<tl::CompiledKernel> compiled{
      pieces.compile(f, f, f, f, f, f, f),           flipped.compile(i32, f, i32, f, 0),
      sort_f32.compile(f, f, 57, 3, 4, 64, 1, 0),    sort_i32.compile(i32, i32, 500, 0, 2, 512, 0, 16),
      sort_u8.compile(u8, u8, 31, 200, 4, 32, 0, 0), gather_i32.compile(f, i32, f, 1, kRows, 32),
      gather_u8.compile(f, u8, f, 0, 2, kCols),
  };
  for (const auto& c : compiled) {
    INFO(c.name << " for " << c.arch);
    CHECK(c.ptx.find(".entry") != std::string::npos);
    CHECK(c.ptx.find(".local") == std::string::npos);
  }
}
#endif

// Triton's tensor descriptors (the Hopper attention tutorial's loads), tl.broadcast, tl.swizzle2d
// and tl.max_constancy.
TEST_CASE("tensor descriptors load and store blocks with bounds; broadcast; swizzle2d", "[interp]") {
  auto k = tl::kernel("descriptors", {"x", "out", "pairs", "swz", "rows", "cols", "GROUP"},
                      [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Ptr<float> pairs, tl::Ptr<int32_t> swz, tl::Int rows,
                         tl::Int cols, tl::Constexpr GROUP) {
                        auto pid_m = tl::program_id(0), pid_n = tl::program_id(1);
                        auto desc_x = tl::make_tensor_descriptor(x, {rows, cols}, {cols, 1}, {16, 32});
                        auto desc_o = tl::make_tensor_descriptor(out, {rows, cols}, {cols, 1}, {16, 32});
                        auto block = tl::max_constancy(desc_x.load({pid_m * 16, pid_n * 32}), {1, 1});
                        desc_o.store({pid_m * 16, pid_n * 32}, block * 2.0f + 1.0f);
                        // broadcast a column and a row of the block to its shape
                        auto [c, r] = tl::broadcast(tl::sum(block, 1, true), tl::max(block, 0, true));
                        auto offs = tl::arange(0, 16)(_, newaxis) * 32 + tl::arange(0, 32)(newaxis, _);
                        auto program = pid_m * tl::num_programs(1) + pid_n;
                        tl::store(pairs + program * 512 + offs, c - r);
                        // swizzle2d of this program's grid position, as the matmul tutorial's grouped order
                        auto [si, sj] = tl::swizzle2d(pid_m, pid_n, tl::num_programs(0), tl::num_programs(1), GROUP);
                        tl::store(swz + program * 2 + tl::arange(0, 2), tl::where(tl::arange(0, 2) == 0, si, sj));
                      });
  const int rows = 45, cols = 70, gm = 3, gn = 3;  // blocks of 16 x 32: the last row and column are partial
  auto x = uniform<float>(rows * cols, 1021, -8, 8);
  auto out = poison<float>({rows * cols});
  auto pairs = poison<float>({gm * gn * 512});
  auto swz = poison<int32_t>({gm * gn * 2});
  k[tl::grid(gm, gn)](tensor<float>(x), out, pairs, swz, rows, cols, 2);
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] * 2.0f + 1.0f;
  require_equal(host<float>(out), want);
  // The block's padding is zeros: row sums and column maxima over them.
  std::vector<float> want_pairs;
  for (int m = 0; m < gm; ++m)
    for (int n = 0; n < gn; ++n) {
      auto at = [&](int i, int j) {
        const int r = m * 16 + i, c = n * 32 + j;
        return r < rows && c < cols ? x[r * cols + c] : 0.0f;
      };
      for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 32; ++j) {
          float sum = 0, mx = -INFINITY;
          for (int jj = 0; jj < 32; ++jj) sum += at(i, jj);
          for (int ii = 0; ii < 16; ++ii) mx = std::max(mx, at(ii, j));
          want_pairs.push_back(sum - mx);
        }
    }
  // (f32 row sums in some order on either backend)
  require_close(host<float>(pairs), std::vector<double>(want_pairs.begin(), want_pairs.end()), 1e-4, 1e-5);
  // swizzle2d(i, j, 3, 3, 2), program (i, j) in row-major order: the first two rows are one group,
  // walked column by column; the last row is a group of one.
  const std::vector<int32_t> want_swz{0, 0, 1, 0, 0, 1, 1, 1, 0, 2, 1, 2, 2, 0, 2, 1, 2, 2};
  require_equal(host<int32_t>(swz), want_swz);
}

// A descriptor's gather and scatter (rows from a tile, a column offset; rows and columns outside
// the tensor load zeros and are not stored) and its atomics (each program of axis 1 combines the
// same blocks, so atomicity shows), against host references.
TEST_CASE("tensor descriptors gather, scatter and combine blocks atomically", "[interp]") {
  constexpr int kR = 45, kC = 70, kIdx = 16, kBlockC = 32, kCopies = 3;
  auto k = tl::kernel(
      "descriptor_rows", {"x", "rows", "dest", "g", "acc", "hi", "bits", "R", "C"},
      [](tl::Ptr<float> x, tl::Ptr<int32_t> rows, tl::Ptr<float> dest, tl::Ptr<float> g, tl::Ptr<int32_t> acc,
         tl::Ptr<int32_t> hi, tl::Ptr<uint32_t> bits, tl::Int R, tl::Int C) {
        auto pid = tl::program_id(0), copy = tl::program_id(1);
        auto rd = tl::make_tensor_descriptor(x, {R, C}, {C, 1}, {1, kBlockC});
        auto wd = tl::make_tensor_descriptor(dest, {R, C}, {C, 1}, {1, kBlockC});
        auto idx = tl::load(rows + tl::arange(0, kIdx));
        auto block = rd.gather(idx, pid * kBlockC);
        auto offs =
            tl::arange(0, kIdx)(_, newaxis) * (3 * kBlockC) + pid * kBlockC + tl::arange(0, kBlockC)(newaxis, _);
        tl::if_(copy == 0, [&] {
          tl::store(g + offs, block);
          wd.scatter(block * 2.0f + 1.0f, idx, pid * kBlockC);
        });
        // the atomics: blocks of 8 x 32 of integer copies of x at (pid * 8, pid * 32)
        auto ad = tl::make_tensor_descriptor(acc, {R, C}, {C, 1}, {8, kBlockC});
        auto hd = tl::make_tensor_descriptor(hi, {R, C}, {C, 1}, {8, kBlockC});
        auto bd = tl::make_tensor_descriptor(bits, {R, C}, {C, 1}, {8, kBlockC});
        auto blk = tl::make_tensor_descriptor(x, {R, C}, {C, 1}, {8, kBlockC}).load({pid * 8, pid * kBlockC});
        auto iv = (blk * 16.0f).to<int32_t>() + copy;
        ad.atomic_add({pid * 8, pid * kBlockC}, iv);
        hd.atomic_max({pid * 8, pid * kBlockC}, iv * (copy - 1));
        bd.atomic_xor({pid * 8, pid * kBlockC}, iv.to<uint32_t>() << (copy * 3));
      });
  auto x = uniform<float>(kR * kC, 1033, -4, 4);
  // Rows out of range (45, -1, 100) and repeated ones (3, 44: the scatter writes them twice, the
  // same values).
  std::vector<int32_t> rows{3, 44, 0, 17, 45, -1, 29, 8, 3, 12, 100, 40, 21, 5, 33, 44};
  auto dest_init = uniform<float>(kR * kC, 1034, -1, 1);
  auto acc_init = uniform<int32_t>(kR * kC, 1035, -1000, 1000);
  auto hi_init = uniform<int32_t>(kR * kC, 1036, -50, 50);
  auto bits_init = random_bits<uint32_t>(kR * kC, 1037);
  auto dest = tensor<float>(dest_init);
  auto g = poison<float>({kIdx * 3 * kBlockC});
  auto acc = tensor<int32_t>(acc_init);
  auto hi = tensor<int32_t>(hi_init);
  auto bits = tensor<uint32_t>(bits_init);
  k[tl::grid(3, kCopies)](tensor<float>(x), tensor<int32_t>(rows), dest, g, acc, hi, bits, kR, kC);

  std::vector<float> want_g(kIdx * 3 * kBlockC);
  auto want_dest = dest_init;
  for (int p = 0; p < 3; ++p)
    for (int i = 0; i < kIdx; ++i)
      for (int j = 0; j < kBlockC; ++j) {
        const int r = rows[i], c = p * kBlockC + j;
        const bool in = r >= 0 && r < kR && c < kC;
        want_g[i * 3 * kBlockC + c] = in ? x[r * kC + c] : 0.0f;
        if (in) want_dest[r * kC + c] = x[r * kC + c] * 2.0f + 1.0f;
      }
  require_equal(host<float>(g), want_g);
  require_equal(host<float>(dest), want_dest);

  auto want_acc = acc_init;
  auto want_hi = hi_init;
  auto want_bits = bits_init;
  for (int p = 0; p < 3; ++p)
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < kBlockC; ++j) {
        const int r = p * 8 + i, c = p * kBlockC + j;
        if (r >= kR || c >= kC) continue;
        for (int copy = 0; copy < kCopies; ++copy) {
          const int32_t iv = static_cast<int32_t>(x[r * kC + c] * 16.0f) + copy;
          want_acc[r * kC + c] += iv;
          want_hi[r * kC + c] = std::max(want_hi[r * kC + c], iv * (copy - 1));
          want_bits[r * kC + c] ^= static_cast<uint32_t>(iv) << (copy * 3);
        }
      }
  require_equal(host<int32_t>(acc), want_acc);
  require_equal(host<int32_t>(hi), want_hi);
  require_equal(host<uint32_t>(bits), want_bits);
}

TEST_CASE("tensor descriptor gather needs a block of one row and 1-D rows", "[errors]") {
  auto k = tl::kernel("bad_gather", {"x", "rows"}, [](tl::Ptr<float> x, tl::Ptr<int32_t> rows) {
    auto d = tl::make_tensor_descriptor(x, {64, 64}, {64, 1}, {2, 32});
    auto idx = tl::load(rows + tl::arange(0, 8));
    tl::store(x + tl::arange(0, 8)(_, newaxis) * 64 + tl::arange(0, 32)(newaxis, _), d.gather(idx, 0));
  });
  auto x = tl::Tensor::zeros({64 * 64}, tl::DType::f32);
  auto rows = tl::Tensor::zeros({8}, tl::DType::i32);
  try {
    k[tl::grid(1)](x, rows);
    FAIL("no error");
  } catch (const tl::Error& e) {
    const std::string what = e.what();
    CHECK(what.find("gather") != std::string::npos);
    CHECK(what.find("block has one row") != std::string::npos);
    CHECK(what.find("test_shapes.cpp") != std::string::npos);
  }
}
