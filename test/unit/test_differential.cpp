// Randomly generated kernels, the differential test of code generation against the interpreter.
//
// Each seed traces a different kernel over 2-D tiles: a random chain of elementwise float and
// integer ops, reductions broadcast back, scans, transposes, dots (f32 and bf16), casts, flips,
// sorts, gathers, joins and splits, tuple reductions, div_rn and Philox on 64 bits, with
// masked loads and stores over a matrix whose size fills no tile. Run with TILEDSL_BACKEND=gpu
// and TILEDSL_COMPARE_INTERPRETER=1 (ctest's gpu.differential), every launch also runs in the
// interpreter and the two must agree (runtime/Dispatch.h); without a GPU (label interp) each
// kernel runs in the interpreter and, where code generation is built, compiles to PTX.
//
// Ops whose result jumps (comparisons, floor, conversion to integer, rounding to f16 or bf16)
// take only operands that both sides compute bit for bit (loaded values, integers, min/max/abs/
// neg of those): a one-ulp difference in a transcendental would otherwise turn into a different
// branch, integer or 16-bit value. (The first GPU run found exactly that: an f32 value a few ulps
// apart on the two sides rounded to neighbouring f16s.)
#include <tiledsl/tiledsl.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "runtime/Dispatch.h"

namespace tl = tiledsl;

namespace {
using F = tl::Tile<float>;
using I = tl::Tile<int32_t>;

struct Pools {
  std::vector<F> exact, approx;  // floats both sides compute identically, and the rest
  std::vector<I> ints;
};

template <class T>
const T& pick(std::mt19937& g, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(g)];
}

F clamp(const F& v) { return tl::minimum(tl::maximum(v, -4.0f), 4.0f); }

// One random op on values of `p`, its result added to the pool it belongs in.
void random_op(std::mt19937& g, Pools& p, int64_t rows, int64_t cols) {
  auto any = [&]() -> const F& { return g() % 2 || p.approx.empty() ? pick(g, p.exact) : pick(g, p.approx); };
  switch (g() % 26) {
    case 0:
      p.approx.push_back(clamp(any() + any()));
      break;
    case 1:
      p.approx.push_back(clamp(any() - any() * any()));
      break;
    case 2:
      p.approx.push_back(any() / (tl::abs(any()) + 1.0f));
      break;
    case 3:
      p.exact.push_back(tl::maximum(pick(g, p.exact), pick(g, p.exact)));
      break;
    case 4:
      p.exact.push_back(tl::where(pick(g, p.exact) < pick(g, p.exact), pick(g, p.exact), -pick(g, p.exact)));
      break;
    case 5:
      p.approx.push_back(tl::sin(any()) + tl::cos(any()));
      break;
    case 6:
      p.approx.push_back(tl::exp(tl::minimum(any(), 1.0f)) - tl::sqrt(tl::abs(any())));
      break;
    case 7:
      p.approx.push_back(clamp(tl::fma(any(), any(), any())));
      break;
    case 8:
      p.approx.push_back(tl::sigmoid(any()) * tl::erf(any()));
      break;
    case 9: {  // a row or column reduction, broadcast back
      const F& v = any();
      int axis = static_cast<int>(g() % 2);
      F r = g() % 2 ? tl::max(v, axis) : tl::sum(v, axis) * 0.03125f;
      p.approx.push_back(clamp(tl::expand_dims(r, axis) + v));
      break;
    }
    case 10:
      p.approx.push_back(clamp(tl::cumsum(any(), static_cast<int>(g() % 2)) * 0.125f));
      break;
    case 11:  // a dot, where the tile is square
      if (rows == cols) {
        if (g() % 2)
          p.approx.push_back(clamp(tl::dot(any(), any()) * 0.0625f));
        else
          p.approx.push_back(
              clamp(tl::dot(pick(g, p.exact).to<tl::bf16>(), pick(g, p.exact).to<tl::bf16>()) * 0.0625f));
      }
      break;
    case 12:
      if (rows == cols) p.exact.push_back(tl::trans(pick(g, p.exact)));
      break;
    case 13:  // through f16 and back: rounding
      p.exact.push_back(pick(g, p.exact).to<tl::f16>().to<float>());
      break;
    case 14:
      p.ints.push_back((pick(g, p.exact) * 8.0f).to<int32_t>());
      break;
    case 15:
      p.ints.push_back((pick(g, p.ints) * pick(g, p.ints)) ^ (pick(g, p.ints) >> static_cast<int>(g() % 7)));
      break;
    case 16:
      p.ints.push_back(pick(g, p.ints) / (tl::abs(pick(g, p.ints)) % 97 + 1) + pick(g, p.ints) % 13);
      break;
    case 17:
      p.ints.push_back(tl::where(pick(g, p.ints) > pick(g, p.ints), pick(g, p.ints) & 0xff0f, pick(g, p.ints) | 3));
      break;
    case 18:
      p.exact.push_back(tl::floor(pick(g, p.exact) * 0.5f));
      break;
    // Issue 18's functions: shapes, sorting, gather, tuple reductions, division, Philox on 64 bits.
    case 19:
      p.exact.push_back(tl::flip(pick(g, p.exact), static_cast<int>(g() % 2)));
      break;
    case 20:
      p.exact.push_back(tl::sort(pick(g, p.exact), -1, g() % 2 == 0));
      break;
    case 21: {  // gather along an axis by an index made from integers
      const int axis = static_cast<int>(g() % 2);
      const int64_t dim = axis == 0 ? rows : cols;
      p.exact.push_back(tl::gather(pick(g, p.exact), tl::abs(pick(g, p.ints) % static_cast<int32_t>(dim)), axis));
      break;
    }
    case 22: {  // join two tiles and take them apart again, keeping the larger
      auto [u, v] = tl::split(tl::join(pick(g, p.exact), pick(g, p.exact)));
      p.exact.push_back(tl::maximum(u, v));
      break;
    }
    case 23: {  // a row argmax with its value through a tuple reduction, broadcast back
      const F& v = pick(g, p.exact);
      auto idx = tl::broadcast_to(tl::arange(0, cols)(tl::newaxis, tl::_), {rows, cols});
      auto [m, i] = tl::reduce(std::tuple{v, idx}, 1, [](auto v1, auto i1, auto v2, auto i2) {
        auto pick_left = (v1 > v2) | ((v1 == v2) & (i1 < i2));
        return std::tuple{tl::where(pick_left, v1, v2), tl::where(pick_left, i1, i2)};
      });
      p.ints.push_back(tl::expand_dims(i, 1) + idx);
      p.exact.push_back(tl::expand_dims(m, 1) - v);
      break;
    }
    case 24:
      p.approx.push_back(tl::div_rn(any(), tl::abs(any()) + 1.0f));
      break;
    case 25:  // Philox4x64 on 64-bit offsets made from integers
      p.ints.push_back((tl::randint(7, pick(g, p.ints).to<int64_t>() * 1000003) & 0xffffull).to<int32_t>());
      break;
    default:
      p.exact.push_back((pick(g, p.ints) % 1024).to<float>());
      break;
  }
}

