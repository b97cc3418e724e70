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

}  // namespace tiledsl::codegen
