#include "passes/AxisInfo.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

namespace tiledsl::passes {

namespace {
constexpr int64_t kMaxDiv = int64_t{1} << 30;

int64_t pow2_divisor(int64_t v) {
  if (v == 0) return kMaxDiv;
  int64_t d = 1;
  while (d < kMaxDiv && v % (d * 2) == 0) d *= 2;
  return d;
}

size_t dims(const ir::Value* v) { return std::max<size_t>(1, v->type.shape().size()); }

// Values known non-negative before any inference: arguments the specialisation found
// non-negative and integers the kernel assumes (tl::assume) to be >= c or > c, c >= -1.
std::set<const ir::Value*> stated_non_negative(const ir::Function& f) {
  std::set<const ir::Value*> known;
  for (size_t i = 0; i < f.num_args() && i < f.arg_attrs.size(); ++i)
    if (f.arg_attrs[i].count("nonnegative")) known.insert(f.arg(i));
  auto constant = [](const ir::Value* v) -> std::optional<int64_t> {
    while (v->def && v->def->kind == ir::OpKind::Splat) v = v->def->operands[0];
    if (!v->def || v->def->kind != ir::OpKind::Constant) return std::nullopt;
    const auto& c = v->def->attrs.at("value");
    if (!std::holds_alternative<int64_t>(c)) return std::nullopt;
    return std::get<int64_t>(c);
  };
  ir::walk(f.body, [&](const ir::Op* op) {
    if (op->kind != ir::OpKind::Assume) return;
    const ir::Op* cmp = op->operands[0]->def;
    if (!cmp || cmp->kind != ir::OpKind::Cmp) return;
    const std::string& p = cmp->attr_str("pred");
    const ir::Value *x = cmp->operands[0], *y = cmp->operands[1];
    if (auto c = constant(y); c && ((p == "ge" && *c >= 0) || (p == "gt" && *c >= -1))) known.insert(x);
    if (auto c = constant(x); c && ((p == "le" && *c >= 0) || (p == "lt" && *c >= -1))) known.insert(y);
  });
  return known;
}

// Whether every element of `v` is known to be at least 0: unsigned values, `known` ones
// (stated_non_negative), program ids and grid sizes, non-negative constants and aranges, and
// what sums, products, quotients, minima, maxima, broadcasts and reshapes make of them, and
// remainders of them (by anything: truncated remainders take the dividend's sign); wrapping
// past 2^31 aside, as for Triton's offsets.
// `memo` holds the answers found so far, so that shared operands are looked at once (without it
// a chain of x = y + y doubles the work per level); past a depth of 512 (a guard for the stack)
// the answer is no.
bool non_negative(const std::set<const ir::Value*>& known, std::map<const ir::Value*, bool>& memo, const ir::Value* v,
                  int depth = 0) {
  using ir::OpKind;
  if (!is_int(v->type.dtype())) return false;
  if (is_unsigned(v->type.dtype()) || known.count(v)) return true;
  const ir::Op* op = v->def;
  if (!op || depth > 512) return false;
  if (auto it = memo.find(v); it != memo.end()) return it->second;
  auto all = [&] {
    return std::all_of(op->operands.begin(), op->operands.end(),
                       [&](const ir::Value* x) { return non_negative(known, memo, x, depth + 1); });
  };
  const bool answer = [&] {
    switch (op->kind) {
      case OpKind::ProgramId:
      case OpKind::NumPrograms:
        return true;
      case OpKind::Constant: {
        const auto& c = op->attrs.at("value");
        return std::holds_alternative<int64_t>(c) && std::get<int64_t>(c) >= 0;
      }
      case OpKind::Arange:
        return op->attr_int("start") >= 0;
      case OpKind::Splat:
      case OpKind::Broadcast:
      case OpKind::ExpandDims:
      case OpKind::Reshape:
      case OpKind::ConvertLayout:
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Div:
      case OpKind::Max:
      case OpKind::Min:
        return all();
      case OpKind::Rem:
        return non_negative(known, memo, op->operands[0], depth + 1);
      default:
        return false;
    }
  }();
  return memo[v] = answer;
}

AxisInfo unknown(const ir::Value* v) {
  size_t n = dims(v);
  return {std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 1)};
}

class Analysis {
 public:
  explicit Analysis(const ir::Function& f) : f_(f), non_negative_(stated_non_negative(f)) {}

