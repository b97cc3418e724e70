// Error tests: a user's mistakes, each checked against its exact, complete message. Every
// message starts with "test_errors.cpp:<line>", the line of the mistake in this file: kernel
// bodies write MARK on the line of the faulty op (it records __LINE__), launches take their
// line from __LINE__ on the line that writes the grid. The layout of lines is part of the test,
// so clang-format leaves this file alone.
// clang-format off
#include <catch2/catch.hpp>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <tiledsl/tiledsl.h>
#include <unistd.h>

namespace tl = tiledsl;
using tl::_;
using tl::newaxis;

namespace {
int g_line = 0;
#define MARK (g_line = __LINE__)

// "test_errors.cpp:<line>: error in kernel '<kernel>': <rest>"
std::string err(int line, const std::string& kernel, const std::string& rest) {
  return "test_errors.cpp:" + std::to_string(line) + ": error in kernel '" + kernel + "': " + rest;
}
// The same, for the line MARK recorded while the kernel was traced (read after the throw).
std::string err(const std::string& kernel, const std::string& rest) { return err(g_line, kernel, rest); }

// Runtime errors (bounds, asserts) are the interpreter's: host tensors.
constexpr tl::Device kCpu = tl::Device::cpu;
tl::Tensor f32(int n) { return tl::Tensor::rand({n}, 7, tl::DType::f32, kCpu); }
}  // namespace

// --- Shapes while tracing -------------------------------------------------------------------
TEST_CASE("binary op on tiles whose shapes do not broadcast", "[error]") {
  auto k = tl::kernel("add_shapes", {"x", "out"}, [](tl::Ptr<float> x, tl::Ptr<float> out) {
    auto a = tl::load(x + tl::arange(0, 128));
    auto b = tl::load(x + tl::arange(0, 64));
    MARK; auto c = a + b;
    tl::store(out + tl::arange(0, 128), c);
  });
  auto x = f32(128), out = f32(128);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, out),
                      err("add_shapes", "add: cannot broadcast shapes [128] and [64] (dimension 0: 128 vs 64)"));
}

TEST_CASE("2-D binary op with swapped dimensions", "[error]") {
  auto k = tl::kernel("mul_shapes", {"x"}, [](tl::Ptr<float> x) {
    auto r16 = tl::arange(0, 16), r32 = tl::arange(0, 32);
    auto a = tl::load(x + r16(_, newaxis) * 32 + r32(newaxis, _));  // [16, 32]
    auto b = tl::load(x + r32(_, newaxis) * 16 + r16(newaxis, _));  // [32, 16]
    MARK; tl::store(x + r16(_, newaxis) * 32 + r32(newaxis, _), a * b);
  });
  auto x = f32(512);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("mul_shapes", "mul: cannot broadcast shapes [16, 32] and [32, 16] (dimension 0: 16 vs 32)"));
}

TEST_CASE("load with a mask of another shape than the pointers", "[error]") {
  auto k = tl::kernel("load_mask", {"x", "out"}, [](tl::Ptr<float> x, tl::Ptr<float> out) {
    auto offs = tl::arange(0, 128);
    MARK; auto v = tl::load(x + offs, tl::arange(0, 64) < 10);
    tl::store(out + offs, v);
  });
  auto x = f32(128), out = f32(128);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, out), err("load_mask", "load: mask has shape [64] but pointer tile has shape [128]"));
}

TEST_CASE("store with a row mask that lacks its newaxis", "[error]") {
  auto k = tl::kernel("store_mask", {"out", "M"}, [](tl::Ptr<float> out, tl::Int M) {
    auto r = tl::arange(0, 16), c = tl::arange(0, 32);
    auto ptrs = out + r(_, newaxis) * 32 + c(newaxis, _);
    MARK; tl::store(ptrs, 1.0f, r < M);  // should be r(_, newaxis) < M
  });
  auto out = f32(512);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](out, 16),
                      err("store_mask", "store: mask has shape [16] but pointer tile has shape [16, 32]"));
}

TEST_CASE("store of a value whose shape does not match the pointers", "[error]") {
  auto k = tl::kernel("store_value", {"x", "out"}, [](tl::Ptr<float> x, tl::Ptr<float> out) {
    auto v = tl::load(x + tl::arange(0, 64));
    MARK; tl::store(out + tl::arange(0, 128), v);
  });
  auto x = f32(128), out = f32(128);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, out),
                      err("store_value", "store: value has shape [64] but pointer tile has shape [128]"));
}

TEST_CASE("dot with different inner dimensions", "[error]") {
  auto k = tl::kernel("dot_k", {"x", "out"}, [](tl::Ptr<float> x, tl::Ptr<float> out) {
    auto r16 = tl::arange(0, 16), r32 = tl::arange(0, 32);
    auto a = tl::load(x + r16(_, newaxis) * 32 + r32(newaxis, _));  // [16, 32]
    auto b = tl::load(x + r16(_, newaxis) * 16 + r16(newaxis, _));  // [16, 16]
    MARK; auto c = tl::dot(a, b);
    tl::store(out + r16(_, newaxis) * 16 + r16(newaxis, _), c);
  });
  auto x = f32(512), out = f32(256);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, out),
                      err("dot_k", "dot: inner dimensions differ: a is [16, 32] and b is [16, 16] (32 != 16)"));
}

TEST_CASE("dot of a 1-D tile", "[error]") {
  auto k = tl::kernel("dot_rank", {"x", "out"}, [](tl::Ptr<float> x, tl::Ptr<float> out) {
    auto r = tl::arange(0, 16);
    auto a = tl::load(x + r);
    auto b = tl::load(x + r(_, newaxis) * 16 + r(newaxis, _));
    MARK; auto c = tl::dot(a, b);
    tl::store(out + r(_, newaxis) * 16 + r(newaxis, _), c);
  });
  auto x = f32(256), out = f32(256);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, out),
                      err("dot_rank", "dot: operands must be 2-D tiles (or 3-D, batched), got tile<16xf32> and tile<16x16xf32>"));
}

