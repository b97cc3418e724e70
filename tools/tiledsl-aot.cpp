// tiledsl-aot: ahead-of-time compilation of one kernel specialisation. Input: the kernel's IR
// text as TILEDSL_DUMP_DIR writes it (the specialisation is in it: constexpr values, alignment
// and divisibility facts, dtypes). Output, in --out-dir: <name>.ptx, <name>.cubin (when ptxas or
// nvJitLink is available) and <name>.h / <name>.c with a typed launch function over the CUDA
// driver API, so an application can ship the kernel without LLVM or tiledsl. docs/aot.md.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "codegen/Codegen.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "passes/Pipeline.h"
#include "runtime/cuda/NvJitLink.h"
#include "runtime/cuda/Ptxas.h"
#include "tiledsl/error.h"
#include "tools/ToolOptions.h"

namespace fs = std::filesystem;
namespace cl = llvm::cl;
using namespace tiledsl;

namespace {
cl::OptionCategory category("tiledsl-aot options");
cl::opt<std::string> input(cl::Positional, cl::Required, cl::desc("<kernel.tir>"), cl::cat(category));
cl::opt<std::string, false, tools::ArchParser> arch("arch", cl::init(codegen::kDefaultArch), cl::value_desc("sm_XX"),
                                                    cl::desc("The GPU to compile for: sm_80, sm_89, sm_90 or sm_90a"),
                                                    cl::cat(category));
cl::opt<int, false, tools::NumWarpsParser> num_warps("num-warps", cl::init(4), cl::value_desc("N"),
                                                     cl::desc("Warps per program: 1, 2, 4, 8, 16 or 32 (default 4)"),
                                                     cl::cat(category));
cl::opt<int, false, tools::NumStagesParser> num_stages("num-stages", cl::init(3), cl::value_desc("N"),
                                                       cl::desc("Software-pipelining stages (default 3)"),
                                                       cl::cat(category));
cl::opt<std::string> name_opt("name", cl::value_desc("NAME"),
                              cl::desc("C name of the generated files and functions (default: the kernel's)"),
                              cl::cat(category));
cl::opt<std::string> out_dir("out-dir", cl::init("."), cl::value_desc("DIR"), cl::desc("Where the files go"),
                             cl::cat(category));
cl::opt<std::string> ptxas_opt("ptxas", cl::value_desc("PATH"),
                               cl::desc("Assemble with this ptxas (default: nvJitLink, else ptxas from PATH)"),
                               cl::cat(category));
cl::opt<bool> no_fp_fusion("no-fp-fusion", cl::desc("Round every multiply and add on its own (no fma contraction)"),
                           cl::cat(category));

[[noreturn]] void usage(const std::string& error) {
  std::cerr << "tiledsl-aot: " << error << "\n";
  std::exit(2);
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage("cannot open " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string c_type(const ir::Type& t) {
  if (t.is_pointer()) return "CUdeviceptr";
  switch (t.dtype()) {
    case DType::i32:
      return "int32_t";
    case DType::i64:
      return "int64_t";
    case DType::f32:
      return "float";
    default:
      throw Error("tiledsl-aot: unsupported kernel argument type " + t.str());
  }
}

std::string bytes_literal(const std::string& data) {
  std::string s;
  for (size_t i = 0; i < data.size(); ++i)
    s += fmt::format("{}{}", i % 20 ? "" : "\n  ", static_cast<unsigned>(static_cast<unsigned char>(data[i]))) + ",";
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  tools::parse_command_line(argc, argv, category,
                            "tiledsl-aot: compiles one kernel specialisation ahead of time into C and a cubin\n");
  struct {
    std::string input, out_dir, name, arch, ptxas;
    int num_warps, num_stages;
    bool fp_fusion;
  } o{input, out_dir, name_opt, arch, ptxas_opt, num_warps, num_stages, !no_fp_fusion};
  // The name becomes C identifiers and a macro in the generated launcher.
  if (!o.name.empty() && !ir::is_identifier(o.name))
    usage("--name must be a C identifier ([A-Za-z_][A-Za-z0-9_]*), got '" + o.name + "'");
  try {
    auto f = ir::parse(read(o.input));
    ir::verify(*f, o.num_warps);
    const std::string traced_name = f->name;
    if (o.name.empty()) o.name = traced_name;
    codegen::CompileOptions copts;
    copts.arch = o.arch;
    copts.num_warps = o.num_warps;
    copts.num_stages = o.num_stages;
    copts.fp_fusion = o.fp_fusion;
    codegen::Compiled compiled = codegen::compile(*f, copts);
    const std::string& ptx = compiled.ptx;
    // Dynamic shared memory the kernel launches with (passes::allocate_shared's arena).
    int64_t shared_bytes = compiled.shared_bytes;
    fs::create_directories(o.out_dir);
    fs::path base = fs::path(o.out_dir) / o.name;
    std::ofstream(base.string() + ".ptx") << ptx;

    // A cubin when an assembler is at hand (--ptxas when given, else nvJitLink where it is found,
    // else ptxas from PATH or the toolkit); otherwise the driver JIT-compiles the embedded PTX.
    std::string cubin;
    std::optional<std::string> c;
    if (o.ptxas.empty() && (c = cuda::nvjitlink_compile(ptx, o.arch, traced_name))) {
      cubin = *c;
    } else if (std::string ptxas = cuda::find_ptxas(o.ptxas); !ptxas.empty()) {
      cuda::PtxasRun r = cuda::run_ptxas(ptxas, ptx, o.arch);
      if (r.status != 0) throw Error(fmt::format("tiledsl-aot: {} failed (status {}): {}", ptxas, r.status, r.log));
      cubin = r.cubin;
      std::ofstream(base.string() + ".cubin", std::ios::binary) << cubin;
    }
    const std::string& image = cubin.empty() ? ptx : cubin;

    // Specialisation facts become run-time checks in the launch function.
    std::string params, arg_ptrs, checks, facts;
    for (size_t i = 0; i < f->num_args(); ++i) {
      const std::string& n = f->arg_names[i];
      ir::Type t = f->arg(i)->type;
      params += fmt::format(", {} {}", c_type(t), n);
      arg_ptrs += fmt::format("{}(void*)&{}", i ? ", " : "", n);
      const ir::Attrs& at = f->arg_attrs.at(i);
      if (at.count("divisibility")) {
        checks +=
            t.is_pointer()
                ? fmt::format(
                      "  if ({} % 16 != 0) return CUDA_ERROR_INVALID_VALUE; /* compiled for 16-byte alignment */\n", n)
                : fmt::format(
                      "  if ({} % 16 != 0) return CUDA_ERROR_INVALID_VALUE; /* compiled for a multiple of 16 */\n", n);
        facts += fmt::format(" {}: {};", n, t.is_pointer() ? "16-byte aligned" : "a multiple of 16");
      }
      if (at.count("nonnegative")) {
        checks += fmt::format("  if ({} < 0) return CUDA_ERROR_INVALID_VALUE; /* compiled for a value >= 0 */\n", n);
        facts += fmt::format(" {}: >= 0;", n);
      }
      if (at.count("equal_to")) {
        checks += fmt::format("  if ({} != 1) return CUDA_ERROR_INVALID_VALUE; /* compiled for the value 1 */\n", n);
        facts += fmt::format(" {}: 1;", n);
      }
    }
    std::string constexprs;
    for (const auto& [k, v] : f->attrs)
      if (std::holds_alternative<int64_t>(v)) constexprs += fmt::format(" {}={}", k, std::get<int64_t>(v));
    const std::string guard = "TILEDSL_AOT_" + o.name;

    std::ofstream(base.string() + ".h") << fmt::format(
        "/* Generated by tiledsl-aot from {input}: kernel '{kernel}' for {arch}, num_warps={warps}.\n"
        " * Specialisation: constexprs{constexprs};{facts}\n"
        " * Needs only the CUDA driver API (cuda.h, libcuda). */\n"
        "#ifndef {guard}_H\n#define {guard}_H\n#include <cuda.h>\n#include <stdint.h>\n"
        "#ifdef __cplusplus\nextern \"C\" {{\n#endif\n"
        "#define {guard}_NUM_WARPS {warps}\n"
        "/* Loads the kernel into the current context (once). */\nCUresult {name}_load(void);\n"
        "void {name}_unload(void);\n"
        "/* Launches on `stream`; CUDA_ERROR_INVALID_VALUE when an argument breaks the specialisation. */\n"
        "CUresult {name}_launch(CUstream stream, unsigned grid_x, unsigned grid_y, unsigned grid_z{params});\n"
        "#ifdef __cplusplus\n}}\n#endif\n#endif\n",
        fmt::arg("input", fs::path(o.input).filename().string()), fmt::arg("kernel", traced_name),
        fmt::arg("arch", o.arch), fmt::arg("warps", o.num_warps),
        fmt::arg("constexprs", constexprs.empty() ? " none" : constexprs), fmt::arg("facts", facts),
        fmt::arg("guard", guard), fmt::arg("name", o.name), fmt::arg("params", params));

    std::ofstream(base.string() + ".c") << fmt::format(
        "/* Generated by tiledsl-aot: the {kind} of kernel '{kernel}' and its launcher. */\n"
        "#include \"{name}.h\"\n#include <stddef.h>\n\n"
        "static const unsigned char {name}_image[] = {{{bytes}\n  0}};\n"
        "static CUmodule {name}_module;\nstatic CUfunction {name}_function;\n\n"
        "CUresult {name}_load(void) {{\n"
        "  CUresult r;\n  if ({name}_function) return CUDA_SUCCESS;\n"
        "  r = cuModuleLoadData(&{name}_module, {name}_image);\n  if (r != CUDA_SUCCESS) return r;\n"
        "  r = cuModuleGetFunction(&{name}_function, {name}_module, \"{kernel}\");\n  if (r != CUDA_SUCCESS) return "
        "r;\n"
        "  /* more than 48 KiB of dynamic shared memory needs an opt-in */\n"
        "  if ({shared} > 48 * 1024)\n"
        "    r = cuFuncSetAttribute({name}_function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, {shared});\n"
        "  return r;\n}}\n\n"
        "void {name}_unload(void) {{\n  if ({name}_module) cuModuleUnload({name}_module);\n"
        "  {name}_module = NULL;\n  {name}_function = NULL;\n}}\n\n"
        "CUresult {name}_launch(CUstream stream, unsigned grid_x, unsigned grid_y, unsigned grid_z{params}) {{\n"
        "  void* args[] = {{{arg_ptrs}}};\n  CUresult r = {name}_load();\n  if (r != CUDA_SUCCESS) return r;\n"
        "  if (grid_x == 0 || grid_y == 0 || grid_z == 0) return CUDA_ERROR_INVALID_VALUE;\n"
        "{checks}"
        "  return cuLaunchKernel({name}_function, grid_x, grid_y, grid_z, 32 * {warps}, 1, 1, {shared}, stream, args, "
        "NULL);\n}}\n",
        fmt::arg("kind", cubin.empty() ? "PTX" : "cubin"), fmt::arg("kernel", traced_name), fmt::arg("name", o.name),
        fmt::arg("bytes", bytes_literal(image)), fmt::arg("params", params),
        fmt::arg("arg_ptrs", arg_ptrs.empty() ? "NULL" : arg_ptrs), fmt::arg("checks", checks),
        fmt::arg("warps", o.num_warps), fmt::arg("shared", shared_bytes));
    std::cout << fmt::format("tiledsl-aot: wrote {0}.h, {0}.c, {0}.ptx{1} ({2} embedded)\n", base.string(),
                             cubin.empty() ? "" : ", " + base.string() + ".cubin", cubin.empty() ? "PTX" : "cubin");
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
