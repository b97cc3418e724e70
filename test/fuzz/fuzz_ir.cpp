// The fuzz target: tile IR text -> parse -> verify -> the pass pipeline -> PTX. The rule it
// checks is the compiler's: whatever passes the verifier compiles, and whatever does not gets a
// one-line tiledsl::Error. A crash, a hang, any other exception, an internal error (our
// TILEDSL_CHECK) or an error of several lines is a finding.
//
// Built two ways (test/CMakeLists.txt): with libFuzzer (clang, -fsanitize=fuzzer,address,
// undefined) as `tiledsl-fuzz` for long runs (scripts/fuzz.sh), and with a deterministic replay
// driver (replay.cpp) as `tiledsl-fuzz-replay`, which CI runs over the seed corpus.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <random>
#include <string>

#include "IrMutator.h"
#include "fuzz_target.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "passes/Pipeline.h"
#include "tiledsl/error.h"
#ifdef TILEDSL_ENABLE_CODEGEN
#include "codegen/Codegen.h"
#endif

namespace tiledsl::fuzz {

namespace {
[[noreturn]] void finding(const std::string& what, const std::string& input) {
  std::fprintf(stderr, "fuzz finding: %s\n--- input ---\n%s\n--- end ---\n", what.c_str(), input.c_str());
  std::abort();
}
}  // namespace

Outcome run_one(const std::string& text) {
  Outcome o = Outcome::Rejected;
  try {
    // The target and warp count vary with the input (the same every run): sm_90a's wgmma and
    // cp.async paths and sm_80's mma.sync path are held to the same rule as sm_90's. IR with
    // layouts is verified for the warps it is compiled with.
    const size_t h = std::hash<std::string>{}(text);
    const int num_warps = (h / 3) % 2 ? 8 : 4;
    auto f = ir::parse(text);
    ir::verify(*f, num_warps);
    o = Outcome::Verified;
#ifdef TILEDSL_ENABLE_CODEGEN
    codegen::CompileOptions options;
    options.arch = std::array<const char*, 3>{"sm_90", "sm_90a", "sm_80"}[h % 3];
    options.num_warps = num_warps;
    std::string ptx = codegen::compile(*f, options).ptx;
    if (ptx.find(".entry") == std::string::npos) finding("PTX without an entry", text);
#else
    passes::run_pipeline(*f, {num_warps, {}});
#endif
    return Outcome::Compiled;
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.find("internal error") != std::string::npos) finding("internal error: " + msg, text);
    if (msg.find('\n') != std::string::npos) finding("error of several lines: " + msg, text);
    if (o == Outcome::Verified) {
      // Verified but not compiled: allowed only where code generation says plainly what it
      // cannot do yet (fp8 arithmetic) or what the GPU cannot hold (shared memory).
      bool known = msg.find("not supported by the GPU code generator yet") != std::string::npos ||
                   msg.find("bytes of shared memory") != std::string::npos;
      if (!known) finding("verified IR did not compile: " + msg, text);
      return Outcome::Unsupported;
    }
    return Outcome::Rejected;
  } catch (const std::exception& e) {
    finding(std::string("exception other than tiledsl::Error: ") + e.what(), text);
  }
}

}  // namespace tiledsl::fuzz

#ifdef TILEDSL_LIBFUZZER
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tiledsl::fuzz::run_one(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}

// Mostly IR-aware edits; now and then libFuzzer's own byte-level ones.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::minstd_rand rng(seed);
  if (rng() % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);
  std::string m = tiledsl::fuzz::mutate_ir(std::string(reinterpret_cast<const char*>(data), size), rng);
  if (m.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, m.data(), m.size());
  return m.size();
}
#endif
