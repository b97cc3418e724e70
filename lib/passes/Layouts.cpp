#include "passes/Layouts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include "support/Error.h"

namespace tiledsl::passes {

namespace {
int log2i(int64_t x) {
  int n = 0;
  while ((int64_t{1} << n) < x) ++n;
  return n;
}

// Interning: one object per distinct layout, alive for the whole process (types refer to it).
template <class L>
const L* intern(std::unique_ptr<L> l) {
  static std::mutex mu;
  static auto* table = new std::map<std::string, std::unique_ptr<L>>;
  std::lock_guard lock(mu);
  auto [it, inserted] = table->try_emplace(l->str(), nullptr);
  if (inserted) it->second = std::move(l);
  return it->second.get();
}

// Splits `x` into digits of the given radices, taken in `order` (order[0] least significant).
std::vector<int64_t> digits(int64_t x, const std::vector<int64_t>& radix, const std::vector<int>& order) {
  std::vector<int64_t> out(radix.size(), 0);
  for (int d : order) {
    out[static_cast<size_t>(d)] = x % radix[static_cast<size_t>(d)];
    x /= radix[static_cast<size_t>(d)];
  }
  return out;
}
}  // namespace

// --- DistributedLayout ---------------------------------------------------------------------

Shape DistributedLayout::index(const Shape& shape, const Owner& o) const {
  Shape idx = reg_offset(shape, o.reg);
  auto terms = thread_terms();
  for (size_t d = 0; d < idx.size(); ++d) {
    const ThreadTerm& t = terms[d];
    int64_t lane = (o.lane >> t.lane_shift) & ((1 << t.lane_bits) - 1);
    int64_t warp = (o.warp >> t.warp_shift) & ((1 << t.warp_bits) - 1);
    idx[d] = (idx[d] + lane * t.lane_scale + warp * t.warp_scale) & (shape[d] - 1);
  }
  return idx;
}

Owner DistributedLayout::locate(const Shape& shape, const Shape& index) const {
  // Thread parts come from the highest digits first: the warp term, then the lane term, and
  // what is left is a register part; the lowest register with that part owns the element.
  auto terms = thread_terms();
  Owner o;
  Shape rest = index;
  for (size_t d = 0; d < index.size(); ++d) {
    const ThreadTerm& t = terms[d];
    if (t.warp_bits) {
      int64_t w = (rest[d] / t.warp_scale) & ((1 << t.warp_bits) - 1);
      o.warp |= static_cast<int>(w << t.warp_shift);
      rest[d] -= w * t.warp_scale;
    }
    if (t.lane_bits) {
      int64_t l = (rest[d] / t.lane_scale) & ((1 << t.lane_bits) - 1);
      o.lane |= static_cast<int>(l << t.lane_shift);
      rest[d] -= l * t.lane_scale;
    }
  }
  int64_t n = num_regs(shape);
  for (int64_t r = 0; r < n; ++r) {
    o.reg = r;
    if (this->index(shape, o) == index) return o;
  }
  TILEDSL_CHECK(false, "layout ", str(), " holds no element ", fmt::format("{}", index), " of shape ",
                fmt::format("{}", shape));
  return o;
}

// --- BlockedLayout -------------------------------------------------------------------------

const BlockedLayout* BlockedLayout::get(std::vector<int> spt, std::vector<int> tpw, std::vector<int> wpc,
                                        std::vector<int> order) {
  TILEDSL_CHECK(spt.size() == tpw.size() && tpw.size() == wpc.size() && wpc.size() == order.size(),
                "blocked layout: ranks differ");
  int lanes = 1;
  for (int t : tpw) lanes *= t;
  TILEDSL_CHECK(lanes == 32, "blocked layout: threads per warp must multiply to 32");
  return intern(std::make_unique<BlockedLayout>(std::move(spt), std::move(tpw), std::move(wpc), std::move(order)));
}

std::string BlockedLayout::str() const {
  return fmt::format("blocked<spt=[{}], tpw=[{}], wpc=[{}], order=[{}]>", fmt::join(spt_, ", "), fmt::join(tpw_, ", "),
                     fmt::join(wpc_, ", "), fmt::join(order_, ", "));
}

int BlockedLayout::num_warps() const {
  int n = 1;
  for (int w : wpc_) n *= w;
  return n;
}

Shape BlockedLayout::repeats(const Shape& shape) const {
  Shape r(spt_.size());
  for (size_t d = 0; d < r.size(); ++d) r[d] = std::max<int64_t>(1, shape[d] / (int64_t{spt_[d]} * tpw_[d] * wpc_[d]));
  return r;
}

int64_t BlockedLayout::num_regs(const Shape& shape) const {
  Shape rep = repeats(shape);
  int64_t n = 1;
  for (size_t d = 0; d < rep.size(); ++d) n *= rep[d] * spt_[d];
  return n;
}

Shape BlockedLayout::reg_offset(const Shape& shape, int64_t reg) const {
  // Registers run over the elements of one thread's block first, then over repetitions.
  std::vector<int64_t> spt(spt_.begin(), spt_.end());
  int64_t per_block = 1;
  for (int64_t s : spt) per_block *= s;
  auto e = digits(reg % per_block, spt, order_);
  auto r = digits(reg / per_block, repeats(shape), order_);
  Shape off(spt.size());
  for (size_t d = 0; d < off.size(); ++d) off[d] = r[d] * spt_[d] * tpw_[d] * wpc_[d] + e[d];
  return off;
}

std::vector<ThreadTerm> BlockedLayout::thread_terms() const {
  std::vector<ThreadTerm> terms(spt_.size());
  int lane_shift = 0, warp_shift = 0;
  for (int d : order_) {
    ThreadTerm& t = terms[static_cast<size_t>(d)];
    t.lane_shift = lane_shift;
    t.lane_bits = log2i(tpw_[static_cast<size_t>(d)]);
    t.lane_scale = spt_[static_cast<size_t>(d)];
    lane_shift += t.lane_bits;
    t.warp_shift = warp_shift;
    t.warp_bits = log2i(wpc_[static_cast<size_t>(d)]);
    t.warp_scale = int64_t{spt_[static_cast<size_t>(d)]} * tpw_[static_cast<size_t>(d)];
    warp_shift += t.warp_bits;
  }
  return terms;
}

// --- SliceLayout ---------------------------------------------------------------------------

const SliceLayout* SliceLayout::get(const DistributedLayout* parent, int dim) {
  TILEDSL_CHECK(dim >= 0 && dim < parent->rank(), "slice layout: dimension out of range");
  return intern(std::make_unique<SliceLayout>(parent, dim));
}

std::string SliceLayout::str() const { return fmt::format("slice<dim={}, {}>", dim_, parent_->str()); }

Shape SliceLayout::parent_shape(const Shape& shape) const {
  Shape p = shape;
  p.insert(p.begin() + dim_, 1);
  return p;
}

// The slice's registers are the parent's registers whose offset along `dim` is zero.
int64_t SliceLayout::num_regs(const Shape& shape) const {
  Shape ps = parent_shape(shape);
  int64_t n = 0, total = parent_->num_regs(ps);
  for (int64_t r = 0; r < total; ++r) n += parent_->reg_offset(ps, r)[static_cast<size_t>(dim_)] == 0;
  return n;
}

Shape SliceLayout::reg_offset(const Shape& shape, int64_t reg) const {
  Shape ps = parent_shape(shape);
  int64_t total = parent_->num_regs(ps);
  for (int64_t r = 0; r < total; ++r) {
    Shape off = parent_->reg_offset(ps, r);
    if (off[static_cast<size_t>(dim_)] != 0) continue;
    if (reg-- == 0) {
      off.erase(off.begin() + dim_);
      return off;
    }
  }
  TILEDSL_CHECK(false, "slice layout: register out of range");
  return {};
}

std::vector<ThreadTerm> SliceLayout::thread_terms() const {
  auto t = parent_->thread_terms();
  t.erase(t.begin() + dim_);
  return t;
}

// --- MmaLayout -----------------------------------------------------------------------------

const MmaLayout* MmaLayout::get(int warps_m, int warps_n) {
  TILEDSL_CHECK(warps_m >= 1 && warps_n >= 1 && (warps_m & (warps_m - 1)) == 0 && (warps_n & (warps_n - 1)) == 0,
                "mma layout: warps must be powers of two");
  return intern(std::make_unique<MmaLayout>(warps_m, warps_n));
}

std::string MmaLayout::str() const { return fmt::format("mma<16x8, wpc=[{}, {}]>", wm_, wn_); }

int64_t MmaLayout::num_regs(const Shape& shape) const {
  return 4 * std::max<int64_t>(1, blocks_m(shape)) * std::max<int64_t>(1, blocks_n(shape));
}

Shape MmaLayout::reg_offset(const Shape& shape, int64_t reg) const {
  int64_t i = reg % 4, block = reg / 4, bn = std::max<int64_t>(1, blocks_n(shape));
  return {(block / bn) * kRows * wm_ + (i / 2) * 8, (block % bn) * kCols * wn_ + (i % 2)};
}

std::vector<ThreadTerm> MmaLayout::thread_terms() const {
  ThreadTerm rows, cols;
  rows.lane_shift = 2;  // lane / 4: the row within the block's top or bottom half
  rows.lane_bits = 3;
  rows.lane_scale = 1;
  rows.warp_shift = 0;
  rows.warp_bits = log2i(wm_);
  rows.warp_scale = kRows;
  cols.lane_shift = 0;  // lane % 4: a pair of columns
  cols.lane_bits = 2;
  cols.lane_scale = 2;
  cols.warp_shift = log2i(wm_);
  cols.warp_bits = log2i(wn_);
  cols.warp_scale = kCols;
  return {rows, cols};
}

bool wgmma_takes(const ir::Op& dot, const MmaLayout& l) {
  const ir::Type a = dot.operands[0]->type, b = dot.operands[1]->type;
  const int k_step = mma_k(dot);
  const bool tf32 = k_step == 8 && dot.attr_str("input_precision") == "tf32";
  if (k_step != 16 && !tf32 && !is_fp8(a.dtype())) return false;
  const int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  return l.warps_n() == 1 && l.warps_m() % 4 == 0 && M % (int64_t{MmaLayout::kRows} * l.warps_m()) == 0 &&
         K % (128 / byte_size(a.dtype())) == 0 && N % 64 == 0;
}

namespace {
// How many operands in the kernel that holds `block` are `v`.
int uses(const ir::Block& block, const ir::Value* v) {
  const ir::Block* top = &block;
  while (top->parent && top->parent->parent) top = top->parent->parent;
  int n = 0;
  ir::walk(*top, [&](const ir::Op* op) {
    for (const ir::Value* u : op->operands) n += u == v;
  });
  return n;
}
// A tensor-core dot (its result in an mma layout), directly in a for loop's body.
bool mma_in_loop(const ir::Op& dot) {
  return dot.kind == ir::OpKind::Dot && dynamic_cast<const MmaLayout*>(dot.result()->type.layout()) && dot.parent &&
         dot.parent->parent && dot.parent->parent->kind == ir::OpKind::For;
}
// A dot wgmma takes, directly in a for loop's body.
bool wgmma_in_loop(const ir::Op& dot) { return mma_in_loop(dot) && wgmma_dot(dot); }
}  // namespace

bool wgmma_dot(const ir::Op& dot) {
  const auto* l = dot.kind == ir::OpKind::Dot ? dynamic_cast<const MmaLayout*>(dot.result()->type.layout()) : nullptr;
  return l && wgmma_takes(dot, *l);
}

int carried_slot(const ir::Op& op) {
  if (!op.parent || !op.parent->parent || op.parent->parent->kind != ir::OpKind::For || op.results.size() != 1)
    return -1;
  const ir::Op* yield = op.parent->terminator();
  if (!yield) return -1;
  for (size_t i = 0; i < yield->operands.size(); ++i)
    if (yield->operands[i] == op.result()) return static_cast<int>(i);
  return -1;
}

namespace {
// Whether `v` is the constant +0 (or integer 0), or a splat of it.
bool zero_constant(const ir::Value* v) {
  const ir::Op* d = v->def;
  if (d && d->kind == ir::OpKind::Splat) d = d->operands[0]->def;
  if (!d || d->kind != ir::OpKind::Constant) return false;
  const ir::Attr& a = d->attrs.at("value");
  return std::holds_alternative<double>(a) ? std::get<double>(a) == 0.0 && !std::signbit(std::get<double>(a))
                                           : std::holds_alternative<int64_t>(a) && std::get<int64_t>(a) == 0;
}
}  // namespace

bool zero_filled_load(const ir::Op* op) {
  if (!op || op->kind != ir::OpKind::Load || op->results.size() != 1 || !op->result()->type.is_tile()) return false;
  return op->operands.size() < 3 || zero_constant(op->operands[2]);
}
DotAccumulator dot_accumulator(const ir::Op& dot) {
  const ir::Value* c = dot.operands[2];
  const ir::Op* sel = c->def;
  if (!sel || sel->kind != ir::OpKind::Select || sel->parent != dot.parent || uses(*dot.parent, c) != 1)
    return {c, nullptr};
  const ir::Op* cond = sel->operands[0]->def;
  if (!cond || cond->kind != ir::OpKind::Splat || cond->operands[0]->type.is_tile()) return {c, nullptr};
  if (!zero_constant(sel->operands[1])) return {c, nullptr};
  return {sel->operands[2], cond->operands[0]};
}

bool wgmma_across_iterations(const ir::Op& dot) {
  if (!wgmma_in_loop(dot)) return false;
  const ir::Block& body = *dot.parent;
  const ir::Value* acc = dot_accumulator(dot).acc;
  const ir::Op* yield = body.terminator();
  if (acc->def || acc->owner != &body || acc->index == 0 || !yield) return false;
  const size_t slot = acc->index - 1;  // argument 0 is the induction variable
  if (slot >= yield->operands.size() || yield->operands[slot] != dot.result()) return false;
  // Reads of the result in if branches after the dot (an epilogue) wait there.
  int in_branches = 0;
  bool after = false;
  for (const auto& op : body.ops) {
    if (op.get() == &dot) after = true;
    if (!after || op->kind != ir::OpKind::If) continue;
    for (const auto& region : op->regions)
      ir::walk(*region, [&](const ir::Op* inner) {
        for (const ir::Value* u : inner->operands) in_branches += u == dot.result();
      });
  }
  return uses(body, acc) == 1 && uses(body, dot.result()) == 1 + in_branches;
}

const ir::Op* wgmma_deferred_to(const ir::Op& dot) {
  if (!wgmma_in_loop(dot) || wgmma_across_iterations(dot)) return nullptr;
  // Measured on the H200 (attention, run 57): deferring gains 6 % with head dim 128 (N 128) and
  // loses up to 18 % with head dim 64 at 64x64 blocks, whose shorter MMAs leave little to overlap.
  if (dot.operands[1]->type.shape()[1] < 128) return nullptr;
  const ir::Block& body = *dot.parent;
  const int slot = carried_slot(dot);
  if (slot < 0 || uses(body, dot.result()) != 1) return nullptr;
  const ir::Value* carried = body.args[static_cast<size_t>(slot) + 1].get();
  // The first top-level op that reads the carried value (a nested one counts as its parent).
  size_t first_use = body.ops.size();
  auto reads = [&](const ir::Op* op) {
    return std::find(op->operands.begin(), op->operands.end(), carried) != op->operands.end();
  };
  for (size_t k = 0; k < body.ops.size() && first_use == body.ops.size(); ++k) {
    const ir::Op* top = body.ops[k].get();
    bool read = reads(top);
    for (const auto& region : top->regions) ir::walk(*region, [&](const ir::Op* op) { read = read || reads(op); });
    if (read) first_use = k;
  }
  // An earlier dot that waits for its MMAs in the iteration, its result read in the body.
  for (size_t k = 0; k < first_use; ++k) {
    const ir::Op* other = body.ops[k].get();
    if (other == &dot) return nullptr;
    if (other->kind == ir::OpKind::Dot && wgmma_in_loop(*other) && !wgmma_across_iterations(*other) &&
        uses(body, other->result()) >= 1 && carried_slot(*other) < 0)
      return other;
  }
  return nullptr;
}

bool wgmma_wait_deferred(const ir::Op& dot) { return wgmma_deferred_to(dot) != nullptr; }

int dot_buffers(const ir::Op& dot, bool wgmma) {
  DirectCopies d = direct_copies(dot);
  if (wgmma && wgmma_across_iterations(dot)) return std::max(1, d.depth) + 2;
  return d.depth ? d.depth + 1 : 1;
}

DirectCopies direct_copies(const ir::Op& dot) {
  DirectCopies out;
  if (!mma_in_loop(dot)) return out;
  const ir::Block& body = *dot.parent;
  const ir::Op& loop = *body.parent;
  const ir::Op* yield = body.terminator();
  // The operand, a carried value, is the first of a chain of carried values that each take the
  // next one's value (prefetch-loads' tiles in flight), the last taking a load in the body; the
  // chain's initial values are loads before the loop. Each is used there and nowhere else.
  auto chain = [&](const ir::Value* v, std::vector<const ir::Op*>& firsts) -> const ir::Op* {
    while (!v->def && v->owner == &body && v->index != 0 && uses(body, v) == 1) {
      const size_t slot = v->index - 1;
      const ir::Op* first = loop.operands[3 + slot]->def;
      if (!zero_filled_load(first) || first->parent != loop.parent || uses(body, first->result()) != 1 ||
          first->result()->type != v->type)
        return nullptr;
      firsts.push_back(first);
      const ir::Value* y = yield->operands[slot];
      if (y->def) {
        const ir::Op* next = y->def;
        if (!zero_filled_load(next) || next->parent != &body || uses(body, y) != 1 || y->type != v->type)
          return nullptr;
        return next;
      }
      v = y;
    }
    return nullptr;
  };
  for (int x = 0; x < 2; ++x) {
    std::vector<const ir::Op*> firsts;
    const ir::Op* next = chain(dot.operands[static_cast<size_t>(x)], firsts);
    if (!next || (out.depth && out.depth != static_cast<int>(firsts.size()))) continue;
    out.next[x] = next;
    out.first[x] = std::move(firsts);
    out.depth = static_cast<int>(out.first[x].size());
  }
  return out;
}

bool wgmma_stage_once(const ir::Op& dot, int x) {
  if (!wgmma_in_loop(dot) || wgmma_across_iterations(dot) || (x == 0 && wgmma_a_in_registers(dot))) return false;
  const ir::Block* body = dot.parent;
  const ir::Value* v = dot.operands[static_cast<size_t>(x)];
  for (const ir::Block* b = v->def ? v->def->parent : v->owner; b; b = b->parent ? b->parent->parent : nullptr)
    if (b == body) return false;
  return true;
}

bool wgmma_a_in_registers(const ir::Op& dot) {
  return wgmma_dot(dot) && mma_k(dot) == 16 && dot.operands[0]->type.layout() == dot.result()->type.layout() &&
         !wgmma_across_iterations(dot);
}

DotSmem dot_smem(const ir::Op& dot, bool wgmma) {
  const Shape &a = dot.operands[0]->type.shape(), &b = dot.operands[1]->type.shape();
  const int64_t bytes = byte_size(dot.operands[0]->type.dtype());
  const int64_t size[2] = {wgmma && wgmma_a_in_registers(dot) ? 0 : a[0] * a[1] * bytes, b[0] * b[1] * bytes};
  const int count = dot_buffers(dot, wgmma);
  DotSmem out;
  for (int x = 0; x < 2; ++x) {
    const bool once = wgmma && wgmma_stage_once(dot, x);
    out.at[x] = out.bytes;
    out.stride[x] = once ? 0 : size[x];
    out.bytes += size[x] * (once ? 1 : count);
  }
  return out;
}

int mma_k(const ir::Op& dot) {
  const ir::Type a = dot.operands[0]->type, b = dot.operands[1]->type;
  if (!a.is_tile() || !b.is_tile() || a.element().is_pointer() || a.dtype() != b.dtype()) return 0;
  switch (a.dtype()) {
    case DType::f16:
    case DType::bf16:
      return 16;
    case DType::i8:
    case DType::f8e4m3:
    case DType::f8e5m2:
      return 32;
    case DType::f32:
      return dot.attrs.count("input_precision") && dot.attr_str("input_precision") != "ieee" ? 8 : 0;
    default:
      return 0;
  }
}

bool mma_b_kmajor(const ir::Op& dot) { return mma_k(dot) != 16; }

int64_t dot_operand_byte(int64_t row, int64_t col, int64_t rows, int64_t cols, bool panels, int bytes) {
  const int shift = __builtin_ctz(static_cast<unsigned>(bytes));
  int64_t at;
  if (panels) {  // 128 / bytes columns per panel
    const int cols_log2 = 7 - shift;
    at = (((col >> cols_log2) * rows + row) << 7) | ((col & ((int64_t{1} << cols_log2) - 1)) << shift);
  } else {
    at = (row * cols + col) << shift;
  }
  return at ^ (((at >> 7) & 7) << 4);
}

bool mma_operand_panels(int64_t row_bytes) { return row_bytes % 128 == 0; }

const MmaLayout* mma_layout_for(const ir::Op& dot, int num_warps, bool rows_first, bool wgmma, bool fp8_mma) {
  const int k_step = mma_k(dot);
  if (!k_step || (is_fp8(dot.operands[0]->type.dtype()) && !fp8_mma)) return nullptr;
  const ir::Type a = dot.operands[0]->type, b = dot.operands[1]->type;
  const int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  if (M % MmaLayout::kRows || N % MmaLayout::kCols || K % k_step) return nullptr;
  if (wgmma && wgmma_takes(dot, *MmaLayout::get(num_warps, 1))) return MmaLayout::get(num_warps, 1);
  // Warps go to whichever dimension has more blocks left per warp, rows first on ties (as the
  // row blocks are twice as tall); every warp must get a block of its own.
  int wm = 1, wn = 1;
  if (rows_first)
    while (wm < num_warps && M / (int64_t{MmaLayout::kRows} * wm) >= 2) wm *= 2;
  while (wm * wn < num_warps) {
    int64_t per_m = M / (int64_t{MmaLayout::kRows} * wm), per_n = N / (int64_t{MmaLayout::kCols} * wn);
    if (per_m >= per_n && per_m >= 2)
      wm *= 2;
    else if (per_n >= 2)
      wn *= 2;
    else
      return nullptr;  // a tile too small for this many warps
  }
  return MmaLayout::get(wm, wn);
}

// --- Helpers -------------------------------------------------------------------------------

const DistributedLayout* layout_of(ir::Type t) {
  const ir::Layout* l = t.layout();
  if (!l) return nullptr;
  const auto* d = dynamic_cast<const DistributedLayout*>(l);
  TILEDSL_CHECK(d, "unknown layout ", l->str());
  return d;
}

const BlockedLayout* default_blocked(const Shape& shape, int num_warps, int vec, int fast_dim) {
  size_t rank = shape.size();
  const size_t fast = fast_dim < 0 ? rank - 1 : static_cast<size_t>(fast_dim);
  std::vector<int> spt(rank, 1), tpw(rank, 1), wpc(rank, 1), order;
  order.push_back(static_cast<int>(fast));
  for (size_t i = rank; i-- > 0;)
    if (i != fast) order.push_back(static_cast<int>(i));
  spt[fast] = static_cast<int>(std::min<int64_t>(vec, shape[fast]));
  int64_t lanes = 32, warps = num_warps;
  for (int d : order) {  // lanes along the fastest dimensions first, then warps
    size_t u = static_cast<size_t>(d);
    tpw[u] = static_cast<int>(std::clamp<int64_t>(shape[u] / spt[u], 1, lanes));
    lanes /= tpw[u];
  }
  for (int d : order) {
    size_t u = static_cast<size_t>(d);
    wpc[u] = static_cast<int>(std::clamp<int64_t>(shape[u] / (spt[u] * tpw[u]), 1, warps));
    warps /= wpc[u];
  }
  tpw[static_cast<size_t>(order[0])] *= static_cast<int>(lanes);
  wpc[static_cast<size_t>(order.back())] *= static_cast<int>(warps);
  return BlockedLayout::get(spt, tpw, wpc, order);
}

std::optional<std::vector<int>> paired_dims(ir::OpKind kind, const Shape& in, const Shape& out) {
  std::vector<int> src_dim(out.size(), -1);
  if (kind == ir::OpKind::Broadcast) {  // a broadcast pairs every dimension
    for (size_t d = 0; d < out.size(); ++d) src_dim[d] = in[d] == 1 ? -1 : static_cast<int>(d);
    return src_dim;
  }
  if (kind == ir::OpKind::ConvertLayout && in != out) return std::nullopt;
  size_t j = 0;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    while (j < in.size() && in[j] == 1) ++j;
    if (j == in.size() || in[j] != out[d]) return std::nullopt;
    src_dim[d] = static_cast<int>(j++);
  }
  return src_dim;
}

