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
      count_uses(f);
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
      if (op.kind == OpKind::Cast) sink_below_cast(op);
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

  void count_uses(const ir::Function& f) {
    uses_.clear();
    ir::walk(f.body, [&](const Op* op) {
      for (const Value* v : op->operands) ++uses_[lookup(const_cast<Value*>(v))];
    });
  }

  // cast(convert(x)) -> convert(cast(x)) where the cast narrows its elements and reads the
  // conversion's only use: the conversion then moves the narrow values (a matmul's bf16 result
  // instead of its f32 accumulator: half the shared memory and half the traffic).
  void sink_below_cast(Op& cast) {
    Value* converted = cast.operands[0];
    Op* conv = converted->def;
    if (!conv || conv->kind != OpKind::ConvertLayout || uses_[converted] != 1) return;
    Value* x = conv->operands[0];
    ir::Type narrow = cast.result()->type;
    if (!x->type.is_tile() || narrow.element().is_pointer() || x->type.element().is_pointer() ||
        byte_size(narrow.dtype()) >= byte_size(x->type.dtype()))
      return;
    // The conversion op becomes the cast (in x's layout), the cast op the conversion.
    conv->kind = OpKind::Cast;
    conv->attrs = cast.attrs;
    std::swap(conv->loc, cast.loc);
    converted->type = ir::Type::tile(x->type.shape(), narrow.element(), x->type.layout());
    cast.kind = OpKind::ConvertLayout;
    cast.attrs.clear();
    changed_ = true;
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
  std::unordered_map<const Value*, int> uses_;  // at the start of a round
  bool changed_ = false;
};
}  // namespace

bool remove_convert_layouts(ir::Function& f) { return Remover().run(f); }

}  // namespace tiledsl::passes
