#include "passes/LayoutText.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <climits>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "ir/LayoutHooks.h"
#include "ir/Verifier.h"
#include "passes/Layouts.h"

namespace tiledsl::passes {

namespace {
// A layout that the classes' get() refuses (TILEDSL_CHECK) is interned here instead, so that
// the verifier can name the op holding it. get() takes every other one: a layout is in one of
// the two tables, never both, and equal layouts stay one object.
const DistributedLayout* unchecked(std::unique_ptr<DistributedLayout> l) {
  struct Table {
    std::mutex mu;
    std::unordered_map<std::string, std::unique_ptr<DistributedLayout>> by_text;
  };
  static auto* table = new Table;  // never destroyed: types refer to its layouts
  std::string text = l->str();
  std::lock_guard lock(table->mu);
  auto& slot = table->by_text[text];
  if (!slot) slot = std::move(l);
  return slot.get();
}

bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }
int log2i(int64_t x) {
  int n = 0;
  while ((int64_t{1} << n) < x) ++n;
  return n;
}

class LayoutReader {
 public:
  explicit LayoutReader(std::string_view t) : t_(t) {}

  // Throws Fail; `pos_` is then where the mistake is.
  struct Fail {
    std::string msg;
  };

  const DistributedLayout* layout(int depth = 0) {
    if (depth > static_cast<int>(ir::kMaxTileRank))
      fail(fmt::format("slices nest more than {} deep", ir::kMaxTileRank));
    std::string name = word();
    expect('<');
    const DistributedLayout* l = nullptr;
    if (name == "blocked") {
      key("spt");
      auto spt = list();
      expect(',');
      key("tpw");
      auto tpw = list();
      expect(',');
      key("wpc");
      auto wpc = list();
      expect(',');
      key("order");
      auto order = list();
      l = blocked(std::move(spt), std::move(tpw), std::move(wpc), std::move(order));
    } else if (name == "slice") {
      key("dim");
      int dim = number();
      expect(',');
      const DistributedLayout* parent = layout(depth + 1);
      if (dim >= 0 && dim < parent->rank())
        l = SliceLayout::get(parent, dim);
      else
        l = unchecked(std::make_unique<SliceLayout>(parent, dim));
    } else if (name == "mma") {
      skip_ws();
      if (t_.substr(pos_, 4) != "16x8") fail("an mma layout's block is 16x8");
      pos_ += 4;
      expect(',');
      key("wpc");
      auto wpc = list();
      if (wpc.size() != 2) fail("an mma layout has two warp counts (wpc=[M, N])");
      if (is_pow2(wpc[0]) && is_pow2(wpc[1]))
        l = MmaLayout::get(wpc[0], wpc[1]);
      else
        l = unchecked(std::make_unique<MmaLayout>(wpc[0], wpc[1]));
    } else {
      pos_ = start_;
      fail(fmt::format("unknown layout '{}' (blocked, slice or mma)", name));
    }
    expect('>');
    return l;
  }

  size_t pos() const { return pos_; }

