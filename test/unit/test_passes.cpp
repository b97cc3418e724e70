// The generic passes (canonicalize, cse, dce) keep every kernel's results bit for bit: kernels
// that use every op kind run on the interpreter before and after them, then through the whole
// pipeline (verified after each pass). remove_convert_layouts is checked on IR with layouts
// built in C++; the layouts' text form is checked to intern as the layout classes do.
#include <tiledsl/tiledsl.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "ir/Builder.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/CSE.h"
#include "passes/Canonicalize.h"
#include "passes/DCE.h"
#include "passes/LayoutText.h"
#include "passes/Layouts.h"
#include "passes/MaskedLanes.h"
#include "passes/Pipeline.h"
#include "passes/Prefetch.h"
#include "passes/RemoveConvertLayouts.h"
#include "runtime/Interpreter.h"

using namespace tiledsl;
namespace tl = tiledsl;
using ir::OpKind;

namespace {
const char* kElementwise = R"IR(
kernel @elementwise(%x: ptr<f32>, %y: ptr<i32>, %out: ptr<f32>, %iout: ptr<i32>, %n: i32) {
  %pid = program_id() {axis = 0} : i32
  %np = num_programs() {axis = 0} : i32
  %c64 = constant() {value = 64} : i32
  %zero = constant() {value = 0} : i32
  %one = constant() {value = 1} : i32
  %base = mul(%pid, %c64) : i32
  %base2 = mul(%pid, %c64) : i32
  %r = arange() {end = 64, start = 0} : tile<64xi32>
  %bs = splat(%base) : tile<64xi32>
  %offs1 = add(%bs, %r) : tile<64xi32>
  %zs = splat(%zero) : tile<64xi32>
  %os = splat(%one) : tile<64xi32>
  %offs2 = add(%offs1, %zs) : tile<64xi32>
  %offs3 = mul(%offs2, %os) : tile<64xi32>
  %offs = multiple_of(%offs3) {values = [1]} : tile<64xi32>
  %ns = splat(%n) : tile<64xi32>
  %mask = cmp(%offs, %ns) {pred = "lt"} : tile<64xi1>
  %px = splat(%x) : tile<64xptr<f32>>
  %qx = addptr(%px, %offs) : tile<64xptr<f32>>
  %f0 = constant() {value = 0.0} : f32
  %f1 = constant() {value = 1.0} : f32
  %f0s = splat(%f0) : tile<64xf32>
  %f1s = splat(%f1) : tile<64xf32>
  %v = load(%qx, %mask, %f0s) : tile<64xf32>
  %v1 = mul(%v, %f1s) : tile<64xf32>
  %v2 = add(%v1, %f0s) : tile<64xf32>
  %a = abs(%v2) : tile<64xf32>
  %a1 = add(%a, %f1s) : tile<64xf32>
  %e1 = exp(%v2) : tile<64xf32>
  %e2 = exp2(%v2) : tile<64xf32>
  %e3 = log(%a1) : tile<64xf32>
  %e4 = log2(%a1) : tile<64xf32>
  %e5 = sqrt(%a) : tile<64xf32>
  %e6 = rsqrt(%a1) : tile<64xf32>
  %e7 = sin(%v2) : tile<64xf32>
  %e8 = cos(%v2) : tile<64xf32>
  %e9 = floor(%v2) : tile<64xf32>
  %e10 = ceil(%v2) : tile<64xf32>
  %e11 = erf(%v2) : tile<64xf32>
  %e12 = neg(%v2) : tile<64xf32>
  %e13 = math(%v2) {fn = "tanh"} : tile<64xf32>
  %e14 = math2(%v2, %a1) {fn = "atan2"} : tile<64xf32>
  %s1 = add(%e1, %e2) : tile<64xf32>
  %s2 = sub(%s1, %e3) : tile<64xf32>
  %s3 = mul(%s2, %e4) : tile<64xf32>
  %s4 = div(%s3, %a1) : tile<64xf32>
  %s5 = rem(%s4, %a1) : tile<64xf32>
  %s6 = maximum(%s5, %e5) : tile<64xf32>
  %s7 = minimum(%s6, %e6) : tile<64xf32>
  %s8 = fma(%s7, %e7, %e8) : tile<64xf32>
  %s9 = add(%s8, %e9) : tile<64xf32>
  %s10 = add(%s9, %e10) : tile<64xf32>
  %s11 = add(%s10, %e11) : tile<64xf32>
  %s12 = add(%s11, %e12) : tile<64xf32>
  %s13 = add(%s12, %e13) : tile<64xf32>
  %s14 = add(%s13, %e14) : tile<64xf32>
  %pos = cmp(%v2, %f0s) {pred = "gt"} : tile<64xi1>
  %sel = select(%pos, %s14, %v2) : tile<64xf32>
  %t = constant() {value = 1} : i1
  %ts = splat(%t) : tile<64xi1>
  %sel2 = select(%ts, %sel, %v) : tile<64xf32>
  %po = splat(%out) : tile<64xptr<f32>>
  %qo = addptr(%po, %offs) : tile<64xptr<f32>>
  store(%qo, %sel2, %mask)
  %py = splat(%y) : tile<64xptr<i32>>
  %qy = addptr(%py, %offs) : tile<64xptr<i32>>
  %w = load(%qy, %mask) : tile<64xi32>
  %c3 = constant() {value = 3} : i32
  %c7 = constant() {value = 7} : i32
  %k1 = add(%c3, %c7) : i32
  %k2 = div(%k1, %zero) : i32
  %k3 = rem(%c7, %c3) : i32
  %k4 = shl(%k3, %c3) : i32
  %k5 = sub(%k4, %k2) : i32
  %ks = splat(%k5) : tile<64xi32>
  %i1 = and(%w, %ks) : tile<64xi32>
  %i2 = or(%i1, %r) : tile<64xi32>
  %i3 = xor(%i2, %w) : tile<64xi32>
  %c3s = splat(%c3) : tile<64xi32>
  %i4 = shl(%i3, %c3s) : tile<64xi32>
  %i5 = shr(%i4, %c3s) : tile<64xi32>
  %i6 = not(%i5) : tile<64xi32>
  %i7 = div(%i6, %c3s) : tile<64xi32>
  %i8 = rem(%i7, %c3s) : tile<64xi32>
  %i9 = maximum(%i8, %w) : tile<64xi32>
  %i10 = minimum(%i9, %i3) : tile<64xi32>
  %i11 = neg(%i10) : tile<64xi32>
  %i12 = abs(%i11) : tile<64xi32>
  %u = cast(%i12) : tile<64xu32>
  %u2 = cast(%u) : tile<64xi32>
  %fb = bitcast(%v) : tile<64xi32>
  %i13 = add(%u2, %fb) : tile<64xi32>
  %np2 = splat(%np) : tile<64xi32>
  %i14 = add(%i13, %np2) : tile<64xi32>
  %i15 = max_contiguous(%i14) {values = [1]} : tile<64xi32>
  %ci = cast(%v) : tile<64xi32>
  %i16 = sub(%i15, %ci) : tile<64xi32>
  %po2 = splat(%iout) : tile<64xptr<i32>>
  %qo2 = addptr(%po2, %offs) : tile<64xptr<i32>>
  store(%qo2, %i16, %mask)
}
)IR";

