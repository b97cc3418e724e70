// The fuzz target shared by libFuzzer and the replay driver (fuzz_ir.cpp).
#pragma once

#include <string>

namespace tiledsl::fuzz {

enum class Outcome { Rejected, Verified, Compiled, Unsupported };

// Runs one input through parse, verify, the passes and PTX emission; aborts with the input on
// a finding, and otherwise says how far the input got.
Outcome run_one(const std::string& text);

}  // namespace tiledsl::fuzz
