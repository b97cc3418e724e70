#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>

int main(int argc, char** argv) {
  // The op tests compare the GPU with the interpreter bit for bit, and the interpreter rounds a
  // multiply and an add each on its own: kernels launch without fp fusion here unless the
  // environment says otherwise. The fp-fusion test asks for it explicitly.
  // The [.fp-fusion-env] test (run by ctest in processes of its own) checks that default itself.
  if (!std::getenv("TILEDSL_TEST_EXPECT_FP_FUSION")) setenv("TILEDSL_DEFAULT_FP_FUSION", "0", /*overwrite=*/0);
  return Catch::Session().run(argc, argv);
}
