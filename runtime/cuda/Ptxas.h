// The one way tiledsl runs the toolkit's ptxas: a child process started without a shell (argv,
// never a command string), its PTX and outputs in a private temporary folder that is removed
// after. Used for PTX -> cubin when TILEDSL_PTXAS_PATH asks, for resource usage without a GPU
// (`-v`), and by tiledsl-aot.
#pragma once

#include <optional>
#include <string>

namespace tiledsl::cuda {

// TILEDSL_PTXAS_PATH when it names a ptxas; empty when it is unset, empty or "0" (read once).
const std::string& requested_ptxas();

// ptxas to use: `preferred` when given, else TILEDSL_PTXAS_PATH, else the toolkit's
// (/usr/local/cuda/bin), else the first on PATH; empty when there is none.
std::string find_ptxas(const std::string& preferred = "");

struct PtxasRun {
  int status = -1;    // the exit status; -1 when it could not be started
  std::string log;    // what it printed (stdout and stderr)
  std::string cubin;  // the machine code, when it succeeded
};

// Assembles `ptx` for `arch` (sm_80, ...) with `ptxas`; `verbose` adds -v (registers, spills,
// shared memory in the log).
PtxasRun run_ptxas(const std::string& ptxas, const std::string& ptx, const std::string& arch, bool verbose = false);

}  // namespace tiledsl::cuda
