#include <llvm/IR/InlineAsm.h>
#include <llvm/Support/Error.h>

#include "codegen/Lowering.h"

namespace tiledsl::codegen {

// The user's PTX, one call per element: one result is the call's value, several a struct of them.
// Impure unless declared pure (LLVM may then merge or drop calls; the tiledsl passes never do).
void Lowering::lower_inline_asm(const ir::Op& op) {
  const size_t n = static_cast<size_t>(num_regs(op.result())), results = op.results.size();
  const size_t pack = static_cast<size_t>(op.attr_int("pack"));
  // pack > 1: `pack` registers of one thread (any: the op is elementwise) go to one asm operand,
  // a vector bitcast to an integer of its width; a last incomplete group is padded with poison.
  auto packed_type = [&](llvm::Type* t) {
    return pack == 1 ? t : b_.getIntNTy(static_cast<unsigned>(pack * t->getPrimitiveSizeInBits()));
  };
  std::vector<llvm::Type*> types;
  for (const auto& r : op.results) types.push_back(packed_type(type_of(r->type)));
  llvm::Type* ret = results == 1 ? types[0] : llvm::StructType::get(ctx_, types);
  std::vector<Regs> out(results);
  {  // LLVM checks the constraint string against the operand types: a clear error, not a crash
    std::vector<llvm::Type*> params;
    for (const ir::Value* v : op.operands) params.push_back(packed_type(type_of(v->type)));
    if (llvm::Error e =
            llvm::InlineAsm::verify(llvm::FunctionType::get(ret, params, false), op.attr_str("constraints")))
      throw Error(fmt::format(
          "{}: in kernel '{}': inline_asm_elementwise: the constraints \"{}\" do not fit the "
          "operands and results: {}",
          op.loc.line ? op.loc.str() : "<unknown>", f_.name, op.attr_str("constraints"), llvm::toString(std::move(e))));
  }
  for (size_t r = 0; r < n; r += pack) {
    std::vector<llvm::Value*> args;
    for (const ir::Value* v : op.operands) {
      const Regs& regs = get(v);
      if (pack == 1) {
        args.push_back(regs[r]);
        continue;
      }
      llvm::Type* et = type_of(v->type);
      llvm::Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(et, static_cast<unsigned>(pack)));
      for (size_t e = 0; e < pack && r + e < n; ++e) vec = b_.CreateInsertElement(vec, regs[r + e], uint64_t{e});
      args.push_back(b_.CreateBitCast(vec, packed_type(et)));
    }
    llvm::Value* call = inline_ptx(op.attr_str("asm"), op.attr_str("constraints"), ret, args,
                                   /*side_effects=*/op.attr_int("pure") == 0);
    for (size_t i = 0; i < results; ++i) {
      llvm::Value* v = results == 1 ? call : b_.CreateExtractValue(call, static_cast<unsigned>(i));
      if (pack == 1) {
        out[i].push_back(v);
        continue;
      }
      llvm::Type* et = type_of(op.result(i)->type);
      llvm::Value* vec = b_.CreateBitCast(v, llvm::FixedVectorType::get(et, static_cast<unsigned>(pack)));
      for (size_t e = 0; e < pack && r + e < n; ++e) out[i].push_back(b_.CreateExtractElement(vec, uint64_t{e}));
    }
  }
  for (size_t i = 0; i < results; ++i) vals_[op.result(i)] = out[i];
}

Regs Lowering::lower_elementwise(const ir::Op& op) {
  size_t n = static_cast<size_t>(num_regs(op.result()));
  Regs out;
  for (size_t r = 0; r < n; ++r) {
    std::vector<llvm::Value*> a;
    for (const ir::Value* v : op.operands) a.push_back(get(v)[r]);
    out.push_back(elementwise(op, a));
  }
  return out;
}

