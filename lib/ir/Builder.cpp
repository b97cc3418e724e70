#include "ir/Builder.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ir/Semantics.h"
#include "ir/Verifier.h"
#include "support/Error.h"

namespace tiledsl::ir {

namespace {
bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }
Type scalar(DType t) { return Type::scalar(t); }
const std::vector<int64_t>& shape_of(Value* v) { return v->type.shape(); }
std::string ty(Value* v) { return v->type.str(); }
const char* kFp8Arith =
    "fp8 tiles can be loaded, stored, converted and selected; convert them first "
    "(x.to<float>() or x.to<tl::f16>()) to compute with them";
}  // namespace

Op* Builder::create(OpKind k, std::vector<Value*> operands, const std::vector<Type>& results, Attrs attrs,
                    const Location& loc) {
  auto op = std::make_unique<Op>();
  op->kind = k;
  op->operands = std::move(operands);
  op->attrs = std::move(attrs);
  op->loc = loc;
  for (Type t : results) op->add_result(t);
  return block_->append(std::move(op));
}

Value* Builder::make(OpKind k, std::vector<Value*> operands, Type result, Attrs attrs, const Location& loc) {
  return create(k, std::move(operands), {result}, std::move(attrs), loc)->result();
}

void Builder::fail(const Location& loc, const std::string& op, const std::string& msg) const {
  user_error(loc.line ? loc.str() : std::string(), f_.name, op, "{}", msg);
}

void Builder::check_pow2_shape(const std::vector<int64_t>& shape, const Location& loc, const std::string& op) const {
  for (int64_t d : shape)
    if (!is_pow2(d))
      fail(loc, op,
           fmt::format("shape {} has a dimension ({}) that is not a power of two; tile dimensions "
                       "must be powers of two (mask the extra elements instead)",
                       shape_str(shape), d));
}

Value* Builder::constant(double v, DType t, const Location& loc) {
  if (is_int(t)) return constant_int(static_cast<int64_t>(v), t, loc);
  return make(OpKind::Constant, {}, scalar(t), {{"value", round_to(t, v)}}, loc);
}

Value* Builder::constant_int(int64_t v, DType t, const Location& loc) {
  if (is_float(t)) return constant(static_cast<double>(v), t, loc);
  if (wrap_int(t, v) != v && !(t == DType::u64))
    fail(loc, "constant", fmt::format("value {} does not fit in {}", v, name(t)));
  return make(OpKind::Constant, {}, scalar(t), {{"value", v}}, loc);
}

Value* Builder::program_id(int axis, const Location& loc) {
  if (axis < 0 || axis > 2) fail(loc, "program_id", fmt::format("axis must be 0, 1 or 2, got {}", axis));
  return make(OpKind::ProgramId, {}, scalar(DType::i32), {{"axis", int64_t{axis}}}, loc);
}

Value* Builder::num_programs(int axis, const Location& loc) {
  if (axis < 0 || axis > 2) fail(loc, "num_programs", fmt::format("axis must be 0, 1 or 2, got {}", axis));
  return make(OpKind::NumPrograms, {}, scalar(DType::i32), {{"axis", int64_t{axis}}}, loc);
}

Value* Builder::arange(int64_t start, int64_t end, const Location& loc) {
  if (end <= start) fail(loc, "arange", fmt::format("end ({}) must be greater than start ({})", end, start));
  if (!is_pow2(end - start))
    fail(loc, "arange",
         fmt::format("range [{}, {}) has {} elements; tiles need a power-of-two size", start, end, end - start));
  if (start < INT32_MIN || end > INT32_MAX) fail(loc, "arange", "bounds must fit in i32");
  return make(OpKind::Arange, {}, Type::tile({end - start}, scalar(DType::i32)), {{"start", start}, {"end", end}}, loc);
}

Value* Builder::full(const std::vector<int64_t>& shape, Value* v, const Location& loc, const char* op) {
  if (v->type.is_tile()) fail(loc, op, fmt::format("fill value must be a scalar, got {}", ty(v)));
  check_pow2_shape(shape, loc, op);
  return shape.empty() ? v : splat(v, shape, loc);
}

Value* Builder::splat(Value* v, const std::vector<int64_t>& shape, const Location& loc) {
  TILEDSL_CHECK(!v->type.is_tile(), "splat of a tile");
  return make(OpKind::Splat, {v}, Type::tile(shape, v->type), {}, loc);
}

std::vector<int64_t> Builder::broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                              const Location& loc, const std::string& op) const {
  if (a.empty()) return b;
  if (b.empty()) return a;
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i + a.size() >= n ? a[i + a.size() - n] : 1;
    int64_t db = i + b.size() >= n ? b[i + b.size() - n] : 1;
    if (da != db && da != 1 && db != 1)
      fail(loc, op,
           fmt::format("cannot broadcast shapes {} and {} (dimension {}: {} vs {})", shape_str(a), shape_str(b), i, da,
                       db));
    out[i] = std::max(da, db);
  }
  return out;
}

