// Registers, spills and shared memory of compiled PTX: from the driver when a GPU is present,
// else from ptxas -v.
#include <fmt/format.h>

#include <cstdlib>

#include "runtime/cuda/Assemble.h"
#include "runtime/cuda/Launcher.h"
#include "runtime/cuda/Ptxas.h"

namespace tiledsl::runtime {

ResourceUsage resource_usage(const GpuBinary& bin, const std::string& arch) {
  ResourceUsage u;
  if (const cuda::Driver* d = cuda::driver()) {
    std::string cubin = link_ptx(*d, bin.ptx, bin.entry);
    cuda::CUmodule m = nullptr;
    cuda::CUfunction fn = nullptr;
    cuda::check(d->cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData", " (resource usage of '" + bin.entry + "')");
    if (d->cuModuleGetFunction(&fn, m, bin.entry.c_str()) == 0) {
      d->cuFuncGetAttribute(&u.registers, cuda::kFuncAttrNumRegs, fn);
      d->cuFuncGetAttribute(&u.spill_bytes, cuda::kFuncAttrLocalSizeBytes, fn);
      d->cuFuncGetAttribute(&u.shared_bytes, cuda::kFuncAttrSharedSizeBytes, fn);
      u.shared_bytes += bin.shared_bytes;  // static (none from our codegen) + dynamic
      u.source = "driver";
    }
    d->cuModuleUnload(m);
    return u;
  }
  // No GPU: ask ptxas (from PATH or the toolkit), whose -v report has the same figures.
  cuda::PtxasRun run = cuda::run_ptxas(cuda::find_ptxas(), bin.ptx, arch, /*verbose=*/true);
  std::string out = run.status == 0 ? run.log : std::string();
  auto number_before = [&](const std::string& what) {
    size_t at = out.find(what);
    if (at == std::string::npos) return 0;
    size_t start = out.find_last_not_of("0123456789", at - 2) + 1;
    return std::atoi(out.substr(start, at - 1 - start).c_str());
  };
  if (out.find("registers") == std::string::npos) {
    u.source = "unknown: no GPU, and ptxas did not run";
    return u;
  }
  u.registers = number_before("registers");
  u.spill_bytes = number_before("bytes spill stores");
  u.shared_bytes = number_before("bytes smem") + bin.shared_bytes;
  u.source = "ptxas";
  return u;
}

}  // namespace tiledsl::runtime
