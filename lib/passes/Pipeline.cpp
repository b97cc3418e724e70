#include "passes/Pipeline.h"

#include "ir/Verifier.h"
#include "passes/AllocateShared.h"
#include "passes/AssignLayouts.h"
#include "passes/CSE.h"
#include "passes/Canonicalize.h"
#include "passes/DCE.h"
#include "passes/LayoutText.h"
#include "passes/Prefetch.h"
#include "passes/RemoveConvertLayouts.h"

namespace tiledsl::passes {

// The order of the pipeline is the order of this list.
const std::vector<PassInfo>& pipeline_passes() {
  static const std::vector<PassInfo> kPasses = {
      {"canonicalize",
       "Folds arithmetic, comparisons and casts of constants (and of splats of constants) into "
       "one constant or splat with the interpreter's exact semantics, applies the identities that "
       "hold bit for bit (integer x + 0 and x - 0, x * 1; never float x + 0.0), picks the operand "
       "of a select with a constant condition, turns broadcast/reshape/expand_dims of a splat into "
       "one splat, and removes broadcasts, reshapes and casts to the operand's own type.",
       [](ir::Function& f, const PipelineOptions&) { canonicalize(f); }},
      {"prefetch-loads",
       "Software pipelining (num_stages >= 2): in a loop, each load whose tile reaches a dot and "
       "whose pointer, mask and other are pure functions of the induction variable, the "
       "loop-carried values and values from outside is issued d iterations ahead: the first d "
       "before the loop, the one of iteration i + d in the body before the first dot, the d tiles "
       "in flight carried by the loop, each masked off where its iteration does not run. d is 1, "
       "or num_stages - 1 on sm_90a when every such load goes straight into dots wgmma takes and "
       "reads zeros where masked (codegen copies those into shared ring buffers with cp.async). "
       "Reads the same addresses under the same masks, earlier. Skips a kernel that has layouts "
       "already (IR read back after assign-layouts): it rewrites loads before layouts exist.",
       [](ir::Function& f, const PipelineOptions& o) {
         if (!has_layouts(f))
           prefetch_loads(
               f, {.num_stages = o.num_stages, .wgmma = o.wgmma, .num_warps = o.num_warps, .fp8_mma = o.fp8_mma});
       }},
      {"cse",
       "Common-subexpression elimination: a Pure op equal to an earlier one (kind, operands, "
       "attributes, result types) in the same or an enclosing block is replaced by it. Loads, "
       "stores, atomics and ops with regions are never merged.",
       [](ir::Function& f, const PipelineOptions&) { cse(f); }},
      {"dce",
       "Dead-code elimination: erases Pure ops, and for/if ops holding only Pure ops, whose "
       "results are unused, until none is left. Loads, stores, atomics, prints and asserts stay.",
       [](ir::Function& f, const PipelineOptions&) { dce(f); }},
      {"assign-layouts",
       "Gives every tile a distributed layout: loads and stores anchor coalesced blocked layouts "
       "(vector width from the axis analysis) that flow back to the values feeding them; "
       "reductions produce slices; convert_layout is inserted where a value is wanted in two "
       "layouts. A kernel that has layouts already (read back from text) keeps them: the pass "
       "leaves it as it is, and the verifier has checked them.",
       [](ir::Function& f, const PipelineOptions& o) { assign_layouts(f, o.num_warps, o.wgmma, o.fp8_mma); }},
      {"remove-convert-layouts",
       "Removes convert_layout to the operand's own layout, folds a conversion of a conversion "
       "into one, recomputes splats, aranges and short elementwise chains of them (index "
       "arithmetic) in the target layout instead of converting them, and moves a conversion "
       "read only in one branch of a later if into that branch.",
       [](ir::Function& f, const PipelineOptions&) { remove_convert_layouts(f); }},
      {"allocate-shared",
       "Analysis: gives every op whose lowering uses shared memory (layout conversions through "
       "memory, dot, cross-warp reductions, scans, atomics) a byte offset in one arena, sharing "
       "space between buffers whose live ranges do not overlap; records smem_offset/smem_bytes "
       "on the ops and shared_bytes on the kernel. Codegen places each buffer at its offset in "
       "the kernel's dynamic shared memory, which is launched with shared_bytes.",
       [](ir::Function& f, const PipelineOptions& o) { allocate_shared(f, o.wgmma); }},
  };
  return kPasses;
}

const PassInfo* find_pass(const std::string& name) {
  for (const PassInfo& p : pipeline_passes())
    if (name == p.name) return &p;
  return nullptr;
}

void run_pipeline(ir::Function& f, const PipelineOptions& opts) {
  for (const PassInfo& p : pipeline_passes()) {
    p.run(f, opts);
    ir::verify(f, opts.num_warps);
    if (opts.after_pass) opts.after_pass(p.name, f);
  }
}

}  // namespace tiledsl::passes