const tl::Kernel random_kernel =
    tl::kernel("random_kernel", {"x", "y", "k", "out", "iout", "rows", "cols", "SEED", "R", "C"},
               [](tl::Ptr<float> x, tl::Ptr<float> y, tl::Ptr<int32_t> k, tl::Ptr<float> out, tl::Ptr<int32_t> iout,
                  tl::Int rows, tl::Int cols, tl::Constexpr SEED, tl::Constexpr R, tl::Constexpr C) {
                 std::mt19937 g(static_cast<uint32_t>(SEED.value()));
                 auto r = tl::program_id(0) * R + tl::arange(0, R);
                 auto c = tl::program_id(1) * C + tl::arange(0, C);
                 auto offs = r(tl::_, tl::newaxis) * cols + c(tl::newaxis, tl::_);
                 auto mask = (r(tl::_, tl::newaxis) < rows) & (c(tl::newaxis, tl::_) < cols);
                 Pools p;
                 p.exact = {tl::load(x + offs, mask, 0.0f), tl::load(y + offs, mask, 1.0f)};
                 p.ints = {tl::load(k + offs, mask, 7)};
                 int ops = 4 + static_cast<int>(g() % 9);
                 for (int i = 0; i < ops; ++i) random_op(g, p, R.value(), C.value());
                 F result = p.approx.empty() ? p.exact.back() : p.approx.back() + p.exact.back();
                 tl::store(out + offs, result, mask);
                 tl::store(iout + offs, p.ints.back(), mask);
               });
}  // namespace