llvm::Value* Lowering::elementwise(const ir::Op& op, const std::vector<llvm::Value*>& a) {
  ir::Type t = op.operands[0]->type;
  DType d = t.dtype();
  bool ptr = t.element().is_pointer();
  bool flt = !ptr && is_float(d);
  bool uns = is_unsigned(d) || d == DType::i1;
  if (ir::has_trait(op.kind, ir::kFloatMath) || op.kind == OpKind::Math2) return math(op, a, d);
  switch (op.kind) {
    case OpKind::Add:
      return flt ? b_.CreateFAdd(a[0], a[1]) : b_.CreateAdd(a[0], a[1]);
    case OpKind::Sub:
      return flt ? b_.CreateFSub(a[0], a[1]) : b_.CreateSub(a[0], a[1]);
    case OpKind::Mul:
      return flt ? b_.CreateFMul(a[0], a[1]) : b_.CreateMul(a[0], a[1]);
    case OpKind::Div:
      if (!flt) return int_divide(op.kind, a[0], a[1], uns);
      // f32 `/` is div.full.f32 (within 2 ulp), as Triton's: the IEEE-rounded div.rn costs several
      // times the instructions. Other widths divide exactly.
      if (d == DType::f32) return inline_ptx("div.full.f32 $0, $1, $2;", "=f,f,f", a[0]->getType(), {a[0], a[1]});
      return b_.CreateFDiv(a[0], a[1]);
    case OpKind::Rem: {
      if (!flt) return int_divide(op.kind, a[0], a[1], uns);
      // fmod is exact (the result keeps x's sign, zero included), so narrow floats compute
      // it in f32 and round back without error. frem's NVPTX expansion loses the sign of 0.
      if (d == DType::f64) return libdevice("fmod", a[0]->getType(), {a[0], a[1]});
      llvm::Type* f32 = b_.getFloatTy();
      llvm::Value* r = libdevice("fmodf", f32, {b_.CreateFPExt(a[0], f32), b_.CreateFPExt(a[1], f32)});
      return b_.CreateFPTrunc(r, a[0]->getType());
    }
    case OpKind::Max:
      return flt ? b_.CreateMaxNum(a[0], a[1])
                 : intrinsic(uns ? llvm::Intrinsic::umax : llvm::Intrinsic::smax, {a[0], a[1]}, {a[0]->getType()});
    case OpKind::Min:
      return flt ? b_.CreateMinNum(a[0], a[1])
                 : intrinsic(uns ? llvm::Intrinsic::umin : llvm::Intrinsic::smin, {a[0], a[1]}, {a[0]->getType()});
    case OpKind::And:
      return b_.CreateAnd(a[0], a[1]);
    case OpKind::Or:
      return b_.CreateOr(a[0], a[1]);
    case OpKind::Xor:
      return b_.CreateXor(a[0], a[1]);
    case OpKind::Shl:
    case OpKind::Shr: {
      // Shifting by the width or more gives 0 (or the sign, for a signed right shift).
      unsigned w = a[0]->getType()->getIntegerBitWidth();
      llvm::Value* big = b_.CreateICmpUGE(a[1], llvm::ConstantInt::get(a[1]->getType(), w));
      if (op.kind == OpKind::Shr && !uns)
        return b_.CreateAShr(a[0], b_.CreateSelect(big, llvm::ConstantInt::get(a[1]->getType(), w - 1), a[1]));
      llvm::Value* s = op.kind == OpKind::Shl ? b_.CreateShl(a[0], a[1]) : b_.CreateLShr(a[0], a[1]);
      return b_.CreateSelect(big, llvm::ConstantInt::get(a[0]->getType(), 0), s);
    }
    case OpKind::Neg:
      return flt ? b_.CreateFNeg(a[0]) : b_.CreateNeg(a[0]);
    case OpKind::Not:
      return b_.CreateNot(a[0]);
    case OpKind::Abs:
      if (flt) return intrinsic(llvm::Intrinsic::fabs, {a[0]}, {a[0]->getType()});
      if (uns) return a[0];
      return intrinsic(llvm::Intrinsic::abs, {a[0], b_.getFalse()}, {a[0]->getType()});
    case OpKind::Cmp:
      return compare(op.attr_str("pred"), a[0], a[1], flt, uns || ptr);
    case OpKind::Select:
      return b_.CreateSelect(a[0], a[1], a[2]);
    case OpKind::Fma:
      return intrinsic(llvm::Intrinsic::fma, {a[0], a[1], a[2]}, {a[0]->getType()});
    case OpKind::AddPtr: {
      ir::Type ot = op.operands[1]->type;
      llvm::Value* off = a[1];
      if (off->getType() != b_.getInt64Ty())
        off = is_unsigned(ot.dtype()) ? b_.CreateZExt(off, b_.getInt64Ty()) : b_.CreateSExt(off, b_.getInt64Ty());
      return b_.CreateGEP(scalar_type(t.pointee().dtype() == DType::i1 ? DType::i8 : t.pointee().dtype()), a[0], off);
    }
    case OpKind::Cast: {
      const bool to_ptr = op.result()->type.element().is_pointer();
      if (ptr || to_ptr) {  // pointers: one LLVM type for every pointee; to and from i64
        if (ptr && to_ptr) return a[0];
        return to_ptr ? b_.CreateIntToPtr(a[0], type_of(op.result()->type)) : b_.CreatePtrToInt(a[0], b_.getInt64Ty());
      }
      if (op.attrs.count("rounding") &&
          op.attr_str("rounding") == "rtz") {  // toward zero: cvt.rz (float to a narrower float, not fp8)
        const DType to = op.result()->type.dtype();
        const char* t = to == DType::f32 ? "f32" : to == DType::f16 ? "f16" : "bf16";
        const char* f = d == DType::f64 ? "f64" : "f32";
        const char* reg = to == DType::f32 ? "=f" : "=h";
        return inline_ptx(fmt::format("cvt.rz.{}.{} $0, $1;", t, f),
                          fmt::format("{},{}", reg, d == DType::f64 ? "d" : "f"), type_of(op.result()->type), {a[0]});
      }
      return cast(a[0], d, op.result()->type.dtype());
    }
    case OpKind::Bitcast:
      return b_.CreateBitCast(a[0], type_of(op.result()->type));
    default:
      unsupported(op);
  }
}

