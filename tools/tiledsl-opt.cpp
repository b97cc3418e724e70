// tiledsl-opt: reads tile IR text (a file or stdin), verifies it, runs the passes asked for
// and prints the IR, or the LLVM IR / PTX it compiles to. The lit tests run it.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "passes/AxisInfo.h"
#include "passes/Pipeline.h"
#include "tools/ToolOptions.h"

namespace cl = llvm::cl;
using namespace tiledsl;

namespace {
cl::OptionCategory category("tiledsl-opt options");
cl::opt<std::string> input(cl::Positional, cl::desc("<file>"), cl::init("-"), cl::cat(category));
cl::opt<bool> no_locations("no-locations", cl::desc("Do not print loc(...) on ops"), cl::cat(category));
cl::opt<bool> no_verify("no-verify", cl::desc("Do not run the verifier on the input"), cl::cat(category));
cl::list<std::string> pass_names("pass", cl::value_desc("name"),
                                 cl::desc("Run pass <name> (repeatable; in the order given, verifying after each)"),
                                 cl::cat(category));
cl::opt<bool> assign_layouts("assign-layouts", cl::desc("Same as --pass=assign-layouts"), cl::cat(category));
cl::opt<bool> list_passes("list-passes", cl::desc("Print every pass, in pipeline order, with what it does"),
                          cl::cat(category));
cl::opt<bool> axis_info("print-axis-info",
                        cl::desc("After the passes asked for, print the axis analysis of every value"),
                        cl::cat(category));
cl::opt<int, false, tools::NumWarpsParser> num_warps(
    "num-warps", cl::init(4), cl::value_desc("N"),
    cl::desc("Warps per program for layouts and codegen, and those the input's layouts must have: 1, 2, 4, 8, 16 "
             "or 32 (default 4)"),
    cl::cat(category));
cl::opt<int, false, tools::NumStagesParser> num_stages(
    "num-stages", cl::init(3), cl::value_desc("N"),
    cl::desc("Pipelining stages for the passes and codegen (default 3; 1 turns prefetch-loads off)"),
    cl::cat(category));
enum class Emit { ir, llvm, ptx };
cl::opt<Emit> emit("emit", cl::init(Emit::ir), cl::desc("What to print (default: the IR after the passes asked for)"),
                   cl::values(clEnumValN(Emit::llvm, "llvm", "run the pass pipeline and print LLVM IR (after O3)"),
                              clEnumValN(Emit::ptx, "ptx", "run the pass pipeline and print PTX")),
                   cl::cat(category));
cl::opt<std::string, false, tools::ArchParser> arch("arch", cl::init(codegen::kDefaultArch), cl::value_desc("sm_XX"),
                                                    cl::desc("The GPU to compile for: sm_80, sm_89, sm_90 or sm_90a"),
                                                    cl::cat(category));
cl::opt<bool> O0("O0", cl::desc("Skip LLVM's O3 pipeline (readable --emit=llvm)"), cl::cat(category));
cl::opt<bool> no_fp_fusion("no-fp-fusion", cl::desc("Round every multiply and add on its own (no fma contraction)"),
                           cl::cat(category));
cl::opt<bool> print_times("print-times",
                          cl::desc("With --emit: print to stderr where the compile's time went (passes, lowering, "
                                   "O3, PTX emission)"),
                          cl::cat(category));
}  // namespace

int main(int argc, char** argv) {
  tools::parse_command_line(argc, argv, category,
                            "tiledsl-opt: parses tile IR, verifies it and prints it in canonical form\n");
  if (list_passes) {
    for (const auto& p : passes::pipeline_passes()) std::cout << p.name << "\n  " << p.description << "\n";
    return 0;
  }
  std::vector<const passes::PassInfo*> passes;
  if (assign_layouts) passes.push_back(passes::find_pass("assign-layouts"));
  for (const std::string& name : pass_names) {
    const auto* p = passes::find_pass(name);
    if (!p) {
      std::cerr << "tiledsl-opt: unknown pass '" << name << "' (--list-passes names them)\n";
      return 2;
    }
    passes.push_back(p);
  }
  std::stringstream text;
  if (input == "-")
    text << std::cin.rdbuf();
  else {
    std::ifstream in(input);
    if (!in) {
      std::cerr << "tiledsl-opt: cannot open " << input << "\n";
      return 2;
    }
    text << in.rdbuf();
  }
  try {
    auto f = ir::parse(text.str());
    if (!no_verify) ir::verify(*f, num_warps);
    if (emit != Emit::ir) {
#ifdef TILEDSL_ENABLE_CODEGEN
      codegen::CompileOptions opts;
      opts.arch = arch;
      opts.num_warps = num_warps;
      opts.num_stages = num_stages;
      opts.optimize = !O0;
      opts.fp_fusion = !no_fp_fusion;
      opts.keep_stages = emit == Emit::llvm;
      codegen::Compiled c = codegen::compile(*f, opts);
      if (print_times) std::cerr << "tiledsl-opt: " << codegen::describe(c.ms) << "\n";
      std::cout << (emit == Emit::llvm ? c.llvm_ir : c.ptx);
      return 0;
#else
      std::cerr << "tiledsl-opt: built without GPU code generation (TILEDSL_ENABLE_CODEGEN=OFF)\n";
      return 2;
#endif
    }
    passes::PipelineOptions popts;
    popts.num_warps = num_warps;
    popts.num_stages = num_stages;
    popts.wgmma = codegen::has_wgmma(arch);
    popts.fp8_mma = codegen::has_fp8_mma(arch);
    for (const auto* p : passes) {
      p->run(*f, popts);
      ir::verify(*f, num_warps);
    }
    std::cout << (axis_info ? passes::print_axis_info(*f) : ir::print(*f, {!no_locations}));
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
