#include "runtime/cuda/Ptxas.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "runtime/Files.h"
#include "support/Env.h"

extern char** environ;

namespace tiledsl::cuda {

namespace fs = std::filesystem;

const std::string& requested_ptxas() {
  static const std::string path = [] {
    std::string e = env::value(env::Var::TILEDSL_PTXAS_PATH);
    return e == "0" ? std::string() : e;
  }();
  return path;
}

std::string find_ptxas(const std::string& preferred) {
  if (!preferred.empty()) return preferred;
  if (!requested_ptxas().empty()) return requested_ptxas();
  if (fs::exists("/usr/local/cuda/bin/ptxas")) return "/usr/local/cuda/bin/ptxas";
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');)
      if (!d.empty() && fs::exists(fs::path(d) / "ptxas")) return (fs::path(d) / "ptxas").string();
  }
  return "";
}

PtxasRun run_ptxas(const std::string& ptxas, const std::string& ptx, const std::string& arch, bool verbose) {
  PtxasRun r;
  if (ptxas.empty()) return r;
  char tmpl[] = "/tmp/tiledsl-ptxas-XXXXXX";
  if (!mkdtemp(tmpl)) return r;
  fs::path dir = tmpl;
  std::string in = (dir / "kernel.ptx").string(), out = (dir / "kernel.cubin").string(),
              log = (dir / "log.txt").string();
  if (runtime::write_file_atomically(in, ptx)) {
    std::string arch_flag = "-arch=" + arch;
    std::vector<const char*> argv = {ptxas.c_str(), arch_flag.c_str()};
    if (verbose) argv.push_back("-v");
    argv.insert(argv.end(), {in.c_str(), "-o", out.c_str(), nullptr});
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = 0;
    // posix_spawnp: a bare name ("ptxas") is looked up on PATH, as a shell would, without one.
    if (posix_spawnp(&pid, argv[0], &actions, nullptr, const_cast<char* const*>(argv.data()), environ) == 0) {
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    posix_spawn_file_actions_destroy(&actions);
    r.log = runtime::read_regular_file(log, size_t{16} << 20).value_or("");
    if (r.status == 0) r.cubin = runtime::read_regular_file(out, size_t{256} << 20).value_or("");
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return r;
}

}  // namespace tiledsl::cuda
