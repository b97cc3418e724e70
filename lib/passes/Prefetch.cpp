#include "passes/Prefetch.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace tiledsl::passes {

namespace {
using ir::Block;
using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

std::unique_ptr<Op> new_op(OpKind k, std::vector<Value*> operands, Type result, ir::Attrs attrs,
                           const ir::Location& loc) {
  auto op = std::make_unique<Op>();
  op->kind = k;
  op->operands = std::move(operands);
  op->attrs = std::move(attrs);
  op->loc = loc;
  op->add_result(result);
  return op;
}

// Rebuilds values of one loop body elsewhere: before the loop for its first iteration, or inside
// the body, before `limit`, for the next iteration. Ops are cloned into `out`.
class Cloner {
 public:
  enum class Mode { first, next };
  Cloner(Op& loop, size_t limit, Mode mode, std::vector<std::unique_ptr<Op>>& out)
      : loop_(loop), body_(*loop.regions[0]), limit_(limit), mode_(mode), out_(out) {
    for (size_t i = 0; i < body_.ops.size(); ++i) position_[body_.ops[i].get()] = i;
  }

  // Whether `v` can be rebuilt (the cone of pure ops over the induction variable, carried
  // values and outside values).
  bool can(Value* v, bool now = false) { return rebuild(v, now, /*dry=*/true) != nullptr; }
  Value* get(Value* v, bool now = false) { return rebuild(v, now, /*dry=*/false); }

  // Appends an op (a mask or a predicate the caller builds) to the clones.
  Value* emit(std::unique_ptr<Op> op) {
    out_.push_back(std::move(op));
    return out_.back()->result();
  }
  Value* induction() { return get(body_.args[0].get()); }

 private:
  bool in_body(const Op* op) const { return op && op->parent == &body_; }

  // `now`: the value in the current iteration (for a carried value's next value, which is what
  // the body yields now); otherwise the value in the iteration being prefetched.
  Value* rebuild(Value* v, bool now, bool dry) {
    auto& memo = (now ? memo_now_ : memo_next_)[dry];
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    Value* r = compute(v, now, dry);
    memo[v] = r;
    return r;
  }

  Value* compute(Value* v, bool now, bool dry) {
    static Value kCan;  // a non-null stand-in for dry runs
    if (!v->def && v->owner == &body_) {
      if (mode_ == Mode::first) {  // the first iteration: lo, and the initial values
        if (v->index == 0) return loop_.operands[0];
        return loop_.operands[3 + v->index - 1];
      }
      if (now) return v;
      if (v->index == 0) {  // the next iteration's induction variable: iv + step
        if (dry) return &kCan;
        return emit(new_op(OpKind::Add, {v, loop_.operands[2]}, v->type, {}, loop_.loc));
      }
      const Op* yield = body_.terminator();
      if (!yield || yield->kind != OpKind::Yield) return nullptr;
      return rebuild(yield->operands.at(v->index - 1), /*now=*/true, dry);
    }
    if (!in_body(v->def)) {
      // Outside the body, or in a nested region of it (not a value a clone can name).
      for (const Block* b = v->owner ? v->owner : v->def->parent; b; b = b->parent ? b->parent->parent : nullptr)
        if (b == &body_) return nullptr;
      return v;
    }
    Op* op = v->def;
    // In the current iteration, what is computed before the insertion point is there already.
    if (now && mode_ == Mode::next && position_.at(op) < limit_) return v;
    if (!ir::has_trait(op->kind, ir::kPure) || !op->regions.empty() || op->results.size() != 1) return nullptr;
    std::vector<Value*> operands;
    for (Value* o : op->operands) {
      Value* r = rebuild(o, now, dry);
      if (!r) return nullptr;
      operands.push_back(r);
    }
    if (dry) return &kCan;
    return emit(new_op(op->kind, operands, v->type, op->attrs, op->loc));
  }