Value* Builder::broadcast_to(Value* v, const std::vector<int64_t>& shape, const Location& loc, const char* op) {
  const auto& from = shape_of(v);
  if (from == shape) return v;
  if (!v->type.is_tile()) return splat(v, shape, loc);
  if (from.size() > shape.size())
    fail(loc, op, fmt::format("cannot broadcast shape {} to {}", shape_str(from), shape_str(shape)));
  if (from.size() < shape.size()) {
    std::vector<int64_t> padded(shape.size() - from.size(), 1);
    padded.insert(padded.end(), from.begin(), from.end());
    v = make(OpKind::Reshape, {v}, v->type.with_shape(padded), {}, loc);
  }
  const auto& cur = shape_of(v);
  for (size_t i = 0; i < shape.size(); ++i)
    if (cur[i] != shape[i] && cur[i] != 1)
      fail(loc, op, fmt::format("cannot broadcast shape {} to {}", shape_str(from), shape_str(shape)));
  if (cur == shape) return v;
  return make(OpKind::Broadcast, {v}, v->type.with_shape(shape), {}, loc);
}

Value* Builder::expand_dims(Value* v, int axis, const Location& loc) {
  auto shape = shape_of(v);
  int rank = static_cast<int>(shape.size());
  if (axis < 0) axis += rank + 1;
  if (axis < 0 || axis > rank)
    fail(loc, "expand_dims", fmt::format("axis {} is out of range for a tile of shape {}", axis, shape_str(shape)));
  shape.insert(shape.begin() + axis, 1);
  if (!v->type.is_tile()) return splat(v, shape, loc);
  return make(OpKind::ExpandDims, {v}, v->type.with_shape(shape), {{"axis", int64_t{axis}}}, loc);
}

Value* Builder::reshape(Value* v, const std::vector<int64_t>& shape, const Location& loc) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n != v->type.numel())
    fail(loc, "reshape",
         fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", shape_str(shape_of(v)), v->type.numel(),
                     shape_str(shape), n));
  check_pow2_shape(shape, loc, "reshape");
  if (!v->type.is_tile()) return splat(v, shape, loc);
  if (shape == shape_of(v)) return v;
  return make(OpKind::Reshape, {v}, v->type.with_shape(shape), {}, loc);
}

