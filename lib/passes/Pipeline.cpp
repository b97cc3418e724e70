#include "passes/Pipeline.h"

#include "ir/Verifier.h"
#include "passes/AssignLayouts.h"

namespace tiledsl::passes {

void run_pipeline(ir::Function& f, const PipelineOptions& opts) {
  auto done = [&](const char* name) {
    ir::verify(f);
    if (opts.after_pass) opts.after_pass(name, f);
  };
  assign_layouts(f, opts.num_warps);
  done("assign-layouts");
}

}  // namespace tiledsl::passes
