// Command-line options shared by tiledsl-opt and tiledsl-aot, through llvm::cl. Each bad value is
// one line naming the flag (llvm::cl's "for the --flag option: ..."), and exit status 2.
#pragma once

#include <llvm/Config/llvm-config.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <string>

#include "codegen/Codegen.h"
#include "ir/Verifier.h"
#include "tiledsl/version.h"

namespace tiledsl::tools {

// An integer from Lo to Hi, with the verifier's rule for warps or stages on top.
template <int Lo, int Hi, std::string (*Problem)(int64_t)>
struct CheckedInt : llvm::cl::parser<int> {
  using llvm::cl::parser<int>::parser;
  bool parse(llvm::cl::Option& o, llvm::StringRef, llvm::StringRef arg, int& value) {
    long long v = 0;
    if (arg.getAsInteger(10, v) || v < Lo || v > Hi)
      return o.error("takes an integer from " + std::to_string(Lo) + " to " + std::to_string(Hi) + ", got '" + arg +
                     "'");
    if (std::string why = Problem(v); !why.empty()) return o.error(why);
    value = static_cast<int>(v);
    return false;
  }
};
using NumWarpsParser = CheckedInt<1, ir::kMaxNumWarps, ir::num_warps_problem>;
using NumStagesParser = CheckedInt<1, ir::kMaxNumStages, ir::num_stages_problem>;

// The GPU architectures code generation targets.
struct ArchParser : llvm::cl::parser<std::string> {
  using llvm::cl::parser<std::string>::parser;
  bool parse(llvm::cl::Option& o, llvm::StringRef, llvm::StringRef arg, std::string& value) {
    if (arg != "sm_80" && arg != "sm_89" && arg != "sm_90" && arg != "sm_90a")
      return o.error("takes sm_80, sm_89, sm_90 or sm_90a, got '" + arg + "'");
    value = arg.str();
    return false;
  }
};

// Parses argv; --help lists the options of `category` only. (LLVM's own options, such as
// --print-after-all, stay out of --help but work where the tool shares LLVM with the compiler.)
// A mistake is reported on stderr and exits with status 2.
inline void parse_command_line(int argc, char** argv, llvm::cl::OptionCategory& category, const char* overview) {
  llvm::cl::HideUnrelatedOptions(category);
  llvm::cl::SetVersionPrinter(
      [](llvm::raw_ostream& os) { os << "tiledsl " << TILEDSL_VERSION << " (LLVM " << LLVM_VERSION_STRING << ")\n"; });
  std::string errors;
  llvm::raw_string_ostream err(errors);
  if (!llvm::cl::ParseCommandLineOptions(argc, argv, overview, &err)) {
    err.flush();
    llvm::errs() << errors;
    std::exit(2);
  }
}

}  // namespace tiledsl::tools
