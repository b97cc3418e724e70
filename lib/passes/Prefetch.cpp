#include "passes/Prefetch.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "passes/AxisInfo.h"
#include "passes/Layouts.h"

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

// Rebuilds values of one loop body elsewhere, `ahead` iterations after a base iteration: before
// the loop, where the base is the first iteration (ahead 0 is the first iteration itself), or
// inside the body, before `limit`, where the base is the current iteration. Ops are cloned into
// `out`.
class Cloner {
 public:
  enum class Mode { first, next };
  Cloner(Op& loop, size_t limit, Mode mode, std::vector<std::unique_ptr<Op>>& out)
      : loop_(loop), body_(*loop.regions[0]), limit_(limit), mode_(mode), out_(out) {
    for (size_t i = 0; i < body_.ops.size(); ++i) position_[body_.ops[i].get()] = i;
  }

  // Whether `v` can be rebuilt (the cone of pure ops over the induction variable, carried
  // values and outside values).
  bool can(Value* v, int ahead) { return rebuild(v, ahead, /*dry=*/true) != nullptr; }
  Value* get(Value* v, int ahead) { return rebuild(v, ahead, /*dry=*/false); }

  // Appends an op (a mask or a predicate the caller builds) to the clones.
  Value* emit(std::unique_ptr<Op> op) {
    out_.push_back(std::move(op));
    return out_.back()->result();
  }
  Value* induction(int ahead) { return get(body_.args[0].get(), ahead); }

 private:
  bool in_body(const Op* op) const { return op && op->parent == &body_; }

  Value* rebuild(Value* v, int ahead, bool dry) {
    auto& memo = memo_[dry];
    if (auto it = memo.find({v, ahead}); it != memo.end()) return it->second;
    Value* r = compute(v, ahead, dry);
    memo[{v, ahead}] = r;
    return r;
  }

  Value* compute(Value* v, int ahead, bool dry) {
    static Value kCan;  // a non-null stand-in for dry runs
    if (!v->def && v->owner == &body_) {
      if (ahead == 0) {
        if (mode_ == Mode::next) return v;  // the current iteration's own value
        // The first iteration: lo, and the initial values.
        return v->index == 0 ? loop_.operands[0] : loop_.operands[3 + v->index - 1];
      }
      if (v->index == 0) {  // the induction variable: one step past the previous iteration's
        Value* before = rebuild(v, ahead - 1, dry);
        if (dry || !before) return before;
        return emit(new_op(OpKind::Add, {before, loop_.operands[2]}, v->type, {}, loop_.loc));
      }
      // A carried value: what the previous iteration yields.
      const Op* yield = body_.terminator();
      if (!yield || yield->kind != OpKind::Yield) return nullptr;
      return rebuild(yield->operands.at(v->index - 1), ahead - 1, dry);
    }
    if (!in_body(v->def)) {
      // Outside the body, or in a nested region of it (not a value a clone can name).
      for (const Block* b = v->owner ? v->owner : v->def->parent; b; b = b->parent ? b->parent->parent : nullptr)
        if (b == &body_) return nullptr;
      return v;
    }
    Op* op = v->def;
    // In the current iteration, what is computed before the insertion point is there already.
    if (ahead == 0 && mode_ == Mode::next && position_.at(op) < limit_) return v;
    if (!ir::has_trait(op->kind, ir::kPure) || !op->regions.empty() || op->results.size() != 1) return nullptr;
    std::vector<Value*> operands;
    for (Value* o : op->operands) {
      Value* r = rebuild(o, ahead, dry);
      if (!r) return nullptr;
      operands.push_back(r);
    }
    if (dry) return &kCan;
    return emit(new_op(op->kind, operands, v->type, op->attrs, op->loc));
  }

  struct KeyHash {
    size_t operator()(const std::pair<Value*, int>& k) const {
      return std::hash<Value*>()(k.first) ^ (static_cast<size_t>(k.second) * 0x9e3779b97f4a7c15ull);
    }
  };
  Op& loop_;
  Block& body_;
  size_t limit_;
  Mode mode_;
  std::vector<std::unique_ptr<Op>>& out_;
  std::unordered_map<const Op*, size_t> position_;
  std::unordered_map<std::pair<Value*, int>, Value*, KeyHash> memo_[2];  // [dry]
};

