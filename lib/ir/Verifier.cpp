#include "ir/Verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "ir/LayoutHooks.h"
#include "ir/Printer.h"
#include "ir/Semantics.h"
#include "tiledsl/error.h"

namespace tiledsl::ir {

namespace {
bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

// Why `t` is not a well-formed value type, or "" when it is.
std::string type_problem(Type t) {
  if (t.is_null()) return "a value has no type";
  if (t.is_scalar()) return "";
  if (t.is_pointer()) {
    Type p = t.pointee();
    return p.is_scalar() ? "" : fmt::format("{}: a pointer must point to a scalar type", t.str());
  }
  Type e = t.element();
  if (e.is_tile() || (e.is_pointer() && !e.pointee().is_scalar()))
    return fmt::format("{}: a tile's elements must be scalars or pointers to scalars", t.str());
  const auto& shape = t.shape();
  if (shape.size() > kMaxTileRank) return fmt::format("{}: tiles have at most {} dimensions", t.str(), kMaxTileRank);
  for (int64_t d : shape)
    if (!is_pow2(d) || d > kMaxTileElements)
      return fmt::format("{}: dimension {} is not a power of two from 1 to 2^20", t.str(), d);
  if (t.numel() > kMaxTileElements)
    return fmt::format("{}: {} elements; a tile holds at most 2^20 ({})", t.str(), t.numel(), kMaxTileElements);
  return "";
}

bool is_ptr(Type t) { return t.element().is_pointer(); }
bool is_number(Type t) { return !is_ptr(t); }
bool is_bool(Type t) { return is_number(t) && t.dtype() == DType::i1; }
bool is_int_scalar(Type t) { return !t.is_tile() && is_number(t) && is_int(t.dtype()) && t.dtype() != DType::i1; }
// Same shape and element type; the layouts may differ.
bool same_tile(Type a, Type b) { return a.shape() == b.shape() && a.element() == b.element(); }

const char* kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::Int:
      return "an integer";
    case AttrKind::Float:
      return "a float";
    case AttrKind::Num:
      return "a number";
    case AttrKind::Str:
      return "a string";
    case AttrKind::Ints:
      return "a list of integers";
    case AttrKind::Enum:
      return "one of";
  }
  return "";
}

bool attr_has_kind(const Attr& a, const AttrSpec& s) {
  switch (s.kind) {
    case AttrKind::Int:
      return std::holds_alternative<int64_t>(a);
    case AttrKind::Float:
      return std::holds_alternative<double>(a);
    case AttrKind::Num:
      return std::holds_alternative<int64_t>(a) || std::holds_alternative<double>(a);
    case AttrKind::Str:
      return std::holds_alternative<std::string>(a);
    case AttrKind::Ints:
      return std::holds_alternative<std::vector<int64_t>>(a);
    case AttrKind::Enum: {
      auto* str = std::get_if<std::string>(&a);
      return str && std::find(s.choices.begin(), s.choices.end(), *str) != s.choices.end();
    }
  }
  return false;
}

class Verifier {
 public:
  Verifier(const Function& f, int num_warps) : f_(f), num_warps_(num_warps) {}

