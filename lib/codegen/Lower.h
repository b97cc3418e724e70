// Tile IR (with layouts) -> LLVM IR module for NVPTX. Internal to lib/codegen.
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>

#include "codegen/Codegen.h"

namespace tiledsl::codegen {

// One kernel function named after `f`, with nvvm.annotations (kernel, maxntidx). Calls to
// libdevice (__nv_*) are left as declarations for the caller to link.
std::unique_ptr<llvm::Module> lower_to_llvm(const ir::Function& f, llvm::LLVMContext& ctx, const CompileOptions& opts);

// Rewrites each 32-bit integer division and remainder inside a loop whose divisor is not a
// constant but does not change in the loop (InvariantDivision.h): the constants go to the
// preheader of the outermost such loop, the division becomes a multiply. Run after O3, whose
// LICM has hoisted what is invariant; constant divisors are left to LLVM. How many it rewrote.
int divide_by_loop_invariants(llvm::Module& m);

}  // namespace tiledsl::codegen