llvm::Value* Lowering::compare(const std::string& p, llvm::Value* x, llvm::Value* y, bool flt, bool uns) {
  using P = llvm::CmpInst::Predicate;
  P pred;
  if (flt)
    pred = p == "eq"   ? P::FCMP_OEQ
           : p == "ne" ? P::FCMP_UNE
           : p == "lt" ? P::FCMP_OLT
           : p == "le" ? P::FCMP_OLE
           : p == "gt" ? P::FCMP_OGT
                       : P::FCMP_OGE;
  else if (uns)
    pred = p == "eq"   ? P::ICMP_EQ
           : p == "ne" ? P::ICMP_NE
           : p == "lt" ? P::ICMP_ULT
           : p == "le" ? P::ICMP_ULE
           : p == "gt" ? P::ICMP_UGT
                       : P::ICMP_UGE;
  else
    pred = p == "eq"   ? P::ICMP_EQ
           : p == "ne" ? P::ICMP_NE
           : p == "lt" ? P::ICMP_SLT
           : p == "le" ? P::ICMP_SLE
           : p == "gt" ? P::ICMP_SGT
                       : P::ICMP_SGE;
  return flt ? b_.CreateFCmp(pred, x, y) : b_.CreateICmp(pred, x, y);
}

// --- fp8 (held as its bits in an i8) ---------------------------------------------------------
// The conversions round as the interpreter's encode_float: to nearest even, saturating to the
// largest finite value (inf too), NaN to the format's positive NaN. They are integer and float
// code that works on every target (sm_89's cvt ...e4m3x2 converts pairs of values).
// `x` (f32 or f64) to the fp8 `to`.
llvm::Value* Lowering::encode_fp8(llvm::Value* x, DType to) {
  const FloatFormat f = float_format(to);
  const int bias = (1 << (f.exp_bits - 1)) - 1, min_exp = 1 - bias;
  const bool dbl = x->getType()->isDoubleTy();
  const unsigned width = dbl ? 64 : 32, man = dbl ? 52 : 23, wbias = dbl ? 1023 : 127;
  llvm::Type* it = b_.getIntNTy(width);
  llvm::Type* ft = x->getType();
  auto ci = [&](int64_t v) { return llvm::ConstantInt::get(it, static_cast<uint64_t>(v), true); };
  llvm::Value* bits = b_.CreateBitCast(x, it);
  llvm::Value* neg = b_.CreateICmpSLT(bits, ci(0));
  llvm::Value* a = intrinsic(llvm::Intrinsic::fabs, {x}, {ft});
  // The binade of |x|, kept between the smallest normal's and one far above the largest finite
  // value (larger values saturate), so that the scale below stays a normal float.
  llvm::Value* field = b_.CreateLShr(b_.CreateBitCast(a, it), ci(man));
  llvm::Value* unb = b_.CreateSub(field, ci(wbias));
  unb = b_.CreateSelect(b_.CreateICmpSLT(unb, ci(min_exp)), ci(min_exp), unb);
  unb = b_.CreateSelect(b_.CreateICmpSGT(unb, ci(30)), ci(30), unb);
  // q = |x| / 2^(unb - man_bits), rounded to nearest even: the significand in units of the
  // result's last place (exact scaling by a power of two).
  llvm::Value* scale =
      b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(b_.CreateSub(ci(f.man_bits), unb), ci(wbias)), ci(man)), ft);
  llvm::Value* q = intrinsic(llvm::Intrinsic::fptosi_sat,
                             {intrinsic(llvm::Intrinsic::roundeven, {b_.CreateFMul(a, scale)}, {ft})}, {it, ft});
  // Far past the largest finite value (inf, or |x| of 2^31 and more) q is clamped before the
  // sum below could wrap; it saturates all the same.
  llvm::Value* cap = ci(int64_t{1} << (f.man_bits + 2));
  q = b_.CreateSelect(b_.CreateICmpSGT(q, cap), cap, q);
  // ((unb + bias) << man_bits) + q - 2^man_bits covers subnormals (q < 2^man_bits at unb =
  // min_exp) and a round-up into the next binade (q = 2^(man_bits + 1)) alike.
  llvm::Value* enc = b_.CreateSub(b_.CreateAdd(b_.CreateShl(b_.CreateAdd(unb, ci(bias)), ci(f.man_bits)), q),
                                  ci(int64_t{1} << f.man_bits));
  const int64_t max_bits = encode_float(f, 1e300);  // saturated: the largest finite value
  enc = b_.CreateSelect(b_.CreateICmpSGT(enc, ci(max_bits)), ci(max_bits), enc);
  llvm::Value* sign = b_.CreateSelect(neg, ci(int64_t{1} << (f.exp_bits + f.man_bits)), ci(0));
  llvm::Value* out = b_.CreateOr(enc, sign);
  out = b_.CreateSelect(b_.CreateFCmpUNO(x, x), ci(encode_float(f, std::nan(""))), out);
  return b_.CreateTrunc(out, b_.getInt8Ty());
}

