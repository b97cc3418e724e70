#include "passes/RemoveConvertLayouts.h"

#include <unordered_map>

namespace tiledsl::passes {

namespace {
using ir::Block;
using ir::Op;
using ir::OpKind;
using ir::Value;

class Remover {
 public:
  bool run(ir::Function& f) {
    // A rewrite can expose another (a conversion sunk below a broadcast may meet a splat).
    bool any = false;
    for (int round = 0; round < 4; ++round) {
      changed_ = false;
      block(f.body);
      any |= changed_;
      if (!changed_) break;
    }
    changed_ = any;
    if (!changed_) return false;
    erase_unused(f);
    f.number_values();
    return true;
  }

 private:
  Value* lookup(Value* v) const {
    auto it = replaced_.find(v);
    return it == replaced_.end() ? v : it->second;
  }

  void block(Block& b) {
    for (size_t k = 0; k < b.ops.size(); ++k) {
      Op& op = *b.ops[k];
      for (auto& v : op.operands) v = lookup(v);
      for (auto& r : op.regions) block(*r);
      if (op.kind != OpKind::ConvertLayout) continue;
      Value* x = op.operands[0];
      ir::Type to = op.result()->type;
      if (x->type == to) {
        replaced_[op.result()] = x;
        changed_ = true;
        continue;
      }
      const Op* d = x->def;
      if (d && d->kind == OpKind::ConvertLayout) {
        op.operands[0] = d->operands[0];
        changed_ = true;
        if (op.operands[0]->type == to) replaced_[op.result()] = op.operands[0];
        continue;
      }
      if (d && d->kind == OpKind::Broadcast && d->operands[0]->type.is_tile() &&
          d->operands[0]->type.numel() < x->type.numel()) {
        // convert(broadcast(s)) -> broadcast(convert(s)): move the small tile, not the big one
        // (block-pointer offsets are [M, 1] and [1, N] tiles broadcast to [M, N] in i64).
        Value* src = d->operands[0];
        auto conv = std::make_unique<Op>();
        conv->kind = OpKind::ConvertLayout;
        conv->operands = {src};
        conv->loc = op.loc;
        conv->parent = &b;
        Value* moved = conv->add_result(ir::Type::tile(src->type.shape(), src->type.element(), to.layout()));
        b.ops.insert(b.ops.begin() + static_cast<long>(k), std::move(conv));
        ++k;  // `op` (heap-allocated) is now at k
        op.kind = OpKind::Broadcast;
        op.operands = {moved};
        op.attrs = d->attrs;
        changed_ = true;
        continue;
      }
      if (d && (d->kind == OpKind::Splat || d->kind == OpKind::Arange)) {
        // Computed again in place of the conversion, in the target layout.
        op.kind = d->kind;
        op.operands = d->operands;
        op.attrs = d->attrs;
        changed_ = true;
      }
    }
  }

  // Conversions, splats and aranges nobody reads any more (this pass may have made them so).
  static void erase_unused(ir::Function& f) {
    for (bool again = true; again;) {
      again = false;
      std::unordered_map<const Value*, int> uses;
      ir::walk(f.body, [&](const Op* op) {
        for (const Value* v : op->operands) ++uses[v];
      });
      std::vector<Block*> blocks{&f.body};
      ir::walk(f.body, [&](const Op* op) {
        for (const auto& r : op->regions) blocks.push_back(r.get());
      });
      for (Block* b : blocks)
        for (size_t k = b->ops.size(); k-- > 0;) {
          const Op& op = *b->ops[k];
          bool candidate = op.kind == OpKind::ConvertLayout || op.kind == OpKind::Splat || op.kind == OpKind::Arange;
          if (!candidate || uses.count(op.result())) continue;
          b->ops.erase(b->ops.begin() + static_cast<long>(k));
          again = true;
        }
    }
  }

  std::unordered_map<const Value*, Value*> replaced_;
  bool changed_ = false;
};
}  // namespace

bool remove_convert_layouts(ir::Function& f) { return Remover().run(f); }

}  // namespace tiledsl::passes
