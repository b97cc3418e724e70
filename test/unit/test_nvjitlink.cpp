// PTX -> cubin through nvJitLink where the toolkit's library can be found (the build machine has
// one under /usr/local/cuda); an ELF cubin comes back, and bad PTX gives nvJitLink's log.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

#include "runtime/cuda/NvJitLink.h"

using namespace tiledsl;

TEST_CASE("nvJitLink assembles PTX into a cubin, and reports bad PTX", "[unit]") {
  const char* toolkit = "/usr/local/cuda/lib64/libnvJitLink.so.13";
  if (!std::getenv("TILEDSL_NVJITLINK_PATH") && std::filesystem::exists(toolkit)) setenv("TILEDSL_NVJITLINK_PATH", toolkit, 1);
  std::string why;
  if (!cuda::nvjitlink_available(&why)) {
    WARN("nvJitLink not found, nothing to check: " << why);
    return;
  }
  const std::string ptx =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry k(.param .u64 p) {\n .reg .b64 %rd<2>;\n ld.param.u64 %rd1, [p];\n"
      " cvta.to.global.u64 %rd1, %rd1;\n st.global.u32 [%rd1], 7;\n ret;\n}\n";
  auto cubin = cuda::nvjitlink_compile(ptx, "sm_90", "k");
  REQUIRE(cubin);
  REQUIRE(cubin->size() > 4);
  CHECK(cubin->substr(0, 4) == "\x7f" "ELF");
  CHECK_THROWS_WITH(cuda::nvjitlink_compile(".version 8.0\n.target sm_90\nthis is not ptx\n", "sm_90", "broken"),
                    Catch::Contains("nvJitLink could not compile kernel 'broken' for sm_90"));
}