// The fp8 bits `x` (i8) as an f32 (exactly).
llvm::Value* Lowering::decode_fp8(llvm::Value* x, DType from) {
  const FloatFormat f = float_format(from);
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  llvm::Type* i32 = b_.getInt32Ty();
  auto ci = [&](int64_t v) { return llvm::ConstantInt::get(i32, static_cast<uint64_t>(v), true); };
  llvm::Value* b = b_.CreateZExt(x, i32);
  llvm::Value* e = b_.CreateAnd(b_.CreateLShr(b, ci(f.man_bits)), ci((1 << f.exp_bits) - 1));
  llvm::Value* m = b_.CreateAnd(b, ci((1 << f.man_bits) - 1));
  llvm::Value* sub = b_.CreateICmpEQ(e, ci(0));
  // |v| = (e == 0 ? m : 2^man_bits + m) * 2^(max(e, 1) - bias - man_bits), all exact in f32.
  llvm::Value* sig = b_.CreateSelect(sub, m, b_.CreateOr(m, ci(1 << f.man_bits)));
  llvm::Value* ee = b_.CreateSelect(sub, ci(1), e);
  llvm::Value* scale =
      b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(ee, ci(127 - bias - f.man_bits)), ci(23)), b_.getFloatTy());
  llvm::Value* v = b_.CreateFMul(b_.CreateUIToFP(sig, b_.getFloatTy()), scale);
  llvm::Value* all = ci((1 << f.exp_bits) - 1);
  llvm::Value* special = f.ieee ? b_.CreateICmpEQ(e, all)
                                : b_.CreateAnd(b_.CreateICmpEQ(e, all), b_.CreateICmpEQ(m, ci((1 << f.man_bits) - 1)));
  llvm::Value* nan_or_inf =
      f.ieee ? b_.CreateSelect(b_.CreateICmpEQ(m, ci(0)), llvm::ConstantFP::getInfinity(b_.getFloatTy()),
                               llvm::ConstantFP::getNaN(b_.getFloatTy()))
             : llvm::ConstantFP::getNaN(b_.getFloatTy());
  v = b_.CreateSelect(special, nan_or_inf, v);
  llvm::Value* neg = b_.CreateICmpNE(b_.CreateAnd(b, ci(1 << (f.exp_bits + f.man_bits))), ci(0));
  return b_.CreateSelect(neg, b_.CreateFNeg(v), v);
}

