#include "passes/MaskedLanes.h"

#include <unordered_map>
#include <utility>
#include <vector>

namespace tiledsl::passes {
namespace {

using Uses = std::unordered_map<const ir::Value*, std::vector<std::pair<const ir::Op*, size_t>>>;

// The same mask seen through layout conversions (a conversion moves elements between threads,
// never between logical positions).
const ir::Value* strip_conversions(const ir::Value* v) {
  while (v->def && v->def->kind == ir::OpKind::ConvertLayout) v = v->def->operands[0];
  return v;
}

// Whether every element of `v` is observed only where `mask` (stripped) is on.
bool read_only_under(const ir::Value* v, const ir::Value* mask, const Uses& uses,
                     std::unordered_set<const ir::Value*>& seen) {
  if (!seen.insert(v).second) return true;
  auto it = uses.find(v);
  if (it == uses.end()) return true;
  for (const auto& [user, operand] : it->second) {
    // (inline asm may act on what it reads: it counts as observing every lane)
    if ((ir::has_trait(user->kind, ir::kElementwise) && user->kind != ir::OpKind::InlineAsm) ||
        user->kind == ir::OpKind::ConvertLayout) {
      if (!read_only_under(user->result(), mask, uses, seen)) return false;
    } else if (user->kind == ir::OpKind::Store) {
      // The pointer or the value of a store under the same mask; never the mask itself.
      if (operand == 2 || user->operands.size() < 3 || strip_conversions(user->operands[2]) != mask) return false;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

std::unordered_set<const ir::Op*> loads_with_unread_masked_lanes(const ir::Function& f) {
  Uses uses;
  std::vector<const ir::Op*> masked_loads;
  ir::walk(f.body, [&](const ir::Op* op) {
    for (size_t i = 0; i < op->operands.size(); ++i) uses[op->operands[i]].push_back({op, i});
    if (op->kind == ir::OpKind::Load && op->operands.size() > 1) masked_loads.push_back(op);
  });
  std::unordered_set<const ir::Op*> out;
  for (const ir::Op* load : masked_loads) {
    std::unordered_set<const ir::Value*> seen;
    if (read_only_under(load->result(), strip_conversions(load->operands[1]), uses, seen)) out.insert(load);
  }
  return out;
}

}  // namespace tiledsl::passes
