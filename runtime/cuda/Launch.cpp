// cuLaunchKernel with the packed arguments; every error names the kernel and the configuration.
#include <fmt/format.h>

#include <array>
#include <vector>

#include "runtime/cuda/Launcher.h"

namespace tiledsl::runtime {

void launch_gpu_kernel(const GpuKernel& k, std::span<const GpuArg> args, std::array<int64_t, 3> grid, void* stream) {
  // Fixed storage for the usual kernel; more arguments than that go to the heap (the driver
  // reports a parameter list over its 4 KiB limit).
  std::array<void*, 64> fixed;
  std::vector<void*> heap;
  if (args.size() > fixed.size()) heap.resize(args.size());
  void** ptrs = heap.empty() ? fixed.data() : heap.data();
  for (size_t i = 0; i < args.size(); ++i) ptrs[i] = const_cast<uint64_t*>(&args[i].bits);
  const cuda::Driver* d = cuda::driver();
  cuda::CUresult r =
      d->cuLaunchKernel(k.function, static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]),
                        static_cast<unsigned>(grid[2]), static_cast<unsigned>(32 * k.num_warps), 1, 1,
                        static_cast<unsigned>(k.shared_bytes), static_cast<cuda::CUstream>(stream), ptrs, nullptr);
  if (r != 0)
    cuda::check(r, "cuLaunchKernel",
                fmt::format(" (kernel '{}', grid ({}, {}, {}), block {}, {} bytes of shared memory)", k.name, grid[0],
                            grid[1], grid[2], 32 * k.num_warps, k.shared_bytes));
}

}  // namespace tiledsl::runtime