TEST_CASE("dot with an accumulator of the wrong shape", "[error]") {
  auto k = tl::kernel("dot_acc", {"x", "out"}, [](tl::Ptr<float> x, tl::Ptr<float> out) {
    auto r8 = tl::arange(0, 8), r16 = tl::arange(0, 16), r32 = tl::arange(0, 32);
    auto a = tl::load(x + r16(_, newaxis) * 32 + r32(newaxis, _));  // [16, 32]
    auto b = tl::load(x + r32(_, newaxis) * 8 + r8(newaxis, _));    // [32, 8]
    auto acc = tl::zeros<float>({16, 16});
    MARK; acc = tl::dot(a, b, acc);
    tl::store(out + r16(_, newaxis) * 16 + r16(newaxis, _), acc);
  });
  auto x = f32(512), out = f32(256);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, out),
                      err("dot_acc", "dot: accumulator must be tile<16x8xf32> (f32, shape [M, N]), got tile<16x16xf32>"));
}

TEST_CASE("reduction over an axis the tile does not have", "[error]") {
  auto k = tl::kernel("reduce_axis", {"x", "out", "WHICH"}, [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Constexpr WHICH) {
    auto r = tl::arange(0, 16), c = tl::arange(0, 32);
    auto v = tl::load(x + r(_, newaxis) * 32 + c(newaxis, _));
    if (WHICH == 0) { MARK; tl::store(out + c, tl::sum(v, 2)); }
    if (WHICH == 1) { MARK; tl::store(out + c, tl::max(v, -3)); }
    if (WHICH == 2) { MARK; tl::store(out + c, tl::argmax(v, 2).to<float>()); }
  });
  auto x = f32(512), out = f32(32);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, out, 0),
                      err("reduce_axis", "sum: axis 2 is out of range for a tile of shape [16, 32] (rank 2)"));
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, out, 1),
                      err("reduce_axis", "max: axis -3 is out of range for a tile of shape [16, 32] (rank 2)"));
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, out, 2),
                      err("reduce_axis", "argmax: axis 2 is out of range for a tile of shape [16, 32] (rank 2)"));
}

TEST_CASE("arange of a size that is not a power of two", "[error]") {
  auto k = tl::kernel("arange_size", {"out"}, [](tl::Ptr<int32_t> out) {
    MARK; auto offs = tl::arange(0, 100);
    tl::store(out + offs, offs);
  });
  auto out = tl::Tensor::zeros({100}, tl::DType::i32, kCpu);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](out),
                      err("arange_size", "arange: range [0, 100) has 100 elements; tiles need a power-of-two size"));
}

TEST_CASE("zeros with a dimension that is not a power of two", "[error]") {
  auto k = tl::kernel("zeros_shape", {"out"}, [](tl::Ptr<float> out) {
    MARK; auto z = tl::zeros<float>({16, 12});
    tl::store(out + tl::arange(0, 16)(_, newaxis), z);
  });
  auto out = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](out),
                      err("zeros_shape", "zeros: shape [16, 12] has a dimension (12) that is not a power of two; tile "
                                         "dimensions must be powers of two (mask the extra elements instead)"));
}

TEST_CASE("reshape to a different number of elements", "[error]") {
  auto k = tl::kernel("reshape_count", {"x"}, [](tl::Ptr<float> x) {
    auto v = tl::load(x + tl::arange(0, 256));
    MARK; auto m = tl::reshape(v, {16, 8});
    tl::store(x + tl::arange(0, 16)(_, newaxis) * 8 + tl::arange(0, 8)(newaxis, _), m);
  });
  auto x = f32(256);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("reshape_count", "reshape: cannot reshape [256] (256 elements) to [16, 8] (128 elements)"));
}

TEST_CASE("trans with a list that is not a permutation", "[error]") {
  auto k = tl::kernel("trans_perm", {"x"}, [](tl::Ptr<float> x) {
    auto r = tl::arange(0, 16), c = tl::arange(0, 32);
    auto v = tl::load(x + r(_, newaxis) * 32 + c(newaxis, _));
    MARK; auto t = tl::trans(v, {0, 0});
    tl::store(x + r(_, newaxis) * 32 + c(newaxis, _), t);
  });
  auto x = f32(512);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("trans_perm", "trans: [0, 0] is not a permutation of the 2 dimensions of shape [16, 32]"));
}

TEST_CASE("expand_dims past the last axis", "[error]") {
  auto k = tl::kernel("expand_axis", {"x"}, [](tl::Ptr<float> x) {
    auto v = tl::load(x + tl::arange(0, 16));
    MARK; auto e = tl::expand_dims(v, 3);
    tl::store(x + tl::arange(0, 16)(_, newaxis), e);
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x), err("expand_axis", "expand_dims: axis 3 is out of range for a tile of shape [16]"));
}

// --- Values and ops while tracing -----------------------------------------------------------
TEST_CASE("a literal that does not fit the tile's integer type", "[error]") {
  auto k = tl::kernel("literal_range", {"x"}, [](tl::Ptr<int8_t> x) {
    auto offs = tl::arange(0, 16);
    auto v = tl::load(x + offs);
    MARK; tl::store(x + offs, v + 1000);
  });
  auto x = tl::Tensor::zeros({16}, tl::DType::i8, kCpu);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x), err("literal_range", "constant: value 1000 does not fit in i8"));
}

