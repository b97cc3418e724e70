#include "passes/AssignLayouts.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "passes/AxisInfo.h"
#include "passes/LayoutText.h"
#include "passes/Layouts.h"
#include "support/Error.h"

namespace tiledsl::passes {

namespace {
using ir::Block;
using ir::Op;
using ir::OpKind;
using ir::Value;
using Layout = const DistributedLayout*;

bool is_tile(const Value* v) { return v->type.is_tile(); }

// Positions at which `to` inserts unit dimensions into `from`, or nothing when the reshape
// does more than insert unit dimensions.
std::optional<std::vector<int>> inserted_unit_dims(const Shape& from, const Shape& to) {
  std::vector<int> at;
  size_t j = 0;
  for (size_t d = 0; d < to.size(); ++d) {
    if (j < from.size() && from[j] == to[d])
      ++j;
    else if (to[d] == 1)
      at.push_back(static_cast<int>(d));
    else
      return std::nullopt;
  }
  if (j != from.size()) return std::nullopt;
  return at;
}

class Assigner {
 public:
  Assigner(ir::Function& f, int num_warps, bool wgmma, bool fp8_mma)
      : f_(f), num_warps_(num_warps), wgmma_(wgmma), fp8_mma_(fp8_mma), info_(analyze_axes(f)) {}

  void run() {
    // Loads produce their anchor layout whatever their users want.
    ir::walk(f_.body, [&](const Op* op) {
      if (op->kind == OpKind::Load && is_tile(op->result())) layout_[op->result()] = anchor(*op);
    });
    // Dots on tensor cores produce their accumulator in the mma layout; dots in a chain (one's
    // result reaches the next one's a through elementwise ops, as attention's P) put their warps
    // along the rows.
    std::unordered_set<const Op*> chained = chained_dots();
    ir::walk(f_.body, [&](const Op* op) {
      if (op->kind != OpKind::Dot) return;
      if (const MmaLayout* m = mma_layout_for(*op, num_warps_, chained.count(op) != 0, wgmma_, fp8_mma_))
        layout_[op->result()] = m;
    });
    // Values computed elementwise from loaded tiles prefer their loads' layout when no user
    // decides one (a value that only feeds a reduction, say), so it is not converted.
    // A reduction of such a value prefers the slice of its layout (attention's row max and row
    // sum of the mma accumulator).
    ir::walk(f_.body, [&](const Op* op) {
      if (op->kind == OpKind::Reduce && is_tile(op->result(0))) {
        if (Layout in = known(op->operands[0]))
          preferred_.emplace(op->result(0), SliceLayout::get(in, static_cast<int>(op->attr_int("axis"))));
        return;
      }
      if (!ir::has_trait(op->kind, ir::kElementwise)) return;
      for (const auto& r : op->results) {
        if (!is_tile(r.get())) continue;
        for (const Value* v : op->operands) {
          auto l = layout_.find(v);
          auto p = preferred_.find(v);
          Layout known = l != layout_.end() ? l->second : p != preferred_.end() ? p->second : nullptr;
          if (known && v->type.shape() == r->type.shape()) {
            preferred_.emplace(r.get(), known);
            break;
          }
        }
      }
    });
    // A loop carries a value in the layout its body yields it in when that layout is fixed up
    // front (a load's anchor, a tensor-core dot's accumulator), and a pointer tile in the layout
    // of the accesses it addresses: an accumulator (acc = dot(a, b, acc)), a prefetched tile
    // (passes/Prefetch.h) or a pointer tile is then converted at most once, outside the loop,
    // instead of in every iteration.
    ir::walk(f_.body, [&](const Op* op) {
      if (op->kind != OpKind::For) return;
      const Block& body = *op->regions[0];
      const Op* yield = body.terminator();
      if (!yield || yield->kind != OpKind::Yield) return;
      // Until nothing changes: a carried value that takes another carried value (prefetch-loads'
      // tiles in flight shift by one each iteration) takes its layout once that one has one.
      for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < op->results.size() && i < yield->operands.size(); ++i)
          if (is_tile(op->result(i)) && !layout_.count(op->result(i)) && carry_layout(*op, i)) changed = true;
      }
    });
    block(f_.body);
    materialize();
  }

