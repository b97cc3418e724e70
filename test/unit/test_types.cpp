#include <catch2/catch.hpp>

#include "ir/Type.h"

using namespace tiledsl;
using ir::Type;

TEST_CASE("types are uniqued", "[unit]") {
  Type a = Type::tile({64, 32}, Type::scalar(DType::f32));
  Type b = Type::tile({64, 32}, Type::scalar(DType::f32));
  CHECK(a == b);
  CHECK(a != Type::tile({32, 64}, Type::scalar(DType::f32)));
  CHECK(a.str() == "tile<64x32xf32>");
  CHECK(Type::pointer(Type::scalar(DType::bf16)).str() == "ptr<bf16>");
  CHECK(a.numel() == 2048);
}