TEST_CASE("full with a value the element type cannot hold", "[error]") {
  auto k = tl::kernel("full_range", {"x"}, [](tl::Ptr<uint8_t> x) {
    MARK; tl::store(x + tl::arange(0, 16), tl::full<uint8_t>({16}, -1));
  });
  auto x = tl::Tensor::zeros({16}, tl::DType::u8, kCpu);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x), err("full_range", "constant: value -1 does not fit in u8"));
}

TEST_CASE("program_id of an axis that does not exist", "[error]") {
  auto k = tl::kernel("pid_axis", {"x"}, [](tl::Ptr<float> x) {
    MARK; auto pid = tl::program_id(3);
    tl::store(x + pid, 1.0f);
  });
  auto x = f32(4);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x), err("pid_axis", "program_id: axis must be 0, 1 or 2, got 3"));
}

TEST_CASE("atomic_add on 8-bit memory", "[error]") {
  auto k = tl::kernel("atomic_i8", {"x"}, [](tl::Ptr<int8_t> x) {
    MARK; tl::atomic_add(x + tl::arange(0, 16), 1);
  });
  auto x = tl::Tensor::zeros({16}, tl::DType::i8, kCpu);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("atomic_i8", "atomic_add: unsupported element type i8 (atomics need 16, 32 or 64 bits)"));
}

TEST_CASE("make_block_ptr with lists of different lengths", "[error]") {
  auto k = tl::kernel("block_rank", {"x", "M", "N"}, [](tl::Ptr<float> x, tl::Int M, tl::Int N) {
    MARK; auto bp = tl::make_block_ptr(x, {M, N}, {N, 1}, {0}, {16, 16}, {1, 0});
    tl::store(bp, tl::zeros<float>({16, 16}));
  });
  auto x = f32(256);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, 16, 16),
                      err("block_rank", "make_block_ptr: shape, strides, offsets, block_shape and order need one entry "
                                        "per dimension; got 2, 2, 1, 2 and 2"));
}

TEST_CASE("block pointer boundary check of a dimension the block does not have", "[error]") {
  auto k = tl::kernel("block_check", {"x", "M", "N"}, [](tl::Ptr<float> x, tl::Int M, tl::Int N) {
    auto bp = tl::make_block_ptr(x, {M, N}, {N, 1}, {0, 0}, {16, 16}, {1, 0});
    MARK; auto v = tl::load(bp, {0, 2});
    tl::store(bp, v + 1.0f);
  });
  auto x = f32(256);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, 16, 16),
                      err("block_check", "load: boundary_check dimension 2 is out of range for a block of rank 2"));
}

TEST_CASE("static_assert_ on a constexpr that fails", "[error]") {
  auto k = tl::kernel("static_check", {"x", "BLOCK"}, [](tl::Ptr<float> x, tl::Constexpr BLOCK) {
    MARK; tl::static_assert_(BLOCK % 32 == 0, "BLOCK must be a multiple of 32");
    tl::store(x + tl::arange(0, BLOCK), 0.0f);
  });
  auto k2 = tl::kernel("static_check2", {"x", "BLOCK"}, [](tl::Ptr<float> x, tl::Constexpr BLOCK) {
    MARK; tl::static_assert_(BLOCK >= 64);
    tl::store(x + tl::arange(0, BLOCK), 0.0f);
  });
  auto x = f32(64);
  REQUIRE_NOTHROW(k[tl::grid(1)](x, 64));
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, 16), err("static_check", "static_assert: BLOCK must be a multiple of 32"));
  REQUIRE_THROWS_WITH(k2[tl::grid(1)](x, 32), err("static_check2", "static_assert: assertion failed"));
}

// --- Control flow while tracing -------------------------------------------------------------
TEST_CASE("a loop-carried variable that changes shape in tl::range", "[error]") {
  auto k = tl::kernel("loop_shape", {"x"}, [](tl::Ptr<float> x) {
    auto acc = tl::zeros<float>({16});
    MARK; tl::range(0, 4, [&](tl::Int i) { acc = tl::load(x + i * 32 + tl::arange(0, 32)); });
    tl::store(x + tl::arange(0, 16), acc);
  });
  auto x = f32(128);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("loop_shape", "range: a variable assigned in the loop body changes type from tile<16xf32> to "
                                        "tile<32xf32>; loop-carried variables must keep their element type and shape"));
}