  AxisInfoMap run() {
    for (size_t i = 0; i < f_.num_args(); ++i) {
      const ir::Value* a = f_.arg(i);
      AxisInfo info = unknown(a);
      if (i < f_.arg_attrs.size()) {
        auto it = f_.arg_attrs[i].find("divisibility");
        if (it != f_.arg_attrs[i].end() && std::holds_alternative<int64_t>(it->second))
          info.divisibility[0] = std::get<int64_t>(it->second);
      }
      map_[a] = info;
    }
    block(f_.body);
    return std::move(map_);
  }

 private:
  const AxisInfo& get(const ir::Value* v) {
    auto it = map_.find(v);
    if (it == map_.end()) it = map_.emplace(v, unknown(v)).first;
    return it->second;
  }

  void block(const ir::Block& b, bool args_known = false) {
    if (&b != &f_.body && !args_known)
      for (const auto& a : b.args) map_[a.get()] = unknown(a.get());
    for (const auto& op : b.ops) {
      if (op->kind == ir::OpKind::For) {
        loop(*op);
        continue;
      }
      for (const auto& r : op->regions) block(*r);
      for (const auto& r : op->results) map_[r.get()] = infer(*op, r.get());
    }
  }

  // What holds of every value two infos describe: the gcd, dimension by dimension.
  static AxisInfo meet(const AxisInfo& a, const AxisInfo& b) {
    AxisInfo m = a;
    for (size_t d = 0; d < m.contiguity.size() && d < b.contiguity.size(); ++d) {
      m.contiguity[d] = std::gcd(a.contiguity[d], b.contiguity[d]);
      m.divisibility[d] = std::gcd(a.divisibility[d], b.divisibility[d]);
      m.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
    }
    return m;
  }
  static bool same(const AxisInfo& a, const AxisInfo& b) {
    return a.contiguity == b.contiguity && a.divisibility == b.divisibility && a.constancy == b.constancy;
  }

  // A loop-carried value has what its initial value and every yielded value have in common: from
  // the initial values, the body is analysed again until what it yields adds nothing (the infos
  // only shrink, so this ends; after kRounds it gives up to unknown). So a pointer tile advanced
  // by a multiple of 16 each iteration keeps its contiguity and divisibility, and the loads
  // through it stay vectorised. The induction variable is a multiple of what lo and step share.
  void loop(const ir::Op& op) {
    constexpr int kRounds = 16;
    const ir::Block& body = *op.regions[0];
    const size_t n = op.results.size();
    std::vector<AxisInfo> carried;
    for (size_t i = 0; i < n; ++i) carried.push_back(get(op.operands[3 + i]));
    AxisInfo iv = unknown(body.args[0].get());
    iv.divisibility[0] = std::gcd(get(op.operands[0]).divisibility[0], get(op.operands[2]).divisibility[0]);
    bool settled = false;
    for (int round = 0; round < kRounds && !settled; ++round) {
      map_[body.args[0].get()] = iv;
      for (size_t i = 0; i < n; ++i) map_[body.args[i + 1].get()] = carried[i];
      block(body, /*args_known=*/true);
      const ir::Op* yield = body.ops.empty() ? nullptr : body.ops.back().get();
      settled = true;
      for (size_t i = 0; i < n; ++i) {
        AxisInfo next = yield && yield->kind == ir::OpKind::Yield && i < yield->operands.size()
                            ? meet(carried[i], get(yield->operands[i]))
                            : unknown(op.results[i].get());
        if (!same(next, carried[i])) {
          carried[i] = next;
          settled = false;
        }
      }
    }
    if (!settled) {
      for (size_t i = 0; i < n; ++i) carried[i] = unknown(op.results[i].get());
      map_[body.args[0].get()] = iv;
      for (size_t i = 0; i < n; ++i) map_[body.args[i + 1].get()] = carried[i];
      block(body, /*args_known=*/true);
    }
    for (size_t i = 0; i < n; ++i) map_[op.results[i].get()] = carried[i];
  }

