// Lowering of layout-assigned tile IR to LLVM IR for NVPTX, and PTX emission. This header is
// free of LLVM types: callers outside lib/codegen never see LLVM.
#pragma once

#include <cstdint>
#include <string>

#include "ir/IR.h"

namespace tiledsl::codegen {

struct CompileOptions {
  std::string arch = "sm_80";  // sm_80 or sm_90 (sm_90a accepted)
  int num_warps = 4;
  bool optimize = true;  // O3; off leaves the lowering's IR as it is (for reading dumps)
  // Floating-point contraction (Triton's enable_fp_fusion): a * b + c may become one fma,
  // rounded once. Off, every multiply and add is rounded on its own, as the interpreter does.
  bool fp_fusion = true;
};

// The kernel as textual LLVM IR (after optimisation at O3), for dumps and tests. `f` must
// carry layouts (passes::assign_layouts with the same num_warps).
std::string emit_llvm_ir(const ir::Function& f, const CompileOptions& opts);

// The dynamic shared memory to launch a compiled kernel with: the arena allocate-shared sized
// (`shared_bytes` on the function), which codegen declares as one `.extern .shared` array (the
// runtime opts in above 48 KiB). Measured on the H200: no slower than a static array.
int64_t dynamic_shared_bytes(const ir::Function& f);
// LLVM's version and the libdevice that would be linked (path, size, modification time): what
// besides the IR and the options decides the PTX (the kernel cache's key holds it).
std::string compiler_identity();

// The most shared memory one program may use on `arch`; compiling a kernel that needs more is an error.
int64_t max_shared_bytes(const std::string& arch);

// The kernel as PTX: lower, link libdevice when a math function needs it, optimise at O3,
// verify, and emit with LLVM's NVPTX backend. Throws tiledsl::Error on an unsupported op.
std::string compile_to_ptx(const ir::Function& f, const CompileOptions& opts);

}  // namespace tiledsl::codegen