const char* kTiles = R"IR(
kernel @tiles(%x: ptr<f32>, %out: ptr<f32>, %cnt: ptr<i32>, %n: i32) {
  %zero = constant() {value = 0} : i32
  %one = constant() {value = 1} : i32
  %c16 = constant() {value = 16} : i32
  %r = arange() {end = 16, start = 0} : tile<16xi32>
  %r2 = arange() {end = 16, start = 0} : tile<16xi32>
  %rc = expand_dims(%r) {axis = 1} : tile<16x1xi32>
  %rr = expand_dims(%r2) {axis = 0} : tile<1x16xi32>
  %c16s = splat(%c16) : tile<16x1xi32>
  %rowoff = mul(%rc, %c16s) : tile<16x1xi32>
  %rowb = broadcast(%rowoff) : tile<16x16xi32>
  %colb = broadcast(%rr) : tile<16x16xi32>
  %off = add(%rowb, %colb) : tile<16x16xi32>
  %px = splat(%x) : tile<16x16xptr<f32>>
  %qx = addptr(%px, %off) : tile<16x16xptr<f32>>
  %a = load(%qx) : tile<16x16xf32>
  %ag = gather(%a, %colb) {axis = 0} : tile<16x16xf32>
  %at = trans(%ag) {perm = [1, 0]} : tile<16x16xf32>
  %f0 = constant() {value = 0.0} : f32
  %acc0 = splat(%f0) : tile<16x16xf32>
  %acc = for(%zero, %n, %one, %acc0) : tile<16x16xf32> {
  ^(%i: i32, %c: tile<16x16xf32>):
    %fz = constant() {value = 0.0} : f32
    %fi = cast(%i) : f32
    %fis = splat(%fi) : tile<16x16xf32>
    %b = add(%at, %fis) : tile<16x16xf32>
    %d = dot(%a, %b, %c) : tile<16x16xf32>
    %fzs = splat(%fz) : tile<16x16xf32>
    %d2 = add(%d, %fzs) : tile<16x16xf32>
    yield(%d2)
  }
  %sum = reduce(%acc) {axis = 1} : tile<16xf32> {
  ^(%l: f32, %rgt: f32):
    %t = add(%l, %rgt) : f32
    yield(%t)
  }
  %cs = scan(%sum) {axis = 0, reverse = 0} : tile<16xf32> {
  ^(%l2: f32, %r3: f32):
    %t2 = maximum(%l2, %r3) : f32
    yield(%t2)
  }
  %flat = reshape(%acc) : tile<256xf32>
  %ar = arange() {end = 256, start = 0} : tile<256xi32>
  %po = splat(%out) : tile<256xptr<f32>>
  %qo = addptr(%po, %ar) : tile<256xptr<f32>>
  store(%qo, %flat)
  %big = cmp(%n, %one) {pred = "gt"} : i1
  %res = if(%big) : tile<16xf32> {
  ^():
    yield(%cs)
  } {
  ^():
    yield(%sum)
  }
  %po2 = splat(%out) : tile<16xptr<f32>>
  %c256 = constant() {value = 256} : i32
  %c256s = splat(%c256) : tile<16xi32>
  %o256 = add(%r, %c256s) : tile<16xi32>
  %q256 = addptr(%po2, %o256) : tile<16xptr<f32>>
  store(%q256, %res)
  %seed = constant() {value = 42} : u64
  %ru = cast(%r) : tile<16xu32>
  %p0, %p1, %p2, %p3 = philox(%seed, %ru) {rounds = 10} : tile<16xu32>, tile<16xu32>, tile<16xu32>, tile<16xu32>
  %px0 = xor(%p0, %p1) : tile<16xu32>
  %px1 = xor(%p2, %p3) : tile<16xu32>
  %px2 = xor(%px0, %px1) : tile<16xu32>
  %pc = cast(%px2) : tile<16xf32>
  %c272 = constant() {value = 272} : i32
  %c272s = splat(%c272) : tile<16xi32>
  %o272 = add(%r, %c272s) : tile<16xi32>
  %q272 = addptr(%po2, %o272) : tile<16xptr<f32>>
  store(%q272, %pc)
  %pcnt = splat(%cnt) : tile<16xptr<i32>>
  %zero16 = splat(%zero) : tile<16xi32>
  %zr = mul(%r, %zero16) : tile<16xi32>
  %qc = addptr(%pcnt, %zr) : tile<16xptr<i32>>
  %ones = splat(%one) : tile<16xi32>
  %old = atomic_rmw(%qc, %ones) {kind = "add"} : tile<16xi32>
  %qc1 = addptr(%cnt, %one) : ptr<i32>
  %old2 = atomic_cas(%qc1, %zero, %c16) : i32
  %ok = cmp(%old2, %zero) {pred = "ge"} : i1
  assert(%ok) {msg = "cas"}
  assume(%ok)
  barrier()
  %wk, %wv = while(%zero, %res) : i32, tile<16xf32> {
  ^(%k: i32, %v: tile<16xf32>):
    %go = cmp(%k, %n) {pred = "lt"} : i1
    yield(%go)
  } {
  ^(%k2: i32, %v2: tile<16xf32>):
    %k3 = add(%k2, %one) : i32
    %v3 = add(%v2, %v2) : tile<16xf32>
    yield(%k3, %v3)
  }
  %c288 = constant() {value = 288} : i32
  %c288s = splat(%c288) : tile<16xi32>
  %o288 = add(%r, %c288s) : tile<16xi32>
  %q288 = addptr(%po2, %o288) : tile<16xptr<f32>>
  store(%q288, %wv)
}
)IR";