int64_t conversion_row_pad(ir::Type src) {
  if (!dynamic_cast<const MmaLayout*>(layout_of(src)) || src.element().is_pointer()) return 0;
  const int64_t row_bytes = src.shape().back() * byte_size(src.dtype());
  return row_bytes % 128 == 0 ? MmaLayout::kCols : 0;
}

std::optional<std::vector<int64_t>> register_sources(ir::Type in, ir::Type out, const std::vector<int>& src_dim) {
  const DistributedLayout *li = layout_of(in), *lo = layout_of(out);
  if (!li || !lo) return std::nullopt;
  const Shape &is = in.shape(), &os = out.shape();
  auto ti = li->thread_terms(), to = lo->thread_terms();
  // Equal as functions of (lane, warp): a shift or scale of a term with no bits adds nothing.
  auto same = [](const ThreadTerm& a, const ThreadTerm& b) {
    const bool lanes = a.lane_bits == b.lane_bits &&
                       (a.lane_bits == 0 || (a.lane_shift == b.lane_shift && a.lane_scale == b.lane_scale));
    const bool warps = a.warp_bits == b.warp_bits &&
                       (a.warp_bits == 0 || (a.warp_shift == b.warp_shift && a.warp_scale == b.warp_scale));
    return lanes && warps;
  };
  // Source dimensions of extent one and unpaired result dimensions read index 0: no thread
  // bits may be spent on a paired dimension differently.
  for (size_t d = 0; d < os.size(); ++d)
    if (src_dim[d] >= 0 && !same(to[d], ti[static_cast<size_t>(src_dim[d])])) return std::nullopt;
  std::map<Shape, int64_t> by_offset;
  for (int64_t r = 0; r < li->num_regs(is); ++r) by_offset.try_emplace(wrap_offset(li->reg_offset(is, r), is), r);
  std::vector<int64_t> sources;
  for (int64_t r = 0; r < lo->num_regs(os); ++r) {
    Shape off = wrap_offset(lo->reg_offset(os, r), os);
    Shape want(is.size(), 0);
    for (size_t d = 0; d < os.size(); ++d)
      if (src_dim[d] >= 0) want[static_cast<size_t>(src_dim[d])] = off[d];
    auto it = by_offset.find(wrap_offset(want, is));
    if (it == by_offset.end()) return std::nullopt;
    sources.push_back(it->second);
  }
  return sources;
}

}  // namespace tiledsl::passes
