#include "passes/Canonicalize.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "ir/Semantics.h"
#include "passes/Replacements.h"

namespace tiledsl::passes {

namespace {
using ir::Block;
using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

// A scalar constant as the interpreter holds it: integers (and booleans) in `i`, floats in `f`.
struct Const {
  bool flt = false;
  int64_t i = 0;
  double f = 0;
};

bool holds_float(Type t) { return !t.element().is_pointer() && is_float(t.dtype()); }
bool is_integer(Type t) { return !t.element().is_pointer() && is_int(t.dtype()); }
// Float dtypes whose arithmetic the GPU rounds as the interpreter does (once, to the dtype).
bool foldable_float(DType t) { return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64; }

// The constant `v` holds: a constant op, or a splat of one.
std::optional<Const> constant_of(const Value* v) {
  const Op* d = v->def;
  if (d && d->kind == OpKind::Splat) d = d->operands[0]->def;
  if (!d || d->kind != OpKind::Constant) return std::nullopt;
  const ir::Attr& a = d->attrs.at("value");
  Const c;
  c.flt = holds_float(d->result()->type);
  if (c.flt)
    c.f = std::holds_alternative<double>(a) ? std::get<double>(a) : static_cast<double>(std::get<int64_t>(a));
  else
    c.i = std::holds_alternative<int64_t>(a) ? std::get<int64_t>(a) : static_cast<int64_t>(std::get<double>(a));
  return c;
}

// The value of `op` applied to constant operands `c`, when it can be computed exactly as
// the interpreter would.
std::optional<Const> fold(const Op& op, const std::vector<Const>& c) {
  Type t = op.operands[0]->type;
  DType d = t.dtype(), rd = op.result()->type.dtype();
  bool flt = holds_float(t);
  if (flt && !foldable_float(d)) return std::nullopt;
  Const out;
  out.flt = holds_float(op.result()->type);
  if (ir::has_trait(op.kind, ir::kBinary)) {
    if (!flt) {
      out.i = ir::int_binary(op.kind, d, c[0].i, c[1].i);
      return out;
    }
    out.f = ir::float_binary(op.kind, d, c[0].f, c[1].f);
  } else {
    switch (op.kind) {
      case OpKind::Cmp: {
        const std::string& p = op.attr_str("pred");
        out.i = flt ? ir::compare_floats(p, c[0].f, c[1].f) : ir::compare_ints(p, d, c[0].i, c[1].i);
        return out;
      }
      case OpKind::Neg:
      case OpKind::Abs:
      case OpKind::Not:
        if (flt)
          out.f = op.kind == OpKind::Neg ? -c[0].f : std::fabs(c[0].f);
        else
          out.i = ir::int_unary(op.kind, d, c[0].i);
        break;
      case OpKind::Cast:
        if (out.flt && !foldable_float(rd)) return std::nullopt;
        if (flt && out.flt)
          out.f = (op.attrs.count("rounding") && op.attr_str("rounding") == "rtz") ? round_toward_zero(rd, c[0].f)
                                                                                   : round_to(rd, c[0].f);
        else if (flt) {
          out.i = ir::float_to_int(rd, c[0].f);
        } else if (out.flt) {
          out.f = ir::int_to_float(d, c[0].i, rd);
        } else {
          out.i = rd == DType::i1 ? c[0].i != 0 : wrap_int(rd, c[0].i);
        }
        break;
      default:
        return std::nullopt;
    }
  }
  if (out.flt && std::isnan(out.f)) return std::nullopt;  // NaN payloads differ between targets
  return out;
}

bool is_zero(const std::optional<Const>& c) { return c && !c->flt && c->i == 0; }
bool is_one(const std::optional<Const>& c) { return c && (c->flt ? c->f == 1.0 : c->i == 1); }

class Canonicalizer {
 public:
  bool run(ir::Function& f) {
    block(f.body);
    return replacements_.finish(f);
  }