  void run() {
    if (!is_identifier(f_.name))
      fail_kernel(fmt::format("kernel name '{}' is not an identifier ([A-Za-z_][A-Za-z0-9_]*, at most 200 characters)",
                              f_.name));
    if (f_.arg_names.size() != f_.num_args()) fail_kernel("kernel argument names and arguments differ in number");
    if (f_.arg_attrs.size() > f_.num_args()) fail_kernel("more argument attribute lists than arguments");
    std::unordered_set<std::string> names;
    for (size_t i = 0; i < f_.num_args(); ++i) {
      const std::string& n = f_.arg_names[i];
      if (!is_identifier(n)) fail_kernel(fmt::format("parameter name '{}' is not an identifier", n));
      if (!names.insert(n).second) fail_kernel(fmt::format("two parameters are named '{}'", n));
      Type t = f_.arg(i)->type;
      if (t.is_tile()) fail_kernel(fmt::format("parameter '{}': kernel arguments must be scalars or pointers", n));
      if (auto p = type_problem(t); !p.empty()) fail_kernel(fmt::format("parameter '{}': {}", n, p));
      if (i < f_.arg_attrs.size()) arg_attrs(n, t, f_.arg_attrs[i]);
      visible_.insert(f_.arg(i));
    }
    for (const auto& [k, v] : f_.attrs) {
      if (!is_identifier(k)) fail_kernel(fmt::format("kernel attribute name '{}' is not an identifier", k));
      if (!std::holds_alternative<int64_t>(v) && !std::holds_alternative<double>(v))
        fail_kernel(fmt::format("kernel attribute '{}' must be a number", k));
    }
    if (auto it = f_.attrs.find("shared_bytes"); it != f_.attrs.end())
      if (!std::holds_alternative<int64_t>(it->second) || std::get<int64_t>(it->second) < 0)
        fail_kernel("shared_bytes must be a non-negative integer");
    walk(f_.body, [&](const Op* op) {
      for (const auto& r : op->results) layouts_ = layouts_ || r->type.layout();
      for (const auto& region : op->regions)
        for (const auto& a : region->args) layouts_ = layouts_ || a->type.layout();
    });
    block(f_.body, nullptr, 0);
  }

 private:
  [[noreturn]] void fail_kernel(const std::string& msg) const {
    throw Error(fmt::format("verifier: in kernel '{}': {}", f_.name, msg));
  }
  [[noreturn]] void fail(const Op& op, const std::string& msg) const {
    throw Error(fmt::format("{}: verifier: in kernel '{}': {}: {}", op.loc.line ? op.loc.str() : "<unknown>", f_.name,
                            op.name(), msg));
  }
  void expect(bool c, const Op& op, const std::string& msg) const {
    if (!c) fail(op, msg);
  }

  void arg_attrs(const std::string& n, Type t, const Attrs& attrs) const {
    for (const auto& [k, v] : attrs) {
      const int64_t* i = std::get_if<int64_t>(&v);
      if (k == "divisibility") {
        if (!i || !is_pow2(*i) || *i > (int64_t{1} << 30))
          fail_kernel(fmt::format("parameter '{}': divisibility must be a power of two from 1 to 2^30", n));
      } else if (k == "equal_to" || k == "nonnegative") {
        if (!i || *i != 1 || t.is_pointer()) fail_kernel(fmt::format("parameter '{}': {} is 1, on integers", n, k));
      } else {
        fail_kernel(fmt::format(
            "parameter '{}': unknown attribute '{}' (divisibility, equal_to and nonnegative are known)", n, k));
      }
    }
  }

  // `parent` is null for the kernel's body. Every region ends with yield.
  void block(const Block& b, const Op* parent, int depth) {
    if (depth > kMaxRegionDepth) fail(*parent, fmt::format("regions nest more than {} deep", kMaxRegionDepth));
    std::vector<const Value*> added;
    for (auto& a : b.args) {
      if (auto p = type_problem(a->type); !p.empty()) fail(*parent, "region argument: " + p);
      visible_.insert(a.get());
      added.push_back(a.get());
    }
    for (size_t i = 0; i < b.ops.size(); ++i) {
      const Op& o = *b.ops[i];
      for (const Value* v : o.operands) {
        expect(v, o, "has a missing operand");
        expect(v->def || v->owner, o,
               "uses a tile from a trace that has ended (a tl::Tile kept outside the kernel "
               "body that made it)");
        expect(visible_.count(v), o, "uses a value not defined before it in scope");
      }
      bool last = i + 1 == b.ops.size();
      if (o.kind == OpKind::Yield) expect(last && parent, o, "yield must end a region");
      check(o);
      check_layouts(o);
      for (auto& r : o.regions) block(*r, &o, depth + 1);
      for (auto& r : o.results) {
        visible_.insert(r.get());
        added.push_back(r.get());
      }
    }
    if (parent && (b.ops.empty() || b.ops.back()->kind != OpKind::Yield))
      fail(*parent, "a region does not end with yield");
    for (const Value* v : added) visible_.erase(v);
  }