  AxisInfo infer(const ir::Op& op, const ir::Value* result) {
    using ir::OpKind;
    const auto& shape = result->type.shape();
    AxisInfo out = unknown(result);
    auto operand = [&](size_t i) -> const AxisInfo& { return get(op.operands[i]); };
    auto full_constancy = [&] {
      for (size_t d = 0; d < shape.size(); ++d) out.constancy[d] = shape[d];
    };
    switch (op.kind) {
      case OpKind::Constant: {
        const auto& v = op.attrs.at("value");
        if (std::holds_alternative<int64_t>(v)) out.divisibility[0] = pow2_divisor(std::get<int64_t>(v));
        return out;
      }
      case OpKind::Arange:
        out.contiguity[0] = shape[0];
        out.divisibility[0] = pow2_divisor(op.attr_int("start"));
        return out;
      case OpKind::Splat:
        full_constancy();
        std::fill(out.divisibility.begin(), out.divisibility.end(), operand(0).divisibility[0]);
        return out;
      case OpKind::Broadcast: {
        const auto& in = op.operands[0]->type.shape();
        out = operand(0);
        for (size_t d = 0; d < shape.size(); ++d)
          if (in[d] == 1 && shape[d] != 1) {
            out.contiguity[d] = 1;
            out.constancy[d] = shape[d];
          }
        return out;
      }
      case OpKind::ExpandDims: {
        out = operand(0);
        auto at = static_cast<long>(op.attr_int("axis"));
        if (op.operands[0]->type.shape().empty()) return unknown(result);
        out.contiguity.insert(out.contiguity.begin() + at, 1);
        out.divisibility.insert(out.divisibility.begin() + at, 1);
        out.constancy.insert(out.constancy.begin() + at, 1);
        return out;
      }
      case OpKind::Reshape:
      case OpKind::ConvertLayout: {
        const auto& in = op.operands[0]->type.shape();
        if (in == shape) return operand(0);
        // Only inserting or removing unit dimensions keeps the facts of the others.
        std::vector<int64_t> a, b;
        for (int64_t x : in)
          if (x != 1) a.push_back(x);
        for (int64_t x : shape)
          if (x != 1) b.push_back(x);
        if (a != b) return out;
        const AxisInfo& src = operand(0);
        size_t j = 0;
        for (size_t d = 0; d < shape.size(); ++d) {
          if (shape[d] == 1) continue;
          while (in[j] == 1) ++j;
          out.contiguity[d] = src.contiguity[j];
          out.divisibility[d] = src.divisibility[j];
          out.constancy[d] = src.constancy[j];
          ++j;
        }
        return out;
      }
      case OpKind::MultipleOf:
        // The largest power of two dividing the hint: alignment is what divisibility is for (a
        // multiple of 12 bytes is 4-byte aligned, not 8).
        out = operand(0);
        for (size_t d = 0; d < out.divisibility.size(); ++d)
          out.divisibility[d] = pow2_divisor(op.attr_ints("values")[d]);
        return out;
      case OpKind::MaxContiguous:
        out = operand(0);
        for (size_t d = 0; d < out.contiguity.size(); ++d) out.contiguity[d] = op.attr_ints("values")[d];
        return out;
      case OpKind::Add:
      case OpKind::Sub:
      case OpKind::AddPtr: {
        const AxisInfo &a = operand(0), &b = operand(1);
        int64_t scale = op.kind == OpKind::AddPtr ? byte_size(op.operands[0]->type.pointee().dtype()) : 1;
        for (size_t d = 0; d < out.contiguity.size(); ++d) {
          int64_t ca = std::gcd(a.contiguity[d], b.constancy[d]);
          int64_t cb = op.kind == OpKind::Sub ? 1 : std::gcd(b.contiguity[d], a.constancy[d]);
          out.contiguity[d] = std::max(ca, cb);
          out.divisibility[d] = std::gcd(a.divisibility[d], std::min(kMaxDiv, b.divisibility[d] * scale));
          out.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
        }
        return out;
      }
      case OpKind::Mul: {
        const AxisInfo &a = operand(0), &b = operand(1);
        for (size_t d = 0; d < out.contiguity.size(); ++d) {
          // A run [k, k+1, ...] has k's divisibility only at its first element: multiplied, each
          // element is a run of its own, so the run counts as divisible by 1 (as Triton does).
          int64_t da = a.contiguity[d] > 1 ? 1 : a.divisibility[d], db = b.contiguity[d] > 1 ? 1 : b.divisibility[d];
          out.divisibility[d] = std::min(kMaxDiv, da * db);
          out.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
        }
        return out;
      }
      case OpKind::Rem: {
        // x % y with y the same along d: a run of x contiguous from a multiple of D (x's
        // divisibility), cut into pieces of gcd(run, D, y's divisibility), stays contiguous in
        // each piece, as y's multiples, where x % y wraps, fall only between pieces. Truncated
        // remainders of negative x run the other way, so x must be known non-negative
        // (Triton's tutorials wrap their row offsets so: (pid_m * BLOCK_M + arange) % M).
        const AxisInfo &a = operand(0), &b = operand(1);
        const bool plain = non_negative(non_negative_, non_negative_memo_, op.operands[0]);
        // Each piece then starts at a multiple of its length; x % y of a lone element is x - q y,
        // a multiple of what divides both.
        for (size_t d = 0; d < out.contiguity.size(); ++d) {
          const int64_t len = shape.empty() ? 1 : shape[d];
          if (plain && a.contiguity[d] > 1 && b.constancy[d] >= len) {
            out.contiguity[d] = std::gcd(a.contiguity[d], std::gcd(a.divisibility[d], b.divisibility[d]));
            out.divisibility[d] = out.contiguity[d];
          } else if (a.contiguity[d] == 1) {
            out.divisibility[d] = std::gcd(a.divisibility[d], b.divisibility[d]);
          }
          out.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
        }
        return out;
      }
      case OpKind::Cmp: {
        // A run of values contiguous from a multiple of k, compared with a multiple of k, is
        // entirely on one side: the mask is constant over it.
        const AxisInfo &a = operand(0), &b = operand(1);
        const std::string& p = op.attr_str("pred");
        for (size_t d = 0; d < out.contiguity.size(); ++d) {
          int64_t k = std::gcd(a.constancy[d], b.constancy[d]);
          if (p != "eq" && p != "ne") {
            k = std::max(
                k, std::gcd(std::min(a.contiguity[d], a.divisibility[d]), std::gcd(b.constancy[d], b.divisibility[d])));
            k = std::max(
                k, std::gcd(std::min(b.contiguity[d], b.divisibility[d]), std::gcd(a.constancy[d], a.divisibility[d])));
          }
          out.constancy[d] = k;
        }
        return out;
      }
      case OpKind::And:
      case OpKind::Or:
      case OpKind::Xor:
      case OpKind::Select:
      case OpKind::Max:
      case OpKind::Min:
        for (size_t d = 0; d < out.constancy.size(); ++d) {
          int64_t k = shape.empty() ? 1 : shape[d];
          for (size_t i = 0; i < op.operands.size(); ++i) k = std::gcd(k, operand(i).constancy[d]);
          out.constancy[d] = k;
        }
        return out;
      case OpKind::Not:
      case OpKind::Cast:
        if (!op.operands[0]->type.shape().empty()) out.constancy = operand(0).constancy;
        if (op.kind == OpKind::Cast && is_int(result->type.dtype()) && is_int(op.operands[0]->type.dtype()) &&
            bit_width(result->type.dtype()) >= bit_width(op.operands[0]->type.dtype()) &&
            out.contiguity.size() == operand(0).contiguity.size()) {
          out.contiguity = operand(0).contiguity;
          out.divisibility = operand(0).divisibility;
        }
        return out;
      default:
        return out;
    }
  }