 private:
  // The layout loop `loop` carries its value `i` in, when the body decides it: see run().
  bool carry_layout(const Op& loop, size_t i) {
    const Block& body = *loop.regions[0];
    const Op* yield = body.terminator();
    const Value* y = yield->operands[i];
    if (auto it = layout_.find(y); it != layout_.end()) return layout_.try_emplace(loop.result(i), it->second).second;
    if (!y->def && y->owner == &body && y->index > 0) {
      auto it = layout_.find(loop.result(y->index - 1));
      return it != layout_.end() && layout_.try_emplace(loop.result(i), it->second).second;
    }
    // A value the body computes from fixed layouts (a running row max or sum of an mma
    // accumulator) is carried in the layout it prefers.
    if (auto p = preferred_.find(y); p != preferred_.end())
      return layout_.try_emplace(loop.result(i), p->second).second;
    // A carried pointer tile (a_ptrs += step) takes the layout of the loads and stores it
    // addresses, directly or through pointer arithmetic (prefetch-loads' pointers of iterations
    // ahead), so that it is not converted each iteration.
    std::unordered_set<const Value*> derived{body.args[i + 1].get(), y};
    for (const auto& user : body.ops) {
      if ((user->kind == OpKind::Load || user->kind == OpKind::Store) && !user->operands.empty() &&
          derived.count(user->operands[0]))
        return layout_.try_emplace(loop.result(i), anchor(*user)).second;
      if (user->kind == OpKind::AddPtr && derived.count(user->operands[0])) derived.insert(user->result());
    }
    return false;
  }

  // Dots whose result reaches another dot's first operand through elementwise ops in one block,
  // and those dots.
  std::unordered_set<const Op*> chained_dots() const {
    std::unordered_set<const Op*> out;
    std::unordered_map<const Value*, const Op*> from;  // value -> the dot it comes from
    ir::walk(f_.body, [&](const Op* op) {
      if (op->kind == OpKind::Dot) {
        if (auto it = from.find(op->operands[0]); it != from.end()) {
          out.insert(it->second);
          out.insert(op);
        }
        from[op->result()] = op;
        return;
      }
      if (!ir::has_trait(op->kind, ir::kElementwise)) return;
      for (const Value* o : op->operands)
        if (auto it = from.find(o); it != from.end()) {
          for (const auto& r : op->results) from[r.get()] = it->second;
          break;
        }
    });
    return out;
  }

  // The layout `v` has or prefers so far, or null.
  Layout known(const Value* v) const {
    if (auto it = layout_.find(v); it != layout_.end()) return it->second;
    if (auto it = preferred_.find(v); it != preferred_.end()) return it->second;
    return nullptr;
  }

  Layout fallback(const Value* v) const {
    auto it = preferred_.find(v);
    return it != preferred_.end() ? it->second : default_blocked(v->type.shape(), num_warps_);
  }
  Layout anchor(const Op& op) const {
    const int dim = memory_fast_dim(op, info_);
    return default_blocked(op.operands[0]->type.shape(), num_warps_, memory_vector_width(op, info_, dim), dim);
  }

  // The layout `v` has, deciding it from `wanted` when nothing decided it yet.
  Layout decide(const Value* v, Layout wanted) {
    auto [it, inserted] = layout_.try_emplace(v, wanted);
    return it->second;
  }
  // Operand `i` of `user` is wanted in layout `l`.
  void want(Op* user, size_t i, Layout l) {
    const Value* v = user->operands[i];
    if (!is_tile(v)) return;
    if (decide(v, l) != l) operand_conversions_.push_back({user, i, l});
  }
  // Result `i` of `op` is produced in `natural`; users that were given another layout read a
  // conversion of it.
  Layout produce(Op* op, size_t i, Layout natural) {
    Value* r = op->result(i);
    Layout has = decide(r, natural);
    if (has != natural) {
      result_conversions_.push_back({op, i, has});
      layout_[r] = natural;
    }
    return natural;
  }
  Layout result_layout(Op* op, size_t i) { return decide(op->result(i), fallback(op->result(i))); }

  void block(Block& b) {
    for (size_t k = b.ops.size(); k-- > 0;) visit(*b.ops[k]);
  }

