#include "passes/CSE.h"

#include <cstring>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "passes/Replacements.h"

namespace tiledsl::passes {

namespace {
using ir::Block;
using ir::Op;
using ir::Value;

// Attribute equality that tells -0.0 from 0.0 (two constants the printer and the GPU keep apart).
bool same_attr(const ir::Attr& a, const ir::Attr& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<double>(&a)) {
    double y = std::get<double>(b);
    return std::memcmp(x, &y, sizeof y) == 0;
  }
  return a == b;
}

bool same(const Op& a, const Op& b) {
  if (a.kind != b.kind || a.operands != b.operands || a.results.size() != b.results.size() ||
      a.attrs.size() != b.attrs.size())
    return false;
  for (size_t i = 0; i < a.results.size(); ++i)
    if (a.result(i)->type != b.result(i)->type) return false;
  for (auto ia = a.attrs.begin(), ib = b.attrs.begin(); ia != a.attrs.end(); ++ia, ++ib)
    if (ia->first != ib->first || !same_attr(ia->second, ib->second)) return false;
  return true;
}

size_t hash_of(const Op& op) {
  size_t h = static_cast<size_t>(op.kind);
  auto mix = [&](size_t x) { h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  for (const Value* v : op.operands) mix(std::hash<const Value*>()(v));
  // Attribute values count too: constants differ only in them (hashing names alone put every
  // constant of a type in one bucket, quadratic in their number).
  for (const auto& [k, v] : op.attrs) {
    mix(std::hash<std::string>()(k));
    mix(v.index());
    if (auto* i = std::get_if<int64_t>(&v))
      mix(std::hash<int64_t>()(*i));
    else if (auto* d = std::get_if<double>(&v)) {
      uint64_t bits;
      std::memcpy(&bits, d, sizeof bits);  // by bits, as same_attr compares: -0.0 and 0.0 differ
      mix(std::hash<uint64_t>()(bits));
    } else if (auto* s = std::get_if<std::string>(&v))
      mix(std::hash<std::string>()(*s));
    else
      for (int64_t x : std::get<std::vector<int64_t>>(v)) mix(std::hash<int64_t>()(x));
  }
  return h;
}

class Eliminator {
 public:
  bool run(ir::Function& f) {
    block(f.body);
    return replacements_.finish(f);
  }

 private:
  // Scopes are a stack: entries a block adds are removed when it ends.
  void block(Block& b) {
    std::vector<std::pair<size_t, Op*>> added;
    std::vector<std::unique_ptr<Op>> kept;
    for (auto& owned : b.ops) {
      Op& op = *owned;
      replacements_.rewrite_operands(op);
      for (auto& r : op.regions) block(*r);
      if (op.kind == ir::OpKind::For || op.kind == ir::OpKind::While) forget_across(op, added);
      if (!ir::has_trait(op.kind, ir::kPure) || !op.regions.empty() || op.results.empty()) {
        kept.push_back(std::move(owned));
        continue;
      }
      size_t h = hash_of(op);
      Op* earlier = nullptr;
      auto [lo, hi] = available_.equal_range(h);
      for (auto it = lo; it != hi && !earlier; ++it)
        if (same(*it->second, op)) earlier = it->second;
      if (!earlier) {
        available_.emplace(h, &op);
        added.emplace_back(h, &op);
        kept.push_back(std::move(owned));
        continue;
      }
      std::vector<Value*> with;
      for (size_t i = 0; i < op.results.size(); ++i) with.push_back(earlier->result(i));
      replacements_.replace(std::move(owned), with);
    }
    b.ops = std::move(kept);
    for (auto [h, op] : added) {
      auto [lo, hi] = available_.equal_range(h);
      for (auto it = lo; it != hi; ++it)
        if (it->second == op) {
          available_.erase(it);
          break;
        }
    }
  }

  // A tile this block computed before `loop` that the loop does not read is not reused after it:
  // the same value computed again after the loop keeps registers free during it (a kernel's
  // epilogue addresses the same rows as its prologue's loads, and would otherwise hold those
  // addresses through every iteration). Code generation's own CSE may merge them again.
  void forget_across(const Op& loop, const std::vector<std::pair<size_t, Op*>>& added) {
    std::unordered_set<const Value*> read(loop.operands.begin(), loop.operands.end());
    for (const auto& r : loop.regions)
      ir::walk(*r, [&](const Op* inner) { read.insert(inner->operands.begin(), inner->operands.end()); });
    for (auto [h, op] : added) {
      if (op->results.size() != 1 || !op->result()->type.is_tile() || read.count(op->result())) continue;
      auto [lo, hi] = available_.equal_range(h);
      for (auto it = lo; it != hi; ++it)
        if (it->second == op) {
          available_.erase(it);
          break;
        }
    }
  }

  std::unordered_multimap<size_t, Op*> available_;
  Replacements replacements_;
};
}  // namespace

bool cse(ir::Function& f) { return Eliminator().run(f); }

}  // namespace tiledsl::passes