  const ir::Function& f_;
  std::set<const ir::Value*> non_negative_;  // stated_non_negative(f_)
  std::map<const ir::Value*, bool> non_negative_memo_;
  AxisInfoMap map_;
};
}  // namespace

AxisInfoMap analyze_axes(const ir::Function& f) { return Analysis(f).run(); }

namespace {
void print_values(const ir::Block& b, const AxisInfoMap& info, unsigned& next, std::string& out) {
  auto line = [&](const std::string& name, const ir::Value* v) {
    auto it = info.find(v);
    if (it == info.end()) return;
    const AxisInfo& a = it->second;
    out += fmt::format("{}: contiguity = [{}], divisibility = [{}], constancy = [{}]\n", name,
                       fmt::join(a.contiguity, ", "), fmt::join(a.divisibility, ", "), fmt::join(a.constancy, ", "));
  };
  for (const auto& op : b.ops) {
    for (const auto& r : op->results) line(fmt::format("%{}", next++), r.get());
    for (const auto& region : op->regions) {
      for (const auto& a : region->args) line(fmt::format("%{}", next++), a.get());
      print_values(*region, info, next, out);
    }
  }
}
}  // namespace

std::string print_axis_info(const ir::Function& f) {
  AxisInfoMap info = analyze_axes(f);
  std::string out;
  for (size_t i = 0; i < f.num_args(); ++i) {
    const AxisInfo& a = info.at(f.arg(i));
    out += fmt::format("%{}: contiguity = [{}], divisibility = [{}], constancy = [{}]\n", f.arg_names[i],
                       fmt::join(a.contiguity, ", "), fmt::join(a.divisibility, ", "), fmt::join(a.constancy, ", "));
  }
  unsigned next = 0;
  print_values(f.body, info, next, out);
  return out;
}

