// The NVPTX end of code generation: libdevice linking, the target machine, O3, verification
// and PTX emission. LLVM reports problems through return values here; they become
// tiledsl::Error in our frames only.
#include <fmt/format.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <mutex>

#include "codegen/Codegen.h"
#include "codegen/Lower.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/Layouts.h"
#include "passes/Pipeline.h"
#include "support/Env.h"
#include "tiledsl/error.h"

namespace tiledsl::codegen {

namespace {
constexpr const char* kTriple = "nvptx64-nvidia-cuda";

std::string libdevice_path() {
  if (std::string p = env::value(env::Var::TILEDSL_LIBDEVICE); !p.empty()) return p;
  if (const char* cuda = std::getenv("CUDA_HOME")) return std::string(cuda) + "/nvvm/libdevice/libdevice.10.bc";
  return "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
}

// Whether `f` has an fp8 dot on mma.sync, whose instruction needs PTX 8.4.
bool fp8_mma_sync(const ir::Function& f, const std::string& arch) {
  bool found = false;
  ir::walk(f.body, [&](const ir::Op* op) {
    found |= op->kind == ir::OpKind::Dot && is_fp8(op->operands[0]->type.dtype()) &&
             dynamic_cast<const passes::MmaLayout*>(op->result()->type.layout()) &&
             !(has_wgmma(arch) && passes::wgmma_dot(*op));
  });
  return found;
}

// `ptx84`: emit PTX 8.4 (fp8 mma.sync; sm_89 always takes it).
std::unique_ptr<llvm::TargetMachine> target_machine(const CompileOptions& opts, bool ptx84) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    // LICM's scalar promotion finds nothing to promote in our kernels (loop-carried values are
    // SSA already; memory is global or shared around barriers) but was the most expensive pass
    // of O3 on attention (about 40 % of it). Off, the PTX of every example kernel is unchanged.
    if (llvm::cl::Option* o = llvm::cl::getRegisteredOptions().lookup("disable-licm-promotion"))
      o->addOccurrence(0, "disable-licm-promotion", "true");
  });
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(kTriple, err);
  if (!t) throw Error("codegen: NVPTX target unavailable: " + err);
  llvm::TargetOptions to;
  to.AllowFPOpFusion = llvm::FPOpFusion::Standard;
  // PTX 7.8 is the oldest ISA LLVM 19 emits for sm_90; sm_90a needs 8.0, fp8 mma.sync 8.4.
  std::string features = ptx84 || opts.arch == "sm_89" ? "+ptx84" : opts.arch == "sm_90a" ? "+ptx80" : "+ptx78";
  return std::unique_ptr<llvm::TargetMachine>(t->createTargetMachine(kTriple, opts.arch, features, to, std::nullopt,
                                                                     std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

void verify(const llvm::Module& m, const char* when) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (llvm::verifyModule(m, &os)) throw Error(fmt::format("codegen: invalid LLVM IR {}: {}", when, msg));
}

void link_libdevice(llvm::Module& m) {
  bool needed = false;
  for (const llvm::Function& fn : m.functions()) needed |= fn.isDeclaration() && fn.getName().starts_with("__nv_");
  if (!needed) return;
  std::string path = libdevice_path();
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf) throw Error(fmt::format("codegen: cannot read libdevice at {} (set TILEDSL_LIBDEVICE)", path));
  // Lazily: the linker materialises only the functions the kernel calls (and theirs), a few of
  // libdevice's hundreds; parsing all of it cost about 25 ms per compile.
  auto lib = llvm::getLazyBitcodeModule((*buf)->getMemBufferRef(), m.getContext());
  if (!lib) {
    std::string msg = llvm::toString(lib.takeError());
    throw Error(fmt::format("codegen: cannot parse libdevice {}: {}", path, msg));
  }
  (*lib)->setTargetTriple(m.getTargetTriple());
  (*lib)->setDataLayout(m.getDataLayout());
  if (llvm::Linker::linkModules(m, std::move(*lib), llvm::Linker::LinkOnlyNeeded))
    throw Error("codegen: linking libdevice failed");
  // Only the kernel is visible: O3 inlines and drops the rest.
  for (llvm::Function& fn : m.functions())
    if (!fn.isDeclaration() && fn.getCallingConv() != llvm::CallingConv::PTX_Kernel &&
        fn.getName().starts_with("__nv_"))
      fn.setLinkage(llvm::GlobalValue::InternalLinkage);
  m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t{0});
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::unique_ptr<llvm::Module> build(const ir::Function& f, llvm::LLVMContext& ctx, const CompileOptions& opts,
                                    llvm::TargetMachine& tm, Compiled::Times& ms) {
  // Checked before lowering, which would take long over tiles this large for nothing.
  int64_t smem = dynamic_shared_bytes(f), limit = max_shared_bytes(opts.arch);
  if (smem > limit)
    throw Error(
        fmt::format("codegen: kernel '{}' needs {} bytes of shared memory; {} gives a program at most {} "
                    "(use smaller tiles)",
                    f.name, smem, opts.arch, limit));
  auto t = Clock::now();
  auto m = lower_to_llvm(f, ctx, opts);
  m->setTargetTriple(kTriple);
  m->setDataLayout(tm.createDataLayout());
  verify(*m, "after lowering");
  link_libdevice(*m);
  ms.lower = ms_since(t);
  if (!opts.optimize) return m;
  t = Clock::now();
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(*m, mam);
  divide_by_loop_invariants(*m);
  verify(*m, "after optimisation");
  ms.optimize = ms_since(t);
  return m;
}
}  // namespace