 private:
  [[noreturn]] void fail(const std::string& msg) const { throw Fail{msg}; }
  void skip_ws() {
    while (pos_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip_ws();
    if (pos_ >= t_.size() || t_[pos_] != c) fail(fmt::format("expected '{}' in a layout", c));
    ++pos_;
  }
  std::string word() {
    skip_ws();
    start_ = pos_;
    while (pos_ < t_.size() && std::isalpha(static_cast<unsigned char>(t_[pos_]))) ++pos_;
    if (start_ == pos_) fail("expected a layout");
    return std::string(t_.substr(start_, pos_ - start_));
  }
  void key(std::string_view k) {
    size_t at = pos_;
    if (word() != k) {
      pos_ = at;
      skip_ws();
      fail(fmt::format("expected '{}=' in a layout", k));
    }
    expect('=');
  }
  int number() {
    skip_ws();
    size_t s = pos_;
    if (pos_ < t_.size() && t_[pos_] == '-') ++pos_;
    int64_t v = 0;
    bool digits = false;
    while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) {
      digits = true;
      v = v * 10 + (t_[pos_++] - '0');
      if (v > INT32_MAX) {
        pos_ = s;
        fail("a layout's numbers are 32-bit integers");
      }
    }
    if (!digits) {
      pos_ = s;
      fail("expected an integer in a layout");
    }
    return static_cast<int>(t_[s] == '-' ? -v : v);
  }
  std::vector<int> list() {
    expect('[');
    std::vector<int> v;
    skip_ws();
    if (pos_ < t_.size() && t_[pos_] == ']') fail("a layout's list is not empty");
    do {
      if (v.size() == ir::kMaxTileRank) fail(fmt::format("a layout has at most {} dimensions", ir::kMaxTileRank));
      v.push_back(number());
      skip_ws();
    } while (pos_ < t_.size() && t_[pos_] == ',' && ++pos_);
    expect(']');
    return v;
  }
  static const DistributedLayout* blocked(std::vector<int> spt, std::vector<int> tpw, std::vector<int> wpc,
                                          std::vector<int> order) {
    bool ok = spt.size() == tpw.size() && tpw.size() == wpc.size() && wpc.size() == order.size();
    // As get() checks it, without overflowing: a product of integers that ends at 32 never
    // passes 32 in magnitude on the way (unless a factor is 0, which ends it at 0).
    int64_t lanes = 1;
    for (int t : tpw) {
      lanes *= t;
      if (lanes > 32 || lanes < -32) ok = false;
      if (!ok) break;
    }
    if (ok && lanes == 32) return BlockedLayout::get(std::move(spt), std::move(tpw), std::move(wpc), std::move(order));
    return unchecked(std::make_unique<BlockedLayout>(std::move(spt), std::move(tpw), std::move(wpc), std::move(order)));
  }

  std::string_view t_;
  size_t pos_ = 0, start_ = 0;
};

// Why `l` cannot lay out a tile of `shape`, or "". Counts its warps into `num_warps` (0: not
// known yet).
std::string fit_problem(const DistributedLayout* l, const Shape& shape, int& num_warps) {
  const size_t rank = shape.size();
  int warps = 0;
  if (const auto* b = dynamic_cast<const BlockedLayout*>(l)) {
    const auto &spt = b->size_per_thread(), &tpw = b->threads_per_warp(), &wpc = b->warps_per_cta();
    const auto& order = b->order();
    if (spt.size() != rank || tpw.size() != rank || wpc.size() != rank || order.size() != rank)
      return fmt::format("{} has not one entry per dimension of a tile of rank {}", b->str(), rank);
    int lane_bits = 0, warp_bits = 0, spt_bits = 0;
    for (size_t d = 0; d < rank; ++d) {
      if (!is_pow2(spt[d]) || !is_pow2(tpw[d]) || !is_pow2(wpc[d]))
        return fmt::format("{}: sizes must be powers of two", b->str());
      lane_bits += log2i(tpw[d]);
      warp_bits += log2i(wpc[d]);
      spt_bits += log2i(spt[d]);
    }
    if (lane_bits != 5) return fmt::format("{}: threads per warp (tpw) must multiply to 32", b->str());
    if (spt_bits > log2i(kMaxSizePerThread))
      return fmt::format("{}: at most {} elements per thread (spt)", b->str(), kMaxSizePerThread);
    if (warp_bits > log2i(ir::kMaxNumWarps))
      return fmt::format("{}: at most {} warps (wpc)", b->str(), ir::kMaxNumWarps);
    std::vector<bool> seen(rank, false);
    for (int d : order) {
      if (d < 0 || static_cast<size_t>(d) >= rank || seen[static_cast<size_t>(d)])
        return fmt::format("{}: order must be a permutation of the dimensions", b->str());
      seen[static_cast<size_t>(d)] = true;
    }
    warps = 1 << warp_bits;
  } else if (const auto* s = dynamic_cast<const SliceLayout*>(l)) {
    if (s->dim() < 0 || static_cast<size_t>(s->dim()) > rank)
      return fmt::format("{}: dim {} is out of range for a parent of rank {}", s->str(), s->dim(), rank + 1);
    Shape parent = shape;
    parent.insert(parent.begin() + s->dim(), 1);
    if (auto p = fit_problem(s->parent(), parent, num_warps); !p.empty()) return p;
    return "";
  } else if (const auto* m = dynamic_cast<const MmaLayout*>(l)) {
    if (rank != 2) return fmt::format("{}: an mma layout needs a tile of rank 2, not {}", m->str(), rank);
    if (!is_pow2(m->warps_m()) || !is_pow2(m->warps_n()) ||
        log2i(m->warps_m()) + log2i(m->warps_n()) > log2i(ir::kMaxNumWarps))
      return fmt::format("{}: warps must be powers of two, at most {} in all", m->str(), ir::kMaxNumWarps);
    // Any rank-2 shape: a smaller one wraps (assign-layouts puts the accumulator's layout on
    // [1, N] and [M, 1] tiles that broadcast into it); only a dot needs whole blocks (below).
    warps = m->num_warps();
  } else {
    return fmt::format("unknown layout {}", l->str());
  }
  if (num_warps == 0) num_warps = warps;
  if (warps != num_warps) return fmt::format("{} has {} warps; the kernel has {}", l->str(), warps, num_warps);
  return "";
}

std::string type_problem(ir::Type t, int& num_warps) {
  if (!t.is_tile() || !t.layout()) return "";
  const auto* l = dynamic_cast<const DistributedLayout*>(t.layout());
  if (!l) return fmt::format("{}: unknown layout", t.str());
  if (auto p = fit_problem(l, t.shape(), num_warps); !p.empty()) return fmt::format("{}: {}", t.str(), p);
  return "";
}

[[maybe_unused]] const bool kInstalled = [] {
  ir::set_layout_hooks({parse_layout, layout_problem});
  return true;
}();
}  // namespace