int memory_fast_dim(const ir::Op& op, const AxisInfoMap& info) {
  const ir::Value* ptr = op.operands[0];
  const auto& shape = ptr->type.shape();
  if (shape.empty()) return 0;
  const size_t last = shape.size() - 1;
  const AxisInfo& p = info.at(ptr);
  if (p.contiguity[last] > 1) return static_cast<int>(last);
  size_t best = last;
  for (size_t d = 0; d < last; ++d)
    if (p.contiguity[d] > 1 && shape[d] > 1 && (best == last || p.contiguity[d] > p.contiguity[best])) best = d;
  return static_cast<int>(best);
}

int memory_vector_width(const ir::Op& op, const AxisInfoMap& info, int dim) {
  const ir::Value* ptr = op.operands[0];
  const auto& shape = ptr->type.shape();
  if (shape.empty()) return 1;
  size_t last = static_cast<size_t>(dim < 0 ? memory_fast_dim(op, info) : dim);
  int64_t bytes = byte_size(ptr->type.pointee().dtype());
  const AxisInfo& p = info.at(ptr);
  int64_t vec = std::max<int64_t>(1, 16 / bytes);
  vec = std::min({vec, shape[last], p.contiguity[last], std::max<int64_t>(1, p.divisibility[last] / bytes)});
  size_t mask_at = op.kind == ir::OpKind::Load ? 1 : 2;
  if (op.operands.size() > mask_at) vec = std::min(vec, info.at(op.operands[mask_at]).constancy[last]);
  int64_t v = 1;
  while (v * 2 <= vec) v *= 2;
  return static_cast<int>(v);
}

}  // namespace tiledsl::passes