  void visit(Op& op) {
    switch (op.kind) {
      case OpKind::Reduce:
      case OpKind::Scan:
        return visit_combine(op);
      case OpKind::For: {
        Block& body = *op.regions[0];
        for (size_t i = 0; i < op.results.size(); ++i) {
          if (!is_tile(op.result(i))) continue;
          Layout l = result_layout(&op, i);
          layout_[body.args[i + 1].get()] = l;
          want(&op, 3 + i, l);
        }
        return block(body);
      }
      case OpKind::While: {
        for (size_t i = 0; i < op.results.size(); ++i) {
          if (!is_tile(op.result(i))) continue;
          Layout l = result_layout(&op, i);
          for (auto& r : op.regions) layout_[r->args[i].get()] = l;
          want(&op, i, l);
        }
        for (size_t r = op.regions.size(); r-- > 0;) block(*op.regions[r]);
        return;
      }
      case OpKind::If:
        for (size_t i = 0; i < op.results.size(); ++i)
          if (is_tile(op.result(i))) result_layout(&op, i);
        for (auto& r : op.regions) block(*r);
        return;
      case OpKind::Yield: {
        Op* parent = op.parent ? op.parent->parent : nullptr;
        if (!parent || parent->kind == OpKind::Reduce || parent->kind == OpKind::Scan) return;
        for (size_t i = 0; i < op.operands.size(); ++i) {
          if (!is_tile(op.operands[i])) continue;
          const Value* slot = parent->kind == OpKind::For     ? op.parent->args[i + 1].get()
                              : parent->kind == OpKind::While ? op.parent->args[i].get()
                                                              : parent->result(i);
          want(&op, i, layout_.at(slot));
        }
        return;
      }
      case OpKind::Store:
      case OpKind::Load: {
        if (!is_tile(op.operands[0])) return;
        Layout a = anchor(op);
        for (size_t i = 0; i < op.operands.size(); ++i) want(&op, i, a);
        return;
      }
      case OpKind::Dot: {
        Layout r = result_layout(&op, 0);
        // The FMA lowering reads a and b through shared memory: any layout will do.
        decide(op.operands[0], fallback(op.operands[0]));
        decide(op.operands[1], fallback(op.operands[1]));
        want(&op, 2, r);
        return;
      }
      case OpKind::ExpandDims: {
        if (!is_tile(op.result())) return;
        Layout r = result_layout(&op, 0);
        want(&op, 0, SliceLayout::get(r, static_cast<int>(op.attr_int("axis"))));
        return;
      }
      case OpKind::Reshape: {
        if (!is_tile(op.result()) || !is_tile(op.operands[0])) return;
        Layout r = result_layout(&op, 0);
        if (auto at = inserted_unit_dims(op.operands[0]->type.shape(), op.result()->type.shape())) {
          for (size_t k = at->size(); k-- > 0;) r = SliceLayout::get(r, (*at)[k]);
          want(&op, 0, r);
        } else {
          want(&op, 0, decide(op.operands[0], fallback(op.operands[0])));  // lowered through shared memory
        }
        return;
      }
      case OpKind::Print:
      case OpKind::Assert:
      case OpKind::Assume:
        // Printing and checking read any layout: operands of different shapes keep their own.
        for (const Value* v : op.operands)
          if (is_tile(v)) decide(v, fallback(v));
        return;
      case OpKind::Gather:  // lowered through shared memory: the index in the result's layout
        want(&op, 1, result_layout(&op, 0));
        decide(op.operands[0], fallback(op.operands[0]));
        return;
      case OpKind::Trans:
        if (is_tile(op.result())) result_layout(&op, 0);
        if (is_tile(op.operands[0])) decide(op.operands[0], fallback(op.operands[0]));
        return;
      default:
        break;
    }
    // Elementwise ops, splats, aranges, hints, broadcasts, atomics, philox: operands and results
    // share one layout (a broadcast keeps its layout: a blocked layout fits any shape of its rank).
    Layout r = nullptr;
    for (size_t i = 0; i < op.results.size(); ++i) {
      if (!is_tile(op.result(i))) continue;
      if (!r)
        r = result_layout(&op, i);
      else
        produce(&op, i, r);
    }
    if (!r) {
      for (const Value* v : op.operands)
        if (is_tile(v)) {
          r = decide(v, fallback(v));
          break;
        }
    }
    if (op.kind == OpKind::Splat) return;
    for (size_t i = 0; i < op.operands.size(); ++i) want(&op, i, r);
  }

  void visit_combine(Op& op) {
    int axis = static_cast<int>(op.attr_int("axis"));
    bool reduce = op.kind == OpKind::Reduce;
    Layout in = nullptr;
    if (reduce && is_tile(op.result(0))) {
      // A reduction runs in its operand's layout when that is known (fixed, or preferred by a
      // value computed from a fixed one, as attention's P from the mma accumulator): a user
      // wanting another layout converts the reduced result, not the operand (128 values, not
      // 128 x 64).
      Layout own = known(op.operands[0]);
      Layout r = result_layout(&op, 0);
      const auto* s = dynamic_cast<const SliceLayout*>(r);
      if (own)
        in = own;
      else if (s && s->dim() == axis)
        in = s->parent();
    } else if (!reduce) {
      in = result_layout(&op, 0);
    }
    if (!in) in = decide(op.operands[0], fallback(op.operands[0]));
    Layout out = reduce ? SliceLayout::get(in, axis) : in;
    for (size_t i = 0; i < op.results.size(); ++i)
      if (is_tile(op.result(i))) produce(&op, i, out);
    for (size_t i = 0; i < op.operands.size(); ++i) want(&op, i, in);
  }