// One argument of a test launch: a buffer (random or zero bytes) or an integer.
struct Arg {
  std::vector<unsigned char> bytes;
  bool pointer = true;
  int64_t value = 0;
};

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}
template <class T>
Arg buffer(const std::vector<T>& v) {
  Arg a;
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}
Arg integer(int64_t v) {
  Arg a;
  a.pointer = false;
  a.value = v;
  return a;
}

// Runs `f` on copies of `args`; returns every buffer afterwards.
std::vector<Arg> run(ir::Function& f, std::vector<Arg> args, std::array<int64_t, 3> grid) {
  f.number_values();
  std::vector<runtime::InterpArg> ia;
  for (size_t i = 0; i < args.size(); ++i) {
    runtime::InterpArg a;
    a.name = f.arg_names.at(i);
    if (args[i].pointer) {
      a.kind = runtime::InterpArg::pointer;
      a.base = args[i].bytes.data();
      a.bytes = args[i].bytes.size();
    } else {
      a.kind = runtime::InterpArg::integer;
      a.i = args[i].value;
    }
    ia.push_back(a);
  }
  runtime::interpret(f, ia, grid, 1);
  return args;
}

size_t count_ops(const ir::Function& f) {
  size_t n = 0;
  ir::walk(f.body, [&](const ir::Op*) { ++n; });
  return n;
}

// Interpreter results before and after canonicalize, cse and dce are identical bytes; the
// whole pipeline then runs on the optimised IR with the verifier after each pass.
void check_kernel(const char* text, const std::vector<Arg>& args, std::array<int64_t, 3> grid, bool simplifies) {
  auto before = ir::parse(text);
  auto after = ir::parse(text);
  ir::verify(*before);
  bool changed = passes::canonicalize(*after);
  ir::verify(*after);
  changed |= passes::cse(*after);
  ir::verify(*after);
  changed |= passes::dce(*after);
  ir::verify(*after);
  CHECK(changed == simplifies);
  CHECK((count_ops(*after) < count_ops(*before)) == simplifies);
  // A second round finds nothing left to do.
  CHECK_FALSE(passes::cse(*after));
  CHECK_FALSE(passes::dce(*after));
  auto expected = run(*before, args, grid);
  auto got = run(*after, args, grid);
  for (size_t i = 0; i < args.size(); ++i) {
    INFO("argument " << i);
    CHECK(expected[i].bytes == got[i].bytes);
  }
  auto compiled = ir::parse(ir::print(*after));
  passes::run_pipeline(*compiled, {});
}
}  // namespace

