// The untyped half of the language (tiledsl/tile.h): each function forwards to the checked
// builder of the active trace.
#include <deque>
#include <filesystem>
#include <mutex>

#include "frontend/Trace.h"
#include "ir/Verifier.h"
#include "support/Error.h"
#include "tiledsl/tile.h"

namespace tiledsl {

namespace frontend {
namespace {
thread_local ir::Builder* active = nullptr;
}

ir::Location to_location(const std::source_location& loc) {
  return ir::Location{std::filesystem::path(loc.file_name()).filename().string(), loc.line(), loc.column()};
}

ir::Builder& builder(const std::source_location& loc) {
  if (!active)
    user_error(to_location(loc).str(), "", "",
               "tiledsl ops can only be called inside a kernel body while it is traced");
  return *active;
}

bool tracing() { return active != nullptr; }

TraceScope::TraceScope(ir::Builder& b) : saved_(active) { active = &b; }
}  // namespace frontend

// --- Handle registry ------------------------------------------------------------------------
struct HandleAccess {
  static thread_local Handle* head;
  static Handle* next(Handle* h) { return h->next_; }
  static ir::Value*& value(Handle* h) { return h->v_; }
};
thread_local Handle* HandleAccess::head = nullptr;

void Handle::link() {
  next_ = HandleAccess::head;
  prev_ = nullptr;
  if (next_) next_->prev_ = this;
  HandleAccess::head = this;
}

void Handle::unlink() {
  if (prev_)
    prev_->next_ = next_;
  else
    HandleAccess::head = next_;
  if (next_) next_->prev_ = prev_;
}

namespace frontend {
namespace {
// The kernel a value belongs to: up through the blocks and ops that hold it.
const ir::Block* root_block(const ir::Value* v) {
  const ir::Block* b = v->def ? v->def->parent : v->owner;
  while (b && b->parent) b = b->parent->parent;
  return b;
}

// Stand-ins for the values of retired tiles: of the same type, defined nowhere, never freed.
ir::Value* tombstone(ir::Type t) {
  static std::mutex mu;
  static auto* graves = new std::deque<ir::Value>;
  std::lock_guard lock(mu);
  graves->emplace_back();
  graves->back().type = t;
  return &graves->back();
}
}  // namespace

TraceScope::~TraceScope() {
  const ir::Block* body = &active->function().body;
  for (Handle* h = HandleAccess::head; h; h = HandleAccess::next(h)) {
    ir::Value*& v = HandleAccess::value(h);
    if (v && root_block(v) == body) v = tombstone(v->type);
  }
  active = saved_;
}
}  // namespace frontend

namespace detail {
using frontend::builder;
using frontend::to_location;
using ir::OpKind;

namespace {
OpKind bin_kind(BinOp op) {
  switch (op) {
    case BinOp::add:
      return OpKind::Add;
    case BinOp::sub:
      return OpKind::Sub;
    case BinOp::mul:
      return OpKind::Mul;
    case BinOp::div:
      return OpKind::Div;
    case BinOp::rem:
      return OpKind::Rem;
    case BinOp::max:
      return OpKind::Max;
    case BinOp::min:
      return OpKind::Min;
    case BinOp::band:
      return OpKind::And;
    case BinOp::bor:
      return OpKind::Or;
    case BinOp::bxor:
      return OpKind::Xor;
    case BinOp::shl:
      return OpKind::Shl;
    case BinOp::shr:
      return OpKind::Shr;
  }
  return OpKind::Add;
}
OpKind un_kind(UnOp op) {
  switch (op) {
    case UnOp::neg:
      return OpKind::Neg;
    case UnOp::bnot:
      return OpKind::Not;
    case UnOp::exp:
      return OpKind::Exp;
    case UnOp::exp2:
      return OpKind::Exp2;
    case UnOp::log:
      return OpKind::Log;
    case UnOp::log2:
      return OpKind::Log2;
    case UnOp::sqrt:
      return OpKind::Sqrt;
    case UnOp::rsqrt:
      return OpKind::Rsqrt;
    case UnOp::sin:
      return OpKind::Sin;
    case UnOp::cos:
      return OpKind::Cos;
    case UnOp::floor:
      return OpKind::Floor;
    case UnOp::ceil:
      return OpKind::Ceil;
    case UnOp::erf:
      return OpKind::Erf;
    case UnOp::abs:
      return OpKind::Abs;
  }
  return OpKind::Neg;
}
const char* pred_name(CmpPred p) {
  static const char* names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return names[static_cast<int>(p)];
}

// (handle, value before) for every live handle: what tl::range and tl::if_ compare against.
std::vector<std::pair<Handle*, V>> snapshot() {
  std::vector<std::pair<Handle*, V>> s;
  for (Handle* h = HandleAccess::head; h; h = HandleAccess::next(h)) s.emplace_back(h, h->value());
  return s;
}
void restore(const std::vector<std::pair<Handle*, V>>& s) {
  for (auto& [h, v] : s) HandleAccess::value(h) = v;
}

// Runs fn with the builder inserting into `block`, restoring the insertion point afterwards.
template <class Fn>
void inside(ir::Builder& b, ir::Block* block, Fn&& fn) {
  ir::Block* saved = b.block();
  b.set_block(block);
  try {
    fn();
  } catch (...) {
    b.set_block(saved);
    throw;
  }
  b.set_block(saved);
}

// Early returns inside tl::if_ (Triton allows `return` in an `if`, nested or not, but not in a
// loop). Each branch being traced, and each loop body, is a scope. A return_if in a branch opens
// `if cond {} else {the rest of the branch}` as the kernel's body does (Builder::return_if); when
// the branch ends, those ifs are closed with the variables the rest assigned as results, plus a
// flag "returned", which the enclosing if_ yields and ends with return_if(flag) in its own block:
// so a return deep in a branch also skips everything after the branch, up to the kernel's end.
struct ReturnScope {
  bool allowed;      // false in a loop body (and any if_ inside it)
  ir::Block* block;  // where the branch's ops go now: its region, or the last return's else
  struct Open {
    ir::Op* op;                                    // the if of one return_if
    std::vector<std::pair<Handle*, V>> at_return;  // the variables as they were at the return
  };
  std::vector<Open> open;
};
thread_local std::vector<ReturnScope> return_scopes;

struct ReturnScopeGuard {
  explicit ReturnScopeGuard(ReturnScope s) { return_scopes.push_back(std::move(s)); }
  ~ReturnScopeGuard() { return_scopes.pop_back(); }
  ReturnScopeGuard(const ReturnScopeGuard&) = delete;
  ReturnScopeGuard& operator=(const ReturnScopeGuard&) = delete;
};
bool returns_allowed() { return return_scopes.empty() || return_scopes.back().allowed; }

// Closes the returns a branch opened (innermost first), ending with the builder in the branch's
// region: the variables assigned after each return become that if's results (the then side keeps
// their values at the return). Returns the flag "the branch returned", or null without returns.
V close_branch_returns(ir::Builder& b, const ir::Location& loc) {
  ReturnScope& s = return_scopes.back();
  V flag = nullptr;
  while (!s.open.empty()) {
    ReturnScope::Open o = std::move(s.open.back());
    s.open.pop_back();
    std::vector<std::pair<Handle*, V>> changed;  // (handle, value at the return)
    for (Handle* h = HandleAccess::head; h; h = HandleAccess::next(h))
      for (const auto& [seen, v] : o.at_return)
        if (seen == h && h->value() != v) {
          if (h->value()->type != v->type)
            b.fail(loc, "if_",
                   fmt::format("a variable assigned after a return_if changes type from {} to {}; variables "
                               "assigned under if_ must keep their element type and shape",
                               v->type.str(), h->value()->type.str()));
          changed.emplace_back(h, v);
        }
    std::vector<V> then_yields, else_yields;
    for (const auto& [h, v] : changed) {
      then_yields.push_back(v);
      else_yields.push_back(h->value());
    }
    b.set_block(o.op->regions[1].get());
    else_yields.push_back(flag ? flag : b.constant_int(0, DType::i1, loc));
    b.yield(else_yields, loc);
    b.set_block(o.op->regions[0].get());
    then_yields.push_back(b.constant_int(1, DType::i1, loc));
    b.yield(then_yields, loc);
    b.set_block(o.op->parent);
    for (const auto& [h, v] : changed) HandleAccess::value(h) = o.op->add_result(v->type);
    flag = o.op->add_result(ir::Type::scalar(DType::i1));
  }
  s.block = b.block();
  return flag;
}
}  // namespace

#define B builder(loc)
#define L to_location(loc)
V constant(double v, DType t, const SourceLoc& loc) { return B.constant(v, t, L); }
V constant_int(int64_t v, DType t, const SourceLoc& loc) { return B.constant_int(v, t, L); }
V binary(BinOp op, V a, V b, const SourceLoc& loc) { return B.binary(bin_kind(op), a, b, L); }
V compare(CmpPred p, V a, V b, const SourceLoc& loc) { return B.compare(pred_name(p), a, b, L); }
V unary(UnOp op, V a, const SourceLoc& loc) { return B.unary(un_kind(op), a, L); }
V cast(V a, DType t, const SourceLoc& loc) { return B.cast(a, t, L); }
V cast_toward_zero(V a, DType t, const SourceLoc& loc) { return B.cast_toward_zero(a, t, L); }
V to_pointer(V a, DType pointee, const SourceLoc& loc) { return B.to_pointer(a, pointee, L); }
V from_pointer(V a, DType t, const SourceLoc& loc) { return B.from_pointer(a, t, L); }
V bitcast(V a, DType t, const SourceLoc& loc) { return B.bitcast(a, t, L); }
V program_id(int axis, const SourceLoc& loc) { return B.program_id(axis, L); }
V num_programs(int axis, const SourceLoc& loc) { return B.num_programs(axis, L); }
V arange(int64_t start, int64_t end, const SourceLoc& loc) { return B.arange(start, end, L); }
V full(const std::vector<int64_t>& shape, V scalar, const SourceLoc& loc, const char* op) {
  return B.full(shape, scalar, L, op);
}
V broadcast_to(V v, const std::vector<int64_t>& shape, const SourceLoc& loc) { return B.broadcast_to(v, shape, L); }
V expand_dims(V v, int axis, const SourceLoc& loc) { return B.expand_dims(v, axis, L); }
V reshape(V v, const std::vector<int64_t>& shape, const SourceLoc& loc) { return B.reshape(v, shape, L); }
V trans(V v, const std::vector<int64_t>& perm, const SourceLoc& loc) { return B.trans(v, perm, L); }
V gather(V src, V index, int axis, const SourceLoc& loc) { return B.gather(src, index, axis, L); }
std::vector<V> inline_asm(const std::string& asm_text, const std::string& constraints, const std::vector<V>& args,
                          const std::vector<DType>& results, bool pure, int pack, const SourceLoc& loc) {
  return B.inline_asm(asm_text, constraints, args, results, pure, pack, L);
}
V select(V c, V a, V b, const SourceLoc& loc) { return B.select(c, a, b, L); }
V fma(V a, V b, V c, const SourceLoc& loc) { return B.fma(a, b, c, L); }
V math(const char* fn, V a, const SourceLoc& loc) { return B.math(fn, a, L); }
std::string type_str(V v) { return v->type.str(); }
V math(const char* fn, V a, V b, const SourceLoc& loc) { return B.math(fn, a, b, L); }
V load(V p, V mask, V other, const SourceLoc& loc, const char* cache, const char* eviction, bool is_volatile) {
  return B.load(p, mask, other, L, {cache, eviction, is_volatile});
}
void store(V p, V v, V mask, const SourceLoc& loc, const char* cache, const char* eviction) {
  B.store(p, v, mask, L, {cache, eviction});
}
V atomic_rmw(const char* kind, V p, V v, V mask, const SourceLoc& loc, const char* sem, const char* scope) {
  return B.atomic_rmw(kind, p, v, mask, L, sem, scope);
}
V atomic_cas(V p, V cmp, V v, const SourceLoc& loc, const char* sem, const char* scope) {
  return B.atomic_cas(p, cmp, v, L, sem, scope);
}
V dot(V a, V b, V acc, const SourceLoc& loc, const char* input_precision) {
  return B.dot(a, b, acc, L, input_precision);
}
V multiple_of(V v, const std::vector<int64_t>& values, const SourceLoc& loc) {
  return B.hint(OpKind::MultipleOf, v, values, L);
}
V max_contiguous(V v, const std::vector<int64_t>& values, const SourceLoc& loc) {
  return B.hint(OpKind::MaxContiguous, v, values, L);
}
void print(const std::string& prefix, bool hex, const std::vector<V>& values, const SourceLoc& loc) {
  B.print(prefix, hex, values, L);
}
void device_assert(V cond, const std::string& msg, const SourceLoc& loc) { B.device_assert(cond, msg, L); }
void assume(V cond, const SourceLoc& loc) { B.assume(cond, L); }
void static_check(bool cond, const std::string& msg, const SourceLoc& loc) {
  if (!cond) B.fail(L, "static_assert", msg.empty() ? "assertion failed" : msg);
}
void fail(const char* op, const std::string& msg, const SourceLoc& loc) { B.fail(L, op, msg); }
std::vector<int64_t> shape(V v) { return v->type.shape(); }
DType dtype(V v) { return v->type.dtype(); }

std::array<V, 4> philox(V seed, V offsets, int rounds, const SourceLoc& loc) {
  auto r = B.philox(seed, offsets, rounds, L);
  return {r[0], r[1], r[2], r[3]};
}

namespace {
std::vector<V> combine_region(ir::Builder& b, ir::Op* op, size_t n, const Combine& combine, const SourceLoc& loc) {
  ir::Block* body = op->regions[0].get();
  std::vector<V> lhs, rhs;
  for (size_t i = 0; i < n; ++i) lhs.push_back(body->args[i].get());
  for (size_t i = 0; i < n; ++i) rhs.push_back(body->args[n + i].get());
  std::vector<V> out;
  inside(b, body, [&] { out = combine(lhs, rhs); });
  b.finish_combine(op, out, L);
  std::vector<V> results;
  for (auto& r : op->results) results.push_back(r.get());
  return results;
}
}  // namespace

std::vector<V> reduce(const std::vector<V>& in, int axis, const Combine& combine, const SourceLoc& loc,
                      const char* name) {
  ir::Op* op = B.begin_reduce(in, axis, L, name);
  return combine_region(B, op, in.size(), combine, loc);
}

std::vector<V> scan(const std::vector<V>& in, int axis, bool reverse, const Combine& combine, const SourceLoc& loc,
                    const char* name) {
  ir::Op* op = B.begin_scan(in, axis, reverse, L, name);
  return combine_region(B, op, in.size(), combine, loc);
}

Tile<int32_t> arg_reduce(V x, int axis, bool is_max, const SourceLoc& loc) {
  return Tile<int32_t>(arg_reduce_with_value(x, axis, is_max, loc).second);
}

std::pair<V, V> arg_reduce_with_value(V x, int axis, bool is_max, const SourceLoc& loc) {
  auto& b = B;
  const auto& shape = x->type.shape();
  int rank = static_cast<int>(shape.size());
  const char* name = is_max ? "argmax" : "argmin";
  if (rank == 0) b.fail(L, name, fmt::format("needs a tile, got the scalar {}", x->type.str()));
  if (axis < -rank || axis >= rank)
    b.fail(L, name,
           fmt::format("axis {} is out of range for a tile of shape {} (rank {})", axis, ir::shape_str(shape), rank));
  if (axis < 0) axis += rank;
  V idx = b.arange(0, shape[static_cast<size_t>(axis)], L);
  for (int d = 0; d < rank; ++d)
    if (d != axis) idx = b.expand_dims(idx, d, L);
  idx = b.broadcast_to(idx, shape, L);
  auto res = reduce(
      {x, idx}, axis,
      [&](std::span<V const> l, std::span<V const> r) {
        V better = b.compare(is_max ? "gt" : "lt", l[0], r[0], L);
        V tie = b.binary(OpKind::And, b.compare("eq", l[0], r[0], L), b.compare("lt", l[1], r[1], L), L);
        V pick = b.binary(OpKind::Or, better, tie, L);
        return std::vector<V>{b.select(pick, l[0], r[0], L), b.select(pick, l[1], r[1], L)};
      },
      loc, name);
  return {res[0], res[1]};
}

namespace {
// Ends a loop body: yields the current values of the carried handles (paired with their values
// before the loop), which must keep their types.
void yield_carried(ir::Builder& b, const std::vector<std::pair<Handle*, V>>& carried, const char* op,
                   const ir::Location& loc) {
  std::vector<V> yields;
  for (const auto& [handle, init] : carried) {
    V y = handle->value();
    if (y->type != init->type)
      b.fail(loc, op,
             fmt::format("a variable assigned in the loop body changes type from {} to {}; "
                         "loop-carried variables must keep their element type and shape",
                         init->type.str(), y->type.str()));
    yields.push_back(y);
  }
  b.yield(yields, loc);
}
}  // namespace

void for_loop(V lo, V hi, V step, const std::function<void(V)>& body, const SourceLoc& loc, int num_stages,
              int unroll) {
  auto& b = B;
  if (num_stages)
    if (std::string problem = ir::num_stages_problem(num_stages); !problem.empty()) b.fail(L, "range", problem);
  if (unroll && (unroll < 1 || unroll > ir::kMaxUnroll))
    b.fail(L, "range", fmt::format("unroll must be from 1 to {}, got {}", ir::kMaxUnroll, unroll));
  ReturnScopeGuard no_returns({.allowed = false, .block = nullptr, .open = {}});
  // Pass 1: trace into a throw-away loop to learn which live handles the body assigns.
  auto before = snapshot();
  ir::Op* probe = b.begin_for(lo, hi, step, {}, L);
  ir::Block* outer = b.block();
  try {
    inside(b, probe->regions[0].get(), [&] { body(probe->regions[0]->args[0].get()); });
  } catch (...) {
    restore(before);
    outer->ops.pop_back();
    throw;
  }
  std::vector<std::pair<Handle*, V>> carried;
  for (auto& [h, v] : before)
    if (h->value() != v) carried.emplace_back(h, v);
  restore(before);
  TILEDSL_CHECK(outer->ops.back().get() == probe, "loop probe is not the last op");
  outer->ops.pop_back();

  // Pass 2: the real loop, with the assigned handles as loop-carried values.
  std::vector<V> inits;
  for (auto& c : carried) inits.push_back(c.second);
  ir::Op* loop = b.begin_for(lo, hi, step, inits, L);
  if (num_stages) loop->attrs["num_stages"] = int64_t{num_stages};
  if (unroll) loop->attrs["unroll"] = int64_t{unroll};
  ir::Block* region = loop->regions[0].get();
  for (size_t i = 0; i < carried.size(); ++i) HandleAccess::value(carried[i].first) = region->args[i + 1].get();
  inside(b, region, [&] {
    body(region->args[0].get());
    yield_carried(b, carried, "range", L);
  });
  for (size_t i = 0; i < carried.size(); ++i) HandleAccess::value(carried[i].first) = loop->result(i);
}

void if_else(V cond, const std::function<void()>& then_fn, const std::function<void()>& else_fn, const SourceLoc& loc) {
  auto& b = B;
  auto before = snapshot();
  ir::Op* op = b.begin_if(cond, L);
  V returned[2] = {nullptr, nullptr};  // each branch's flag "returned early", if it has a return_if
  auto trace_branch = [&](size_t r, const std::function<void()>& fn) {
    ReturnScopeGuard scope({.allowed = returns_allowed(), .block = op->regions[r].get(), .open = {}});
    inside(b, op->regions[r].get(), [&] {
      fn();
      returned[r] = close_branch_returns(b, L);
    });
    std::vector<V> after;
    for (auto& [h, v] : before) after.push_back(h->value());
    restore(before);
    return after;
  };
  auto then_vals = trace_branch(0, then_fn);
  auto else_vals = trace_branch(1, else_fn);
  std::vector<size_t> changed;
  for (size_t i = 0; i < before.size(); ++i)
    if (then_vals[i] != before[i].second || else_vals[i] != before[i].second) {
      for (V v : {then_vals[i], else_vals[i]})
        if (v->type != before[i].second->type)
          b.fail(L, "if_",
                 fmt::format("a variable assigned in a branch changes type from {} to {}; variables "
                             "assigned under if_ must keep their element type and shape",
                             before[i].second->type.str(), v->type.str()));
      changed.push_back(i);
    }
  std::vector<V> ty, ey;
  for (size_t i : changed) {
    ty.push_back(then_vals[i]);
    ey.push_back(else_vals[i]);
  }
  const bool returns = returned[0] || returned[1];
  inside(b, op->regions[0].get(), [&] {
    if (returns) ty.push_back(returned[0] ? returned[0] : b.constant_int(0, DType::i1, L));
    b.yield(ty, L);
  });
  inside(b, op->regions[1].get(), [&] {
    if (returns) ey.push_back(returned[1] ? returned[1] : b.constant_int(0, DType::i1, L));
    b.yield(ey, L);
  });
  for (size_t i : changed) HandleAccess::value(before[i].first) = op->add_result(before[i].second->type);
  // A return in a branch ends the program: what follows the if_ is skipped too.
  if (returns) return_if(op->add_result(ir::Type::scalar(DType::i1)), loc);
}

void while_loop(const std::function<V()>& cond, const std::function<void()>& body, const SourceLoc& loc) {
  auto& b = B;
  ReturnScopeGuard no_returns({.allowed = false, .block = nullptr, .open = {}});
  auto check_cond = [&](V c) {
    if (c->type.is_tile() || c->type.dtype() != DType::i1)
      b.fail(L, "while_", fmt::format("the condition must be a boolean scalar, got {}", c->type.str()));
  };
  // Pass 1, as for_loop's: trace into a throw-away loop to learn which live handles the body
  // assigns (and that the condition assigns none).
  auto before = snapshot();
  ir::Op* probe = b.begin_while({}, L);
  ir::Block* outer = b.block();
  std::vector<std::pair<Handle*, V>> carried;
  try {
    inside(b, probe->regions[0].get(), [&] { check_cond(cond()); });
    for (auto& [h, v] : before)
      if (h->value() != v)
        b.fail(L, "while_",
               "the condition assigns a variable; compute the condition from variables the body assigns instead");
    inside(b, probe->regions[1].get(), body);
    for (auto& [h, v] : before)
      if (h->value() != v) carried.emplace_back(h, v);
  } catch (...) {
    restore(before);
    outer->ops.pop_back();
    throw;
  }
  restore(before);
  TILEDSL_CHECK(outer->ops.back().get() == probe, "loop probe is not the last op");
  outer->ops.pop_back();

  // Pass 2: the real loop, with the assigned handles as loop-carried values.
  std::vector<V> inits;
  for (auto& c : carried) inits.push_back(c.second);
  ir::Op* loop = b.begin_while(inits, L);
  auto enter = [&](ir::Block* region) {
    for (size_t i = 0; i < carried.size(); ++i) HandleAccess::value(carried[i].first) = region->args[i].get();
  };
  ir::Block* cond_region = loop->regions[0].get();
  enter(cond_region);
  inside(b, cond_region, [&] {
    V c = cond();
    check_cond(c);
    b.yield({c}, L);
  });
  ir::Block* body_region = loop->regions[1].get();
  enter(body_region);
  inside(b, body_region, [&] {
    body();
    yield_carried(b, carried, "while_", L);
  });
  for (size_t i = 0; i < carried.size(); ++i) HandleAccess::value(carried[i].first) = loop->result(i);
}

void return_if(V cond, const SourceLoc& loc) {
  auto& b = B;
  if (return_scopes.empty()) return b.return_if(cond, L);  // in the kernel's body
  ReturnScope& s = return_scopes.back();
  if (!s.allowed || b.block() != s.block) b.fail(L, "return_if", ir::Builder::kReturnIfPlacement);
  ir::Op* op = b.begin_if(cond, L, "return_if");
  s.open.push_back({op, snapshot()});
  s.block = op->regions[1].get();
  b.set_block(s.block);
}
void debug_barrier(const SourceLoc& loc) { B.barrier(L); }

// --- Block pointers -------------------------------------------------------------------------
Tile<int64_t> to_i64(const IntArg& a, const SourceLoc& loc) { return Tile<int64_t>(B.cast(a.v, DType::i64, L)); }

void check_block_ptr(size_t rank, size_t strides, size_t offsets, const std::vector<int64_t>& block_shape,
                     const std::vector<int64_t>& order, const SourceLoc& loc) {
  auto& b = B;
  if (strides != rank || offsets != rank || block_shape.size() != rank || order.size() != rank)
    b.fail(L, "make_block_ptr",
           fmt::format("shape, strides, offsets, block_shape and order need one entry per "
                       "dimension; got {}, {}, {}, {} and {}",
                       rank, strides, offsets, block_shape.size(), order.size()));
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i))
      b.fail(L, "make_block_ptr", fmt::format("order {} is not a permutation of the dimensions", ir::shape_str(order)));
}

