// The pass pipeline between tracing and code generation, in one place.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace tiledsl::passes {

struct PipelineOptions {
  int num_warps = 4;
  int num_stages = 3;  // 2 or more: loads that feed dots in loops are prefetched (prefetch-loads)
  // The target has warpgroup MMA (sm_90a): dots that wgmma can take put every warp along M.
  bool wgmma = false;
  // The target has fp8 tensor cores (sm_89 and later): fp8 dots may take them.
  bool fp8_mma = false;
  // Called after each pass with its name (TILEDSL_DUMP_DIR writes the IR at each step).
  std::function<void(const std::string& pass, const ir::Function&)> after_pass;
};

// One pass as the tools name it: its command-line name, a paragraph on the rewrite it does,
// and how to run it.
struct PassInfo {
  const char* name;
  const char* description;
  void (*run)(ir::Function& f, const PipelineOptions& opts);
};

// Every pass, in pipeline order.
const std::vector<PassInfo>& pipeline_passes();
// The pass called `name`, or null.
const PassInfo* find_pass(const std::string& name);

// Runs every pass in order on `f`, verifying the IR after each (layouts for opts.num_warps
// warps). A kernel that has layouts already goes through the same passes, but assign-layouts
// and prefetch-loads leave it alone.
void run_pipeline(ir::Function& f, const PipelineOptions& opts);

}  // namespace tiledsl::passes
