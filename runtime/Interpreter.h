// The CPU interpreter: runs a traced kernel over its whole grid, one program at a time and one
// tile op at a time, checking every unmasked memory access against the argument it came from.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/IR.h"

namespace tiledsl::runtime {

struct InterpArg {
  enum Kind { pointer, integer, floating } kind = integer;
  void* base = nullptr;  // pointer: host memory of the allocation
  size_t bytes = 0;      // pointer: size of the allocation
  int64_t i = 0;
  double f = 0;
  std::string name;  // the kernel parameter, for messages
};

// `threads` > 1 runs programs in parallel when the kernel has no atomics and no prints;
// results never depend on it.
void interpret(const ir::Function& f, std::span<const InterpArg> args, std::array<int64_t, 3> grid, int threads);

// Host memory a kernel may reach through addresses it computes (a 64-bit integer converted to a
// pointer, as Triton's grouped GEMM passes its matrices): tl::Tensor registers its CPU storage
// here, and the interpreter maps an address inside one of these to a pointer into it.
void register_host_memory(void* base, size_t bytes);
void unregister_host_memory(void* base, size_t bytes);
std::vector<std::pair<void*, size_t>> host_memory();

// Number of threads the interpreter uses by default (TILEDSL_INTERPRETER_THREADS, else the cores).
int default_interpreter_threads();

// One Philox 4x32 block: counter (c0..c3) and key (k0, k1), `rounds` rounds. Shared with tests.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key, int rounds);
// Philox4x64, what 64-bit offsets use (Triton's philox_impl on u64): key (seed, 0).
std::array<uint64_t, 4> philox4x64(std::array<uint64_t, 4> ctr, std::array<uint64_t, 2> key, int rounds);

}  // namespace tiledsl::runtime