llvm::Value* Lowering::cast(llvm::Value* x, DType from, DType to) {
  if (is_fp8(from) && is_fp8(to)) return from == to ? x : encode_fp8(decode_fp8(x, from), to);
  if (is_fp8(from)) return to == DType::f32 ? decode_fp8(x, from) : cast(decode_fp8(x, from), DType::f32, to);
  if (is_fp8(to)) {
    // Through a float that holds `x` exactly (f32 for the 16-bit floats, f64 for f64 and the
    // integers, which lose bits only far beyond fp8's range, where they saturate).
    if (from == DType::f32 || from == DType::f64) return encode_fp8(x, to);
    if (is_float(from)) return encode_fp8(b_.CreateFPExt(x, b_.getFloatTy()), to);
    return encode_fp8(cast(x, from, DType::f64), to);
  }
  llvm::Type* tt = scalar_type(to);
  if (is_float(from) && is_float(to)) {
    // Rounds once to nearest even. f16 <-> bf16 goes through f32, which holds both exactly.
    bool narrow_pair = (from == DType::f16 && to == DType::bf16) || (from == DType::bf16 && to == DType::f16);
    if (narrow_pair) return b_.CreateFPTrunc(b_.CreateFPExt(x, b_.getFloatTy()), tt);
    return b_.CreateFPCast(x, tt);
  }
  if (is_float(from)) {
    // To bool: x != 0 (NaN and 0.5 are true). Otherwise as the interpreter (and cvt.rzi.sat):
    // truncate, saturate, NaN becomes 0.
    if (to == DType::i1) return b_.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0));
    return intrinsic(is_unsigned(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat, {x},
                     {tt, x->getType()});
  }
  bool uns = is_unsigned(from) || from == DType::i1;
  if (to == DType::bf16 && bit_width(from) >= 32 && !has_int_to_bf16(opts_.arch)) return int_to_bf16(x, uns);
  if (is_float(to)) return uns ? b_.CreateUIToFP(x, tt) : b_.CreateSIToFP(x, tt);
  if (to == DType::i1) return b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  return b_.CreateIntCast(x, tt, !uns);
}

// A 32- or 64-bit integer to bf16, rounded once to nearest even, where the target has no
// cvt.rn.bf16.{s,u}{32,64} (before sm_90: LLVM goes through f32, rounding twice: 2^60 + 2^52 + 1
// becomes 2^60, not 2^60 + 2^53). Round to odd into f32 (toward zero, then the last bit set
// when that lost anything), then to nearest even into bf16: f32 has more than the two extra
// bits that makes exact.
llvm::Value* Lowering::int_to_bf16(llvm::Value* x, bool uns) {
  const bool wide = x->getType()->getIntegerBitWidth() == 64;
  llvm::Value* f = inline_ptx(fmt::format("cvt.rz.f32.{}{} $0, $1;", uns ? "u" : "s", wide ? 64 : 32),
                              wide ? "=f,l" : "=f,r", b_.getFloatTy(), {x});
  // Exact: |f| <= |x|, so f fits x's type.
  llvm::Value* back = uns ? b_.CreateFPToUI(f, x->getType()) : b_.CreateFPToSI(f, x->getType());
  llvm::Value* lost = b_.CreateZExt(b_.CreateICmpNE(back, x), b_.getInt32Ty());
  llvm::Value* odd = b_.CreateOr(b_.CreateBitCast(f, b_.getInt32Ty()), lost);
  return b_.CreateFPTrunc(b_.CreateBitCast(odd, b_.getFloatTy()), b_.getBFloatTy());
}

// Integer / and % with the interpreter's defined results where LLVM's are undefined: a zero
// divisor gives all bits set (quotient) or the dividend (remainder), and MIN / -1 wraps.
llvm::Value* Lowering::int_divide(OpKind k, llvm::Value* x, llvm::Value* y, bool uns) {
  llvm::Type* t = x->getType();
  auto c = [&](int64_t v) { return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), true); };
  llvm::Value* zero = b_.CreateICmpEQ(y, c(0));
  llvm::Value* minus_one = uns ? b_.getFalse() : b_.CreateICmpEQ(y, c(-1));
  llvm::Value* safe = b_.CreateSelect(b_.CreateOr(zero, minus_one), c(1), y);
  llvm::Value* q;
  if (k == OpKind::Div) {
    q = uns ? b_.CreateUDiv(x, safe) : b_.CreateSDiv(x, safe);
    if (!uns) q = b_.CreateSelect(minus_one, b_.CreateNeg(x), q);
    return b_.CreateSelect(zero, c(-1), q);
  }
  q = uns ? b_.CreateURem(x, safe) : b_.CreateSRem(x, safe);
  if (!uns) q = b_.CreateSelect(minus_one, c(0), q);
  return b_.CreateSelect(zero, x, q);
}

