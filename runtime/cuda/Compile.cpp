// The bridge from the runtime to the compiler (built only with TILEDSL_ENABLE_CODEGEN): runs the
// pass pipeline on a copy of the traced kernel and lowers it to PTX. TILEDSL_DUMP_DIR receives
// the IR after each pass, the LLVM IR and the PTX.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "codegen/Codegen.h"
#include "support/Env.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "passes/Pipeline.h"
#include "runtime/cuda/Launcher.h"
#include "runtime/cuda/NvJitLink.h"

namespace tiledsl::runtime {

namespace {
void dump(const std::string& stem, const std::string& suffix, const std::string& text) {
  std::string dir = env::value(env::Var::TILEDSL_DUMP_DIR);
  if (dir.empty()) return;
  std::filesystem::create_directories(dir);
  std::ofstream(std::filesystem::path(dir) / (stem + suffix)) << text;
}
}  // namespace

std::string compiler_identity() { return codegen::compiler_identity(); }

GpuBinary compile_for_gpu(const ir::Function& f, const GpuCompileOptions& o, const std::string& arch,
                          bool keep_stages) {
  const int num_warps = o.num_warps, num_stages = o.num_stages;
  // The traced IR stays as the interpreter runs it; the passes rewrite a copy (a print/parse
  // round trip is an exact deep copy).
  std::string traced = ir::print(f);
  auto copy = ir::parse(traced);
  std::string stem = fmt::format("{}-w{}-s{}{}-{}", f.name, num_warps, num_stages, o.fp_fusion ? "" : "-nofusion", arch);
  int step = 0;
  GpuBinary bin;
  passes::PipelineOptions opts;
  opts.num_warps = num_warps;
  opts.after_pass = [&](const std::string& pass, const ir::Function& g) {
    if (!keep_stages && env::value(env::Var::TILEDSL_DUMP_DIR).empty()) return;
    std::string text = ir::print(g);
    dump(stem, fmt::format(".{}.{}.tir", step++, pass), text);
    if (keep_stages) bin.ir_after_pass.emplace_back(pass, std::move(text));
  };
  passes::run_pipeline(*copy, opts);
  codegen::CompileOptions copts;
  copts.arch = arch;
  copts.num_warps = num_warps;
  copts.fp_fusion = o.fp_fusion;
  if (keep_stages || !env::value(env::Var::TILEDSL_DUMP_DIR).empty()) {
    bin.llvm_ir = codegen::emit_llvm_ir(*copy, copts);
    dump(stem, ".ll", bin.llvm_ir);
  }
  bin.ptx = codegen::compile_to_ptx(*copy, copts);
  dump(stem, ".ptx", bin.ptx);
  bin.entry = f.name;
  bin.shared_bytes = static_cast<int>(codegen::dynamic_shared_bytes(*copy));
  return bin;
}

bool warm_up_compiler() {
  if (!env::flag(env::Var::TILEDSL_WARM_COMPILER, true)) return false;
  // A masked vector copy: loads, stores (16-byte vectors: n is divisible by 16), index
  // arithmetic, the whole pipeline and the NVPTX backend, in about as much time as vector add
  // takes to compile.
  static const char* kWarmUp = R"(kernel @tiledsl_warm_up(%x: ptr<f32> {divisibility = 16}, %y: ptr<f32> {divisibility = 16}, %n: i32 {divisibility = 16}) {
  %0 = program_id() {axis = 0} : i32
  %1 = arange() {end = 256, start = 0} : tile<256xi32>
  %2 = constant() {value = 256} : i32
  %3 = mul(%0, %2) : i32
  %4 = splat(%3) : tile<256xi32>
  %5 = add(%4, %1) : tile<256xi32>
  %6 = splat(%n) : tile<256xi32>
  %7 = cmp(%5, %6) {pred = "lt"} : tile<256xi1>
  %8 = splat(%x) : tile<256xptr<f32>>
  %9 = addptr(%8, %5) : tile<256xptr<f32>>
  %10 = load(%9, %7) : tile<256xf32>
  %11 = splat(%y) : tile<256xptr<f32>>
  %12 = addptr(%11, %5) : tile<256xptr<f32>>
  store(%12, %10, %7)
})";
  try {
    auto f = ir::parse(kWarmUp);
    passes::run_pipeline(*f, passes::PipelineOptions{});  // not compile_for_gpu: nothing to dump
    codegen::CompileOptions opts;
    std::string arch = env::value(env::Var::TILEDSL_ARCH);
    opts.arch = arch.empty() ? "sm_90" : arch;
    std::string ptx = codegen::compile_to_ptx(*f, opts);
    // nvJitLink, when it is in use, starts up here too (its library takes a while to load).
    if (cuda::nvjitlink_available()) cuda::nvjitlink_compile(ptx, opts.arch, "tiledsl_warm_up");
    return ptx.find(".entry tiledsl_warm_up") != std::string::npos;
  } catch (...) {
    return false;  // only a warm-up: the first real kernel reports whatever is wrong
  }
}

}  // namespace tiledsl::runtime