TEST_CASE("random kernels give the same results on the GPU as in the interpreter", "[interp][differential]") {
  const std::vector<std::pair<int, int>> tiles = {{16, 16}, {32, 32}, {8, 32}, {64, 16}, {16, 16}, {32, 8}};
  const auto before = tl::runtime::comparisons();
  int launches = 0;
  for (int seed = 1; seed <= 60; ++seed) {
    auto [R, C] = tiles[static_cast<size_t>(seed) % tiles.size()];
    const int rows = 37 + 13 * (seed % 5), cols = 29 + 11 * (seed % 7);  // fill no tile
    INFO("seed " << seed << ", tile " << R << "x" << C << ", matrix " << rows << "x" << cols);
    auto x = tl::Tensor::randn({rows, cols}, 1000 + static_cast<uint64_t>(seed));
    auto y = tl::Tensor::rand({rows, cols}, 2000 + static_cast<uint64_t>(seed));
    auto k = tl::Tensor::randint({rows, cols}, -1000, 1000, 3000 + static_cast<uint64_t>(seed));
    auto out = tl::Tensor::full({rows, cols}, NAN), iout = tl::Tensor::zeros({rows, cols}, tl::DType::i32);
    random_kernel[tl::grid(tl::cdiv(rows, R), tl::cdiv(cols, C))](x, y, k, out, iout, rows, cols, seed, R, C);
    ++launches;
    for (double v : out.to_double()) REQUIRE(std::isfinite(v));  // every element written, none NaN
#ifdef TILEDSL_ENABLE_CODEGEN
    if (tl::default_device().is_cpu()) {  // no GPU: the kernel must still compile
      tl::CompiledKernel compiled = random_kernel.compile(x, y, k, out, iout, rows, cols, seed, R, C);
      CHECK(compiled.ptx.find(".entry random_kernel") != std::string::npos);
    }
#endif
  }
  if (tl::runtime::compare_with_interpreter() && tl::default_device().is_cuda())
    CHECK(tl::runtime::comparisons().compared - before.compared == launches);  // none skipped
}

TEST_CASE("the differential comparison: integers exactly, floats within a few ulps of the tensor's scale", "[unit]") {
  using tl::runtime::first_difference;
  auto cpu = [](auto v) { return tl::Tensor::from_host(v, {}, tl::Device::cpu); };
  CHECK(first_difference(cpu(std::vector<int32_t>{1, -5, 7}), cpu(std::vector<int32_t>{1, -5, 7})).empty());
  CHECK(first_difference(cpu(std::vector<int32_t>{1, -5, 7}), cpu(std::vector<int32_t>{1, -5, 8})) ==
        "element 2: GPU 7, interpreter 8");
  CHECK(first_difference(cpu(std::vector<int64_t>{int64_t(1) << 60}), cpu(std::vector<int64_t>{(int64_t(1) << 60) + 1}))
            .find("element 0") == 0);  // beyond a double's 53 bits
  const float big = 3.0f, one_ulp = std::nextafter(1.0f, 2.0f);
  // 1 + 2^-23 against 1 in a tensor whose scale is 3: well inside 64 ulps.
  CHECK(first_difference(cpu(std::vector<float>{one_ulp, big}), cpu(std::vector<float>{1.0f, big})).empty());
  // 1e-4 apart at scale 3 is about 800 ulps: a difference.
  CHECK(first_difference(cpu(std::vector<float>{1.0001f, big}), cpu(std::vector<float>{1.0f, big})).find("element 0") ==
        0);
  CHECK(first_difference(cpu(std::vector<float>{NAN, 1.0f}), cpu(std::vector<float>{NAN, 1.0f})).empty());
  CHECK(first_difference(cpu(std::vector<float>{NAN}), cpu(std::vector<float>{0.0f})) ==
        "element 0: GPU nan, interpreter 0");
  CHECK(first_difference(cpu(std::vector<float>{INFINITY}), cpu(std::vector<float>{-INFINITY})).find("element 0") == 0);
  // bf16 (7 mantissa bits): 2 ulps, 2^-6 of (|a| + |b| + scale) = 0.0625 here.
  std::vector<tl::bf16> a{tl::bf16(1.0f), tl::bf16(2.0f)}, b{tl::bf16(1.0078125f), tl::bf16(2.0f)},
      c{tl::bf16(1.125f), tl::bf16(2.0f)};
  CHECK(first_difference(cpu(a), cpu(b)).empty());
  CHECK(!first_difference(cpu(a), cpu(c)).empty());
  // f32 results of a kernel that rounds an intermediate to bf16: 2 bf16 ulps of the terms.
  std::vector<float> x{1.0f, big}, y{1.003f, big}, z{1.1f, big};
  CHECK(!first_difference(cpu(x), cpu(y)).empty());
  CHECK(first_difference(cpu(x), cpu(y), 7).empty());
  CHECK(!first_difference(cpu(x), cpu(z), 7).empty());
}