TEST_CASE("a variable that changes type in tl::if_", "[error]") {
  auto k = tl::kernel("if_type", {"x"}, [](tl::Ptr<float> x) {
    tl::Float s = 0.0f;
    MARK; tl::if_(tl::program_id(0) == 0, [&] { s = tl::load(x + tl::arange(0, 16)); });
    tl::store(x + tl::arange(0, 16), s);
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("if_type", "if_: a variable assigned in a branch changes type from f32 to tile<16xf32>; "
                                     "variables assigned under if_ must keep their element type and shape"));
}

TEST_CASE("tl::if_ on a tile instead of a scalar", "[error]") {
  auto k = tl::kernel("if_tile", {"x"}, [](tl::Ptr<float> x) {
    auto offs = tl::arange(0, 16);
    auto v = tl::load(x + offs);
    MARK; tl::if_(v > 0, [&] { v = v * 2; });
    tl::store(x + offs, v);
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x), err("if_tile", "if_: condition must be a boolean scalar, got tile<16xi1>"));
}

TEST_CASE("tl::while_ on a tile condition", "[error]") {
  auto k = tl::kernel("while_tile", {"x"}, [](tl::Ptr<float> x) {
    auto offs = tl::arange(0, 16);
    auto v = tl::load(x + offs);
    MARK; tl::while_([&] { return v > 1; }, [&] { v = v * 0.5f; });
    tl::store(x + offs, v);
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("while_tile", "while_: the condition must be a boolean scalar, got tile<16xi1>"));
}

TEST_CASE("a tl::while_ condition that assigns a variable", "[error]") {
  auto k = tl::kernel("while_assigns", {"x"}, [](tl::Ptr<float> x) {
    tl::Float s = tl::load(x);
    MARK; tl::while_([&] { s = s * 2; return s < 100; }, [&] { s = s + 1; });
    tl::store(x, s);
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("while_assigns", "while_: the condition assigns a variable; compute the condition from "
                                           "variables the body assigns instead"));
}

TEST_CASE("a variable that changes type in tl::while_", "[error]") {
  auto k = tl::kernel("while_type", {"x"}, [](tl::Ptr<float> x) {
    tl::Float s = tl::load(x);
    tl::Int i = 0;
    MARK; tl::while_([&] { return i < 3; }, [&] { s = tl::load(x + tl::arange(0, 16)); i += 1; });
    tl::store(x, s);
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("while_type", "while_: a variable assigned in the loop body changes type from f32 to "
                                        "tile<16xf32>; loop-carried variables must keep their element type and shape"));
}

TEST_CASE("a tl::while_ that never ends stops in the interpreter", "[error]") {
  auto k = tl::kernel("while_forever", {"x"}, [](tl::Ptr<float> x) {
    tl::Int i = 0;
    MARK; tl::while_([&] { return i >= 0; }, [&] { i = (i + 1) % 5; });
    tl::store(x, i.to<float>());
  });
  auto x = f32(16);
  setenv("TILEDSL_INTERPRETER_WHILE_LIMIT", "1000", 1);
  auto run = [&] { k[tl::grid(1)](x); };
  std::string message;
  try {
    run();
  } catch (const tl::Error& e) {
    message = e.what();
  }
  unsetenv("TILEDSL_INTERPRETER_WHILE_LIMIT");
  CHECK(message == err("while_forever", "while: while_ ran 1000 iterations without its condition turning false "
                                        "(programs with atomics run one after another in the interpreter, so a loop "
                                        "that waits for another program never ends; TILEDSL_INTERPRETER_WHILE_LIMIT "
                                        "sets the limit) (program (0, 0, 0))"));
}

TEST_CASE("tl::return_if inside a loop", "[error]") {
  auto k = tl::kernel("return_in_loop", {"x"}, [](tl::Ptr<float> x) {
    tl::range(0, 4, [&](tl::Int i) {
      MARK; tl::return_if(i == 2);
      tl::store(x + i, 1.0f);
    });
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("return_in_loop", "return_if: an early return is allowed in the kernel's body and in "
                                            "tl::if_ branches, not inside tl::range or tl::while_ (assign a flag "
                                            "there and return after the loop)"));
}

TEST_CASE("tl::return_if in an if_ inside a loop", "[error]") {
  auto k = tl::kernel("return_in_loop_if", {"x"}, [](tl::Ptr<float> x) {
    tl::range(0, 4, [&](tl::Int i) {
      tl::if_(i > 1, [&] {
        MARK; tl::return_if(i == 2);
      });
      tl::store(x + i, 1.0f);
    });
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("return_in_loop_if", "return_if: an early return is allowed in the kernel's body and in "
                                               "tl::if_ branches, not inside tl::range or tl::while_ (assign a flag "
                                               "there and return after the loop)"));
}

TEST_CASE("tl::return_if on a tile", "[error]") {
  auto k = tl::kernel("return_tile", {"x"}, [](tl::Ptr<float> x) {
    auto v = tl::load(x + tl::arange(0, 16));
    MARK; tl::return_if(v > 0);
    tl::store(x, 1.0f);
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("return_tile", "return_if: condition must be a boolean scalar, got tile<16xi1>"));
}

TEST_CASE("a system-scope atomic that the GPU has no instruction for", "[error]") {
  auto k = tl::kernel("sys_max", {"x"}, [](tl::Ptr<float> x) {
    MARK; tl::atomic_max(x, 1.0f, {.scope = tl::Scope::sys});
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("sys_max", "atomic_max: max on f32 has no system-scope atomic instruction (32- and 64-bit "
                                     "integers, f32 and f64 add, xchg and cas, f16 and bf16 add have one)"));
}

TEST_CASE("a store with a load's cache modifier", "[error]") {
  auto k = tl::kernel("store_ca", {"x"}, [](tl::Ptr<float> x) {
    MARK; tl::store(x + tl::arange(0, 16), 1.0f, {.cache = tl::Cache::ca});
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("store_ca", "store: cache modifier 'ca' is not one of a store's (wb, cg, cs, wt)"));
}

TEST_CASE("a volatile load with a cache modifier", "[error]") {
  auto k = tl::kernel("volatile_cg", {"x"}, [](tl::Ptr<float> x) {
    MARK; auto v = tl::load(x + tl::arange(0, 16), {.cache = tl::Cache::cg, .is_volatile = true});
    tl::store(x + tl::arange(0, 16), v);
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("volatile_cg", "load: a volatile load takes no cache modifier or eviction policy "
                                         "(ld.volatile has none)"));
}

TEST_CASE("tl::range with num_stages out of range", "[error]") {
  auto k = tl::kernel("loop_stages", {"x"}, [](tl::Ptr<float> x) {
    MARK; tl::range(0, 4, 1, {.num_stages = 9}, [&](tl::Int i) { tl::store(x + i, 1.0f); });
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x), err("loop_stages", "range: num_stages must be from 1 to 8, got 9"));
}

TEST_CASE("tl::range with a tile as its bound", "[error]") {
  auto k = tl::kernel("range_tile", {"x"}, [](tl::Ptr<float> x) {
    auto offs = tl::arange(0, 16);
    auto acc = tl::zeros<float>({16});
    MARK; tl::range(0, offs, [&](tl::Int) { acc = acc + 1.0f; });
    tl::store(x + offs, acc);
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x), err("range_tile", "range: bounds and step must be integer scalars, got tile<16xi32>"));
}

TEST_CASE("tl::range with 64-bit bounds and a 32-bit loop variable", "[error]") {
  auto k = tl::kernel("range_i64", {"x", "n"}, [](tl::Ptr<float> x, tl::Int64 n) {
    tl::Float acc = 0.0f;
    MARK; tl::range(0, n, [&](tl::Int i) { acc = acc + tl::load(x + i); });
    tl::store(x, acc);
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, 16),
                      err("range_i64", "range: the bounds are 64-bit; take the loop variable as tl::Int64"));
}

TEST_CASE("tiledsl ops called outside a kernel", "[error]") {
  const int line = __LINE__; REQUIRE_THROWS_WITH(tl::arange(0, 16), "test_errors.cpp:" + std::to_string(line) +
      ": error: tiledsl ops can only be called inside a kernel body while it is traced");
  auto literal = [] { tl::Float f = 1.0f; return f.rank(); }; const int line2 = __LINE__;
  REQUIRE_THROWS_WITH(literal(), "test_errors.cpp:" + std::to_string(line2) +
      ": error: tiledsl ops can only be called inside a kernel body while it is traced");
}

// --- Kernel definitions and launches --------------------------------------------------------
namespace {
auto copy_kernel() {
  return tl::kernel("copy", {"x", "out", "n", "BLOCK"},
                    [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int n, tl::Constexpr BLOCK) {
                      auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                      tl::store(out + offs, tl::load(x + offs, offs < n), offs < n);
                    });
}
}  // namespace

TEST_CASE("kernel parameter names that do not match the lambda", "[error]") {
  auto define = [] {
    MARK; return tl::kernel("names", {"x", "out", "n"}, [](tl::Ptr<float>, tl::Ptr<float>, tl::Int, tl::Constexpr) {});
  };
  REQUIRE_THROWS_WITH(define(), err("names", "kernel: 3 parameter names (x, out, n) for a lambda of 4 parameters"));
  auto twice = [] {
    MARK; return tl::kernel("twice", {"x", "x"}, [](tl::Ptr<float>, tl::Ptr<float>) {});
  };
  REQUIRE_THROWS_WITH(twice(), err("twice", "kernel: parameter name 'x' appears twice"));
}

TEST_CASE("launch with the wrong number of arguments", "[error]") {
  auto k = copy_kernel();
  auto x = f32(1000), out = f32(1000);
  auto launch = [&] { k[tl::grid(4)](x, out, 1000); }; const int line = __LINE__;
  REQUIRE_THROWS_WITH(launch(), err(line, "copy", "launch: expects 4 arguments (x, out, n, BLOCK) but got 3"));
}

TEST_CASE("launch with a tensor of the wrong dtype", "[error]") {
  auto k = copy_kernel();
  auto x = tl::Tensor::zeros({1000}, tl::DType::f16, kCpu), out = f32(1000);
  auto launch = [&] { k[tl::grid(4)](x, out, 1000, 256); }; const int line = __LINE__;
  REQUIRE_THROWS_WITH(launch(), err(line, "copy", "launch: argument 1 ('x') expects a tensor of f32 (tl::Ptr<f32>), "
                                                  "got a tensor of f16"));
}

TEST_CASE("launch with an empty tensor", "[error]") {
  auto k = copy_kernel();
  tl::Tensor x;
  auto out = f32(1000);
  auto launch = [&] { k[tl::grid(4)](x, out, 1000, 256); }; const int line = __LINE__;
  REQUIRE_THROWS_WITH(launch(), err(line, "copy", "launch: argument 1 ('x') expects a tensor of f32 (tl::Ptr<f32>), "
                                                  "got an empty tensor"));
}

TEST_CASE("launch with a tensor where tl::Int is expected", "[error]") {
  auto k = copy_kernel();
  auto x = f32(1000), out = f32(1000);
  auto launch = [&] { k[tl::grid(4)](x, out, x, 256); }; const int line = __LINE__;
  REQUIRE_THROWS_WITH(launch(), err(line, "copy", "launch: argument 3 ('n') expects tl::Int (i32), got a tensor of f32"));
}

TEST_CASE("launch with an integer too large for tl::Int", "[error]") {
  auto k = copy_kernel();
  auto x = f32(1000), out = f32(1000);
  auto launch = [&] { k[tl::grid(4)](x, out, int64_t{3000000000}, 256); }; const int line = __LINE__;
  REQUIRE_THROWS_WITH(launch(), err(line, "copy", "launch: argument 3 ('n') is a tl::Int (i32) but got the integer "
                                                  "3000000000, which does not fit in 32 bits; declare the parameter tl::Int64"));
}

TEST_CASE("launch on a grid with a zero dimension", "[error]") {
  auto k = copy_kernel();
  auto x = f32(1000), out = f32(1000);
  auto launch = [&] { k[tl::grid(0)](x, out, 1000, 256); }; const int line = __LINE__;
  REQUIRE_THROWS_WITH(launch(), err(line, "copy", "launch: grid (0, 1, 1) has a dimension below 1; every dimension must "
                                                  "be at least 1"));
}

TEST_CASE("launch on a negative grid computed from the constexprs", "[error]") {
  auto k = copy_kernel();
  auto x = f32(1000), out = f32(1000);
  auto launch = [&] { k[tl::grid([](const tl::Meta& m) { return tl::Dim3(4, 10 - m["BLOCK"]); })](x, out, 1000, 13); }; const int line = __LINE__;
  REQUIRE_THROWS_WITH(launch(), err(line, "copy", "launch: grid (4, -3, 1) has a dimension below 1; every dimension "
                                                  "must be at least 1"));
}

TEST_CASE("Meta[] of an unknown or non-constexpr parameter", "[error]") {
  auto k = copy_kernel();
  auto x = f32(1000), out = f32(1000);
  auto unknown = [&] { k[tl::grid([](const tl::Meta& m) { return tl::cdiv(1000, m["BLOK"]); })](x, out, 1000, 256); }; const int line = __LINE__;
  REQUIRE_THROWS_WITH(unknown(), err(line, "copy", "Meta[\"BLOK\"]: no parameter named 'BLOK' (parameters: x, out, n, BLOCK)"));
  auto runtime = [&] { k[tl::grid([](const tl::Meta& m) { return tl::cdiv(m["n"], 256); })](x, out, 1000, 256); }; const int line2 = __LINE__;
  REQUIRE_THROWS_WITH(runtime(), err(line2, "copy", "Meta[\"n\"]: 'n' is tl::Int (i32), not a tl::Constexpr parameter"));
}

TEST_CASE("launch with num_warps that is not a power of two", "[error]") {
  auto k = copy_kernel();
  auto x = f32(1000), out = f32(1000);
  tl::LaunchOptions o;
  o.num_warps = 3;
  auto launch = [&] { k[tl::grid(4)].options(o)(x, out, 1000, 256); }; const int line = __LINE__;
  REQUIRE_THROWS_WITH(launch(), err(line, "copy", "launch: num_warps must be a power of two from 1 to 32, got 3"));
}

// --- While running --------------------------------------------------------------------------
TEST_CASE("out-of-bounds load: the mask was forgotten", "[error]") {
  auto k = tl::kernel("oob_load", {"x", "out", "n", "BLOCK"},
                      [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int n, tl::Constexpr BLOCK) {
                        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                        MARK; auto v = tl::load(x + offs);
                        tl::store(out + offs, v, offs < n);
                      });
  auto x = f32(1000), out = f32(1000);
  REQUIRE_THROWS_WITH(k[tl::grid(4)](x, out, 1000, 256),
                      err("oob_load", "load: out-of-bounds access at index [232] of the tile: element 1000 of argument "
                                      "'x', which holds 1000 f32 elements (program (3, 0, 0))"));
}

TEST_CASE("out-of-bounds store: an off-by-one mask", "[error]") {
  auto k = tl::kernel("oob_store", {"x", "out", "n", "BLOCK"},
                      [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int n, tl::Constexpr BLOCK) {
                        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
                        auto v = tl::load(x + offs, offs < n);
                        MARK; tl::store(out + offs, v, offs <= n);
                      });
  auto x = f32(1000), out = f32(1000);
  REQUIRE_THROWS_WITH(k[tl::grid(4)](x, out, 1000, 256),
                      err("oob_store", "store: out-of-bounds access at index [232] of the tile: element 1000 of argument "
                                       "'out', which holds 1000 f32 elements (program (3, 0, 0))"));
}

TEST_CASE("out-of-bounds 2-D load names the element's tile index", "[error]") {
  auto k = tl::kernel("oob_2d", {"x", "out", "M", "N"}, [](tl::Ptr<int16_t> x, tl::Ptr<int16_t> out, tl::Int M, tl::Int N) {
    auto r = tl::arange(0, 8), c = tl::arange(0, 8);
    auto mask = r(_, newaxis) < M;  // the column mask is missing
    MARK; auto v = tl::load(x + r(_, newaxis) * N + c(newaxis, _), mask);
    tl::store(out + r(_, newaxis) * 8 + c(newaxis, _), v);
  });
  auto x = tl::Tensor::zeros({7, 6}, tl::DType::i16, kCpu), out = tl::Tensor::zeros({8, 8}, tl::DType::i16, kCpu);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, out, 7, 6),
                      err("oob_2d", "load: out-of-bounds access at index [6, 6] of the tile: element 42 of argument "
                                    "'x', which holds 42 i16 elements (program (0, 0, 0))"));
}

TEST_CASE("device_assert that fails", "[error]") {
  auto k = tl::kernel("checked", {"x", "n", "BLOCK"}, [](tl::Ptr<float> x, tl::Int n, tl::Constexpr BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto v = tl::load(x + offs, offs < n, 0.0f);
    MARK; tl::device_assert(v >= 0, "x must be non-negative");
  });
  std::vector<float> data(1000, 1.0f);
  data[517] = -2.0f;
  auto x = tl::Tensor::from_host(data, {}, kCpu);
  REQUIRE_NOTHROW(k[tl::grid(2)](x, 500, 256));
  REQUIRE_THROWS_WITH(k[tl::grid(4)](x, 1000, 256),
                      err("checked", "assert: device_assert failed at index [5]: x must be non-negative (program (2, 0, 0))"));
}

// tl::assume states a fact the compiler relies on (the axis analysis: non-negative offsets); the
// interpreter checks it, naming the line, rather than computing something the GPU would not.
TEST_CASE("tl::assume that does not hold", "[error]") {
  auto k = tl::kernel("assumed", {"x", "start", "n", "BLOCK"},
                      [](tl::Ptr<float> x, tl::Int start, tl::Int n, tl::Constexpr BLOCK) {
                        auto row = tl::program_id(0) + start;
                        MARK; tl::assume(row >= 0);
                        auto offs = (row * BLOCK + tl::arange(0, BLOCK)) % n;
                        tl::store(x + offs, tl::full<float>({BLOCK}, 1.0f));
                      });
  auto x = tl::Tensor::zeros({48}, tl::DType::f32, kCpu);
  REQUIRE_NOTHROW(k[tl::grid(3)](x, 0, 48, 16));
  CHECK(x.to_host<float>() == std::vector<float>(48, 1.0f));
  REQUIRE_THROWS_WITH(k[tl::grid(3)](x, -2, 48, 16),
                      err("assumed", "assume: tl::assume does not hold: the compiler relies on it, so on the GPU the "
                                     "kernel's results would be undefined (program (0, 0, 0))"));
}

// Not an error: masked-off lanes often divide by the 0 a masked load gives them. The result is
// defined (and the GPU gives the same): the quotient has all bits set, the remainder is the dividend.
TEST_CASE("integer division by zero has a defined result", "[interp]") {
  auto k = tl::kernel("divide", {"x", "y", "out", "REM"},
                      [](tl::Ptr<int32_t> x, tl::Ptr<int32_t> y, tl::Ptr<int32_t> out, tl::Constexpr REM) {
                        auto offs = tl::arange(0, 16);
                        auto a = tl::load(x + offs), b = tl::load(y + offs);
                        if (REM) tl::store(out + offs, a % b);
                        else tl::store(out + offs, a / b);
                      });
  std::vector<int32_t> ys(16, 3);
  ys[3] = 0;
  auto x = tl::Tensor::full({16}, 7, tl::DType::i32), y = tl::Tensor::from_host(ys), out = tl::Tensor::zeros({16}, tl::DType::i32);
  k[tl::grid(1)](x, y, out, 0);
  auto q = out.to_host<int32_t>();
  CHECK(q[3] == -1);
  CHECK(q[4] == 2);
  k[tl::grid(1)](x, y, out, 1);
  auto r = out.to_host<int32_t>();
  CHECK(r[3] == 7);
  CHECK(r[4] == 1);
}

TEST_CASE("a loop whose step is zero or negative", "[error]") {
  auto k = tl::kernel("stepped", {"x", "n", "step"}, [](tl::Ptr<float> x, tl::Int n, tl::Int step) {
    tl::Float acc = 0.0f;
    MARK; tl::range(0, n, step, [&](tl::Int i) { acc = acc + tl::load(x + i); });
    tl::store(x, acc);
  });
  auto x = f32(16);
  REQUIRE_NOTHROW(k[tl::grid(1)](x, 16, 3));
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, 16, 0), err("stepped", "for: step must be positive, got 0 (program (0, 0, 0))"));
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, 16, -2), err("stepped", "for: step must be positive, got -2 (program (0, 0, 0))"));
}

// --- Calls that name the caller's line (review of 2026-12-03) -------------------------------
TEST_CASE("ir() and compile() with wrong arguments name the caller's line", "[error]") {
  auto k = copy_kernel();
  auto x = f32(1000);
  auto ir = [&] { return k.ir(x, x, 1000); }; const int line = __LINE__;
  REQUIRE_THROWS_WITH(ir(), err(line, "copy", "launch: expects 4 arguments (x, out, n, BLOCK) but got 3"));
  auto compile = [&] { return k.compile(x, 1000, 1000, 256); }; const int line2 = __LINE__;
  REQUIRE_THROWS_WITH(compile(), err(line2, "copy", "launch: argument 2 ('out') expects a tensor of f32 "
                                                    "(tl::Ptr<f32>), got the integer 1000"));
  tl::LaunchOptions o;
  o.num_warps = 6;
  auto bad_warps = [&] { return k.compile(o, x, x, 1000, 256); }; const int line3 = __LINE__;
  REQUIRE_THROWS_WITH(bad_warps(), err(line3, "copy", "compile: num_warps must be a power of two from 1 to 32, got 6"));
  o.num_warps = 64;
  REQUIRE_THROWS_WITH(bad_warps(), err(line3, "copy", "compile: num_warps must be a power of two from 1 to 32, got 64"));
}

TEST_CASE("unary -, ~ and ! name the user's line", "[error]") {
  auto k = tl::kernel("negate_ptr", {"x"}, [](tl::Ptr<float> x) {
    auto p = x + tl::arange(0, 16);
    MARK; auto q = -p;
    tl::store(q, 1.0f);
  });
  auto x = f32(16);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x), err("negate_ptr", "neg: operand is a pointer tile (tile<16xptr<f32>>)"));
}

TEST_CASE("kernel and parameter names must be identifiers", "[error]") {
  auto bad_name = [] {
    MARK; return tl::kernel("my-kernel", {"x"}, [](tl::Ptr<float>) {});
  };
  REQUIRE_THROWS_WITH(bad_name(), "test_errors.cpp:" + std::to_string(g_line) +
                                      ": error: kernel: kernel name 'my-kernel' is not an identifier "
                                      "([A-Za-z_][A-Za-z0-9_]*, at most 200 characters): it names the GPU function");
  auto bad_param = [] {
    MARK; return tl::kernel("k", {"0x"}, [](tl::Ptr<float>) {});
  };
  REQUIRE_THROWS_WITH(bad_param(), err("k", "kernel: parameter name '0x' is not an identifier"));
}

TEST_CASE("a kernel launched from its own body is an error, not a deadlock", "[error]") {
  static tl::Kernel* self = nullptr;
  static int launch_line = 0;
  tl::Kernel k = tl::kernel("recurse", {"x"}, [](tl::Ptr<float> x) {
    tl::store(x, 1.0f);
    auto t = tl::Tensor::zeros({4}, tl::DType::f32, tl::Device::cpu);
    launch_line = __LINE__ + 1;
    (*self)[tl::grid(1)](t);
  });
  self = &k;
  auto x = f32(4);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err(launch_line, "recurse", "launch: called inside a kernel body while it is traced; kernels "
                                                  "cannot launch kernels (call a C++ function that builds the tiles "
                                                  "instead)"));
}

TEST_CASE("a tile kept past a failed trace is an error in the next trace, not a use after free", "[error]") {
  static std::optional<tl::Tile<float>> kept;
  static bool fail = true;
  auto k = tl::kernel("keeps", {"x"}, [](tl::Ptr<float> x) {
    auto v = tl::load(x + tl::arange(0, 16));
    if (!kept) kept = v;
    if (fail) {
      MARK; tl::store(x + tl::arange(0, 32), v);  // a shape mistake: this trace fails
    }
    MARK; tl::store(x + tl::arange(0, 16), *kept + 1.0f);
  });
  auto x = f32(16);
  REQUIRE_THROWS(k[tl::grid(1)](x));
  fail = false;
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      "test_errors.cpp:" + std::to_string(g_line) + ": verifier: in kernel 'keeps': add: uses a tile "
                      "from a trace that has ended (a tl::Tile kept outside the kernel body that made it)");
  kept.reset();
}

