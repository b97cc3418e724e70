#include "runtime/cuda/NvJitLink.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <vector>

#include "support/Env.h"
#include "tiledsl/error.h"

namespace tiledsl::cuda {

namespace {
// nvJitLink's C API (nvJitLink.h); its symbols carry the toolkit's major version.
using Handle = void*;
struct Api {
  int (*create)(Handle*, uint32_t, const char**) = nullptr;
  int (*destroy)(Handle*) = nullptr;
  int (*add_data)(Handle, int, const void*, size_t, const char*) = nullptr;
  int (*complete)(Handle) = nullptr;
  int (*cubin_size)(Handle, size_t*) = nullptr;
  int (*cubin)(Handle, void*) = nullptr;
  int (*error_log_size)(Handle, size_t*) = nullptr;
  int (*error_log)(Handle, char*) = nullptr;
  std::string why, path;
  bool ok = false;
};
constexpr int kInputPtx = 2;  // NVJITLINK_INPUT_PTX
}  // namespace

std::vector<std::string> nvjitlink_candidates() {
  if (std::string p = env::value(env::Var::TILEDSL_NVJITLINK_PATH); !p.empty()) {
    if (std::string(p) == "0") return {};
    return {p};
  }
  std::vector<std::string> dirs = {""};
  if (const char* cuda = std::getenv("CUDA_HOME"); cuda && *cuda) dirs.push_back(std::string(cuda) + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  std::vector<std::string> libs;
  for (const std::string& dir : dirs)
    for (const char* name : {"libnvJitLink.so.13", "libnvJitLink.so.12"}) libs.push_back(dir + name);
  return libs;
}

namespace {
Api load() {
  Api a;
  for (const std::string& lib : nvjitlink_candidates()) {
    void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    for (const char* suffix : {"_13_0", "_12_0"}) {
      auto sym = [&](const char* name) { return dlsym(h, (std::string("__") + name + suffix).c_str()); };
      a.create = reinterpret_cast<decltype(a.create)>(sym("nvJitLinkCreate"));
      a.destroy = reinterpret_cast<decltype(a.destroy)>(sym("nvJitLinkDestroy"));
      a.add_data = reinterpret_cast<decltype(a.add_data)>(sym("nvJitLinkAddData"));
      a.complete = reinterpret_cast<decltype(a.complete)>(sym("nvJitLinkComplete"));
      a.cubin_size = reinterpret_cast<decltype(a.cubin_size)>(sym("nvJitLinkGetLinkedCubinSize"));
      a.cubin = reinterpret_cast<decltype(a.cubin)>(sym("nvJitLinkGetLinkedCubin"));
      a.error_log_size = reinterpret_cast<decltype(a.error_log_size)>(sym("nvJitLinkGetErrorLogSize"));
      a.error_log = reinterpret_cast<decltype(a.error_log)>(sym("nvJitLinkGetErrorLog"));
      if (a.create && a.destroy && a.add_data && a.complete && a.cubin_size && a.cubin && a.error_log_size &&
          a.error_log) {
        a.ok = true;
        a.path = lib;
        return a;
      }
    }
    dlclose(h);
  }
  std::string p = env::value(env::Var::TILEDSL_NVJITLINK_PATH);
  a.why = p == "0"     ? "TILEDSL_NVJITLINK_PATH=0"
          : !p.empty() ? fmt::format("TILEDSL_NVJITLINK_PATH ({}) names no usable libnvJitLink", p)
                       : "no libnvJitLink.so.13 or .12 on the loader's path, in CUDA_HOME or in /usr/local/cuda";
  return a;
}

const Api& api() {
  static const Api a = load();
  return a;
}
}  // namespace

bool nvjitlink_available(std::string* why) {
  if (!api().ok && why) *why = api().why;
  return api().ok;
}

const std::string& nvjitlink_path() { return api().path; }

std::optional<std::string> nvjitlink_compile(const std::string& ptx, const std::string& arch, const std::string& name) {
  const Api& a = api();
  if (!a.ok) return std::nullopt;
  std::string arch_opt = "-arch=" + arch;
  const char* opts[] = {arch_opt.c_str()};
  Handle h = nullptr;
  if (int r = a.create(&h, 1, opts); r != 0)
    throw Error(fmt::format("nvJitLinkCreate failed ({}) for kernel '{}'", r, name));
  std::string out, log;
  int r = a.add_data(h, kInputPtx, ptx.data(), ptx.size(), name.c_str());
  if (r == 0) r = a.complete(h);
  if (r == 0) {
    size_t size = 0;
    a.cubin_size(h, &size);
    out.resize(size);
    a.cubin(h, out.data());
  } else {
    size_t size = 0;
    a.error_log_size(h, &size);
    log.resize(size);
    if (size) a.error_log(h, log.data());
  }
  a.destroy(&h);
  if (r != 0)
    throw Error(fmt::format("nvJitLink could not compile kernel '{}' for {} (error {}): {}", name, arch, r, log));
  return out;
}

}  // namespace tiledsl::cuda