std::string compiler_identity() {
  std::string path = libdevice_path();
  struct stat st {};
  bool found = ::stat(path.c_str(), &st) == 0;
  return fmt::format("LLVM {}; libdevice {} {} {}", LLVM_VERSION_STRING, path, found ? st.st_size : -1,
                     found ? static_cast<int64_t>(st.st_mtime) : 0);
}

int64_t max_shared_bytes(const std::string& arch) {
  // The opt-in maximum per block: 227 KiB on sm_90, 99 KiB on sm_89, 163 KiB on sm_80.
  return arch.rfind("sm_90", 0) == 0 ? 232448 : arch == "sm_89" ? 101376 : 166912;
}

void check_options(const CompileOptions& o) {
  if (o.arch != "sm_80" && o.arch != "sm_89" && o.arch != "sm_90" && o.arch != "sm_90a")
    throw Error(fmt::format("codegen: unsupported arch '{}' (expected sm_80, sm_89, sm_90 or sm_90a)", o.arch));
  for (const std::string& p : {ir::num_warps_problem(o.num_warps), ir::num_stages_problem(o.num_stages)})
    if (!p.empty()) throw Error("codegen: " + p);
}

std::string describe(const Compiled::Times& ms) {
  return fmt::format("passes {:.2f} ms, lowering {:.2f} ms, O3 {:.2f} ms, PTX emission {:.2f} ms", ms.passes, ms.lower,
                     ms.optimize, ms.emit);
}

Compiled compile(const ir::Function& traced, const CompileOptions& o) {
  check_options(o);
  ir::verify(traced, o.num_warps);
  auto f = ir::parse(ir::print(traced));  // a print/parse round trip is an exact deep copy
  Compiled out;
  out.entry = traced.name;
  const bool stages = o.keep_stages || o.on_stage;
  auto stage = [&](const std::string& name, const std::string& text) {
    if (o.on_stage) o.on_stage(name, text);
  };
  int step = 0;
  passes::PipelineOptions popts;
  popts.num_warps = o.num_warps;
  popts.num_stages = o.num_stages;
  popts.wgmma = has_wgmma(o.arch);
  popts.fp8_mma = has_fp8_mma(o.arch);
  if (stages)
    popts.after_pass = [&](const std::string& pass, const ir::Function& g) {
      std::string text = ir::print(g);
      stage(fmt::format("{}.{}.tir", step++, pass), text);
      if (o.keep_stages) out.ir_after_pass.emplace_back(pass, std::move(text));
    };
  auto t = Clock::now();
  passes::run_pipeline(*f, popts);
  out.ms.passes = ms_since(t);
  out.shared_bytes = dynamic_shared_bytes(*f);
  // Lowered and optimised once; the LLVM IR kept is the module PTX is emitted from.
  llvm::LLVMContext ctx;
  auto tm = target_machine(o, fp8_mma_sync(*f, o.arch));
  auto m = build(*f, ctx, o, *tm, out.ms);
  if (stages) {
    std::string ll;
    llvm::raw_string_ostream os(ll);
    m->print(os, nullptr);
    os.flush();
    stage("ll", ll);
    if (o.keep_stages) out.llvm_ir = std::move(ll);
  }
  t = Clock::now();
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    throw Error("codegen: the NVPTX target cannot emit assembly");
  pm.run(*m);
  out.ptx = std::string(ptx.str());
  out.ms.emit = ms_since(t);
  stage("ptx", out.ptx);
  return out;
}

}  // namespace tiledsl::codegen