// The loads of `body` (top level) whose value reaches a dot of `body` through pure ops, and the
// position of the first such dot.
std::pair<std::vector<Op*>, size_t> loads_feeding_dots(Block& body) {
  std::unordered_map<const Value*, std::unordered_set<Op*>> from;  // value -> loads it comes from
  std::unordered_set<Op*> feeding;
  size_t first_dot = body.ops.size();
  for (size_t i = 0; i < body.ops.size(); ++i) {
    Op* op = body.ops[i].get();
    // A volatile load reads memory where it is written, so it is not moved to an iteration ahead.
    if (op->kind == OpKind::Load && op->result()->type.is_tile() && !op->has_attr("volatile")) {
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

// Whether the iteration `ahead` of `c`'s base runs: its induction variable is below hi.
Value* runs(Cloner& c, Op& loop, int ahead) {
  return c.emit(new_op(OpKind::Cmp, {c.induction(ahead), loop.operands[1]}, Type::scalar(DType::i1),
                       {{"pred", std::string("lt")}}, loop.loc));
}

// The load `load` (ptr, mask?, other?) of iteration `ahead`, rebuilt by `c`, predicated on `cond`.
Value* load_clone(Cloner& c, Op* load, int ahead, Value* cond) {
  Value* ptr = c.get(load->operands[0], ahead);
  Value* mask = load->operands.size() > 1 ? c.get(load->operands[1], ahead) : nullptr;
  std::vector<Value*> operands{ptr, guarded(c, cond, mask, ptr->type.shape(), load->loc)};
  if (load->operands.size() > 2) operands.push_back(c.get(load->operands[2], ahead));
  return c.emit(new_op(OpKind::Load, operands, load->result()->type, load->attrs, load->loc));
}

// Whether `load` may be prefetched more than one iteration ahead: its tile goes, as it is, only
// into tensor-core dots (wgmma on sm_90a, mma.sync otherwise) as an operand whose lines in shared
// memory (rows; b's columns when wgmma reads it K-major) run along the load's contiguous
// dimension, at least 4 bytes at a time, and its masked-off elements are zero. Code generation
// then copies it with cp.async into the dot's shared buffers (direct_copies), so the iterations
// in flight cost shared memory rather than registers.
bool deep(const Block& body, const Op* load, const PrefetchOptions& opts, const AxisInfoMap& info) {
  if (!zero_filled_load(load) || load->result()->type.shape().size() != 2) return false;
  const int fast = memory_fast_dim(*load, info);
  if (memory_vector_width(*load, info, fast) * byte_size(load->result()->type.dtype()) < 4) return false;
  bool any = false;
  for (const auto& op : body.ops)
    for (size_t i = 0; i < op->operands.size(); ++i) {
      if (op->operands[i] != load->result()) continue;
      if (op->kind != OpKind::Dot || i > 1) return false;
      const MmaLayout* l = mma_layout_for(*op, opts.num_warps, false, opts.wgmma, opts.fp8_mma);
      if (!l) return false;
      // The load must run along the lines of the operand's shared array: a's rows; b's rows or
      // columns on wgmma (it reads b either way, but tf32 only K-major: its columns), on
      // mma.sync its columns for 8- and 32-bit inputs (mma_b_kmajor) and its rows otherwise.
      const bool wgmma = opts.wgmma && wgmma_takes(*op, *l);
      const bool along_lines = i == 0  ? fast == 1
                               : wgmma ? mma_k(*op) == 16 || fast == 0
                                       : fast == (mma_b_kmajor(*op) ? 0 : 1);
      if (!along_lines) return false;
      any = true;
    }
  return any;
}

void prefetch_loop(Op& loop, Block& parent, const PrefetchOptions& launch_opts, const AxisInfoMap& info,
                   std::vector<std::unique_ptr<Op>>& erased) {
  // The loop's own num_stages (tl::RangeOptions) replaces the launch's.
  PrefetchOptions opts = launch_opts;
  if (loop.has_attr("num_stages")) opts.num_stages = static_cast<int>(loop.attr_int("num_stages"));
  if (opts.num_stages < 2) return;
  Block& body = *loop.regions[0];
  auto [loads, first_dot] = loads_feeding_dots(body);
  // Layouts are assigned after this pass; a kernel that has them already is left alone.
  if (loads.empty() || loads[0]->result()->type.layout()) return;
  std::vector<std::unique_ptr<Op>> before, inside;
  Cloner first(loop, 0, Cloner::Mode::first, before), next(loop, first_dot, Cloner::Mode::next, inside);
  std::vector<Op*> chosen;
  for (Op* l : loads) {
    bool ok = true;
    for (Value* o : l->operands) ok = ok && first.can(o, 0) && next.can(o, 1);
    if (ok) chosen.push_back(l);
  }
  if (chosen.empty()) return;
  // How far ahead: num_stages - 1 iterations when every chosen load can wait in shared memory,
  // else one (the loop carries the tiles in flight in registers).
  int distance = 1;
  if (std::all_of(chosen.begin(), chosen.end(), [&](Op* l) { return deep(body, l, opts, info); })) {
    distance = std::max(1, opts.num_stages - 1);
    for (Op* l : chosen)
      for (Value* o : l->operands)
        if (!first.can(o, distance - 1) || !next.can(o, distance)) distance = 1;
  }

  // Before the loop: the first `distance` iterations' loads, each masked off when its iteration
  // does not run. In the body, before the first dot: the loads of the iteration `distance`
  // ahead, masked off when it does not run. The loop carries `distance` tiles per load, the
  // current iteration's first; each iteration shifts them by one.
  std::vector<Value*> ahead_runs;
  for (int j = 0; j < distance; ++j) ahead_runs.push_back(runs(first, loop, j));
  Value* more = runs(next, loop, distance);
  Op* yield = body.terminator();
  // Iteration by iteration, so that code generation's copy groups complete in that order.
  std::vector<std::vector<Value*>> inits(chosen.size());
  for (int j = 0; j < distance; ++j)
    for (size_t i = 0; i < chosen.size(); ++i)
      inits[i].push_back(load_clone(first, chosen[i], j, ahead_runs[static_cast<size_t>(j)]));
  std::unordered_map<const Value*, Value*> replace;
  for (size_t i = 0; i < chosen.size(); ++i) {
    Op* l = chosen[i];
    std::vector<Value*> carried;
    for (int j = 0; j < distance; ++j) {
      loop.operands.push_back(inits[i][static_cast<size_t>(j)]);
      carried.push_back(body.add_arg(l->result()->type));
      loop.add_result(l->result()->type);
    }
    for (int j = 1; j < distance; ++j) yield->operands.push_back(carried[static_cast<size_t>(j)]);
    yield->operands.push_back(load_clone(next, l, distance, more));
    replace[l->result()] = carried[0];
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

void visit(Block& b, const PrefetchOptions& opts, const AxisInfoMap& info, std::vector<std::unique_ptr<Op>>& erased) {
  // Collect first: prefetching inserts ops into `b`.
  std::vector<Op*> loops;
  for (const auto& op : b.ops) {
    for (const auto& r : op->regions) visit(*r, opts, info, erased);
    if (op->kind == OpKind::For) loops.push_back(op.get());
  }
  for (Op* l : loops) prefetch_loop(*l, b, opts, info, erased);
}
}  // namespace

void prefetch_loads(ir::Function& f, const PrefetchOptions& opts) {
  bool any = opts.num_stages >= 2;
  ir::walk(f.body, [&](const Op* op) {
    any = any || (op->kind == OpKind::For && op->has_attr("num_stages") && op->attr_int("num_stages") >= 2);
  });
  if (!any) return;
  std::vector<std::unique_ptr<Op>> erased;
  // The loads' contiguity, computed once on the kernel as it comes: the loads rebuilt for other
  // iterations reach the same addresses plus a multiple of the step.
  const AxisInfoMap info = analyze_axes(f);
  visit(f.body, opts, info, erased);
  f.number_values();
}

}  // namespace tiledsl::passes
