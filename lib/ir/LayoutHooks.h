// The layout syntax and the layout rules, which lib/ir reaches only through these hooks: the
// layout classes live in lib/passes (passes/Layouts.h), which lib/ir must not depend on. The
// passes library installs the hooks when it is linked in (passes/LayoutText.cpp: a static
// initialiser in a file that assign-layouts and the pipeline use, so every program that runs
// them has the hooks); without them, the parser rejects layouts in the text and the verifier
// checks only what it can without the layout classes (every tile has a layout or none does,
// and the operands codegen reads in one layout have it).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "ir/IR.h"

namespace tiledsl::ir {

struct LayoutHooks {
  // Reads the layout at the start of `text`, written as Layout::str() prints it. On success,
  // returns it (interned: equal layouts are one object, however they were made) and sets `used`
  // to the characters read; on failure, returns null, sets `error` and sets `used` to where in
  // `text` the mistake is. Accepts layouts that code generation cannot handle (threads per warp
  // that do not multiply to 32, a slice of a dimension the parent lacks): the verifier rejects
  // those, naming the op.
  const Layout* (*parse)(std::string_view text, size_t& used, std::string& error) = nullptr;
  // Why the layouts `op` gives its results and region arguments, or the layouts of its operands
  // and results together, cannot be compiled, or "" when they can. `num_warps` is the kernel's
  // warp count, or 0 when not known yet: the hook then sets it from the first layout it sees,
  // and every later layout must agree. Called by verify() on every op of a kernel whose tiles
  // have layouts, in program order.
  std::string (*problem)(const Op& op, int& num_warps) = nullptr;
};

// The hooks installed, or empty ones.
const LayoutHooks& layout_hooks();
void set_layout_hooks(const LayoutHooks& hooks);

}  // namespace tiledsl::ir
