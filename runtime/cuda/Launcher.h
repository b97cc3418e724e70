// Compiling a traced kernel for the GPU, loading it through the driver and launching it.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/IR.h"
#include "runtime/cuda/Driver.h"

namespace tiledsl::runtime {

// What codegen hands the runtime for one kernel.
struct GpuBinary {
  std::string ptx;
  std::string entry;     // the kernel's symbol in the PTX
  int shared_bytes = 0;  // dynamic shared memory to launch with (the allocate-shared arena)
  // With keep_stages: the IR after each pass, in order, and the LLVM IR (Kernel::compile).
  std::vector<std::pair<std::string, std::string>> ir_after_pass;
  std::string llvm_ir;
  std::string times;  // where the compile's time went, as "passes 1.2 ms, lowering ..." (TILEDSL_PRINT_COMPILE_TIMES)
};

// The launch options that change the machine code (tl::LaunchOptions less the stream).
struct GpuCompileOptions {
  int num_warps = 4;
  int num_stages = 3;
  bool fp_fusion = true;
  auto operator<=>(const GpuCompileOptions&) const = default;  // a map key
};

// Provided by lib/codegen when it is built in (TILEDSL_HAS_CODEGEN); throws otherwise.
GpuBinary compile_for_gpu(const ir::Function& f, const GpuCompileOptions& o, const std::string& arch,
                          bool keep_stages = false);

// Compiles a small kernel to PTX (and, where nvJitLink is in use, to a cubin) and throws the
// result away, so that the compiler's one-time start-up (LLVM's target registration, pass
// registries and first touch of its code; nvJitLink's library and per-thread pools) is not paid
// by the first real kernel. The driver runs it on the calling thread while a second thread runs
// cuInit, which takes far longer (Driver.cpp); TILEDSL_WARM_COMPILER=0 turns it off. Nothing
// without codegen. Whether it produced PTX.
bool warm_up_compiler();

// What else decides the machine code, for the cache key: LLVM's version and the libdevice
// linked (path, size, modification time). "no codegen" without it.
std::string compiler_identity();

// Registers, spill bytes and shared memory of compiled PTX: from the driver when a GPU is
// present, else from `ptxas -v` when the toolkit is; -1 each, with `source` saying why, otherwise.
struct ResourceUsage {
  int registers = -1, spill_bytes = -1, shared_bytes = -1;
  std::string source;
};
ResourceUsage resource_usage(const GpuBinary& bin, const std::string& arch);

// The architecture to compile for: TILEDSL_ARCH, else GPU `device`'s, else sm_90.
std::string target_arch(int device = 0);

// A loaded kernel with the attributes the driver reports: one per context (a module belongs to
// the context it was loaded in: a GPU's primary context, or a caller's own).
struct GpuKernel {
  cuda::CUcontext context = nullptr;
  int device = 0;
  cuda::CUmodule module = nullptr;
  cuda::CUfunction function = nullptr;
  int shared_bytes = 0;         // dynamic shared memory passed at launch
  int static_shared_bytes = 0;  // declared in the binary (none from tiledsl's codegen)
  int registers = 0, local_bytes = 0, num_warps = 4;
  std::string name;
  ~GpuKernel();
};
// Compiles (or reads from the disk cache) and loads `f` for GPU `device` into the context
// current on the calling thread, which must be one of that GPU's (cuda::ContextScope).
std::shared_ptr<GpuKernel> load_gpu_kernel(const ir::Function& f, const GpuCompileOptions& o, int device = 0);

// One kernel parameter as the driver reads it: the value in the low bytes of 8 (little-endian),
// so an i32 or f32 parameter reads its first 4.
struct GpuArg {
  uint64_t bits;
};
// Launches with no allocation: arguments are copied into fixed-size arrays. The kernel's context
// must be current (cuda::ContextScope).
void launch_gpu_kernel(const GpuKernel& k, std::span<const GpuArg> args, std::array<int64_t, 3> grid, void* stream);

}  // namespace tiledsl::runtime
