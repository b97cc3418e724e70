// The bridge from the runtime to the compiler (built only with TILEDSL_ENABLE_CODEGEN): runs the
// pass pipeline on a copy of the traced kernel and lowers it to PTX. TILEDSL_DUMP_DIR receives
// the IR after each pass, the LLVM IR and the PTX.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "codegen/Codegen.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "passes/Pipeline.h"
#include "runtime/Files.h"
#include "runtime/cuda/Driver.h"
#include "runtime/cuda/Launcher.h"
#include "runtime/cuda/NvJitLink.h"
#include "support/Env.h"

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
  codegen::CompileOptions copts;
  copts.arch = arch;
  copts.num_warps = o.num_warps;
  copts.num_stages = o.num_stages;
  copts.fp_fusion = o.fp_fusion;
  copts.keep_stages = keep_stages;
  if (!env::value(env::Var::TILEDSL_DUMP_DIR).empty()) {
    // The specialisation's hash keeps specialisations that differ only in a constexpr apart.
    std::string stem = fmt::format("{}-{}-w{}-s{}{}-{}", f.name, hash128(ir::print(f)).substr(0, 16), o.num_warps,
                                   o.num_stages, o.fp_fusion ? "" : "-nofusion", arch);
    copts.on_stage = [stem](const std::string& stage, const std::string& text) { dump(stem, "." + stage, text); };
  }
  codegen::Compiled c = codegen::compile(f, copts);
  GpuBinary bin;
  bin.ptx = std::move(c.ptx);
  bin.entry = std::move(c.entry);
  bin.shared_bytes = static_cast<int>(c.shared_bytes);
  bin.ir_after_pass = std::move(c.ir_after_pass);
  bin.llvm_ir = std::move(c.llvm_ir);
  bin.times = codegen::describe(c.ms);
  return bin;
}

namespace {
// The driver runs the compiler's start-up while cuInit runs (Driver.h); registered when this
// file, the runtime's bridge to the compiler, is part of the program.
const bool kWarmUpRegistered = (cuda::set_init_companion([] { warm_up_compiler(); }), true);
}  // namespace

bool warm_up_compiler() {
  if (!env::flag(env::Var::TILEDSL_WARM_COMPILER, true)) return false;
  // A masked vector copy: loads, stores (16-byte vectors: n is divisible by 16), index
  // arithmetic, the whole pipeline and the NVPTX backend, in about as much time as vector add
  // takes to compile.
  static const char* kWarmUp =
      R"(kernel @tiledsl_warm_up(%x: ptr<f32> {divisibility = 16}, %y: ptr<f32> {divisibility = 16}, %n: i32 {divisibility = 16}) {
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
    codegen::CompileOptions opts;  // not compile_for_gpu: nothing to dump
    std::string arch = env::value(env::Var::TILEDSL_ARCH);
    if (!arch.empty()) opts.arch = arch;
    std::string ptx = codegen::compile(*f, opts).ptx;
    // nvJitLink, when it is in use, starts up here too (its library takes a while to load).
    if (cuda::nvjitlink_available()) cuda::nvjitlink_compile(ptx, opts.arch, "tiledsl_warm_up");
    return ptx.find(".entry tiledsl_warm_up") != std::string::npos;
  } catch (...) {
    return false;  // only a warm-up: the first real kernel reports whatever is wrong
  }
}

}  // namespace tiledsl::runtime