  Op& loop_;
  Block& body_;
  size_t limit_;
  Mode mode_;
  std::vector<std::unique_ptr<Op>>& out_;
  std::unordered_map<const Op*, size_t> position_;
  std::unordered_map<Value*, Value*> memo_now_[2], memo_next_[2];
};

// The loads of `body` (top level) whose value reaches a dot of `body` through pure ops, and the
// position of the first such dot.
std::pair<std::vector<Op*>, size_t> loads_feeding_dots(Block& body) {
  std::unordered_map<const Value*, std::unordered_set<Op*>> from;  // value -> loads it comes from
  std::unordered_set<Op*> feeding;
  size_t first_dot = body.ops.size();
  for (size_t i = 0; i < body.ops.size(); ++i) {
    Op* op = body.ops[i].get();
    if (op->kind == OpKind::Load && op->result()->type.is_tile()) {
      from[op->result()].insert(op);
      continue;
    }
    std::unordered_set<Op*> sources;
    for (const Value* o : op->operands)
      if (auto it = from.find(o); it != from.end()) sources.insert(it->second.begin(), it->second.end());
    if (sources.empty()) continue;
    if (op->kind == OpKind::Dot) {
      feeding.insert(sources.begin(), sources.end());
      first_dot = std::min(first_dot, i);
    } else if (ir::has_trait(op->kind, ir::kPure) && op->regions.empty()) {
      for (const auto& r : op->results) from[r.get()] = sources;
    }
  }
  std::vector<Op*> loads;
  for (const auto& op : body.ops)
    if (feeding.count(op.get())) loads.push_back(op.get());
  return {loads, first_dot};
}

// A scalar i1 `cond` as a mask of `shape`, and'ed with `mask` when there is one.
Value* guarded(Cloner& c, Value* cond, Value* mask, const std::vector<int64_t>& shape, const ir::Location& loc) {
  Type bools = Type::tile(shape, Type::scalar(DType::i1));
  Value* all = c.emit(new_op(OpKind::Splat, {cond}, bools, {}, loc));
  return mask ? c.emit(new_op(OpKind::And, {mask, all}, bools, {}, loc)) : all;
}

Value* less_than(Cloner& c, Value* a, Value* b, const ir::Location& loc) {
  return c.emit(new_op(OpKind::Cmp, {a, b}, Type::scalar(DType::i1), {{"pred", std::string("lt")}}, loc));
}

// The load `load` (ptr, mask?, other?) rebuilt by `c`, predicated on `cond`.
Value* load_clone(Cloner& c, Op* load, Value* cond) {
  Value* ptr = c.get(load->operands[0]);
  Value* mask = load->operands.size() > 1 ? c.get(load->operands[1]) : nullptr;
  std::vector<Value*> operands{ptr, guarded(c, cond, mask, ptr->type.shape(), load->loc)};
  if (load->operands.size() > 2) operands.push_back(c.get(load->operands[2]));
  return c.emit(new_op(OpKind::Load, operands, load->result()->type, load->attrs, load->loc));
}

void prefetch_loop(Op& loop, Block& parent, std::vector<std::unique_ptr<Op>>& erased) {
  Block& body = *loop.regions[0];
  auto [loads, first_dot] = loads_feeding_dots(body);
  // Layouts are assigned after this pass; a kernel that has them already is left alone.
  if (loads.empty() || loads[0]->result()->type.layout()) return;
  std::vector<std::unique_ptr<Op>> before, inside;
  Cloner first(loop, 0, Cloner::Mode::first, before), next(loop, first_dot, Cloner::Mode::next, inside);
  std::vector<Op*> chosen;
  for (Op* l : loads) {
    bool ok = true;
    for (Value* o : l->operands) ok = ok && first.can(o) && next.can(o);
    if (ok) chosen.push_back(l);
  }
  if (chosen.empty()) return;

  // Before the loop: the first iteration's loads, masked off when the loop runs no iteration.
  Value* runs = less_than(first, loop.operands[0], loop.operands[1], loop.loc);
  // In the body, before the first dot: the next iteration's loads, masked off in the last one.
  Value* more = less_than(next, next.induction(), loop.operands[1], loop.loc);
  Op* yield = body.terminator();
  std::unordered_map<const Value*, Value*> replace;
  for (Op* l : chosen) {
    Value* init = load_clone(first, l, runs);
    Value* ahead = load_clone(next, l, more);
    loop.operands.push_back(init);
    Value* carried = body.add_arg(l->result()->type);
    loop.add_result(l->result()->type);
    yield->operands.push_back(ahead);
    replace[l->result()] = carried;
  }
  // Splice: the clones before the loop and before the first dot; the prefetched loads go.
  auto at = std::find_if(parent.ops.begin(), parent.ops.end(), [&](const auto& p) { return p.get() == &loop; });
  for (auto& op : before) op->parent = &parent;
  parent.ops.insert(at, std::make_move_iterator(before.begin()), std::make_move_iterator(before.end()));
  for (auto& op : inside) op->parent = &body;
  body.ops.insert(body.ops.begin() + static_cast<std::ptrdiff_t>(first_dot), std::make_move_iterator(inside.begin()),
                  std::make_move_iterator(inside.end()));
  ir::walk(body, [&](const Op* op) {
    for (auto& v : const_cast<Op*>(op)->operands)
      if (auto it = replace.find(v); it != replace.end()) v = it->second;
  });
  for (Op* l : chosen) {
    auto it = std::find_if(body.ops.begin(), body.ops.end(), [&](const auto& p) { return p.get() == l; });
    erased.push_back(std::move(*it));
    body.ops.erase(it);
  }
}

void visit(Block& b, std::vector<std::unique_ptr<Op>>& erased) {
  // Collect first: prefetching inserts ops into `b`.
  std::vector<Op*> loops;
  for (const auto& op : b.ops) {
    for (const auto& r : op->regions) visit(*r, erased);
    if (op->kind == OpKind::For) loops.push_back(op.get());
  }
  for (Op* l : loops) prefetch_loop(*l, b, erased);
}
}  // namespace

void prefetch_loads(ir::Function& f, int num_stages) {
  if (num_stages < 2) return;
  std::vector<std::unique_ptr<Op>> erased;
  visit(f.body, erased);
  f.number_values();
}

}  // namespace tiledsl::passes