TEST_CASE("a 64-bit offset of 2^40 bytes or more does not land in another tensor", "[error]") {
  auto k = tl::kernel("far", {"x", "y", "off"}, [](tl::Ptr<float> x, tl::Ptr<float> y, tl::Int64 off) {
    auto offs = tl::arange(0, 16);
    MARK; auto v = tl::load(x + off + offs);
    tl::store(y + offs, v);
  });
  auto x = f32(16), y = f32(16);
  REQUIRE_NOTHROW(k[tl::grid(1)](x, y, int64_t{0}));
  // 2^38 elements of f32 = 2^40 bytes: the next argument's window of the interpreter's address space.
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, y, int64_t{1} << 38),
                      err("far", "load: access through an invalid pointer at index [0] of the tile (pointer arithmetic "
                                 "moved it 2^39 bytes or more outside its tensor) (program (0, 0, 0))"));
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x, y, int64_t{3} << 40),
                      err("far", "load: access through an invalid pointer at index [0] of the tile (pointer arithmetic "
                                 "moved it 2^39 bytes or more outside its tensor) (program (0, 0, 0))"));
}

TEST_CASE("a grid of more than 2^63 programs", "[error]") {
  auto k = copy_kernel();
  auto x = f32(1000), out = f32(1000);
  auto launch = [&] { k[tl::grid(int64_t{1} << 40, int64_t{1} << 20, int64_t{1} << 20)](x, out, 1000, 256); }; const int line = __LINE__;
  REQUIRE_THROWS_WITH(launch(), err(line, "copy", "launch: grid (1099511627776, 1048576, 1048576) has more than 2^63 "
                                                  "programs"));
}