std::pair<V, V> block_ptr_addresses(V base, const std::vector<Tile<int64_t>>& shape,
                                    const std::vector<Tile<int64_t>>& strides,
                                    const std::vector<Tile<int64_t>>& offsets, const std::vector<int64_t>& block_shape,
                                    const std::vector<int>& checked, const SourceLoc& loc) {
  auto& b = B;
  size_t rank = block_shape.size();
  V ptr = base, mask = nullptr;
  for (size_t d = 0; d < rank; ++d) {
    V idx = b.binary(OpKind::Add, b.cast(b.arange(0, block_shape[d], L), DType::i64, L), offsets[d].value(), L);
    for (size_t e = 0; e < rank; ++e)
      if (e != d) idx = b.expand_dims(idx, static_cast<int>(e), L);
    ptr = b.addptr(ptr, b.binary(OpKind::Mul, idx, strides[d].value(), L), L);
    if (std::find(checked.begin(), checked.end(), static_cast<int>(d)) != checked.end()) {
      V zero = b.constant_int(0, DType::i64, L);
      V in = b.binary(OpKind::And, b.compare("ge", idx, zero, L), b.compare("lt", idx, shape[d].value(), L), L);
      mask = mask ? b.binary(OpKind::And, mask, in, L) : in;
    }
  }
  for (int c : checked)
    if (c < 0 || static_cast<size_t>(c) >= rank)
      b.fail(L, "load", fmt::format("boundary_check dimension {} is out of range for a block of rank {}", c, rank));
  ptr = b.broadcast_to(ptr, block_shape, L);
  if (mask) mask = b.broadcast_to(mask, block_shape, L);
  return {ptr, mask};
}
std::pair<V, V> descriptor_rows(const char* what, V base, const std::vector<Tile<int64_t>>& shape,
                                const std::vector<Tile<int64_t>>& strides, const std::vector<int64_t>& block_shape,
                                V rows, V column, const SourceLoc& loc) {
  auto& b = B;
  if (block_shape.size() != 2 || block_shape[0] != 1)
    b.fail(L, what,
           fmt::format("needs a 2-D descriptor whose block has one row, as Triton's; this one's block is {}",
                       ir::shape_str(block_shape)));
  if (rows->type.shape().size() != 1)
    b.fail(L, what, fmt::format("the rows are a 1-D tile; got shape {}", ir::shape_str(rows->type.shape())));
  V zero = b.constant_int(0, DType::i64, L);
  V r = b.expand_dims(b.cast(rows, DType::i64, L), 1, L);
  V c = b.expand_dims(b.binary(OpKind::Add, b.cast(b.arange(0, block_shape[1], L), DType::i64, L), column, L), 0, L);
  V ptr = b.addptr(b.addptr(base, b.binary(OpKind::Mul, r, strides[0].value(), L), L),
                   b.binary(OpKind::Mul, c, strides[1].value(), L), L);
  V in_r = b.binary(OpKind::And, b.compare("ge", r, zero, L), b.compare("lt", r, shape[0].value(), L), L);
  V in_c = b.binary(OpKind::And, b.compare("ge", c, zero, L), b.compare("lt", c, shape[1].value(), L), L);
  std::vector<int64_t> out{rows->type.shape()[0], block_shape[1]};
  return {b.broadcast_to(ptr, out, L), b.broadcast_to(b.binary(OpKind::And, in_r, in_c, L), out, L)};
}
#undef B
#undef L
}  // namespace detail