  static std::vector<Type> yields(const Block& b) {
    std::vector<Type> t;
    if (!b.ops.empty() && b.ops.back()->kind == OpKind::Yield)
      for (const Value* v : b.ops.back()->operands) t.push_back(v->type);
    return t;
  }

  // What the op table says: counts and attributes.
  void check_schema(const Op& o) const {
    const OpSchema& s = schema(o.kind);
    expect(s.operands.allows(o.operands.size()), o, fmt::format("has {} operands", o.operands.size()));
    expect(s.results.allows(o.results.size()), o, fmt::format("has {} results", o.results.size()));
    expect(o.regions.size() == static_cast<size_t>(s.regions), o,
           fmt::format("has {} regions, expected {}", o.regions.size(), s.regions));
    for (const AttrSpec& a : s.attrs) {
      auto it = o.attrs.find(a.name);
      if (it == o.attrs.end()) {
        expect(a.optional, o, fmt::format("needs the attribute '{}'", a.name));
        continue;
      }
      if (!attr_has_kind(it->second, a)) {
        std::string want = kind_name(a.kind);
        if (a.kind == AttrKind::Enum) want += fmt::format(" \"{}\"", fmt::join(a.choices, "\", \""));
        fail(o, fmt::format("attribute '{}' must be {}, got {}", a.name, want, attr_str(it->second)));
      }
    }
    for (const auto& entry : o.attrs) {
      const std::string& name = entry.first;
      bool declared = std::any_of(s.attrs.begin(), s.attrs.end(), [&](const AttrSpec& a) { return a.name == name; });
      expect(declared, o, fmt::format("has no attribute '{}'", name));
    }
    for (const auto& r : o.results)
      if (auto p = type_problem(r->type); !p.empty()) fail(o, "result type " + p);
  }