llvm::Value* Lowering::inline_ptx(const std::string& asm_text, const std::string& constraints, llvm::Type* result,
                                  llvm::ArrayRef<llvm::Value*> args, bool side_effects) {
  std::vector<llvm::Type*> params;
  for (llvm::Value* a : args) params.push_back(a->getType());
  auto* fn_type = llvm::FunctionType::get(result, params, false);
  return b_.CreateCall(llvm::InlineAsm::get(fn_type, asm_text, constraints, side_effects), args);
}

llvm::Value* Lowering::math(const ir::Op& op, llvm::ArrayRef<llvm::Value*> args, DType d) {
  llvm::Value* x = args[0];
  if (d != DType::f32 && d != DType::f64) {  // narrow floats compute in f32
    std::vector<llvm::Value*> wide;
    for (llvm::Value* a : args) wide.push_back(b_.CreateFPExt(a, b_.getFloatTy()));
    return b_.CreateFPTrunc(math(op, wide, DType::f32), x->getType());
  }
  llvm::Type* t = x->getType();
  if (op.kind == OpKind::Math2 && op.attr_str("fn") == "div_rn")  // f64 division is div.rn already
    return d == DType::f32 ? inline_ptx("div.rn.f32 $0, $1, $2;", "=f,f,f", t, {args[0], args[1]})
                           : b_.CreateFDiv(args[0], args[1]);
  if (op.kind == OpKind::Math2)  // pow, atan2, hypot
    return libdevice(op.attr_str("fn") + (d == DType::f32 ? "f" : ""), t, args);
  if (d == DType::f32 && (op.kind == OpKind::Exp || op.kind == OpKind::Exp2)) {
    // As Triton: exp(x) = ex2.approx.ftz(x * log2(e)) — two instructions instead of libdevice's
    // accurate expf (relative error about 2^-22, within the documented f32 tolerance). ftz, as
    // Triton's: without it ptxas wraps MUFU.EX2 in a compare, a halving and a squaring that keep
    // results below 2^-126 subnormal (measured on attention's softmax: a quarter of the loop's
    // instructions); with it those results are zero.
    llvm::Value* y = op.kind == OpKind::Exp ? b_.CreateFMul(x, llvm::ConstantFP::get(t, 1.4426950408889634)) : x;
    return inline_ptx("ex2.approx.ftz.f32 $0, $1;", "=f,f", t, {y});
  }
  switch (op.kind) {
    case OpKind::Sqrt:
      return intrinsic(llvm::Intrinsic::sqrt, {x}, {t});
    case OpKind::Floor:
      return intrinsic(llvm::Intrinsic::floor, {x}, {t});
    case OpKind::Ceil:
      return intrinsic(llvm::Intrinsic::ceil, {x}, {t});
    default:
      break;
  }
  std::string fn;
  switch (op.kind) {
    case OpKind::Exp:
      fn = "exp";
      break;
    case OpKind::Exp2:
      fn = "exp2";
      break;
    case OpKind::Log:
      fn = "log";
      break;
    case OpKind::Log2:
      fn = "log2";
      break;
    case OpKind::Rsqrt:
      fn = "rsqrt";
      break;
    case OpKind::Sin:
      fn = "sin";
      break;
    case OpKind::Cos:
      fn = "cos";
      break;
    case OpKind::Erf:
      fn = "erf";
      break;
    case OpKind::Math:  // libdevice has every function the op names (tanh, log1p, ..., erfinv)
      fn = op.attr_str("fn");
      break;
    default:
      unsupported(op);
  }
  return libdevice(fn + (d == DType::f32 ? "f" : ""), t, {x});
}

// A call of libdevice's __nv_<name> (linked by the target step) with arguments and result of type `t`.
llvm::Value* Lowering::libdevice(const std::string& name, llvm::Type* t, llvm::ArrayRef<llvm::Value*> args) {
  std::vector<llvm::Type*> params(args.size(), t);
  llvm::FunctionCallee callee = mod_->getOrInsertFunction("__nv_" + name, llvm::FunctionType::get(t, params, false));
  return b_.CreateCall(callee, args);
}

}  // namespace tiledsl::codegen
