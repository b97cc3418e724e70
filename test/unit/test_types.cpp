#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "ir/Type.h"
#include "support/Env.h"
#include "support/Error.h"

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

// --- Environment variables ------------------------------------------------------------------
TEST_CASE("README's environment table lists every variable tiledsl reads, and no other", "[unit]") {
  std::ifstream in(std::string(TILEDSL_SOURCE_DIR) + "/README.md");
  REQUIRE(in);
  std::set<std::string> documented, registered;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("| `TILEDSL_", 0) == 0) documented.insert(line.substr(3, line.find('`', 3) - 3));
  for (const auto& v : tiledsl::env::all()) registered.insert(v.name);
  CHECK(documented == registered);
}

TEST_CASE("switches read 1/true/on/yes and 0/false/off/no; anything else is an error naming the variable", "[unit]") {
  using tiledsl::env::Var;
  const char* name = "TILEDSL_PRINT_AUTOTUNING";
  unsetenv(name);
  CHECK(tiledsl::env::flag(Var::TILEDSL_PRINT_AUTOTUNING, false) == false);
  CHECK(tiledsl::env::flag(Var::TILEDSL_PRINT_AUTOTUNING, true) == true);
  for (const char* t : {"1", "true", "ON", "yes"}) {
    setenv(name, t, 1);
    CHECK(tiledsl::env::flag(Var::TILEDSL_PRINT_AUTOTUNING, false));
  }
  for (const char* f : {"0", "False", "off", "NO"}) {
    setenv(name, f, 1);
    CHECK(!tiledsl::env::flag(Var::TILEDSL_PRINT_AUTOTUNING, true));
  }
  setenv(name, "", 1);
  CHECK(tiledsl::env::flag(Var::TILEDSL_PRINT_AUTOTUNING, true));
  setenv(name, "maybe", 1);
  CHECK_THROWS_WITH(tiledsl::env::flag(Var::TILEDSL_PRINT_AUTOTUNING, false),
                    "TILEDSL_PRINT_AUTOTUNING must be 1/true/on/yes or 0/false/off/no, got 'maybe'");
  unsetenv(name);
}

TEST_CASE("our broken invariants are InternalError, named by file base name and line", "[unit]") {
  auto broken = [] { TILEDSL_CHECK(1 + 1 == 3, "arithmetic"); };
  const int line = __LINE__ - 1;
  REQUIRE_THROWS_AS(broken(), tiledsl::InternalError);
  REQUIRE_THROWS_WITH(broken(), "tiledsl internal error at test_types.cpp:" + std::to_string(line) +
                                    ": check failed: 1 + 1 == 3: arithmetic");
}