TEST_CASE("passes: the test kernels use every op kind", "[unit]") {
  std::set<OpKind> seen;
  for (const char* text : {kElementwise, kTiles}) {
    auto f = ir::parse(text);
    ir::walk(f->body, [&](const ir::Op* op) { seen.insert(op->kind); });
  }
  // convert_layout exists only after layout assignment; print would write to the test's output;
  // the interpreter these tests run the kernels in cannot execute inline_asm's PTX.
  for (size_t k = 0; k <= static_cast<size_t>(OpKind::Assume); ++k) {
    auto kind = static_cast<OpKind>(k);
    if (kind == OpKind::ConvertLayout || kind == OpKind::Print || kind == OpKind::InlineAsm) continue;
    INFO(ir::mnemonic(kind));
    CHECK(seen.count(kind));
  }
}

TEST_CASE("passes: canonicalize, cse and dce keep elementwise results bit for bit", "[unit]") {
  const size_t n = 200;  // not a multiple of the block: the tail is masked
  std::vector<int32_t> y(n);
  std::mt19937 gen(7);
  for (auto& v : y) v = static_cast<int32_t>(gen());
  check_kernel(kElementwise,
               {buffer(random_floats(n, 1)), buffer(y), buffer(std::vector<float>(n)), buffer(std::vector<int32_t>(n)),
                integer(static_cast<int64_t>(n))},
               {4, 1, 1}, true);
}

TEST_CASE("passes: canonicalize, cse and dce keep tile, loop and atomic results bit for bit", "[unit]") {
  check_kernel(
      kTiles,
      {buffer(random_floats(256, 2)), buffer(std::vector<float>(304)), buffer(std::vector<int32_t>(2)), integer(3)},
      {2, 1, 1}, true);
}