TEST_CASE("a tensor shape whose size overflows", "[error]") {
  REQUIRE_THROWS_WITH(tl::Tensor::zeros({int64_t{1} << 32, int64_t{1} << 32}, tl::DType::f32, kCpu),
                      "Tensor: shape [4294967296, 4294967296] of f32 is larger than 2^63 bytes");
  REQUIRE_THROWS_WITH(tl::Tensor::empty({-1, 4}, tl::DType::f32, kCpu), "Tensor: negative dimension in shape [-1, 4]");
}

TEST_CASE("arithmetic on fp8 tiles asks for a conversion first", "[error]") {
  auto k = tl::kernel("fp8_add", {"x"}, [](tl::Ptr<tl::f8e4m3> x) {
    auto v = tl::load(x + tl::arange(0, 16));
    MARK; tl::store(x + tl::arange(0, 16), v + v);
  });
  auto x = tl::Tensor::zeros({16}, tl::DType::f8e4m3, kCpu);
  REQUIRE_THROWS_WITH(k[tl::grid(1)](x),
                      err("fp8_add", "add: got tile<16xf8e4m3> and tile<16xf8e4m3>: fp8 tiles can be loaded, stored, "
                                     "converted and selected; convert them first (x.to<float>() or x.to<tl::f16>()) to "
                                     "compute with them"));
}
// clang-format on