Value* Builder::trans(Value* v, std::vector<int64_t> perm, const Location& loc) {
  const auto& shape = shape_of(v);
  if (perm.empty())
    for (size_t i = shape.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(shape.size());
  std::iota(iota.begin(), iota.end(), 0);
  if (sorted != iota)
    fail(loc, "trans",
         fmt::format("{} is not a permutation of the {} dimensions of shape {}", shape_str(perm), shape.size(),
                     shape_str(shape)));
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(shape[static_cast<size_t>(p)]);
  return make(OpKind::Trans, {v}, v->type.with_shape(out), {{"perm", perm}}, loc);
}

Value* Builder::gather(Value* src, Value* index, int axis, const Location& loc) {
  const auto &ss = shape_of(src), &is = shape_of(index);
  if (!src->type.is_tile() || !index->type.is_tile() || ss.size() != is.size())
    fail(loc, "gather",
         fmt::format("the source ({}) and the index ({}) must be tiles of one rank", ty(src), ty(index)));
  const int rank = static_cast<int>(ss.size());
  if (axis < -rank || axis >= rank)
    fail(loc, "gather", fmt::format("axis {} is out of range for a tile of shape {}", axis, shape_str(ss)));
  if (axis < 0) axis += rank;
  if (!is_int(index->type.dtype()) || index->type.dtype() == DType::i1)
    fail(loc, "gather", fmt::format("the index must be an integer tile, got {}", ty(index)));
  if (src->type.element().is_pointer()) fail(loc, "gather", "the source must hold numbers, not pointers");
  for (int d = 0; d < rank; ++d)
    if (d != axis && ss[static_cast<size_t>(d)] != is[static_cast<size_t>(d)])
      fail(loc, "gather",
           fmt::format("the index ({}) must have the source's ({}) dimensions except along axis {}", shape_str(is),
                       shape_str(ss), axis));
  return make(OpKind::Gather, {src, index}, src->type.with_shape(is), {{"axis", int64_t{axis}}}, loc);
}

Value* Builder::cast(Value* v, DType to, const Location& loc) {
  if (v->type.element().is_pointer())
    fail(loc, "to", fmt::format("cannot convert a pointer tile ({}) to {}", ty(v), name(to)));
  if (v->type.dtype() == to) return v;
  return make(OpKind::Cast, {v}, v->type.with_element(scalar(to)), {}, loc);
}

std::vector<Value*> Builder::inline_asm(const std::string& asm_text, const std::string& constraints,
                                        std::vector<Value*> args, const std::vector<DType>& results, bool pure,
                                        int pack, const Location& loc) {
  const char* op = "inline_asm_elementwise";
  if (args.empty()) fail(loc, op, "needs at least one argument");
  for (Value* a : args)
    if (a->type.element().is_pointer()) fail(loc, op, fmt::format("arguments are numbers, got {}", ty(a)));
  if (pack != 1 && pack != 2 && pack != 4) fail(loc, op, fmt::format("pack must be 1, 2 or 4, got {}", pack));
  auto packs = [&](DType t) {
    return pack == 1 || (t != DType::i1 && bit_width(t) * pack >= 16 && bit_width(t) * pack <= 64);
  };
  for (Value* a : args)
    if (!packs(a->type.dtype()))
      fail(loc, op, fmt::format("pack {} of {} is not 16, 32 or 64 bits (one register)", pack, ty(a)));
  for (DType r : results)
    if (!packs(r))
      fail(loc, op, fmt::format("pack {} of {} results is not 16, 32 or 64 bits (one register)", pack, name(r)));
  auto [outs, ins] = constraint_counts(constraints);
  if (outs != static_cast<int>(results.size()) || ins != static_cast<int>(args.size()))
    fail(loc, op,
         fmt::format("the constraints \"{}\" must name {} outputs ('=...'), one per result, and {} inputs, one per "
                     "argument; they name {} and {}",
                     constraints, results.size(), args.size(), outs, ins));
  std::vector<int64_t> shape;
  for (Value* a : args) shape = broadcast_shape(shape, shape_of(a), loc, op);
  for (Value*& a : args) a = broadcast_to(a, shape, loc);
  std::vector<Type> types;
  for (DType r : results) types.push_back(shape.empty() ? scalar(r) : Type::tile(shape, scalar(r)));
  Op* o =
      create(OpKind::InlineAsm, args, types,
             {{"asm", asm_text}, {"constraints", constraints}, {"pure", int64_t{pure}}, {"pack", int64_t{pack}}}, loc);
  std::vector<Value*> out;
  for (size_t i = 0; i < results.size(); ++i) out.push_back(o->result(i));
  return out;
}

Value* Builder::cast_toward_zero(Value* v, DType to, const Location& loc) {
  const DType from = v->type.dtype();
  if (v->type.element().is_pointer() || !is_float(from) || !is_float(to) || bit_width(to) >= bit_width(from))
    fail(loc, "to",
         fmt::format("rounding toward zero applies to a float converted to a narrower float, not {} to {}", ty(v),
                     name(to)));
  if (is_fp8(to)) fail(loc, "to", "rounding toward zero to fp8 is not supported (PTX converts to fp8 to nearest)");
  return make(OpKind::Cast, {v}, v->type.with_element(scalar(to)), {{"rounding", std::string("rtz")}}, loc);
}

Value* Builder::to_pointer(Value* v, DType pointee, const Location& loc) {
  const bool from_ptr = v->type.element().is_pointer();
  if (!from_ptr && v->type.dtype() != DType::i64 && v->type.dtype() != DType::u64)
    fail(loc, "to", fmt::format("only 64-bit integers and pointers convert to pointers, got {}", ty(v)));
  Type to = v->type.with_element(Type::pointer(scalar(pointee)));
  if (to == v->type) return v;
  return make(OpKind::Cast, {v}, to, {}, loc);
}

Value* Builder::from_pointer(Value* v, DType to, const Location& loc) {
  if (!v->type.element().is_pointer() || (to != DType::i64 && to != DType::u64))
    fail(loc, "to", fmt::format("a pointer converts to i64 or u64 only, got {} to {}", ty(v), name(to)));
  return make(OpKind::Cast, {v}, v->type.with_element(scalar(to)), {}, loc);
}

Value* Builder::bitcast(Value* v, DType to, const Location& loc) {
  if (v->type.element().is_pointer() || bit_width(v->type.dtype()) != bit_width(to))
    fail(loc, "bitcast", fmt::format("cannot reinterpret {} as {}: bit widths differ", ty(v), name(to)));
  if (v->type.dtype() == to) return v;
  return make(OpKind::Bitcast, {v}, v->type.with_element(scalar(to)), {}, loc);
}

Value* Builder::unary(OpKind k, Value* v, const Location& loc) {
  const char* op = mnemonic(k);
  if (v->type.element().is_pointer()) fail(loc, op, fmt::format("operand is a pointer tile ({})", ty(v)));
  DType t = v->type.dtype();
  if (is_fp8(t)) fail(loc, op, fmt::format("got {}: {}", ty(v), kFp8Arith));
  if (has_trait(k, kFloatMath) && !is_float(t))
    fail(loc, op, fmt::format("needs a floating-point operand, got {}; convert it first with .to<float>()", ty(v)));
  if (has_trait(k, kIntOnly) && is_float(t))
    fail(loc, op, fmt::format("needs an integer or boolean operand, got {}", ty(v)));
  return make(k, {v}, v->type, {}, loc);
}

Value* Builder::addptr(Value* p, Value* offset, const Location& loc) {
  if (!p->type.element().is_pointer()) fail(loc, "addptr", fmt::format("{} is not a pointer", ty(p)));
  if (offset->type.element().is_pointer() || !is_int(offset->type.dtype()) || offset->type.dtype() == DType::i1)
    fail(loc, "addptr", fmt::format("offset must be an integer, got {}", ty(offset)));
  auto shape = broadcast_shape(shape_of(p), shape_of(offset), loc, "addptr");
  p = broadcast_to(p, shape, loc);
  offset = broadcast_to(offset, shape, loc);
  return make(OpKind::AddPtr, {p, offset}, p->type, {}, loc);
}

Value* Builder::binary(OpKind k, Value* a, Value* b, const Location& loc) {
  const char* op = mnemonic(k);
  bool pa = a->type.element().is_pointer(), pb = b->type.element().is_pointer();
  if (pa || pb) {
    if (k == OpKind::Add && !(pa && pb)) return pa ? addptr(a, b, loc) : addptr(b, a, loc);
    if (k == OpKind::Sub && pa && !pb) return addptr(a, unary(OpKind::Neg, b, loc), loc);
    fail(loc, op,
         fmt::format("unsupported on pointers ({} and {}); only pointer + integer and pointer - integer are", ty(a),
                     ty(b)));
  }
  DType t = tiledsl::promote(a->type.dtype(), b->type.dtype());
  if (is_fp8(t)) fail(loc, op, fmt::format("got {} and {}: {}", ty(a), ty(b), kFp8Arith));
  if (k == OpKind::Div || k == OpKind::Rem) {
    const DType da = a->type.dtype(), db = b->type.dtype();
    if (is_int(da) && is_int(db) && da != DType::i1 && db != DType::i1 && is_unsigned(da) != is_unsigned(db))
      fail(loc, op,
           fmt::format("{} and {} have different signedness, as Triton rejects; convert one of them first", ty(a),
                       ty(b)));
    t = div_promote(t);
  }
  if (has_trait(k, kIntOnly) && is_float(t))
    fail(loc, op, fmt::format("needs integer or boolean operands, got {} and {}", ty(a), ty(b)));
  if (t == DType::i1 && !has_trait(k, kIntOnly) && k != OpKind::Max && k != OpKind::Min) t = DType::i32;
  auto shape = broadcast_shape(shape_of(a), shape_of(b), loc, op);
  a = broadcast_to(cast(a, t, loc), shape, loc);
  b = broadcast_to(cast(b, t, loc), shape, loc);
  return make(k, {a, b}, a->type, {}, loc);
}

Value* Builder::math(const std::string& fn, Value* a, const Location& loc) {
  Value* v = unary(OpKind::Math, a, loc);  // the operand checks of a float function
  v->def->attrs["fn"] = fn;
  return v;
}

Value* Builder::math(const std::string& fn, Value* a, Value* b, const Location& loc) {
  if (a->type.element().is_pointer() || b->type.element().is_pointer() || !is_float(a->type.dtype()) ||
      !is_float(b->type.dtype()))
    fail(loc, fn.c_str(),
         fmt::format("needs floating-point operands, got {} and {}; convert them first with .to<float>()", ty(a),
                     ty(b)));
  Value* v = binary(OpKind::Math2, a, b, loc);
  v->def->attrs["fn"] = fn;
  return v;
}

Value* Builder::compare(const std::string& pred, Value* a, Value* b, const Location& loc) {
  static const char* kPreds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  TILEDSL_CHECK(std::find(std::begin(kPreds), std::end(kPreds), pred) != std::end(kPreds), pred);
  auto shape = broadcast_shape(shape_of(a), shape_of(b), loc, "cmp");
  if (a->type.element().is_pointer() || b->type.element().is_pointer()) {
    if (a->type.element() != b->type.element())
      fail(loc, "cmp", fmt::format("cannot compare {} with {}", ty(a), ty(b)));
  } else {
    DType t = tiledsl::promote(a->type.dtype(), b->type.dtype());
    if (is_fp8(t)) fail(loc, "cmp", fmt::format("got {} and {}: {}", ty(a), ty(b), kFp8Arith));
    a = cast(a, t, loc);
    b = cast(b, t, loc);
  }
  a = broadcast_to(a, shape, loc);
  b = broadcast_to(b, shape, loc);
  return make(OpKind::Cmp, {a, b}, Type::tile(shape, scalar(DType::i1)), {{"pred", pred}}, loc);
}

Value* Builder::select(Value* c, Value* a, Value* b, const Location& loc) {
  if (c->type.dtype() != DType::i1 || c->type.element().is_pointer())
    fail(loc, "where", fmt::format("condition must be boolean, got {}", ty(c)));
  auto shape = broadcast_shape(broadcast_shape(shape_of(c), shape_of(a), loc, "where"), shape_of(b), loc, "where");
  if (a->type.element().is_pointer() || b->type.element().is_pointer()) {
    if (a->type.element() != b->type.element())
      fail(loc, "where", fmt::format("branches have different types: {} and {}", ty(a), ty(b)));
  } else {
    DType t = tiledsl::promote(a->type.dtype(), b->type.dtype());
    a = cast(a, t, loc);
    b = cast(b, t, loc);
  }
  c = broadcast_to(c, shape, loc);
  a = broadcast_to(a, shape, loc);
  b = broadcast_to(b, shape, loc);
  return make(OpKind::Select, {c, a, b}, a->type, {}, loc);
}

Value* Builder::fma(Value* a, Value* b, Value* c, const Location& loc) {
  DType t = tiledsl::promote(tiledsl::promote(a->type.dtype(), b->type.dtype()), c->type.dtype());
  if (!is_float(t))
    fail(loc, "fma", fmt::format("needs floating-point operands, got {}, {} and {}", ty(a), ty(b), ty(c)));
  if (is_fp8(t)) fail(loc, "fma", fmt::format("got {}, {} and {}: {}", ty(a), ty(b), ty(c), kFp8Arith));
  auto shape = broadcast_shape(broadcast_shape(shape_of(a), shape_of(b), loc, "fma"), shape_of(c), loc, "fma");
  a = broadcast_to(cast(a, t, loc), shape, loc);
  b = broadcast_to(cast(b, t, loc), shape, loc);
  c = broadcast_to(cast(c, t, loc), shape, loc);
  return make(OpKind::Fma, {a, b, c}, a->type, {}, loc);
}

namespace {
// Brings a mask to the pointer's shape; the mask may broadcast, the pointer may not grow.
Value* conform_mask(Builder& b, Value* mask, Value* ptr, const Location& loc, const char* op) {
  if (!mask) return nullptr;
  if (mask->type.dtype() != DType::i1 || mask->type.element().is_pointer())
    b.fail(loc, op, fmt::format("mask must be boolean, got {}", mask->type.str()));
  const auto& ps = ptr->type.shape();
  const auto& ms = mask->type.shape();
  bool ok = ms.size() <= ps.size();
  for (size_t i = 0; ok && i < ms.size(); ++i) {
    int64_t m = ms[ms.size() - 1 - i], p = ps[ps.size() - 1 - i];
    ok = m == p || m == 1;
  }
  if (!ok)
    b.fail(loc, op, fmt::format("mask has shape {} but pointer tile has shape {}", shape_str(ms), shape_str(ps)));
  return b.broadcast_to(mask, ps, loc, op);
}
}  // namespace

namespace {
// The attributes of `h` on a load (`store` false) or store, checked.
Attrs hint_attrs(const Builder& b, const MemoryHints& h, bool store, const Location& loc) {
  const char* op = store ? "store" : "load";
  Attrs a;
  if (!h.cache.empty()) {
    const std::vector<std::string> ok =
        store ? std::vector<std::string>{"wb", "cg", "cs", "wt"} : std::vector<std::string>{"ca", "cg", "cv"};
    if (std::find(ok.begin(), ok.end(), h.cache) == ok.end())
      b.fail(loc, op, fmt::format("cache modifier '{}' is not one of a {}'s ({})", h.cache, op, fmt::join(ok, ", ")));
    a["cache"] = h.cache;
  }
  if (!h.eviction.empty()) a["eviction"] = h.eviction;
  if (h.is_volatile) {
    if (a.size()) b.fail(loc, op, "a volatile load takes no cache modifier or eviction policy (ld.volatile has none)");
    a["volatile"] = int64_t{1};
  }
  return a;
}
}  // namespace

Value* Builder::load(Value* ptr, Value* mask, Value* other, const Location& loc, const MemoryHints& hints) {
  if (!ptr->type.element().is_pointer())
    fail(loc, "load", fmt::format("expects a pointer or a tile of pointers, got {}", ty(ptr)));
  if (other && !mask) fail(loc, "load", "'other' needs a mask: it is the value of the masked-off elements");
  mask = conform_mask(*this, mask, ptr, loc, "load");
  DType elem = ptr->type.pointee().dtype();
  Type result = ptr->type.with_element(ptr->type.pointee());
  std::vector<Value*> operands{ptr};
  if (mask) operands.push_back(mask);
  if (other) {
    if (other->type.element().is_pointer())
      fail(loc, "load", fmt::format("'other' must be a number, got {}", ty(other)));
    other = broadcast_to(cast(other, elem, loc), shape_of(ptr), loc, "load");
    operands.push_back(other);
  }
  return make(OpKind::Load, operands, result, hint_attrs(*this, hints, false, loc), loc);
}

void Builder::store(Value* ptr, Value* v, Value* mask, const Location& loc, const MemoryHints& hints) {
  if (!ptr->type.element().is_pointer())
    fail(loc, "store", fmt::format("expects a pointer or a tile of pointers, got {}", ty(ptr)));
  if (v->type.element().is_pointer()) fail(loc, "store", fmt::format("cannot store pointers ({})", ty(v)));
  mask = conform_mask(*this, mask, ptr, loc, "store");
  const auto &vs = shape_of(v), &ps = shape_of(ptr);
  bool fits = vs.size() <= ps.size();  // the value may broadcast to the pointers, not grow them
  for (size_t i = 0; fits && i < vs.size(); ++i)
    fits = vs[vs.size() - 1 - i] == ps[ps.size() - 1 - i] || vs[vs.size() - 1 - i] == 1;
  if (!fits)
    fail(loc, "store",
         fmt::format("value has shape {} but pointer tile has shape {}", shape_str(shape_of(v)),
                     shape_str(shape_of(ptr))));
  v = broadcast_to(cast(v, ptr->type.pointee().dtype(), loc), shape_of(ptr), loc, "store");
  std::vector<Value*> operands{ptr, v};
  if (mask) operands.push_back(mask);
  create(OpKind::Store, operands, {}, hint_attrs(*this, hints, true, loc), loc);
}

namespace {
// The sem and scope attributes of an atomic, the defaults left out.
Attrs atomic_order(const std::string& sem, const std::string& scope) {
  Attrs a;
  if (!sem.empty() && sem != "acq_rel") a["sem"] = sem;
  if (!scope.empty() && scope != "gpu") a["scope"] = scope;
  return a;
}
}  // namespace

Value* Builder::atomic_rmw(const std::string& kind, Value* ptr, Value* v, Value* mask, const Location& loc,
                           const std::string& sem, const std::string& scope) {
  std::string op = "atomic_" + kind;
  if (!ptr->type.element().is_pointer())
    fail(loc, op, fmt::format("expects a pointer or a tile of pointers, got {}", ty(ptr)));
  DType elem = ptr->type.pointee().dtype();
  if ((kind == "and" || kind == "or" || kind == "xor") && !is_int(elem))
    fail(loc, op, fmt::format("needs integer memory, got {}", ty(ptr)));
  if (elem == DType::i1 || bit_width(elem) < 16)
    fail(loc, op, fmt::format("unsupported element type {} (atomics need 16, 32 or 64 bits)", name(elem)));
  if (std::string problem = atomic_scope_problem(kind, elem, scope); !problem.empty()) fail(loc, op, problem);
  mask = conform_mask(*this, mask, ptr, loc, op.c_str());
  v = broadcast_to(cast(v, elem, loc), shape_of(ptr), loc, op.c_str());
  std::vector<Value*> operands{ptr, v};
  if (mask) operands.push_back(mask);
  Attrs attrs = atomic_order(sem, scope);
  attrs["kind"] = kind;
  return make(OpKind::AtomicRMW, operands, ptr->type.with_element(ptr->type.pointee()), attrs, loc);
}

Value* Builder::atomic_cas(Value* ptr, Value* cmp, Value* v, const Location& loc, const std::string& sem,
                           const std::string& scope) {
  if (!ptr->type.element().is_pointer())
    fail(loc, "atomic_cas", fmt::format("expects a pointer or a tile of pointers, got {}", ty(ptr)));
  DType elem = ptr->type.pointee().dtype();
  if (bit_width(elem) < 16) fail(loc, "atomic_cas", fmt::format("unsupported element type {}", name(elem)));
  if (std::string problem = atomic_scope_problem("cas", elem, scope); !problem.empty())
    fail(loc, "atomic_cas", problem);
  cmp = broadcast_to(cast(cmp, elem, loc), shape_of(ptr), loc, "atomic_cas");
  v = broadcast_to(cast(v, elem, loc), shape_of(ptr), loc, "atomic_cas");
  return make(OpKind::AtomicCAS, {ptr, cmp, v}, ptr->type.with_element(ptr->type.pointee()), atomic_order(sem, scope),
              loc);
}

Value* Builder::dot(Value* a, Value* b, Value* acc, const Location& loc, const std::string& input_precision) {
  const auto &sa = shape_of(a), &sb = shape_of(b);
  if (sa.size() == 3 && sb.size() == 3) return batched_dot(a, b, acc, loc, input_precision);
  if (sa.size() != 2 || sb.size() != 2)
    fail(loc, "dot", fmt::format("operands must be 2-D tiles (or 3-D, batched), got {} and {}", ty(a), ty(b)));
  if (sa[1] != sb[0])
    fail(loc, "dot",
         fmt::format("inner dimensions differ: a is {} and b is {} ({} != {})", shape_str(sa), shape_str(sb), sa[1],
                     sb[0]));
  DType ta = a->type.dtype(), tb = b->type.dtype();
  auto ok = [](DType t) {
    return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::i8 || is_fp8(t);
  };
  if (a->type.element().is_pointer() || b->type.element().is_pointer() || !ok(ta) || !ok(tb))
    fail(loc, "dot", fmt::format("operands must be f16, bf16, f32, fp8 or i8, got {} and {}", ty(a), ty(b)));
  if (ta != tb) fail(loc, "dot", fmt::format("operands must have one dtype, got {} and {}", ty(a), ty(b)));
  std::vector<int64_t> out{sa[0], sb[1]};
  const DType acc_type = dot_accumulator(ta);
  Type result = Type::tile(out, scalar(acc_type));
  if (!acc) acc = full(out, constant(0.0, acc_type, loc), loc, "dot");
  if (acc->type != result)
    fail(loc, "dot",
         fmt::format("accumulator must be {} ({}, shape [M, N]), got {}", result.str(), name(acc_type), ty(acc)));
  Attrs attrs;
  if (!input_precision.empty() && input_precision != "ieee" && input_precision != "tf32" && input_precision != "tf32x3")
    fail(loc, "dot", fmt::format("input_precision must be ieee, tf32 or tf32x3, got '{}'", input_precision));
  if (ta == DType::f32) attrs["input_precision"] = input_precision.empty() ? std::string("tf32") : input_precision;
  return make(OpKind::Dot, {a, b, acc}, result, attrs, loc);
}

// [B, M, K] x [B, K, N] (+ [B, M, N]): one 2-D dot per batch, each operand's slice taken with a
// gather along the batch dimension, the results put back in place by selects (Triton's 3-D dot).
Value* Builder::batched_dot(Value* a, Value* b, Value* acc, const Location& loc, const std::string& input_precision) {
  const auto sa = shape_of(a), sb = shape_of(b);
  if (sa[0] != sb[0])
    fail(loc, "dot", fmt::format("batch dimensions differ: a is {} and b is {}", shape_str(sa), shape_str(sb)));
  const int64_t batch = sa[0];
  auto slice = [&](Value* v, int64_t i) {
    std::vector<int64_t> s = shape_of(v), one = s;
    one[0] = 1;
    Value* at = full(one, constant_int(i, DType::i32, loc), loc, "dot");
    return reshape(gather(v, at, 0, loc), {s[1], s[2]}, loc);
  };
  Value* out = nullptr;
  Value* which = nullptr;
  for (int64_t i = 0; i < batch; ++i) {
    Value* c = dot(slice(a, i), slice(b, i), acc ? slice(acc, i) : nullptr, loc, input_precision);
    const std::vector<int64_t> shape{batch, c->type.shape()[0], c->type.shape()[1]};
    c = broadcast_to(expand_dims(c, 0, loc), shape, loc);
    if (!out) {
      out = c;
      which = broadcast_to(expand_dims(expand_dims(arange(0, batch, loc), 1, loc), 2, loc), shape, loc);
      continue;
    }
    out = select(compare("eq", which, constant_int(i, DType::i32, loc), loc), c, out, loc);
  }
  return out;
}

namespace {
int normalise_axis(const Builder& b, int axis, const std::vector<Value*>& inputs, const Location& loc,
                   const char* name) {
  const auto& shape = inputs.at(0)->type.shape();
  int rank = static_cast<int>(shape.size());
  if (rank == 0) b.fail(loc, name, fmt::format("needs a tile, got the scalar {}", inputs[0]->type.str()));
  if (axis < -rank || axis >= rank)
    b.fail(loc, name,
           fmt::format("axis {} is out of range for a tile of shape {} (rank {})", axis, shape_str(shape), rank));
  for (Value* v : inputs)
    if (v->type.shape() != shape)
      b.fail(loc, name,
             fmt::format("inputs have different shapes: {} and {}", shape_str(shape), shape_str(v->type.shape())));
  return axis < 0 ? axis + rank : axis;
}
}  // namespace

Op* Builder::begin_reduce(const std::vector<Value*>& inputs, int axis, const Location& loc, const char* name) {
  axis = normalise_axis(*this, axis, inputs, loc, name);
  Op* op = create(OpKind::Reduce, inputs, {}, {{"axis", int64_t{axis}}}, loc);
  Block* body = op->add_region();
  for (int rep = 0; rep < 2; ++rep)
    for (Value* v : inputs) body->add_arg(v->type.element());
  return op;
}

Op* Builder::begin_scan(const std::vector<Value*>& inputs, int axis, bool reverse, const Location& loc,
                        const char* name) {
  axis = normalise_axis(*this, axis, inputs, loc, name);
  Op* op = create(OpKind::Scan, inputs, {}, {{"axis", int64_t{axis}}, {"reverse", int64_t{reverse}}}, loc);
  Block* body = op->add_region();
  for (int rep = 0; rep < 2; ++rep)
    for (Value* v : inputs) body->add_arg(v->type.element());
  return op;
}

void Builder::finish_combine(Op* op, const std::vector<Value*>& yielded, const Location& loc) {
  const char* name = op->kind == OpKind::Reduce ? "reduce" : "scan";
  if (yielded.size() != op->operands.size())
    fail(loc, name,
         fmt::format("combine function returns {} values for {} inputs", yielded.size(), op->operands.size()));
  for (size_t i = 0; i < yielded.size(); ++i)
    if (yielded[i]->type != op->operands[i]->type.element())
      fail(loc, name,
           fmt::format("combine function returns {} for an input of element type {}", yielded[i]->type.str(),
                       op->operands[i]->type.element().str()));
  Block* saved = block_;
  block_ = op->regions[0].get();
  yield(yielded, loc);
  block_ = saved;
  for (Value* in : op->operands) {
    auto shape = in->type.shape();
    if (op->kind == OpKind::Reduce) shape.erase(shape.begin() + op->attr_int("axis"));
    op->add_result(Type::tile(shape, in->type.element()));
  }
}

std::vector<Value*> Builder::philox(Value* seed, Value* offsets, int rounds, const Location& loc) {
  if (seed->type.is_tile() || !is_int(seed->type.dtype()) || seed->type.element().is_pointer())
    fail(loc, "philox", fmt::format("seed must be an integer scalar, got {}", ty(seed)));
  if (!is_int(offsets->type.dtype()) || offsets->type.element().is_pointer() || offsets->type.dtype() == DType::i1)
    fail(loc, "philox", fmt::format("offsets must be integers, got {}", ty(offsets)));
  if (rounds < 1 || rounds > kMaxPhiloxRounds)
    fail(loc, "philox", fmt::format("n_rounds must be from 1 to {}, got {}", kMaxPhiloxRounds, rounds));
  seed = cast(seed, DType::u64, loc);
  // Philox 4x64 for 64-bit offsets, 4x32 otherwise (as Triton's).
  offsets = cast(offsets, bit_width(offsets->type.dtype()) == 64 ? DType::u64 : DType::u32, loc);
  Type t = offsets->type;
  Op* op = create(OpKind::Philox, {seed, offsets}, {t, t, t, t}, {{"rounds", int64_t{rounds}}}, loc);
  return {op->result(0), op->result(1), op->result(2), op->result(3)};
}

Op* Builder::begin_for(Value* lo, Value* hi, Value* step, const std::vector<Value*>& inits, const Location& loc) {
  for (Value* v : {lo, hi, step})
    if (v->type.is_tile() || !is_int(v->type.dtype()) || v->type.dtype() == DType::i1 || v->type.element().is_pointer())
      fail(loc, "range", fmt::format("bounds and step must be integer scalars, got {}", ty(v)));
  DType t = tiledsl::promote(tiledsl::promote(lo->type.dtype(), hi->type.dtype()), step->type.dtype());
  std::vector<Value*> operands{cast(lo, t, loc), cast(hi, t, loc), cast(step, t, loc)};
  operands.insert(operands.end(), inits.begin(), inits.end());
  std::vector<Type> results;
  for (Value* v : inits) results.push_back(v->type);
  Op* op = create(OpKind::For, operands, results, {}, loc);
  Block* body = op->add_region();
  body->add_arg(scalar(t));
  for (Value* v : inits) body->add_arg(v->type);
  return op;
}

Op* Builder::begin_if(Value* cond, const Location& loc, const char* op_name) {
  if (cond->type.is_tile() || cond->type.dtype() != DType::i1 || cond->type.element().is_pointer())
    fail(loc, op_name, fmt::format("condition must be a boolean scalar, got {}", ty(cond)));
  Op* op = create(OpKind::If, {cond}, {}, {}, loc);
  op->add_region();
  op->add_region();
  return op;
}

Op* Builder::begin_while(const std::vector<Value*>& inits, const Location& loc) {
  std::vector<Type> types;
  for (Value* v : inits) types.push_back(v->type);
  Op* op = create(OpKind::While, inits, types, {}, loc);
  for (int r = 0; r < 2; ++r) {
    Block* region = op->add_region();
    for (const Type& t : types) region->add_arg(t);
  }
  return op;
}

void Builder::return_if(Value* cond, const Location& loc) {
  if (block_ != &f_.body && (returns_.empty() || block_ != returns_.back())) fail(loc, "return_if", kReturnIfPlacement);
  Op* op = begin_if(cond, loc, "return_if");
  set_block(op->regions[0].get());
  yield({}, loc);
  set_block(op->regions[1].get());
  returns_.push_back(block_);
}

void Builder::close_returns() {
  while (!returns_.empty()) {
    Block* open = returns_.back();
    returns_.pop_back();
    set_block(open);
    yield({}, open->parent->loc);
    set_block(open->parent->parent);
  }
}

void Builder::barrier(const Location& loc) { create(OpKind::Barrier, {}, {}, {}, loc); }

void Builder::yield(const std::vector<Value*>& values, const Location& loc) {
  create(OpKind::Yield, values, {}, {}, loc);
}

Value* Builder::hint(OpKind k, Value* v, std::vector<int64_t> values, const Location& loc) {
  size_t rank = std::max<size_t>(1, shape_of(v).size());
  if (values.size() == 1 && rank > 1) values.assign(rank, values[0]);
  if (values.size() != rank)
    fail(loc, mnemonic(k), fmt::format("needs one value per dimension of {}, got {}", ty(v), shape_str(values)));
  for (int64_t x : values)
    if (x <= 0) fail(loc, mnemonic(k), fmt::format("values must be positive, got {}", shape_str(values)));
  return make(k, {v}, v->type, {{"values", values}}, loc);
}

void Builder::print(const std::string& prefix, bool hex, const std::vector<Value*>& values, const Location& loc) {
  create(OpKind::Print, values, {}, {{"prefix", prefix}, {"hex", int64_t{hex}}}, loc);
}

void Builder::assume(Value* cond, const Location& loc) {
  if (cond->type.dtype() != DType::i1 || cond->type.element().is_pointer())
    fail(loc, "assume", fmt::format("condition must be boolean, got {}", ty(cond)));
  create(OpKind::Assume, {cond}, {}, {}, loc);
}

void Builder::device_assert(Value* cond, const std::string& msg, const Location& loc) {
  if (cond->type.dtype() != DType::i1 || cond->type.element().is_pointer())
    fail(loc, "device_assert", fmt::format("condition must be boolean, got {}", ty(cond)));
  create(OpKind::Assert, {cond}, {}, {{"msg", msg}}, loc);
}

}  // namespace tiledsl::ir
