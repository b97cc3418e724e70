// Lowering of layout-assigned tile IR to LLVM IR for NVPTX, and PTX emission. This header is
// free of LLVM types: callers outside lib/codegen never see LLVM.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "ir/IR.h"

namespace tiledsl::codegen {

// The target when none is named (the runtime names the GPU present).
inline constexpr const char* kDefaultArch = "sm_90";
// Whether `arch` has warpgroup MMA (wgmma), which tensor-core dots then use where they can.
inline bool has_wgmma(const std::string& arch) { return arch == "sm_90a"; }
// stmatrix (PTX 7.8, sm_90).
inline bool has_stmatrix(const std::string& arch) { return arch == "sm_90" || arch == "sm_90a"; }
// Whether `arch` converts 32- and 64-bit integers to bf16 in one instruction (cvt.rn.bf16.s64).
inline bool has_int_to_bf16(const std::string& arch) { return arch == "sm_90" || arch == "sm_90a"; }
// Whether `arch` has fp8 tensor cores (mma.sync m16n8k32 on e4m3 and e5m2: sm_89 and later).
inline bool has_fp8_mma(const std::string& arch) { return arch == "sm_89" || arch == "sm_90" || arch == "sm_90a"; }

// Everything that decides the code, and what to keep of the stages. One struct for the runtime,
// tiledsl-opt, tiledsl-aot and the tests.
struct CompileOptions {
  std::string arch = kDefaultArch;  // sm_80, sm_89, sm_90 or sm_90a
  int num_warps = 4;
  int num_stages = 3;  // 2 or more: loads feeding dots in loops are prefetched (passes/Prefetch.h)
  // Floating-point contraction (Triton's enable_fp_fusion): a * b + c may become one fma,
  // rounded once. Off, every multiply and add is rounded on its own, as the interpreter does.
  bool fp_fusion = true;
  bool optimize = true;      // O3; off leaves the lowering's IR as it is (for reading dumps)
  bool keep_stages = false;  // keep the IR after each pass and the LLVM IR in the result
  // Called with each stage as it is made: "<n>.<pass>.tir" after each pass, "ll", "ptx" (dumps).
  std::function<void(const std::string& stage, const std::string& text)> on_stage;
};

// A one-line tiledsl::Error unless the options name a known target, 1 to 32 warps (a power of
// two) and 1 to 8 stages.
void check_options(const CompileOptions& opts);

struct Compiled {
  std::string entry;  // the kernel's symbol in the PTX
  std::string ptx;
  int64_t shared_bytes = 0;                                        // dynamic shared memory to launch with
  std::vector<std::pair<std::string, std::string>> ir_after_pass;  // with keep_stages: (pass, IR)
  std::string llvm_ir;                                             // with keep_stages
  // Where the compile's time went, in milliseconds (TILEDSL_PRINT_COMPILE_TIMES prints them):
  // the pass pipeline, lowering to LLVM IR (with libdevice), LLVM's O3 (with the invariant-division
  // rewrite after it), and NVPTX's PTX emission.
  struct Times {
    double passes = 0, lower = 0, optimize = 0, emit = 0;
  } ms;
};

// "passes 1.20 ms, lowering 3.40 ms, O3 20.10 ms, PTX emission 9.80 ms".
std::string describe(const Compiled::Times& ms);

// The compile driver: checks the options, verifies the traced kernel, runs the pass pipeline on
// a copy (the traced IR stays as the interpreter runs it), lowers to LLVM IR and optimises once,
// and emits PTX. Every error is a one-line tiledsl::Error.
Compiled compile(const ir::Function& traced, const CompileOptions& opts);

// The dynamic shared memory to launch a compiled kernel with: the arena allocate-shared sized
// (`shared_bytes` on the function), which codegen declares as one `.extern .shared` array (the
// runtime opts in above 48 KiB). Measured on the H200: no slower than a static array.
int64_t dynamic_shared_bytes(const ir::Function& f);
// LLVM's version and the libdevice that would be linked (path, size, modification time): what
// besides the IR and the options decides the PTX (the kernel cache's key holds it).
std::string compiler_identity();

// The most shared memory one program may use on `arch`; compiling a kernel that needs more is an error.
int64_t max_shared_bytes(const std::string& arch);

}  // namespace tiledsl::codegen
