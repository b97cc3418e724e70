#include "passes/DCE.h"

#include <unordered_map>

namespace tiledsl::passes {

namespace {
using ir::Block;
using ir::Op;
using ir::OpKind;
using ir::Value;

// Whether erasing `op` (when its results are unused) changes nothing the program does.
bool removable(const Op& op) {
  if (ir::has_trait(op.kind, ir::kPure)) return true;
  if (op.kind != OpKind::For && op.kind != OpKind::If) return false;
  bool pure = true;
  for (const auto& r : op.regions)
    ir::walk(*r, [&](const Op* inner) {
      pure = pure && (ir::has_trait(inner->kind, ir::kPure) || inner->kind == OpKind::Yield);
    });
  return pure;
}

class Eliminator {
 public:
  bool run(ir::Function& f) {
    ir::walk(f.body, [&](const Op* op) {
      for (const Value* v : op->operands) ++uses_[v];
    });
    bool changed = false;
    while (block(f.body)) changed = true;
    if (changed) f.number_values();
    return changed;
  }

 private:
  bool dead(const Op& op) const {
    for (const auto& r : op.results)
      if (auto it = uses_.find(r.get()); it != uses_.end() && it->second > 0) return false;
    return op.kind != OpKind::Yield && removable(op);
  }
  void forget_uses(const Op& op) {
    for (const Value* v : op.operands) --uses_[v];
    for (const auto& r : op.regions)
      ir::walk(*r, [&](const Op* inner) {
        for (const Value* v : inner->operands) --uses_[v];
      });
  }

  // One sweep from the end of each block, so a chain of dead ops goes at once.
  bool block(Block& b) {
    bool changed = false;
    for (size_t k = b.ops.size(); k-- > 0;) {
      Op& op = *b.ops[k];
      if (dead(op)) {
        forget_uses(op);
        b.ops.erase(b.ops.begin() + static_cast<long>(k));
        changed = true;
        continue;
      }
      for (auto& r : op.regions) changed |= block(*r);
    }
    return changed;
  }

  std::unordered_map<const Value*, int64_t> uses_;
};
}  // namespace

bool dce(ir::Function& f) { return Eliminator().run(f); }

}  // namespace tiledsl::passes
