#include "runtime/cuda/Assemble.h"

#include <fmt/format.h>

#include <atomic>
#include <optional>

#include "runtime/cuda/NvJitLink.h"
#include "runtime/cuda/Ptxas.h"
#include "tiledsl/error.h"

namespace tiledsl::runtime {

namespace {
// PTX to a cubin with ptxas as a child process; nothing when ptxas is absent or fails (the
// driver's JIT then reports what is wrong).
// ptxas only when TILEDSL_PTXAS_PATH names it: measured on the H200 (bench/results/
// history-runs-1-to-39.md, run 7) a ptxas process took as long as the driver's JIT (about 20 ms
// for a small kernel), so no child process is spawned unasked.
std::optional<std::string> ptxas_compile(const std::string& ptx, const std::string& arch) {
  const std::string& ptxas = cuda::requested_ptxas();
  if (ptxas.empty()) return std::nullopt;
  cuda::PtxasRun r = cuda::run_ptxas(ptxas, ptx, arch);
  if (r.status != 0 || r.cubin.empty()) return std::nullopt;
  return r.cubin;
}

}  // namespace

// PTX to a cubin with the driver's own JIT linker, so the disk cache can hold machine code and a
// warm start skips both LLVM and the PTX JIT.
std::string link_ptx(const cuda::Driver& d, const std::string& ptx, const std::string& name) {
  char log[8192] = {};
  int opts[] = {cuda::kJitErrorLogBuffer, cuda::kJitErrorLogBufferSizeBytes};
  void* vals[] = {log, reinterpret_cast<void*>(sizeof log)};
  cuda::CUlinkState state = nullptr;
  cuda::check(d.cuLinkCreate(2, opts, vals, &state), "cuLinkCreate", fmt::format(" for kernel '{}'", name));
  cuda::CUresult r = d.cuLinkAddData(state, cuda::kJitInputPtx, const_cast<char*>(ptx.c_str()), ptx.size() + 1,
                                     name.c_str(), 0, nullptr, nullptr);
  void* cubin = nullptr;
  size_t size = 0;
  if (r == 0) r = d.cuLinkComplete(state, &cubin, &size);
  std::string out = r == 0 ? std::string(static_cast<const char*>(cubin), size) : std::string();
  d.cuLinkDestroy(state);
  if (r != 0)
    cuda::check(r, "cuLinkAddData/cuLinkComplete", fmt::format(" compiling kernel '{}' from PTX: {}", name, log));
  return out;
}

std::string assemble_and_load(const cuda::Driver& d, const std::string& ptx, const std::string& arch,
                              const std::string& name, cuda::CUmodule* module, const char** linker) {
  static std::atomic<bool> nvjitlink_rejected{false};
  *linker = "ptxas";
  std::optional<std::string> cubin = ptxas_compile(ptx, arch);
  if (!cubin && !nvjitlink_rejected && (cubin = cuda::nvjitlink_compile(ptx, arch, name))) *linker = "nvJitLink";
  if (cubin && d.cuModuleLoadData(module, cubin->data()) != 0) {
    if (*linker == std::string("nvJitLink")) nvjitlink_rejected = true;
    *module = nullptr;
    cubin.reset();
  }
  if (cubin) return *cubin;
  *linker = "driver";
  return link_ptx(d, ptx, name);
}

}  // namespace tiledsl::runtime