bool has_layouts(const ir::Function& f) {
  bool any = false;
  ir::walk(f.body, [&](const ir::Op* op) {
    for (const auto& r : op->results) any = any || r->type.layout();
    for (const auto& region : op->regions)
      for (const auto& a : region->args) any = any || a->type.layout();
  });
  return any;
}

const ir::Layout* parse_layout(std::string_view text, size_t& used, std::string& error) {
  LayoutReader r(text);
  try {
    const ir::Layout* l = r.layout();
    used = r.pos();
    return l;
  } catch (const LayoutReader::Fail& f) {
    used = r.pos();
    error = f.msg;
    return nullptr;
  }
}

std::string layout_problem(const ir::Op& op, int& num_warps) {
  for (const auto& r : op.results)
    if (auto p = type_problem(r->type, num_warps); !p.empty()) return "result type " + p;
  for (const auto& region : op.regions)
    for (const auto& a : region->args)
      if (auto p = type_problem(a->type, num_warps); !p.empty()) return "region argument " + p;
  switch (op.kind) {
    case ir::OpKind::Reduce: {
      const ir::Layout* in = op.operands[0]->type.layout();
      const int axis = static_cast<int>(op.attr_int("axis"));
      for (const auto& r : op.results) {
        const auto* s = dynamic_cast<const SliceLayout*>(r->type.layout());
        if (r->type.is_tile() && (!s || s->parent() != in || s->dim() != axis))
          return fmt::format("result layout must be the slice of the operand's along axis {}; got {} for {}", axis,
                             r->type.str(), op.operands[0]->type.str());
      }
      return "";
    }
    case ir::OpKind::Dot: {
      const auto* m = dynamic_cast<const MmaLayout*>(op.result()->type.layout());
      if (!m) return "";
      const ir::Type a = op.operands[0]->type, b = op.operands[1]->type;
      const int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
      const int k_step = mma_k(op);
      if (!k_step || M % (int64_t{MmaLayout::kRows} * m->warps_m()) || N % (int64_t{MmaLayout::kCols} * m->warps_n()) ||
          K % k_step)
        return fmt::format(
            "an mma result needs f16, bf16, i8, fp8 or (tf32 or tf32x3) f32 operands and M, N, K multiples of 16 * "
            "warps_m, 8 * warps_n and the instruction's k (16; 32 for i8 and fp8, 8 for f32); got {} x {} -> {}",
            a.str(), b.str(), op.result()->type.str());
      return "";
    }
    default:
      return "";
  }
}

}  // namespace tiledsl::passes
