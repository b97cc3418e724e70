// Unit tests of the IR: types, the checked builder, the verifier, the printer/parser round
// trip, and golden IR of traced kernels.
#include <tiledsl/tiledsl.h>

#include <catch2/catch.hpp>

#include "ir/Builder.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

namespace tl = tiledsl;
using namespace tiledsl::ir;

namespace {
Location here(unsigned line) { return Location{"t.cpp", line, 1}; }
Type f32() { return Type::scalar(tl::DType::f32); }
}  // namespace

TEST_CASE("dtype promotion follows the documented rules", "[unit]") {
  using tl::DType;
  CHECK(tl::promote(DType::f16, DType::bf16) == DType::f16);
  CHECK(tl::promote(DType::i32, DType::bf16) == DType::f32);
  CHECK(tl::promote(DType::bf16, DType::u8) == DType::f32);
  CHECK(tl::promote(DType::i32, DType::f16) == DType::f16);
  CHECK(tl::promote(DType::i8, DType::i32) == DType::i32);
  CHECK(tl::promote(DType::i32, DType::u32) == DType::u32);
  CHECK(tl::promote(DType::i1, DType::i8) == DType::i8);
  CHECK(tl::promote(DType::f32, DType::f64) == DType::f64);
  CHECK(tl::promote(DType::f8e4m3, DType::f8e5m2) == DType::f16);
  CHECK(tl::div_promote(DType::bf16) == DType::f32);
  CHECK(tl::div_promote(DType::f64) == DType::f64);
}

TEST_CASE("narrow float formats round to nearest even and saturate fp8", "[unit]") {
  CHECK(tl::decode_float(tl::kBF16, tl::encode_float(tl::kBF16, 1.00390625)) == 1.0);  // tie to even
  CHECK(tl::decode_float(tl::kBF16, tl::encode_float(tl::kBF16, 1.01171875)) == 1.015625);
  CHECK(tl::encode_float(tl::kF16, 65504.0) == 0x7bff);
  CHECK(tl::encode_float(tl::kF16, 65520.0) == 0x7c00);               // rounds up to inf
  CHECK(tl::decode_float(tl::kF16, 0x0001) == std::ldexp(1.0, -24));  // smallest subnormal
  CHECK(tl::decode_float(tl::kF8E4M3, tl::encode_float(tl::kF8E4M3, 1000.0)) == 448.0);
  CHECK(tl::decode_float(tl::kF8E5M2, tl::encode_float(tl::kF8E5M2, 1e6)) == 57344.0);
  CHECK(std::isnan(tl::decode_float(tl::kF8E4M3, 0x7f)));
  // Every f16 bit pattern that is a number decodes and re-encodes to itself.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    double v = tl::decode_float(tl::kF16, b);
    if (!std::isnan(v)) REQUIRE(tl::encode_float(tl::kF16, v) == b);
  }
}

TEST_CASE("builder inserts broadcasts and promotions", "[unit]") {
  Function f;
  f.name = "k";
  Builder b(f);
  Value* x = b.arange(0, 16, here(1));                                       // tile<16xi32>
  Value* y = b.cast(b.expand_dims(x, 1, here(2)), tl::DType::f32, here(2));  // tile<16x1xf32>
  Value* s = b.binary(OpKind::Add, x, y, here(3));                           // [16] + [16, 1] -> [16, 16] f32
  CHECK(s->type.str() == "tile<16x16xf32>");
  Value* c = b.compare("lt", s, b.constant(2.0, tl::DType::f32, here(4)), here(4));
  CHECK(c->type.str() == "tile<16x16xi1>");
  REQUIRE_NOTHROW(verify(f));
}

TEST_CASE("builder rejects bad shapes with the user's location", "[unit]") {
  Function f;
  f.name = "k";
  Builder b(f);
  Value* x = b.arange(0, 16, here(1));
  Value* y = b.arange(0, 32, here(2));
  REQUIRE_THROWS_WITH(
      b.binary(OpKind::Add, x, y, here(7)),
      "t.cpp:7: error in kernel 'k': add: cannot broadcast shapes [16] and [32] (dimension 0: 16 vs 32)");
  REQUIRE_THROWS_WITH(
      b.reshape(x, {3, 5}, here(8)),
      "t.cpp:8: error in kernel 'k': reshape: cannot reshape [16] (16 elements) to [3, 5] (15 elements)");
}

TEST_CASE("verifier catches broken IR built without checks", "[unit]") {
  Function f;
  f.name = "k";
  Builder b(f);
  Value* x = b.arange(0, 16, here(1));
  b.create(OpKind::Add, {x, x}, {Type::tile({8}, Type::scalar(tl::DType::i32))}, {}, here(5));
  REQUIRE_THROWS_WITH(verify(f),
                      "t.cpp:5: verifier: in kernel 'k': add: operands and result must be numbers of one "
                      "type; got (tile<16xi32>, tile<16xi32>) -> (tile<8xi32>)");
}