  void check(const Op& o) const {
    check_schema(o);
    auto ty = [&](size_t i) { return o.operands[i]->type; };
    auto res = [&](size_t i) { return o.result(i)->type; };
    auto types_str = [&] {
      std::vector<std::string> in, out;
      for (const Value* v : o.operands) in.push_back(v->type.str());
      for (const auto& r : o.results) out.push_back(r->type.str());
      return fmt::format("({}) -> ({})", fmt::join(in, ", "), fmt::join(out, ", "));
    };
    auto rule = [&](bool c, const char* what) {
      if (!c) fail(o, fmt::format("{}; got {}", what, types_str()));
    };
    auto no_fp8 = [&](Type t) { rule(!is_fp8(t.dtype()) || is_ptr(t), "fp8 values need a cast before arithmetic"); };
    if (has_trait(o.kind, kBinary)) {
      rule(ty(0) == ty(1) && ty(0) == res(0) && is_number(ty(0)), "operands and result must be numbers of one type");
      no_fp8(ty(0));
      if (has_trait(o.kind, kIntOnly))
        rule(is_int(ty(0).dtype()), "operands must be integers or booleans");
      else if (o.kind == OpKind::Math2)
        rule(is_float(ty(0).dtype()), "operands must be floats");
      else if (o.kind != OpKind::Max && o.kind != OpKind::Min)
        rule(ty(0).dtype() != DType::i1, "arithmetic on booleans is done in i32 (cast them first)");
      return;
    }
    if (has_trait(o.kind, kUnary)) {
      rule(ty(0) == res(0) && is_number(ty(0)), "operand and result must be numbers of one type");
      no_fp8(ty(0));
      if (has_trait(o.kind, kFloatMath)) rule(is_float(ty(0).dtype()), "operand must be a float");
      if (has_trait(o.kind, kIntOnly)) rule(is_int(ty(0).dtype()), "operand must be an integer or a boolean");
      return;
    }
    switch (o.kind) {
      case OpKind::Constant:
        constant(o);
        break;
      case OpKind::ProgramId:
      case OpKind::NumPrograms:
        expect(o.attr_int("axis") >= 0 && o.attr_int("axis") < 3, o, "axis must be 0, 1 or 2");
        rule(res(0) == Type::scalar(DType::i32), "result must be i32");
        break;
      case OpKind::Arange: {
        int64_t start = o.attr_int("start"), end = o.attr_int("end");
        expect(start >= INT32_MIN && end <= INT32_MAX && start < end, o,
               fmt::format("range [{}, {}) must be non-empty with bounds in i32", start, end));
        rule(res(0).is_tile() && res(0).shape() == std::vector<int64_t>{end - start} &&
                 res(0).element() == Type::scalar(DType::i32),
             "result must be a 1-D i32 tile of end - start elements");
        break;
      }
      case OpKind::Splat:
        rule(!ty(0).is_tile() && res(0).is_tile() && res(0).element() == ty(0), "splats a scalar into a tile of it");
        break;
      case OpKind::Broadcast: {
        rule(ty(0).is_tile() && res(0).is_tile(), "broadcasts a tile");
        const auto &a = ty(0).shape(), &r = res(0).shape();
        bool ok = a.size() == r.size() && ty(0).element() == res(0).element();
        for (size_t i = 0; ok && i < a.size(); ++i) ok = a[i] == r[i] || a[i] == 1;
        rule(ok, "result must have the operand's rank and element, its dimensions equal or grown from 1");
        break;
      }
      case OpKind::ExpandDims: {
        rule(ty(0).is_tile() && res(0).is_tile() && ty(0).element() == res(0).element(), "expands a tile");
        int64_t axis = o.attr_int("axis");
        auto shape = ty(0).shape();
        expect(axis >= 0 && static_cast<size_t>(axis) <= shape.size(), o,
               fmt::format("axis {} is out of range for rank {}", axis, shape.size()));
        shape.insert(shape.begin() + axis, 1);
        rule(res(0).shape() == shape, "result must be the operand's shape with a 1 inserted at axis");
        break;
      }
      case OpKind::Reshape:
        rule(ty(0).is_tile() && res(0).is_tile() && ty(0).numel() == res(0).numel() &&
                 ty(0).element() == res(0).element(),
             "reshapes a tile to as many elements of the same type");
        break;
      case OpKind::Trans: {
        rule(ty(0).is_tile() && res(0).is_tile() && ty(0).element() == res(0).element(), "transposes a tile");
        const auto& perm = o.attr_ints("perm");
        const auto &in = ty(0).shape(), &out = res(0).shape();
        std::vector<bool> seen(in.size(), false);
        bool ok = perm.size() == in.size() && out.size() == in.size();
        for (size_t i = 0; ok && i < perm.size(); ++i) {
          ok = perm[i] >= 0 && static_cast<size_t>(perm[i]) < in.size() && !seen[static_cast<size_t>(perm[i])];
          if (ok) {
            seen[static_cast<size_t>(perm[i])] = true;
            ok = out[i] == in[static_cast<size_t>(perm[i])];
          }
        }
        expect(ok, o,
               fmt::format("perm {} must be a permutation of the operand's dimensions that gives the result "
                           "shape; got {}",
                           shape_str(perm), types_str()));
        break;
      }
      case OpKind::InlineAsm: {
        const int64_t pack = o.attr_int("pack");
        auto packs = [&](Type t) {
          return pack == 1 ||
                 (t.dtype() != DType::i1 && bit_width(t.dtype()) * pack >= 16 && bit_width(t.dtype()) * pack <= 64);
        };
        bool ok = pack == 1 || pack == 2 || pack == 4;
        for (size_t i = 0; ok && i < o.results.size(); ++i)
          ok = is_number(res(i)) && packs(res(i)) && res(i).shape() == res(0).shape() &&
               res(i).layout() == res(0).layout();
        for (size_t i = 0; ok && i < o.operands.size(); ++i)
          ok = is_number(ty(i)) && packs(ty(i)) && ty(i).shape() == res(0).shape() && ty(i).layout() == res(0).layout();
        rule(ok,
             "runs on numbers of the results' shape and layout, pack 1, 2 or 4 elements to a 16- to 64-bit register");
        auto [outs, ins] = constraint_counts(o.attr_str("constraints"));
        rule(outs == static_cast<int>(o.results.size()) && ins == static_cast<int>(o.operands.size()),
             "its constraints name one output per result and one input per operand");
        break;
      }
      case OpKind::Gather: {
        const int64_t axis = o.attr_int("axis");
        bool ok = ty(0).is_tile() && ty(1).is_tile() && res(0).is_tile() && is_number(ty(0)) && is_number(ty(1)) &&
                  is_int(ty(1).dtype()) && ty(1).dtype() != DType::i1 && res(0).element() == ty(0).element() &&
                  res(0).shape() == ty(1).shape() && ty(0).shape().size() == ty(1).shape().size() && axis >= 0 &&
                  axis < static_cast<int64_t>(ty(0).shape().size());
        for (size_t d = 0; ok && d < ty(0).shape().size(); ++d)
          ok = static_cast<int64_t>(d) == axis || ty(0).shape()[d] == ty(1).shape()[d];
        rule(ok,
             "gathers a tile of numbers along an axis in range by an integer index tile of its rank and other "
             "dimensions; the result has the index's shape and the source's element type");
        rule(ty(1).layout() == res(0).layout(), "the index has the result's layout");
        break;
      }
      case OpKind::ConvertLayout:
        rule(ty(0).is_tile() && same_tile(ty(0), res(0)), "changes only the layout of a tile");
        break;
      case OpKind::Cast:
      case OpKind::Bitcast: {
        // Cast also converts pointers: to another pointee, or to and from 64-bit integers.
        auto wide_int = [&](Type t) { return is_number(t) && (t.dtype() == DType::i64 || t.dtype() == DType::u64); };
        const bool pa = ty(0).element().is_pointer(), pr = res(0).element().is_pointer();
        if (o.kind == OpKind::Cast && (pa || pr))
          rule(ty(0).shape() == res(0).shape() && (pa || wide_int(ty(0))) && (pr || wide_int(res(0))),
               "converts a pointer to a pointer or a 64-bit integer, or a 64-bit integer to a pointer, keeping the "
               "shape");
        else
          rule(is_number(ty(0)) && is_number(res(0)) && ty(0).shape() == res(0).shape(),
               "converts numbers, keeping the shape");
        rule(ty(0).layout() == res(0).layout(), "converts numbers, keeping the layout");
        if (o.kind == OpKind::Bitcast)
          rule(bit_width(ty(0).dtype()) == bit_width(res(0).dtype()), "bitcast keeps the bit width");
        if (o.attrs.count("rounding") && o.attr_str("rounding") == "rtz")
          rule(!pa && !pr && is_float(ty(0).dtype()) && is_float(res(0).dtype()) && !is_fp8(res(0).dtype()) &&
                   bit_width(res(0).dtype()) < bit_width(ty(0).dtype()),
               "rounds toward zero only from a float to a narrower float (not fp8)");
        break;
      }
      case OpKind::Cmp:
        rule(ty(0) == ty(1) && res(0).element() == Type::scalar(DType::i1) && res(0).shape() == ty(0).shape(),
             "compares two values of one type into booleans of their shape");
        rule(res(0).layout() == ty(0).layout(), "the result has the operands' layout");
        no_fp8(ty(0));
        break;
      case OpKind::AddPtr:
        rule(is_ptr(ty(0)) && res(0) == ty(0) && ty(1).shape() == ty(0).shape() && is_number(ty(1)) &&
                 is_int(ty(1).dtype()) && ty(1).dtype() != DType::i1,
             "adds integer offsets of the same shape to pointers");
        rule(ty(1).layout() == ty(0).layout(), "offsets must have the pointers' layout");
        break;
      case OpKind::Fma:
        rule(ty(0) == ty(1) && ty(1) == ty(2) && res(0) == ty(0) && is_number(ty(0)) && is_float(ty(0).dtype()),
             "operands and result must be floats of one type");
        no_fp8(ty(0));
        break;
      case OpKind::Select:
        rule(is_bool(ty(0)) && ty(1) == ty(2) && res(0) == ty(1) && ty(0).shape() == ty(1).shape(),
             "selects between two values of one type with booleans of their shape");
        rule(ty(0).layout() == ty(1).layout(), "the booleans must have the values' layout");
        break;
      case OpKind::Load:
        rule(is_ptr(ty(0)) && res(0) == ty(0).with_element(ty(0).pointee()),
             "result must be the pointee of the pointers");
        mask(o, 1);
        if (o.operands.size() > 2) rule(ty(2) == res(0), "other must have the result type");
        if (o.has_attr("volatile")) {
          expect(o.attr_int("volatile") == 1, o, "volatile is 1 when present");
          expect(!o.has_attr("cache") && !o.has_attr("eviction"), o,
                 "a volatile load takes no cache modifier or eviction policy");
        }
        break;
      case OpKind::Store:
        rule(is_ptr(ty(0)) && ty(1) == ty(0).with_element(ty(0).pointee()), "value must match the pointers");
        mask(o, 2);
        break;
      case OpKind::AtomicRMW: {
        rule(is_ptr(ty(0)) && ty(1) == res(0) && res(0) == ty(0).with_element(ty(0).pointee()),
             "value and result must match the pointers");
        DType e = res(0).dtype();
        rule(bit_width(e) >= 16, "atomics need 16, 32 or 64-bit elements");
        const std::string& kind = o.attr_str("kind");
        if (kind == "and" || kind == "or" || kind == "xor") rule(is_int(e), "bitwise atomics need integer memory");
        if (o.has_attr("scope")) {
          std::string problem = atomic_scope_problem(kind, e, o.attr_str("scope"));
          expect(problem.empty(), o, problem);
        }
        mask(o, 2);
        break;
      }
      case OpKind::AtomicCAS:
        rule(is_ptr(ty(0)) && ty(1) == res(0) && ty(2) == res(0) && res(0) == ty(0).with_element(ty(0).pointee()) &&
                 bit_width(res(0).dtype()) >= 16,
             "compare value, new value and result must match the pointers (16, 32 or 64 bits)");
        if (o.has_attr("scope")) {
          std::string problem = atomic_scope_problem("cas", res(0).dtype(), o.attr_str("scope"));
          expect(problem.empty(), o, problem);
        }
        break;
      case OpKind::Dot: {
        const auto &a = ty(0).shape(), &b = ty(1).shape();
        auto ok_type = [](DType t) {
          return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::i8 || is_fp8(t);
        };
        rule(is_number(ty(0)) && is_number(ty(1)) && ty(0).dtype() == ty(1).dtype() && ok_type(ty(0).dtype()),
             "operands must be f16, bf16, f32, fp8 or i8 tiles of one type");
        rule(a.size() == 2 && b.size() == 2 && a[1] == b[0] && ty(2) == res(0) &&
                 res(0).dtype() == dot_accumulator(ty(0).dtype()) && is_number(res(0)) &&
                 res(0).shape() == std::vector<int64_t>{a[0], b[1]},
             "shapes must be [M, K] x [K, N] + [M, N] with an f32 accumulator (i32 for i8 operands)");
        rule(!o.attrs.count("input_precision") || ty(0).dtype() == DType::f32,
             "input_precision applies to f32 operands only");
        break;
      }
      case OpKind::Reduce:
      case OpKind::Scan:
        combine(o);
        break;
      case OpKind::Philox: {
        rule(ty(0) == Type::scalar(DType::u64) && is_number(ty(1)) &&
                 (ty(1).dtype() == DType::u32 || ty(1).dtype() == DType::u64),
             "takes a u64 seed and u32 or u64 offsets");
        for (size_t i = 0; i < 4; ++i) rule(res(i) == ty(1), "gives four results of the offsets' type");
        int64_t rounds = o.attr_int("rounds");
        expect(rounds >= 1 && rounds <= kMaxPhiloxRounds, o,
               fmt::format("rounds must be from 1 to {}, got {}", kMaxPhiloxRounds, rounds));
        break;
      }
      case OpKind::For: {
        size_t n = o.operands.size() - 3;
        rule(is_int_scalar(ty(0)) && ty(1) == ty(0) && ty(2) == ty(0),
             "bounds and step must be integer scalars of one type");
        expect(o.results.size() == n && o.regions[0]->args.size() == n + 1, o,
               "carries one value per init (the body takes the induction variable and the carried values)");
        rule(o.regions[0]->args[0]->type == ty(0), "the induction variable has the bounds' type");
        if (o.has_attr("num_stages")) {
          std::string problem = num_stages_problem(o.attr_int("num_stages"));
          expect(problem.empty(), o, problem);
        }
        if (o.has_attr("unroll"))
          expect(o.attr_int("unroll") >= 1 && o.attr_int("unroll") <= kMaxUnroll, o,
                 fmt::format("unroll must be from 1 to {}, got {}", kMaxUnroll, o.attr_int("unroll")));
        auto y = yields(*o.regions[0]);
        expect(y.size() == n, o, fmt::format("the body yields {} values for {} carried", y.size(), n));
        for (size_t i = 0; i < n; ++i)
          rule(res(i) == ty(3 + i) && o.regions[0]->args[i + 1]->type == ty(3 + i) && y[i] == ty(3 + i),
               "loop-carried types must agree");
        break;
      }
      case OpKind::If: {
        rule(is_bool(ty(0)) && !ty(0).is_tile(), "the condition must be a boolean scalar");
        for (auto& r : o.regions) {
          expect(r->args.empty(), o, "branches take no arguments");
          auto y = yields(*r);
          expect(y.size() == o.results.size(), o, "each branch yields one value per result");
          for (size_t i = 0; i < y.size(); ++i) rule(y[i] == res(i), "branch yields must have the result types");
        }
        break;
      }
      case OpKind::While: {
        const size_t n = o.operands.size();
        expect(o.results.size() == n, o, "carries one value per init");
        for (const auto& r : o.regions) {
          expect(r->args.size() == n, o, "the condition and the body take one argument per carried value");
          for (size_t i = 0; i < n; ++i)
            rule(r->args[i]->type == ty(i) && res(i) == ty(i), "loop-carried types must agree");
        }
        auto c = yields(*o.regions[0]);
        expect(c.size() == 1 && is_bool(c[0]) && !c[0].is_tile(), o, "the condition yields one boolean scalar");
        auto y = yields(*o.regions[1]);
        expect(y.size() == n, o, fmt::format("the body yields {} values for {} carried", y.size(), n));
        for (size_t i = 0; i < n; ++i) rule(y[i] == ty(i), "loop-carried types must agree");
        break;
      }
      case OpKind::MultipleOf:
      case OpKind::MaxContiguous: {
        rule(res(0) == ty(0), "hints keep the type");
        const auto& v = o.attr_ints("values");
        expect(v.size() == std::max<size_t>(1, ty(0).shape().size()), o, "values: one per dimension");
        for (int64_t x : v) expect(x > 0 && x <= (int64_t{1} << 30), o, "values must be from 1 to 2^30");
        break;
      }
      case OpKind::Print:
        expect(o.attr_int("hex") == 0 || o.attr_int("hex") == 1, o, "hex is 0 or 1");
        break;
      case OpKind::Assert:
      case OpKind::Assume:
        rule(is_bool(ty(0)), "the condition must be booleans");
        break;
      default:
        break;  // Yield: its parent checks what it yields
    }
  }