// --- Random numbers -------------------------------------------------------------------------
namespace detail {
// Random bits -> [0, 1), as Triton's uint_to_uniform_float: read as a signed integer, fold
// negatives onto non-negatives (x < 0 ? -x - 1 : x), convert to f32 and scale by Triton's
// constant for the width (the largest folded value then gives 0.99999994, never 1.0).
V uniform(V r, const SourceLoc& loc) {
  auto& b = frontend::builder(loc);
  auto l = frontend::to_location(loc);
  const bool wide = r->type.dtype() == DType::u64;
  const DType s = wide ? DType::i64 : DType::i32;
  ir::Value* x = b.bitcast(r, s, l);
  ir::Value* zero = b.constant_int(0, s, l);
  ir::Value* one = b.constant_int(1, s, l);
  ir::Value* folded =
      b.select(b.compare("lt", x, zero, l), b.binary(ir::OpKind::Sub, b.unary(ir::OpKind::Neg, x, l), one, l), x, l);
  return b.binary(ir::OpKind::Mul, b.cast(folded, DType::f32, l),
                  b.constant(wide ? 1.0842020432385337e-19 : 4.6566127342e-10, DType::f32, l), l);
}

// Box-Muller on two uniforms, as Triton's pair_uniform_to_normal: u1 kept away from 0, then
// (sqrt(-2 log u1) cos(2 pi u2), sqrt(-2 log u1) sin(2 pi u2)).
std::array<V, 2> pair_to_normal(V u1, V u2, bool both, const SourceLoc& loc) {
  auto& b = frontend::builder(loc);
  auto l = frontend::to_location(loc);
  using ir::OpKind;
  u1 = b.binary(OpKind::Max, u1, b.constant(1.0e-7, DType::f32, l), l);
  ir::Value* radius =
      b.unary(OpKind::Sqrt, b.binary(OpKind::Mul, b.unary(OpKind::Log, u1, l), b.constant(-2.0, DType::f32, l), l), l);
  ir::Value* theta = b.binary(OpKind::Mul, u2, b.constant(6.283185307179586, DType::f32, l), l);
  return {b.binary(OpKind::Mul, radius, b.unary(OpKind::Cos, theta, l), l),
          both ? b.binary(OpKind::Mul, radius, b.unary(OpKind::Sin, theta, l), l) : nullptr};
}
}  // namespace detail

}  // namespace tiledsl
