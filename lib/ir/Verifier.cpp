#include "ir/Verifier.h"

#include <fmt/format.h>

#include <unordered_set>

#include "tiledsl/error.h"

namespace tiledsl::ir {

namespace {
class Verifier {
 public:
  explicit Verifier(const Function& f) : f_(f) {}

  void run() {
    if (f_.arg_names.size() != f_.num_args()) throw Error("verifier: kernel argument names and arguments differ in number");
    for (auto& a : f_.body.args) {
      if (a->type.is_tile()) throw Error("verifier: kernel arguments must be scalars or pointers");
      visible_.insert(a.get());
    }
    block(f_.body, /*needs_yield=*/false);
  }

 private:
  [[noreturn]] void fail(const Op& op, const std::string& msg) const {
    throw Error(fmt::format("{}: verifier: in kernel '{}': {}: {}", op.loc.line ? op.loc.str() : "<unknown>", f_.name,
                            op.name(), msg));
  }
  void expect(bool c, const Op& op, const std::string& msg) const {
    if (!c) fail(op, msg);
  }

  void block(const Block& b, bool needs_yield) {
    std::vector<const Value*> added;
    for (auto& a : b.args) {
      visible_.insert(a.get());
      added.push_back(a.get());
    }
    for (size_t i = 0; i < b.ops.size(); ++i) {
      const Op& o = *b.ops[i];
      for (const Value* v : o.operands) expect(v && visible_.count(v), o, "uses a value not defined before it in scope");
      bool last = i + 1 == b.ops.size();
      if (o.kind == OpKind::Yield) expect(last && needs_yield, o, "yield must end a region");
      check(o);
      for (auto& r : o.regions) block(*r, true);
      for (auto& r : o.results) {
        visible_.insert(r.get());
        added.push_back(r.get());
      }
    }
    if (needs_yield && (b.ops.empty() || b.ops.back()->kind != OpKind::Yield)) {
      const Op* parent = b.parent;
      throw Error(fmt::format("verifier: in kernel '{}': a region of '{}' does not end with yield", f_.name,
                              parent ? parent->name() : "?"));
    }
    for (const Value* v : added) visible_.erase(v);
  }

  void counts(const Op& o, size_t min_ops, size_t max_ops, size_t results, size_t regions = 0) const {
    expect(o.operands.size() >= min_ops && o.operands.size() <= max_ops, o,
           fmt::format("has {} operands", o.operands.size()));
    expect(o.results.size() == results, o, fmt::format("has {} results, expected {}", o.results.size(), results));
    expect(o.regions.size() == regions, o, fmt::format("has {} regions, expected {}", o.regions.size(), regions));
  }

  static std::vector<Type> yields(const Block& b) {
    std::vector<Type> t;
    if (!b.ops.empty() && b.ops.back()->kind == OpKind::Yield)
      for (const Value* v : b.ops.back()->operands) t.push_back(v->type);
    return t;
  }