  // Every tile has a layout or none does (codegen needs them all, the interpreter none); the
  // layout rules themselves are the layouts' own (ir/LayoutHooks.h).
  void check_layouts(const Op& o) {
    if (!layouts_) return;
    auto missing = [&](Type t) { return t.is_tile() && !t.layout(); };
    for (const auto& r : o.results)
      if (missing(r->type))
        fail(o, fmt::format("result type {} has no layout, but other tiles of the kernel have one (all or none)",
                            r->type.str()));
    for (const auto& region : o.regions)
      for (const auto& a : region->args)
        if (missing(a->type))
          fail(o, fmt::format("region argument type {} has no layout, but other tiles of the kernel have one (all or "
                              "none)",
                              a->type.str()));
    if (const auto problem = layout_hooks().problem)
      if (std::string p = problem(o, num_warps_); !p.empty()) fail(o, p);
  }

  void mask(const Op& o, size_t at) const {
    if (o.operands.size() <= at) return;
    if (o.operands[at]->type != o.operands[0]->type.with_element(Type::scalar(DType::i1)))
      fail(o, fmt::format("the mask must be booleans of the pointers' shape, got {}", o.operands[at]->type.str()));
  }

  void constant(const Op& o) const {
    Type t = o.result()->type;
    expect(!t.is_tile() && !t.is_pointer(), o, fmt::format("result must be a number, got {}", t.str()));
    DType d = t.dtype();
    const Attr& v = o.attrs.at("value");
    if (is_int(d)) {
      const int64_t* i = std::get_if<int64_t>(&v);
      expect(i, o, fmt::format("an {} constant needs an integer value, got {}", name(d), attr_str(v)));
      expect(d == DType::u64 || wrap_int(d, *i) == *i, o, fmt::format("value {} does not fit in {}", *i, name(d)));
      return;
    }
    const double* x = std::get_if<double>(&v);
    expect(x, o, fmt::format("a {} constant needs a float value (with a '.'), got {}", name(d), attr_str(v)));
    double r = round_to(d, *x);
    expect(std::isnan(*x) || std::memcmp(&r, x, sizeof r) == 0, o,
           fmt::format("value {} is not representable in {}", attr_str(v), name(d)));
  }

