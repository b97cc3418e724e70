// The pass pipeline between tracing and code generation, in one place.
#pragma once

#include <functional>
#include <string>

#include "ir/IR.h"

namespace tiledsl::passes {

struct PipelineOptions {
  int num_warps = 4;
  // Called after each pass with its name (TILEDSL_DUMP_DIR writes the IR at each step).
  std::function<void(const std::string& pass, const ir::Function&)> after_pass;
};

// Runs every pass in order on `f`, verifying the IR after each.
void run_pipeline(ir::Function& f, const PipelineOptions& opts);

}  // namespace tiledsl::passes