TEST_CASE("printer output parses back to the same text", "[unit]") {
  Function f;
  f.name = "k";
  f.arg_names = {"p"};
  f.arg_attrs = {{{"divisibility", int64_t{16}}}};
  Value* p = f.body.add_arg(Type::pointer(f32()));
  Builder b(f);
  Value* offs = b.arange(0, 64, here(1));
  Value* v = b.load(b.addptr(p, offs, here(2)), nullptr, nullptr, here(2));
  Op* red = b.begin_reduce({v}, 0, here(3), "sum");
  b.set_block(red->regions[0].get());
  Value* sum = b.binary(OpKind::Add, red->regions[0]->args[0].get(), red->regions[0]->args[1].get(), here(3));
  b.set_block(&f.body);
  b.finish_combine(red, {sum}, here(3));
  b.store(b.addptr(p, offs, here(4)), b.constant(-0.0, tl::DType::f32, here(4)), nullptr, here(4));
  verify(f);
  std::string text = print(f);
  auto g = parse(text);
  verify(*g);
  CHECK(print(*g) == text);
  CHECK(text.find("constant() {value = -0.0} : f32") != std::string::npos);
}

namespace {
const tl::Kernel golden_kernel =
    tl::kernel("golden", {"x", "n", "BLOCK"}, [](tl::Ptr<float> x, tl::Int n, tl::Constexpr BLOCK) {
      auto offs = tl::arange(0, BLOCK);
      auto acc = tl::zeros<float>({BLOCK});
      tl::range(0, n, BLOCK, [&](tl::Int start) { acc = acc + tl::load(x + start + offs, start + offs < n, 0.0f); });
      tl::store(x + offs, acc);
    });
}  // namespace

TEST_CASE("tracing produces the expected IR, with loop-carried values", "[unit]") {
  auto x = tl::Tensor::rand({100}, 3);
  std::string ir = golden_kernel.ir_for(
      std::array{tl::detail::to_launch_arg(x), tl::detail::to_launch_arg(100), tl::detail::to_launch_arg(32)},
      /*locations=*/false);
  CHECK(ir ==
        "kernel @golden(%x: ptr<f32> {divisibility = 16}, %n: i32 {nonnegative = 1}) attributes {BLOCK = 32} {\n"
        "  %0 = arange() {end = 32, start = 0} : tile<32xi32>\n"
        "  %1 = constant() {value = 0.0} : f32\n"
        "  %2 = splat(%1) : tile<32xf32>\n"
        "  %3 = constant() {value = 32} : i32\n"
        "  %4 = constant() {value = 0} : i32\n"
        "  %5 = for(%4, %n, %3, %2) : tile<32xf32> {\n"
        "  ^(%6: i32, %7: tile<32xf32>):\n"
        "    %8 = splat(%6) : tile<32xi32>\n"
        "    %9 = add(%8, %0) : tile<32xi32>\n"
        "    %10 = splat(%n) : tile<32xi32>\n"
        "    %11 = cmp(%9, %10) {pred = \"lt\"} : tile<32xi1>\n"
        "    %12 = addptr(%x, %6) : ptr<f32>\n"
        "    %13 = splat(%12) : tile<32xptr<f32>>\n"
        "    %14 = addptr(%13, %0) : tile<32xptr<f32>>\n"
        "    %15 = constant() {value = 0.0} : f32\n"
        "    %16 = splat(%15) : tile<32xf32>\n"
        "    %17 = load(%14, %11, %16) : tile<32xf32>\n"
        "    %18 = add(%7, %17) : tile<32xf32>\n"
        "    yield(%18)\n"
        "  }\n"
        "  %19 = splat(%x) : tile<32xptr<f32>>\n"
        "  %20 = addptr(%19, %0) : tile<32xptr<f32>>\n"
        "  store(%20, %5)\n"
        "}\n");
}

TEST_CASE("a location whose file name holds a newline still gives a one-line message", "[unit]") {
  // Found by the fuzzer: loc("a\nb.cpp":7:3) split the verifier's message in two.
  auto f = parse(
      "kernel @k() {\n  %0 = arange() {end = 16, start = 0} : tile<16xi32>\n"
      "  %1 = trans(%0) : tile<16xi32> loc(\"a\nb.cpp\":7:3)\n}\n");
  REQUIRE_THROWS_WITH(verify(*f), "a?b.cpp:7: verifier: in kernel 'k': trans: needs the attribute 'perm'");
}