  // reduce and scan: inputs of one shape, a combine region of 2N scalars yielding N.
  void combine(const Op& o) const {
    size_t n = o.operands.size();
    const auto& shape = o.operands[0]->type.shape();
    for (const Value* v : o.operands) {
      expect(v->type.is_tile() && v->type.shape() == shape && is_number(v->type), o,
             "inputs must be number tiles of one shape");
      expect(v->type.layout() == o.operands[0]->type.layout(), o, "inputs must have one layout");
    }
    int64_t axis = o.attr_int("axis");
    expect(axis >= 0 && static_cast<size_t>(axis) < shape.size(), o,
           fmt::format("axis {} is out of range for rank {}", axis, shape.size()));
    if (o.kind == OpKind::Scan)
      expect(o.attr_int("reverse") == 0 || o.attr_int("reverse") == 1, o, "reverse is 0 or 1");
    expect(o.results.size() == n, o, fmt::format("gives one result per input ({}), got {}", n, o.results.size()));
    auto out_shape = shape;
    if (o.kind == OpKind::Reduce) out_shape.erase(out_shape.begin() + axis);
    for (size_t i = 0; i < n; ++i) {
      Type e = o.operands[i]->type.element();
      expect(o.result(i)->type.shape() == out_shape && o.result(i)->type.element() == e, o,
             fmt::format("result {} must be {} of {}", i, shape_str(out_shape), e.str()));
      if (o.kind == OpKind::Scan)
        expect(o.result(i)->type.layout() == o.operands[0]->type.layout(), o,
               fmt::format("result {} must have the inputs' layout", i));
    }
    const Block& body = *o.regions[0];
    expect(body.args.size() == 2 * n, o, "combine region needs two arguments per input");
    for (size_t i = 0; i < 2 * n; ++i)
      expect(body.args[i]->type == o.operands[i % n]->type.element(), o,
             "combine region arguments must be the inputs' element types, the inputs twice over");
    auto y = yields(body);
    expect(y.size() == n, o, "combine region must yield one value per input");
    for (size_t i = 0; i < n; ++i) expect(y[i] == o.operands[i]->type.element(), o, "combine yields the element type");
  }

  const Function& f_;
  int num_warps_;         // 0 until known (the hook counts the first layout's)
  bool layouts_ = false;  // the kernel's tiles have layouts
  std::unordered_set<const Value*> visible_;
};
}  // namespace

void verify(const Function& f, int num_warps) { Verifier(f, num_warps).run(); }

std::string num_warps_problem(int64_t num_warps) {
  if (is_pow2(num_warps) && num_warps <= kMaxNumWarps) return "";
  return fmt::format("num_warps must be a power of two from 1 to {}, got {}", kMaxNumWarps, num_warps);
}

std::string num_stages_problem(int64_t num_stages) {
  if (num_stages >= 1 && num_stages <= kMaxNumStages) return "";
  return fmt::format("num_stages must be from 1 to {}, got {}", kMaxNumStages, num_stages);
}

void check_num_warps(int64_t num_warps, const std::string& where) {
  if (std::string p = num_warps_problem(num_warps); !p.empty())
    throw Error(fmt::format("{}{}{}", where, where.empty() ? "" : ": ", p));
}

}  // namespace tiledsl::ir