 private:
  void block(Block& b) {
    std::vector<std::unique_ptr<Op>> kept;
    for (auto& owned : b.ops) {
      Op& op = *owned;
      replacements_.rewrite_operands(op);
      for (auto& r : op.regions) block(*r);
      fresh_.clear();
      Value* v = rewrite(op);
      for (auto& n : fresh_) {
        n->parent = &b;
        kept.push_back(std::move(n));
      }
      if (v) {
        replacements_.replace(std::move(owned), {v});
      } else {
        kept.push_back(std::move(owned));
      }
    }
    b.ops = std::move(kept);
  }

  Value* make(OpKind k, std::vector<Value*> operands, Type result, ir::Attrs attrs, const ir::Location& loc) {
    auto op = std::make_unique<Op>();
    op->kind = k;
    op->operands = std::move(operands);
    op->attrs = std::move(attrs);
    op->loc = loc;
    Value* v = op->add_result(result);
    fresh_.push_back(std::move(op));
    return v;
  }
  // A constant of `type` (a scalar, or a tile filled by a splat).
  Value* materialize(const Const& c, Type type, const ir::Location& loc) {
    Type scalar = type.element();
    ir::Attr value = c.flt ? ir::Attr{c.f} : ir::Attr{c.i};
    Value* s = make(OpKind::Constant, {}, scalar, {{"value", value}}, loc);
    return type.is_tile() ? make(OpKind::Splat, {s}, type, {}, loc) : s;
  }

  // The value that replaces `op`'s single result, or null to keep the op.
  Value* rewrite(Op& op) {
    if (op.results.size() != 1 || !op.regions.empty()) return nullptr;
    Type rt = op.result()->type;
    auto same_type = [&](Value* v) { return v->type == rt ? v : nullptr; };
    switch (op.kind) {
      case OpKind::Cast:
      case OpKind::Bitcast:
      case OpKind::Broadcast:
      case OpKind::Reshape:
        if (Value* v = same_type(op.operands[0])) return v;
        break;
      default:
        break;
    }
    switch (op.kind) {
      case OpKind::Broadcast:
      case OpKind::Reshape:
      case OpKind::ExpandDims: {
        const Op* d = op.operands[0]->def;
        if (d && d->kind == OpKind::Splat) return make(OpKind::Splat, {d->operands[0]}, rt, {}, op.loc);
        return nullptr;
      }
      case OpKind::Select: {
        auto c = constant_of(op.operands[0]);
        return c ? same_type(op.operands[c->i ? 1 : 2]) : nullptr;
      }
      default:
        break;
    }
    // Library functions are not folded (math2, as the unary float functions): their C-library
    // values differ from libdevice's in the last bits.
    bool foldable = (ir::has_trait(op.kind, ir::kBinary) && op.kind != OpKind::Math2) || op.kind == OpKind::Cmp ||
                    op.kind == OpKind::Neg || op.kind == OpKind::Not || op.kind == OpKind::Abs ||
                    op.kind == OpKind::Cast;
    if (!foldable) return nullptr;
    std::vector<Const> cs;
    for (Value* v : op.operands) {
      auto c = constant_of(v);
      if (!c) break;
      cs.push_back(*c);
    }
    if (cs.size() == op.operands.size()) {
      if (auto r = fold(op, cs)) return materialize(*r, rt, op.loc);
      return nullptr;
    }
    if (op.operands.size() != 2) return nullptr;
    Value *a = op.operands[0], *b = op.operands[1];
    auto ca = constant_of(a), cb = constant_of(b);
    bool integer = is_integer(rt);
    switch (op.kind) {
      case OpKind::Add:
        if (!integer) return nullptr;
        if (is_zero(cb)) return same_type(a);
        if (is_zero(ca)) return same_type(b);
        return nullptr;
      case OpKind::Sub:
        return integer && is_zero(cb) ? same_type(a) : nullptr;
      case OpKind::Mul:
        if (!integer && !holds_float(rt)) return nullptr;
        if (is_one(cb)) return same_type(a);
        if (is_one(ca)) return same_type(b);
        return nullptr;
      default:
        return nullptr;
    }
  }

  Replacements replacements_;
  std::vector<std::unique_ptr<Op>> fresh_;
};
}  // namespace

bool canonicalize(ir::Function& f) { return Canonicalizer().run(f); }

}  // namespace tiledsl::passes
