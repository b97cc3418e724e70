// PTX -> cubin through nvJitLink where the toolkit's library can be found (the build machine has
// one under /usr/local/cuda, found without being named); an ELF cubin comes back, and bad PTX
// gives nvJitLink's log.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "runtime/cuda/NvJitLink.h"

using namespace tiledsl;

TEST_CASE("nvJitLink is looked for where the toolkit keeps it, unless TILEDSL_NVJITLINK_PATH says otherwise",
          "[unit]") {
  auto saved = [](const char* name) {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v)
      setenv(name, v->c_str(), 1);
    else
      unsetenv(name);
  };
  auto path = saved("TILEDSL_NVJITLINK_PATH"), home = saved("CUDA_HOME");
  unsetenv("TILEDSL_NVJITLINK_PATH");
  setenv("CUDA_HOME", "/opt/some-cuda", 1);
  auto found = cuda::nvjitlink_candidates();
  CHECK(found.front() == "libnvJitLink.so.13");
  CHECK(std::find(found.begin(), found.end(), "/opt/some-cuda/lib64/libnvJitLink.so.12") != found.end());
  CHECK(found.back() == "/usr/local/cuda/lib64/libnvJitLink.so.12");
  setenv("TILEDSL_NVJITLINK_PATH", "/elsewhere/libnvJitLink.so", 1);
  CHECK(cuda::nvjitlink_candidates() == std::vector<std::string>{"/elsewhere/libnvJitLink.so"});
  setenv("TILEDSL_NVJITLINK_PATH", "0", 1);
  CHECK(cuda::nvjitlink_candidates().empty());
  restore("TILEDSL_NVJITLINK_PATH", path);
  restore("CUDA_HOME", home);
}

TEST_CASE("nvJitLink assembles PTX into a cubin, and reports bad PTX", "[unit]") {
  const char* toolkit = "/usr/local/cuda/lib64/libnvJitLink.so.13";
  std::string why;
  bool found = cuda::nvjitlink_available(&why);
  // The build machine has the toolkit: found there without being told.
  if (!std::getenv("TILEDSL_NVJITLINK_PATH") && std::filesystem::exists(toolkit)) {
    REQUIRE(found);
    CHECK(!cuda::nvjitlink_path().empty());
  }
  if (!found) {
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
  CHECK(cubin->substr(0, 4) ==
        "\x7f"
        "ELF");
  CHECK_THROWS_WITH(cuda::nvjitlink_compile(".version 8.0\n.target sm_90\nthis is not ptx\n", "sm_90", "broken"),
                    Catch::Contains("nvJitLink could not compile kernel 'broken' for sm_90"));
}
