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
    for (int round = 0; round < 8; ++round) {
      changed_ = false;
      count_uses(f);
      block(f.body);
      sink_into_branches(f);
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
        Value* moved = convert_before(b, k, d->operands[0], to, op.loc);
        op.kind = OpKind::Broadcast;
        op.operands = {moved};
        op.attrs = d->attrs;
        changed_ = true;
        continue;
      }
      if (d && d->regions.empty() && ir::has_trait(d->kind, ir::kElementwise) && ir::has_trait(d->kind, ir::kPure) &&
          cheap(x, kCheapDepth)) {
        // convert(f(x, y)) -> f(convert(x), convert(y)) when f's operands come, a few
        // elementwise ops down, from splats, aranges and constants only (index arithmetic
        // such as pid * BLOCK + arange(BLOCK) inside a loop): computed again in the target
        // layout rather than sent through shared memory in every iteration.
        std::vector<Value*> operands;
        for (Value* o : d->operands) operands.push_back(o->type.is_tile() ? convert_before(b, k, o, to, op.loc) : o);
        op.kind = d->kind;
        op.operands = operands;
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

  // A conversion of `src` to `to`'s layout, inserted in `b` before op k; k then still names
  // that op (one further on).
  static Value* convert_before(Block& b, size_t& k, Value* src, const ir::Type& to, const ir::Location& loc) {
    auto conv = std::make_unique<Op>();
    conv->kind = OpKind::ConvertLayout;
    conv->operands = {src};
    conv->loc = loc;
    conv->parent = &b;
    Value* moved = conv->add_result(ir::Type::tile(src->type.shape(), src->type.element(), to.layout()));
    b.ops.insert(b.ops.begin() + static_cast<long>(k), std::move(conv));
    ++k;
    return moved;
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
    // (In one block: a conversion outside a branch first moves into it, sink_into_branches.)
    if (!conv || conv->kind != OpKind::ConvertLayout || uses_[converted] != 1 || conv->parent != cast.parent) return;
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

  // How many elementwise ops deep a value may be computed again rather than converted.
  static constexpr int kCheapDepth = 4;
  // Whether `v` is a splat, an arange or a constant, or an integer, boolean or pointer op
  // (index arithmetic, not float math) of such values at most `depth` ops down.
  static bool cheap(const Value* v, int depth) {
    const Op* d = v->def;
    if (!d || !d->regions.empty()) return false;
    if (d->kind == OpKind::Splat || d->kind == OpKind::Arange || d->kind == OpKind::Constant) return true;
    if (depth == 0 || !ir::has_trait(d->kind, ir::kElementwise) || !ir::has_trait(d->kind, ir::kPure)) return false;
    if (!v->type.element().is_pointer() && is_float(v->type.dtype())) return false;
    for (const Value* o : d->operands)
      if (o->type.is_tile() && !cheap(o, depth - 1)) return false;
    return true;
  }

  // A conversion in a block whose readers all sit in one branch of a later if of that block
  // (an epilogue under `if (last k step)`) moves to the start of that branch, so that it runs
  // only where it is needed.
  void sink_into_branches(ir::Function& f) {
    std::vector<Block*> blocks{&f.body};
    ir::walk(f.body, [&](const Op* op) {
      for (const auto& r : op->regions) blocks.push_back(r.get());
    });
    for (Block* b : blocks)
      for (size_t k = 0; k < b->ops.size(); ++k) {
        if (b->ops[k]->kind != OpKind::ConvertLayout) continue;
        const Value* v = b->ops[k]->result();
        Block* home = nullptr;  // the branch every reader is in
        bool ok = true;
        for (size_t j = k + 1; j < b->ops.size() && ok; ++j) {
          const Op& later = *b->ops[j];
          bool here = false;
          for (const Value* o : later.operands) here = here || o == v;
          for (size_t r = 0; r < later.regions.size(); ++r) {
            bool inside = false;
            ir::walk(*later.regions[r], [&](const Op* inner) {
              for (const Value* o : inner->operands) inside = inside || o == v;
            });
            if (!inside) continue;
            if (later.kind != OpKind::If || home) ok = false;
            home = later.regions[r].get();
          }
          if (here) ok = false;
        }
        if (!ok || !home) continue;
        std::unique_ptr<Op> moved = std::move(b->ops[k]);
        b->ops.erase(b->ops.begin() + static_cast<long>(k));
        moved->parent = home;
        home->ops.insert(home->ops.begin(), std::move(moved));
        --k;
        changed_ = true;
      }
  }

  // Conversions and the pure ops nobody reads any more (this pass may have made them so).
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
          bool candidate = ir::has_trait(op.kind, ir::kPure) && op.regions.empty() && op.results.size() == 1;
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