  void check(const Op& o) const {
    auto ty = [&](size_t i) { return o.operands[i]->type; };
    auto res = [&](size_t i) { return o.result(i)->type; };
    if (has_trait(o.kind, kBinary)) {
      counts(o, 2, 2, 1);
      expect(ty(0) == ty(1) && ty(0) == res(0), o, fmt::format("operand and result types differ: {}, {} -> {}",
                                                               ty(0).str(), ty(1).str(), res(0).str()));
      expect(!ty(0).element().is_pointer(), o, "operands must not be pointers");
      if (has_trait(o.kind, kIntOnly)) expect(is_int(ty(0).dtype()), o, "operands must be integers");
      return;
    }
    if (has_trait(o.kind, kFloatMath) || o.kind == OpKind::Neg || o.kind == OpKind::Not || o.kind == OpKind::Abs) {
      counts(o, 1, 1, 1);
      expect(ty(0) == res(0), o, "result type must equal the operand type");
      if (has_trait(o.kind, kFloatMath)) expect(is_float(ty(0).dtype()), o, "operand must be a float");
      return;
    }
    switch (o.kind) {
      case OpKind::Constant:
        counts(o, 0, 0, 1);
        expect(o.has_attr("value") && !res(0).is_tile() && !res(0).is_pointer(), o, "needs a value and a scalar type");
        break;
      case OpKind::ProgramId:
      case OpKind::NumPrograms:
        counts(o, 0, 0, 1);
        expect(o.attr_int("axis") >= 0 && o.attr_int("axis") < 3, o, "axis must be 0, 1 or 2");
        break;
      case OpKind::Arange:
        counts(o, 0, 0, 1);
        expect(res(0).shape() == std::vector<int64_t>{o.attr_int("end") - o.attr_int("start")}, o, "shape does not match the range");
        break;
      case OpKind::Splat:
        counts(o, 1, 1, 1);
        expect(!ty(0).is_tile() && res(0).is_tile() && res(0).element() == ty(0), o, "splats a scalar into a tile of it");
        break;
      case OpKind::Broadcast: {
        counts(o, 1, 1, 1);
        const auto &a = ty(0).shape(), &r = res(0).shape();
        bool ok = a.size() == r.size() && ty(0).element() == res(0).element();
        for (size_t i = 0; ok && i < a.size(); ++i) ok = a[i] == r[i] || a[i] == 1;
        expect(ok, o, fmt::format("cannot broadcast {} to {}", ty(0).str(), res(0).str()));
        break;
      }
      case OpKind::ExpandDims:
      case OpKind::Reshape:
        counts(o, 1, 1, 1);
        expect(ty(0).numel() == res(0).numel() && ty(0).element() == res(0).element(), o, "changes the element count or type");
        break;
      case OpKind::Trans: {
        counts(o, 1, 1, 1);
        const auto& perm = o.attr_ints("perm");
        expect(perm.size() == ty(0).shape().size(), o, "perm must name every dimension");
        for (size_t i = 0; i < perm.size(); ++i)
          expect(perm[i] >= 0 && static_cast<size_t>(perm[i]) < perm.size() &&
                     res(0).shape()[i] == ty(0).shape()[static_cast<size_t>(perm[i])], o, "result shape does not follow perm");
        break;
      }
      case OpKind::Cast:
      case OpKind::Bitcast:
        counts(o, 1, 1, 1);
        expect(ty(0).shape() == res(0).shape(), o, "changes the shape");
        if (o.kind == OpKind::Bitcast) expect(bit_width(ty(0).dtype()) == bit_width(res(0).dtype()), o, "changes the bit width");
        break;
      case OpKind::Cmp:
        counts(o, 2, 2, 1);
        expect(ty(0) == ty(1) && res(0).dtype() == DType::i1 && res(0).shape() == ty(0).shape(), o, "compares two values of one type into booleans");
        break;
      case OpKind::AddPtr:
        counts(o, 2, 2, 1);
        expect(ty(0).element().is_pointer() && res(0) == ty(0) && ty(1).shape() == ty(0).shape() && is_int(ty(1).dtype()), o,
               "adds integer offsets of the same shape to pointers");
        break;
      case OpKind::Fma:
        counts(o, 3, 3, 1);
        expect(ty(0) == ty(1) && ty(1) == ty(2) && res(0) == ty(0), o, "operands and result must have one type");
        break;
      case OpKind::Select:
        counts(o, 3, 3, 1);
        expect(ty(0).dtype() == DType::i1 && ty(1) == ty(2) && res(0) == ty(1) && ty(0).shape() == ty(1).shape(), o,
               "selects between two values of one type with a boolean of the same shape");
        break;
      case OpKind::Load:
        counts(o, 1, 3, 1);
        expect(ty(0).element().is_pointer() && res(0) == ty(0).with_element(ty(0).pointee()), o, "result must be the pointee of the pointers");
        if (o.operands.size() > 1) expect(ty(1) == ty(0).with_element(Type::scalar(DType::i1)), o, "mask must be booleans of the pointer shape");
        if (o.operands.size() > 2) expect(ty(2) == res(0), o, "other must have the result type");
        break;
      case OpKind::Store:
        counts(o, 2, 3, 0);
        expect(ty(0).element().is_pointer() && ty(1) == ty(0).with_element(ty(0).pointee()), o, "value must match the pointers");
        if (o.operands.size() > 2) expect(ty(2) == ty(0).with_element(Type::scalar(DType::i1)), o, "mask must be booleans of the pointer shape");
        break;
      case OpKind::AtomicRMW:
        counts(o, 2, 3, 1);
        expect(ty(0).element().is_pointer() && ty(1) == res(0) && res(0) == ty(0).with_element(ty(0).pointee()), o, "value must match the pointers");
        break;
      case OpKind::AtomicCAS:
        counts(o, 3, 3, 1);
        expect(ty(0).element().is_pointer() && ty(1) == res(0) && ty(2) == res(0), o, "values must match the pointers");
        break;
      case OpKind::Dot: {
        counts(o, 3, 3, 1);
        const auto &a = ty(0).shape(), &b = ty(1).shape();
        expect(a.size() == 2 && b.size() == 2 && a[1] == b[0] && ty(2) == res(0) &&
                   res(0).shape() == std::vector<int64_t>{a[0], b[1]}, o, "shapes must be [M, K] x [K, N] + [M, N]");
        break;
      }
      case OpKind::Reduce:
      case OpKind::Scan: {
        size_t n = o.operands.size();
        counts(o, 1, 64, n, 1);
        expect(o.regions[0]->args.size() == 2 * n, o, "combine region needs two arguments per input");
        auto y = yields(*o.regions[0]);
        expect(y.size() == n, o, "combine region must yield one value per input");
        for (size_t i = 0; i < n && i < y.size(); ++i) expect(y[i] == ty(i).element(), o, "combine yields the element type");
        break;
      }
      case OpKind::Philox:
        counts(o, 2, 2, 4);
        break;
      case OpKind::For: {
        expect(o.operands.size() >= 3 && o.regions.size() == 1, o, "needs bounds, a step and one region");
        size_t n = o.operands.size() - 3;
        expect(o.results.size() == n && o.regions[0]->args.size() == n + 1, o, "carries one value per init");
        auto y = yields(*o.regions[0]);
        for (size_t i = 0; i < n; ++i)
          expect(res(i) == ty(3 + i) && o.regions[0]->args[i + 1]->type == ty(3 + i) && i < y.size() && y[i] == ty(3 + i), o,
                 "loop-carried types must agree");
        break;
      }
      case OpKind::If: {
        counts(o, 1, 1, o.results.size(), 2);
        for (auto& r : o.regions) {
          auto y = yields(*r);
          expect(y.size() == o.results.size(), o, "each branch yields one value per result");
          for (size_t i = 0; i < y.size(); ++i) expect(y[i] == res(i), o, "branch yields must have the result types");
        }
        break;
      }
      case OpKind::MultipleOf:
      case OpKind::MaxContiguous:
        counts(o, 1, 1, 1);
        expect(res(0) == ty(0), o, "hints keep the type");
        break;
      case OpKind::Print:
        counts(o, 0, 64, 0);
        break;
      case OpKind::Assert:
        counts(o, 1, 1, 0);
        break;
      case OpKind::Yield:
        expect(o.results.empty(), o, "has no results");
        break;
      default:
        break;
    }
  }

  const Function& f_;
  std::unordered_set<const Value*> visible_;
};
}  // namespace

void verify(const Function& f) { Verifier(f).run(); }

}  // namespace tiledsl::ir