TEST_CASE("layout text: parsed layouts are the layout classes' own objects", "[unit]") {
  auto parsed = [](const std::string& type) {
    auto f = ir::parse("kernel @k() {\n  %a = arange() {end = 64, start = 0} : " + type + "\n}\n");
    return f->body.ops[0]->result()->type;
  };
  const auto* blocked = passes::BlockedLayout::get({2}, {32}, {4}, {0});
  ir::Type i32 = ir::Type::scalar(tl::DType::i32);
  // Equal layouts are one object: a parsed type is the type built in C++, so the verifier's
  // equal-layout rules and the passes' pointer comparisons hold across the text.
  CHECK(parsed("tile<64xi32, blocked<spt=[2], tpw=[32], wpc=[4], order=[0]>>") == ir::Type::tile({64}, i32, blocked));
  const auto* slice = passes::SliceLayout::get(passes::MmaLayout::get(2, 2), 1);
  CHECK(parsed("tile<64xi32, slice<dim=1, mma<16x8, wpc=[2, 2]>>>") == ir::Type::tile({64}, i32, slice));
  CHECK(parsed("tile<64xi32,slice< dim = 1 ,mma<16x8,wpc=[ 2,2 ]>>>") == ir::Type::tile({64}, i32, slice));
  // Layouts that the classes' get() refuses parse (the verifier names them) and are interned too.
  ir::Type bad = parsed("tile<64xi32, blocked<spt=[1], tpw=[16], wpc=[4], order=[0]>>");
  CHECK(bad == parsed("tile<64xi32, blocked<spt=[1], tpw=[16], wpc=[4], order=[0]>>"));
  CHECK(bad.str() == "tile<64xi32, blocked<spt=[1], tpw=[16], wpc=[4], order=[0]>>");
  CHECK(parsed("tile<64xi32, mma<16x8, wpc=[3, 0]>>").str() == "tile<64xi32, mma<16x8, wpc=[3, 0]>>");
  CHECK(parsed("tile<64xi32, slice<dim=-4, mma<16x8, wpc=[2, 2]>>>").str() ==
        "tile<64xi32, slice<dim=-4, mma<16x8, wpc=[2, 2]>>>");
  // Mistakes in the syntax are parse errors at their column.
  auto error = [](const std::string& type) {
    try {
      ir::parse("kernel @k() {\n  %a = arange() {end = 64, start = 0} : " + type + "\n}\n");
    } catch (const tl::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("tile<64xi32, blocked<spt=[1], tpw=[32], wpc=[4]>>") ==
        "<ir>:2:88: parse error: expected ',' in a layout");
  CHECK(error("tile<64xi32, blocked<spt=[99999999999], tpw=[32], wpc=[4], order=[0]>>") ==
        "<ir>:2:67: parse error: a layout's numbers are 32-bit integers");
  std::string ones = "1";
  for (size_t i = 0; i < ir::kMaxTileRank; ++i) ones += ",1";
  CHECK(error("tile<64xi32, blocked<spt=[" + ones + "], tpw=[32], wpc=[4], order=[0]>>")
            .find("a layout has at most 24 dimensions") != std::string::npos);
  std::string deep = "blocked<spt=[1], tpw=[32], wpc=[4], order=[0]>";
  for (int i = 0; i < 30; ++i) deep = "slice<dim=0, " + deep + ">";
  CHECK(error("tile<64xi32, " + deep + ">").find("slices nest more than 24 deep") != std::string::npos);
  CHECK(passes::has_layouts(
      *ir::parse("kernel @k() {\n  %a = arange() {end = 64, start = 0} : tile<64xi32, mma<16x8, wpc=[2, 2]>>\n}\n")));
  CHECK_FALSE(
      passes::has_layouts(*ir::parse("kernel @k() {\n  %a = arange() {end = 64, start = 0} : tile<64xi32>\n}\n")));
}

TEST_CASE("remove-convert-layouts: identity, chains, splats and aranges", "[unit]") {
  using passes::BlockedLayout;
  const ir::Layout* l1 = BlockedLayout::get({1}, {32}, {4}, {0});
  const ir::Layout* l2 = BlockedLayout::get({4}, {32}, {4}, {0});
  const ir::Layout* l3 = BlockedLayout::get({2}, {32}, {4}, {0});
  ir::Type f32 = ir::Type::scalar(DType::f32), i32 = ir::Type::scalar(DType::i32);
  ir::Type pf = ir::Type::pointer(f32);
  auto tile = [](ir::Type e, const ir::Layout* l) { return ir::Type::tile({512}, e, l); };

  ir::Function f;
  f.name = "k";
  f.arg_names = {"x", "v"};
  ir::Value* x = f.body.add_arg(pf);
  ir::Value* v = f.body.add_arg(f32);
  ir::Builder b(f);
  ir::Location loc;
  auto op = [&](OpKind k, std::vector<ir::Value*> operands, ir::Type t, ir::Attrs attrs = {}) {
    return b.create(k, std::move(operands), {t}, std::move(attrs), loc)->result();
  };
  ir::Value* r = op(OpKind::Arange, {}, tile(i32, l1), {{"start", int64_t{0}}, {"end", int64_t{512}}});
  ir::Value* r2 = op(OpKind::ConvertLayout, {r}, tile(i32, l2));  // rematerialised as an arange
  ir::Value* p = op(OpKind::Splat, {x}, tile(pf, l2));
  ir::Value* q = op(OpKind::AddPtr, {p, r2}, tile(pf, l2));
  ir::Value* val = op(OpKind::Load, {q}, tile(f32, l2));
  ir::Value* same = op(OpKind::ConvertLayout, {val}, tile(f32, l2));  // to its own layout: removed
  ir::Value* c1 = op(OpKind::ConvertLayout, {same}, tile(f32, l3));
  ir::Value* c2 = op(OpKind::ConvertLayout, {c1}, tile(f32, l1));    // one conversion from val
  ir::Value* back = op(OpKind::ConvertLayout, {c2}, tile(f32, l2));  // back to val's: none
  ir::Value* s = op(OpKind::Splat, {v}, tile(f32, l1));
  ir::Value* s2 = op(OpKind::ConvertLayout, {s}, tile(f32, l2));  // rematerialised as a splat
  ir::Value* sum = op(OpKind::Add, {back, s2}, tile(f32, l2));
  ir::Value* c2b = op(OpKind::ConvertLayout, {c2}, tile(f32, l2));
  ir::Value* sum2 = op(OpKind::Add, {sum, c2b}, tile(f32, l2));
  b.create(OpKind::Store, {q, sum2}, {}, {}, loc);
  ir::verify(f);

  REQUIRE(passes::remove_convert_layouts(f));
  ir::verify(f);
  std::string text = ir::print(f, {false});
  INFO(text);
  // Every conversion goes: each chain ends in val's own layout or is rematerialised.
  size_t converts = 0;
  const ir::Op *store = nullptr, *add1 = nullptr;
  ir::walk(f.body, [&](const ir::Op* o) {
    if (o->kind == OpKind::ConvertLayout) ++converts;
    if (o->kind == OpKind::Store) store = o;
    if (o->kind == OpKind::Add && !add1) add1 = o;
  });
  REQUIRE(store);
  REQUIRE(add1);
  // back = convert(convert(convert(val))) into val's own layout is val itself.
  CHECK(add1->operands[0] == val);
  // The splat is computed again in l2, the arange too.
  CHECK(add1->operands[1]->def->kind == OpKind::Splat);
  CHECK(add1->operands[1]->type == tile(f32, l2));
  CHECK(q->def->operands[1]->def->kind == OpKind::Arange);
  // c2b = convert(c2) with c2 = convert(...val) in l1: it reads val, whose type it has.
  CHECK(store->operands[1]->def->operands[1] == val);
  CHECK(converts == 0);
  // Nothing left to do.
  CHECK_FALSE(passes::remove_convert_layouts(f));
}

TEST_CASE("masked lanes: a load's masked-off elements are unread only when stores under its mask take them", "[unit]") {
  const char* kLoads = R"IR(
kernel @masked_loads(%x: ptr<f32>, %out: ptr<f32>, %n: i32, %m: i32) {
  %r = arange() {end = 64, start = 0} : tile<64xi32>
  %ns = splat(%n) : tile<64xi32>
  %ms = splat(%m) : tile<64xi32>
  %mask = cmp(%r, %ns) {pred = "lt"} : tile<64xi1>
  %other_mask = cmp(%r, %ms) {pred = "lt"} : tile<64xi1>
  %px = splat(%x) : tile<64xptr<f32>>
  %qx = addptr(%px, %r) : tile<64xptr<f32>>
  %po = splat(%out) : tile<64xptr<f32>>
  %qo = addptr(%po, %r) : tile<64xptr<f32>>
  %through_math = load(%qx, %mask) : tile<64xf32>
  %e = exp(%through_math) : tile<64xf32>
  %s = add(%e, %e) : tile<64xf32>
  store(%qo, %s, %mask)
  %unmasked_store = load(%qx, %mask) : tile<64xf32>
  store(%qo, %unmasked_store)
  %other_store_mask = load(%qx, %mask) : tile<64xf32>
  store(%qo, %other_store_mask, %other_mask)
  %decides_mask = load(%qx, %mask) : tile<64xf32>
  %f0 = constant() {value = 0.0} : f32
  %zs = splat(%f0) : tile<64xf32>
  %pos = cmp(%decides_mask, %zs) {pred = "gt"} : tile<64xi1>
  %both = and(%pos, %mask) : tile<64xi1>
  store(%qo, %zs, %both)
  %zero = constant() {value = 0} : i32
  %one = constant() {value = 1} : i32
  %carried = load(%qx, %mask) : tile<64xf32>
  %acc = for(%zero, %n, %one, %carried) : tile<64xf32> {
  ^(%i: i32, %c: tile<64xf32>):
    %c2 = add(%c, %c) : tile<64xf32>
    yield(%c2)
  }
  store(%qo, %acc, %mask)
  %summed = load(%qx, %mask) : tile<64xf32>
  %total = reduce(%summed) {axis = 0} : f32 {
  ^(%l: f32, %rr: f32):
    %t = add(%l, %rr) : f32
    yield(%t)
  }
  store(%out, %total)
}
)IR";
  auto f = ir::parse(kLoads);
  auto unread = passes::loads_with_unread_masked_lanes(*f);
  std::set<std::string> names;
  std::map<const ir::Op*, std::string> load_names;
  // The loads in program order, named as in the text above.
  const std::vector<std::string> order{"through_math", "unmasked_store", "other_store_mask",
                                       "decides_mask", "carried",        "summed"};
  size_t k = 0;
  ir::walk(f->body, [&](const ir::Op* op) {
    if (op->kind == OpKind::Load) load_names[op] = order.at(k++);
  });
  REQUIRE(k == order.size());
  for (const ir::Op* op : unread) names.insert(load_names.at(op));
  CHECK(names == std::set<std::string>{"through_math"});
}

