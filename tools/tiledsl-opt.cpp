// tiledsl-opt: reads tile IR text (a file or stdin), verifies it, runs the passes asked for
// and prints the IR, or the LLVM IR / PTX it compiles to. The lit tests run it.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/Codegen.h"  // free of LLVM: the options and the driver's interface
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/AxisInfo.h"
#include "passes/Pipeline.h"
#include "tools/ToolOptions.h"

namespace {
const char* kUsage =
    "usage: tiledsl-opt [options] [file]\n"
    "Parses tile IR, verifies it and prints it in canonical form.\n"
    "  --no-locations     do not print loc(...) on ops\n"
    "  --no-verify        do not run the verifier on the input\n"
    "  --pass=NAME        run pass NAME (repeatable; in the order given, verifying after each)\n"
    "  --list-passes      print every pass, in pipeline order, with what it does\n"
    "  --print-axis-info  after the passes asked for, print the axis analysis of every value\n"
    "  --assign-layouts   same as --pass=assign-layouts\n"
    "  --num-warps=N      warps per program for layouts and codegen: 1, 2, 4, 8, 16 or 32 (default 4)\n"
    "  --emit=llvm|ptx    run the pass pipeline and print LLVM IR (after O3) or PTX\n"
    "  --arch=ARCH        the GPU to compile for: sm_80, sm_90 or sm_90a (default sm_90)\n"
    "  --O0               skip LLVM's O3 pipeline (readable --emit=llvm)\n"
    "  --no-fp-fusion     round every multiply and add on its own (no fma contraction)\n";

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
}  // namespace

int main(int argc, char** argv) {
  std::string path, emit, arch = tiledsl::codegen::kDefaultArch;
  bool locations = true, verify = true, optimize = true, fp_fusion = true, axis_info = false;
  std::vector<const tiledsl::passes::PassInfo*> passes;
  int num_warps = 4;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--no-locations")
      locations = false;
    else if (a == "--no-verify")
      verify = false;
    else if (a == "--assign-layouts")
      passes.push_back(tiledsl::passes::find_pass("assign-layouts"));
    else if (starts_with(a, "--pass=")) {
      const auto* p = tiledsl::passes::find_pass(a.substr(7));
      if (!p) {
        std::cerr << "tiledsl-opt: unknown pass '" << a.substr(7) << "' (--list-passes names them)\n";
        return 2;
      }
      passes.push_back(p);
    } else if (a == "--list-passes") {
      for (const auto& p : tiledsl::passes::pipeline_passes()) std::cout << p.name << "\n  " << p.description << "\n";
      return 0;
    } else if (a == "--print-axis-info")
      axis_info = true;
    else if (a == "--O0")
      optimize = false;
    else if (a == "--no-fp-fusion")
      fp_fusion = false;
    else if (starts_with(a, "--num-warps="))
      num_warps = tiledsl::tools::num_warps_option("tiledsl-opt", a.substr(12));
    else if (starts_with(a, "--emit="))
      emit = a.substr(7);
    else if (starts_with(a, "--arch="))
      arch = tiledsl::tools::arch_option("tiledsl-opt", a.substr(7));
    else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (starts_with(a, "--")) {
      std::cerr << "tiledsl-opt: unknown option " << a << "\n" << kUsage;
      return 2;
    } else
      path = a;
  }
  if (!emit.empty() && emit != "llvm" && emit != "ptx") {
    std::cerr << "tiledsl-opt: --emit takes llvm or ptx\n";
    return 2;
  }
  std::stringstream text;
  if (path.empty() || path == "-")
    text << std::cin.rdbuf();
  else {
    std::ifstream in(path);
    if (!in) {
      std::cerr << "tiledsl-opt: cannot open " << path << "\n";
      return 2;
    }
    text << in.rdbuf();
  }
  try {
    auto f = tiledsl::ir::parse(text.str());
    if (verify) tiledsl::ir::verify(*f);
    if (!emit.empty()) {
#ifdef TILEDSL_ENABLE_CODEGEN
      tiledsl::codegen::CompileOptions opts;
      opts.arch = arch;
      opts.num_warps = num_warps;
      opts.optimize = optimize;
      opts.fp_fusion = fp_fusion;
      opts.keep_stages = emit == "llvm";
      tiledsl::codegen::Compiled c = tiledsl::codegen::compile(*f, opts);
      std::cout << (emit == "llvm" ? c.llvm_ir : c.ptx);
      return 0;
#else
      std::cerr << "tiledsl-opt: built without GPU code generation (TILEDSL_ENABLE_CODEGEN=OFF)\n";
      return 2;
#endif
    }
    tiledsl::passes::PipelineOptions popts;
    popts.num_warps = num_warps;
    for (const auto* p : passes) {
      p->run(*f, popts);
      tiledsl::ir::verify(*f);
    }
    std::cout << (axis_info ? tiledsl::passes::print_axis_info(*f) : tiledsl::ir::print(*f, {locations}));
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