// The interpreter holds each value of a program whole: a 2^20-element tile is 8 MiB per value.
// Under an address-space limit a few MiB above what the process uses, the launch is an error
// naming the launch's line and what to do, not a bare std::bad_alloc.
TEST_CASE("the interpreter running out of host memory names the launch", "[error]") {
  auto k = tl::kernel("huge", {"x", "out"}, [](tl::Ptr<float> x, tl::Ptr<float> out) {
    auto i = tl::arange(0, 1 << 20);
    auto v = tl::load(x + (i & 15)) * 2.0f + 1.0f;
    tl::store(out + (i & 15), v, i < 16);
  });
  auto x = f32(16), out = f32(16);
  k.ir(x, out);  // traced before the limit: only the run is short of memory
  auto vm_bytes = [] {
    std::ifstream statm("/proc/self/statm");
    long pages = 0;
    statm >> pages;
    return static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE));
  };
  rlimit saved{};
  REQUIRE(getrlimit(RLIMIT_AS, &saved) == 0);
  rlimit tight = saved;
  tight.rlim_cur = vm_bytes() + (4u << 20);
  std::string error;
  REQUIRE(setrlimit(RLIMIT_AS, &tight) == 0);
  try {
    k[tl::grid(1)](x, out);
    const int line = __LINE__;
    error = "no error at line " + std::to_string(line);
  } catch (const tl::Error& e) {
    error = e.what();
  } catch (const std::bad_alloc&) {
    error = "std::bad_alloc";
  }
  REQUIRE(setrlimit(RLIMIT_AS, &saved) == 0);
  INFO(error);
  CHECK(error.find("test_errors.cpp:") != std::string::npos);
  CHECK(error.find("error in kernel 'huge'") != std::string::npos);
  CHECK(error.find("the interpreter ran out of host memory") != std::string::npos);
}