// The arguments of the matmul kernels of test/lit/codegen (row-major bf16 a [M, K] and b [K, N]
// from `seed` and seed + 1, an f32 c [M, N] of -7s, then sizes and strides).
std::vector<Arg> matmul_args(int M, int N, int K, unsigned seed) {
  auto bf16s = [](size_t n, unsigned s) {
    std::vector<bf16> v;
    for (float x : random_floats(n, s)) v.push_back(bf16(x));
    return v;
  };
  return {buffer(bf16s(static_cast<size_t>(M * K), seed)),
          buffer(bf16s(static_cast<size_t>(K * N), seed + 1)),
          buffer(std::vector<float>(static_cast<size_t>(M * N), -7.0f)),
          integer(M),
          integer(N),
          integer(K),
          integer(K),
          integer(1),
          integer(N),
          integer(1),
          integer(N),
          integer(1)};
}

// A lit test's kernel text (test/lit/codegen/NAME).
std::string lit_kernel(const std::string& name) {
  std::ifstream in(std::string(TILEDSL_SOURCE_DIR) + "/test/lit/codegen/" + name);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// What prefetch-loads left: the values the (one) loop carries, the loads in its body and before it.
struct PrefetchShape {
  size_t carried = 0, in_loop = 0, before = 0;
};
PrefetchShape prefetch_shape(const ir::Function& f) {
  PrefetchShape p;
  ir::walk(f.body, [&](const ir::Op* op) {
    if (op->kind == OpKind::For) p.carried = op->results.size();
    if (op->kind == OpKind::Load) ++(op->parent == &f.body ? p.before : p.in_loop);
  });
  return p;
}

// The matmul kernels' C (argument 2) from `before` and `after`, in the interpreter (whose memory
// checker flags any unmasked access outside a buffer), must be the same bytes.
void require_same_matmul(ir::Function& before, ir::Function& after, int M, int N, int K, int BM, int BN,
                         unsigned seed) {
  std::vector<Arg> args = matmul_args(M, N, K, seed);
  std::array<int64_t, 3> grid{((M + BM - 1) / BM) * ((N + BN - 1) / BN), 1, 1};
  CHECK(run(before, args, grid)[2].bytes == run(after, args, grid)[2].bytes);
}

// prefetch-loads moves matmul's loads one iteration ahead (the loop carries them); the
// interpreter, whose memory checker flags any unmasked access outside a buffer, gives the same
// bytes before and after, for K that fills no block, K of one block and K = 0 (no iteration: the
// load before the loop must be masked off entirely).
TEST_CASE("prefetch-loads: the same results, loads carried by the loop", "[unit]") {
  const std::string text = lit_kernel("matmul-mma.tir");
  REQUIRE(text.find("kernel @matmul_bf16") != std::string::npos);
  for (int K : {112, 32, 0}) {
    INFO("K = " << K);
    auto before = ir::parse(text);
    auto after = ir::parse(text);
    passes::prefetch_loads(*after, {.num_stages = 3});
    ir::verify(*after);
    const PrefetchShape p = prefetch_shape(*after);
    CHECK(p.carried == 5);  // acc, two pointer tiles, and the two prefetched tiles
    CHECK(p.in_loop == 2);  // the next iteration's a and b
    // M and N multiples of 16 (the kernel's specialisation), of no block.
    require_same_matmul(*before, *after, 80, 96, K, 32, 64, 1);
  }
  // num_stages 1: nothing moves.
  auto once = ir::parse(text);
  passes::prefetch_loads(*once, {.num_stages = 1});
  CHECK(ir::print(*once) == ir::print(*ir::parse(text)));
}

// Loads that go straight into tensor-core dots (wgmma or mma.sync) are prefetched num_stages - 1
// iterations ahead: the loop carries that many tiles per load, shifting them each iteration.
// Same bytes as without the pass for K of several blocks and a part block, K of fewer blocks
// than the distance (the tiles ahead of the last iteration are masked off) and K = 0.
TEST_CASE("prefetch-loads: num_stages - 1 iterations ahead into tensor-core dots", "[unit]") {
  const std::string text = lit_kernel("matmul-wgmma.tir");
  REQUIRE(text.find("BLOCK_K = 64, BLOCK_M = 128, BLOCK_N = 128") != std::string::npos);
  for (int K : {208, 80, 0}) {
    INFO("K = " << K);
    auto before = ir::parse(text);
    auto after = ir::parse(text);
    passes::canonicalize(*after);  // as the pipeline runs it first: the axis analysis sees folded strides
    passes::prefetch_loads(*after, {.num_stages = 4, .wgmma = true, .num_warps = 8});
    ir::verify(*after);
    const PrefetchShape p = prefetch_shape(*after);
    CHECK(p.carried == 3 + 2 * 3);  // acc, two pointer tiles, three tiles in flight of a and of b
    CHECK(p.in_loop == 2);          // a and b of iteration i + 3
    CHECK(p.before == 6);           // of iterations 0, 1, 2
    // M and N multiples of 16 (the kernel's specialisation), of no block.
    require_same_matmul(*before, *after, 144, 176, K, 128, 128, 5);
  }
  // The same on mma.sync targets (a and b run along their rows in shared memory there too), and
  // one iteration ahead where a load's tile is not zero where masked (it cannot be a cp.async
  // copy): `other` 1.0 instead of 0.0.
  auto plain = ir::parse(text);
  passes::canonicalize(*plain);
  passes::prefetch_loads(*plain, {.num_stages = 4, .wgmma = false, .num_warps = 8});
  CHECK(prefetch_shape(*plain).carried == 3 + 2 * 3);
  std::string ones = text;
  const std::string zero = "constant() {value = 0.0} : bf16";
  REQUIRE(ones.find(zero) != std::string::npos);
  ones.replace(ones.find(zero), zero.size(), "constant() {value = 1.0} : bf16");
  auto shallow = ir::parse(ones);
  passes::canonicalize(*shallow);
  passes::prefetch_loads(*shallow, {.num_stages = 4, .wgmma = true, .num_warps = 8});
  CHECK(prefetch_shape(*shallow).carried == 5);
}

// Without masks of its own, a prefetched load relies on the pass's guard: in the last iteration
// the next block lies past the end of a and b, and with K = 0 so does the first. The interpreter's
// memory checker would flag either access.
TEST_CASE("prefetch-loads: the loads past the loop's last iteration are masked off", "[unit]") {
  auto k = tl::kernel("kloop", {"a", "b", "c", "K"}, [](tl::Ptr<bf16> a, tl::Ptr<bf16> b, tl::Ptr<float> c, tl::Int K) {
    auto r = tl::arange(0, 16);
    auto acc = tl::zeros<float>({16, 16});
    tl::range(0, K, 16, [&](tl::Int kk) {
      auto x = tl::load(a + r(tl::_, tl::newaxis) * K + kk + r(tl::newaxis, tl::_));
      auto y = tl::load(b + (kk + r(tl::_, tl::newaxis)) * 16 + r(tl::newaxis, tl::_));
      acc = tl::dot(x, y, acc);
    });
    tl::store(c + r(tl::_, tl::newaxis) * 16 + r(tl::newaxis, tl::_), acc);
  });
  for (int K : {48, 0}) {
    INFO("K = " << K);
    auto cpu = [](size_t n) {
      return tl::Tensor::empty({static_cast<int64_t>(std::max<size_t>(n, 1))}, tl::DType::bf16, tl::Device::cpu);
    };
    std::string text = k.ir(cpu(16 * static_cast<size_t>(K)), cpu(16 * static_cast<size_t>(K)),
                            tl::Tensor::empty({256}, tl::DType::f32, tl::Device::cpu), K);
    auto before = ir::parse(text);
    auto after = ir::parse(text);
    passes::prefetch_loads(*after, {.num_stages = 2});
    ir::verify(*after);
    auto bf16s = [](size_t n, unsigned seed) {
      std::vector<bf16> v;
      for (float x : random_floats(n, seed)) v.push_back(bf16(x));
      return v;
    };
    std::vector<Arg> args = {buffer(bf16s(16 * static_cast<size_t>(K), 3)),
                             buffer(bf16s(16 * static_cast<size_t>(K), 4)), buffer(std::vector<float>(256, -7.0f)),
                             integer(K)};
    auto expected = run(*before, args, {1, 1, 1});
    auto got = run(*after, args, {1, 1, 1});
    CHECK(expected[2].bytes == got[2].bytes);
  }
}

// What ldmatrix (and wgmma's 8-row core matrices) read at once: 8 consecutive rows of an
// operand array at one 16-byte chunk. Shared memory has 32 4-byte banks, 8 groups of 16 bytes;
// the 8 rows are conflict-free when they fall in 8 different groups.
TEST_CASE("dot operands in shared memory: every element has a byte of its own, 8-row reads hit 8 bank groups",
          "[unit]") {
  struct Array {
    int64_t rows, cols;
    int bytes;
  };
  // a [M][K] and b [K][N] (or K-major [N][K]) of the bundled configurations and their neighbours,
  // 1-, 2- and 4-byte elements, rows of 32 to 1024 bytes.
  const Array arrays[] = {{64, 128, 2},  {64, 256, 2}, {128, 64, 2}, {256, 64, 2}, {32, 128, 2}, {16, 256, 2},
                          {64, 16, 2},   {64, 32, 2},  {64, 64, 4},  {32, 64, 4},  {32, 16, 4},  {128, 32, 4},
                          {128, 256, 1}, {64, 128, 1}, {128, 64, 1}, {32, 512, 1}, {16, 512, 2}};
  for (const Array& a : arrays)
    for (bool wgmma : {false, true}) {
      const int64_t row_bytes = a.cols * a.bytes;
      if (wgmma && row_bytes % 128) continue;  // wgmma takes K and N of whole panels only
      const bool panels = wgmma || passes::mma_operand_panels(row_bytes);
      CAPTURE(a.rows, a.cols, a.bytes, wgmma, panels);
      std::set<int64_t> chunks;
      for (int64_t r = 0; r < a.rows; ++r)
        for (int64_t c = 0; c < a.cols; c += 16 / a.bytes) {
          const int64_t at = passes::dot_operand_byte(r, c, a.rows, a.cols, panels, a.bytes);
          REQUIRE(at % 16 == 0);  // 16-byte chunks stay whole (cp.async, ldmatrix, stores)
          REQUIRE(at < a.rows * row_bytes);
          chunks.insert(at);
          for (int e = 1; e < 16 / a.bytes; ++e)  // the chunk's elements are consecutive
            REQUIRE(passes::dot_operand_byte(r, c + e, a.rows, a.cols, panels, a.bytes) == at + e * a.bytes);
          if (r % 8) continue;
          std::set<int64_t> groups;
          for (int64_t i = 0; i < 8 && r + i < a.rows; ++i)
            groups.insert(passes::dot_operand_byte(r + i, c, a.rows, a.cols, panels, a.bytes) % 128 / 16);
          REQUIRE(groups.size() == static_cast<size_t>(std::min<int64_t>(8, a.rows - r)));
        }
      REQUIRE(static_cast<int64_t>(chunks.size()) == a.rows * row_bytes / 16);  // a bijection
    }
  // Row-major, 256-byte rows gave every 8-row read 4 groups (run 90's 2-way conflicts).
  std::set<int64_t> groups;
  for (int64_t i = 0; i < 8; ++i) groups.insert(passes::dot_operand_byte(i, 0, 64, 128, false, 2) % 128 / 16);
  CHECK(groups.size() == 4);
  CHECK(passes::mma_operand_panels(256));
  CHECK(!passes::mma_operand_panels(64));
}