  ir::Type typed(const Value* v) const {
    auto it = layout_.find(v);
    Layout l = it != layout_.end() ? it->second : default_blocked(v->type.shape(), num_warps_);
    return ir::Type::tile(v->type.shape(), v->type.element(), l);
  }

  // Inserts `op` into `b` before position `at`.
  static Op* insert(Block& b, size_t at, std::unique_ptr<Op> op) {
    op->parent = &b;
    return b.ops.insert(b.ops.begin() + static_cast<long>(at), std::move(op))->get();
  }
  static size_t position(const Op* op) {
    const Block& b = *op->parent;
    for (size_t k = 0; k < b.ops.size(); ++k)
      if (b.ops[k].get() == op) return k;
    TILEDSL_CHECK(false, "op not in its block");
    return 0;
  }
  static std::unique_ptr<Op> convert(Value* v, ir::Type to, const ir::Location& loc) {
    auto c = std::make_unique<Op>();
    c->kind = OpKind::ConvertLayout;
    c->operands = {v};
    c->loc = loc;
    c->add_result(to);
    return c;
  }

  void materialize() {
    // Types first: every tile value gets its layout.
    std::vector<Value*> values;
    ir::walk(f_.body, [&](const Op* op) {
      for (const auto& r : op->results) values.push_back(r.get());
      for (const auto& region : op->regions)
        for (const auto& a : region->args) values.push_back(a.get());
    });
    for (Value* v : values)
      if (is_tile(v)) v->type = typed(v);
    // A result read in another layout than it is produced in: convert once after the op.
    for (const auto& c : result_conversions_) {
      Value* r = c.op->result(c.index);
      Op* conv = insert(*c.op->parent, position(c.op) + 1,
                        convert(r, ir::Type::tile(r->type.shape(), r->type.element(), c.to), c.op->loc));
      Value* nv = conv->result();
      ir::walk(f_.body, [&](const Op* user) {
        if (user == conv) return;
        for (auto& operand : const_cast<Op*>(user)->operands)
          if (operand == r) operand = nv;
      });
    }
    // An operand wanted in another layout than its value has: converted before the user, or,
    // when the value comes from outside the user's loop or branch, once right after the value
    // (so a loop does not convert a loop-invariant value in every iteration), shared by every
    // user that wants it in that layout.
    std::map<std::pair<const Value*, Layout>, Value*> hoisted;
    for (const auto& c : operand_conversions_) {
      Value* v = c.op->operands[c.index];
      if (layout_of(v->type) == c.to) continue;
      ir::Type to = ir::Type::tile(v->type.shape(), v->type.element(), c.to);
      Block* home = v->def ? v->def->parent : v->owner;
      const bool outside = home != c.op->parent;
      if (outside) {
        if (auto it = hoisted.find({v, c.to}); it != hoisted.end()) {
          c.op->operands[c.index] = it->second;
          continue;
        }
      }
      // An arange or a splat is cheaper to compute again in the new layout than to convert.
      const Op* def = v->def;
      std::unique_ptr<Op> op;
      if (def && (def->kind == OpKind::Arange || def->kind == OpKind::Splat)) {
        op = std::make_unique<Op>();
        op->kind = def->kind;
        op->operands = def->operands;
        op->attrs = def->attrs;
        op->loc = def->loc;
        op->add_result(to);
      } else {
        op = convert(v, to, c.op->loc);
      }
      Op* conv = outside ? insert(*home, v->def ? position(v->def) + 1 : 0, std::move(op))
                         : insert(*c.op->parent, position(c.op), std::move(op));
      c.op->operands[c.index] = conv->result();
      if (outside) hoisted[{v, c.to}] = conv->result();
    }
    f_.number_values();
  }

  struct Conversion {
    Op* op;
    size_t index;
    Layout to;
  };

  std::unordered_map<const Value*, Layout> preferred_;
  ir::Function& f_;
  int num_warps_;
  bool wgmma_;
  bool fp8_mma_;
  AxisInfoMap info_;
  std::unordered_map<const Value*, Layout> layout_;
  std::vector<Conversion> operand_conversions_, result_conversions_;
};
}  // namespace

void assign_layouts(ir::Function& f, int num_warps, bool wgmma, bool fp8_mma) {
  TILEDSL_CHECK(num_warps > 0 && (num_warps & (num_warps - 1)) == 0, "num_warps must be a power of two");
  if (has_layouts(f)) return;  // given (IR text after this pass): the verifier has checked them
  Assigner(f, num_warps, wgmma, fp8_mma).run();
}

}  // namespace tiledsl::passes
