// Lowering: every tile value becomes the list of LLVM values this thread holds, one per
// register of its layout (passes/Layouts.h); a scalar is a list of one. Sections follow the op
// families of ir/Ops.def: indices, shapes, elementwise, memory, reductions, dot, control flow.
#include "codegen/Lower.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "passes/AxisInfo.h"
#include "passes/Layouts.h"
#include "support/Error.h"

namespace tiledsl::codegen {

namespace {
using ir::OpKind;
using passes::DistributedLayout;
using passes::Shape;
using Regs = std::vector<llvm::Value*>;

constexpr unsigned kGlobal = 1, kShared = 3;

const DistributedLayout* layout(const ir::Value* v) {
  const DistributedLayout* l = passes::layout_of(v->type);
  TILEDSL_CHECK(l, "codegen: tile value without a layout (run assign_layouts first): ", v->type.str());
  return l;
}

Shape masked(Shape off, const Shape& shape) {
  for (size_t d = 0; d < off.size(); ++d) off[d] &= shape[d] - 1;
  return off;
}

class Lowering {
 public:
  Lowering(const ir::Function& f, llvm::LLVMContext& ctx, const CompileOptions& opts)
      : f_(f), ctx_(ctx), opts_(opts), mod_(std::make_unique<llvm::Module>(f.name, ctx)), b_(ctx),
        axes_(passes::analyze_axes(f)) {}

  std::unique_ptr<llvm::Module> run() {
    std::vector<llvm::Type*> params;
    for (size_t i = 0; i < f_.num_args(); ++i) params.push_back(type_of(f_.arg(i)->type));
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, f_.name, mod_.get());
    for (size_t i = 0; i < f_.num_args(); ++i) {
      fn_->getArg(static_cast<unsigned>(i))->setName(f_.arg_names.at(i));
      vals_[f_.arg(i)] = {fn_->getArg(static_cast<unsigned>(i))};
    }
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));
    llvm::Value* tid = intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {});
    lane_ = b_.CreateAnd(tid, 31, "lane");
    warp_ = b_.CreateLShr(tid, 5, "warp");
    smem_ = new llvm::GlobalVariable(*mod_, llvm::ArrayType::get(b_.getInt8Ty(), 0), false,
                                     llvm::GlobalValue::ExternalLinkage, nullptr, "tiledsl_smem_placeholder",
                                     nullptr, llvm::GlobalValue::NotThreadLocal, kShared);
    block(f_.body);
    b_.CreateRetVoid();
    finish_shared_memory();
    annotate();
    return std::move(mod_);
  }

 private:
  // --- Types, values, helpers ------------------------------------------------------------
  llvm::Type* scalar_type(DType t) {
    switch (t) {
      case DType::i1: return b_.getInt1Ty();
      case DType::i8: case DType::u8: return b_.getInt8Ty();
      case DType::i16: case DType::u16: return b_.getInt16Ty();
      case DType::i32: case DType::u32: return b_.getInt32Ty();
      case DType::i64: case DType::u64: return b_.getInt64Ty();
      case DType::f16: return b_.getHalfTy();
      case DType::bf16: return b_.getBFloatTy();
      case DType::f32: return b_.getFloatTy();
      case DType::f64: return b_.getDoubleTy();
      default: unsupported(fmt::format("element type {}", name(t)));
    }
  }
  llvm::Type* type_of(ir::Type t) {
    ir::Type e = t.element();
    if (e.is_pointer()) return b_.getPtrTy(kGlobal);
    return scalar_type(e.dtype());
  }
  // Memory holds i1 as one byte.
  llvm::Type* memory_type(ir::Type t) { return t.dtype() == DType::i1 && !t.element().is_pointer() ? b_.getInt8Ty() : type_of(t); }

  [[noreturn]] void unsupported(const std::string& what) const {
    throw Error(fmt::format("codegen: in kernel '{}': {} is not supported by the GPU code generator yet", f_.name, what));
  }
  [[noreturn]] void unsupported(const ir::Op& op, const std::string& what = "") const {
    throw Error(fmt::format("{}: codegen: in kernel '{}': {}: {}not supported by the GPU code generator yet",
                            op.loc.line ? op.loc.str() : "<unknown>", f_.name, op.name(), what.empty() ? "" : what + " "));
  }

  llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value*> args, llvm::ArrayRef<llvm::Type*> types = {}) {
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(mod_.get(), id, types), args);
  }

  const Regs& get(const ir::Value* v) {
    auto it = vals_.find(v);
    TILEDSL_CHECK(it != vals_.end(), "codegen: value used before it was lowered");
    return it->second;
  }
  int64_t num_regs(const ir::Value* v) { return v->type.is_tile() ? layout(v)->num_regs(v->type.shape()) : 1; }

  // The thread part of dimension `d` of `l`'s index, as an i32.
  llvm::Value* thread_part(const DistributedLayout* l, size_t d) {
    const passes::ThreadTerm t = l->thread_terms()[d];
    llvm::Value* v = b_.getInt32(0);
    if (t.lane_bits) {
      llvm::Value* x = b_.CreateAnd(b_.CreateLShr(lane_, t.lane_shift), (1 << t.lane_bits) - 1);
      v = b_.CreateAdd(v, b_.CreateMul(x, b_.getInt32(static_cast<uint32_t>(t.lane_scale))));
    }
    if (t.warp_bits) {
      llvm::Value* x = b_.CreateAnd(b_.CreateLShr(warp_, t.warp_shift), (1 << t.warp_bits) - 1);
      v = b_.CreateAdd(v, b_.CreateMul(x, b_.getInt32(static_cast<uint32_t>(t.warp_scale))));
    }
    return v;
  }
  // The index of every register of a tile value of `type`: idx[reg][dim], i32.
  std::vector<std::vector<llvm::Value*>> indices(ir::Type type) {
    const DistributedLayout* l = passes::layout_of(type);
    const Shape& shape = type.shape();
    std::vector<llvm::Value*> thread;
    for (size_t d = 0; d < shape.size(); ++d) thread.push_back(thread_part(l, d));
    std::vector<std::vector<llvm::Value*>> out;
    for (int64_t r = 0; r < l->num_regs(shape); ++r) {
      Shape off = l->reg_offset(shape, r);
      std::vector<llvm::Value*> idx;
      for (size_t d = 0; d < shape.size(); ++d)
        idx.push_back(b_.CreateAnd(b_.CreateAdd(thread[d], b_.getInt32(static_cast<uint32_t>(off[d]))),
                                   static_cast<uint64_t>(shape[d] - 1)));
      out.push_back(idx);
    }
    return out;
  }
  llvm::Value* linear(const std::vector<llvm::Value*>& idx, const Shape& shape) {
    llvm::Value* v = b_.getInt32(0);
    for (size_t d = 0; d < idx.size(); ++d) v = b_.CreateAdd(b_.CreateMul(v, b_.getInt32(static_cast<uint32_t>(shape[d]))), idx[d]);
    return v;
  }

  // --- Shared memory ---------------------------------------------------------------------
  // Every use of shared memory starts with a barrier (earlier readers are done) and is sized
  // into one static buffer.
  llvm::Value* shared(int64_t bytes) {
    smem_bytes_ = std::max(smem_bytes_, bytes);
    barrier();
    return smem_;
  }
  void barrier() { intrinsic(llvm::Intrinsic::nvvm_barrier0, {}); }
  void finish_shared_memory() {
    if (smem_->use_empty()) {
      smem_->eraseFromParent();
      return;
    }
    if (smem_bytes_ > 48 * 1024) unsupported(fmt::format("{} bytes of shared memory (more than 48 KiB)", smem_bytes_));
    auto* g = new llvm::GlobalVariable(*mod_, llvm::ArrayType::get(b_.getInt8Ty(), static_cast<uint64_t>(smem_bytes_)), false,
                                       llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(llvm::ArrayType::get(b_.getInt8Ty(), static_cast<uint64_t>(smem_bytes_))),
                                       "tiledsl_smem", nullptr, llvm::GlobalValue::NotThreadLocal, kShared);
    g->setAlignment(llvm::Align(16));
    smem_->replaceAllUsesWith(g);
    smem_->eraseFromParent();
  }
  llvm::Value* to_memory(llvm::Value* v) { return v->getType()->isIntegerTy(1) ? b_.CreateZExt(v, b_.getInt8Ty()) : v; }
  llvm::Value* from_memory(llvm::Value* v, ir::Type t) {
    return t.dtype() == DType::i1 && !t.element().is_pointer() ? b_.CreateICmpNE(v, b_.getInt8(0)) : v;
  }

  // Moves the elements of `src` (a tile of `src_type`) into the registers of `dst_type`
  // through shared memory; dst element `i` reads src element `src_of(i)` (row-major linear).
  Regs shuffle(const Regs& src, ir::Type src_type, ir::Type dst_type,
               const std::function<llvm::Value*(const std::vector<llvm::Value*>&)>& src_of) {
    llvm::Type* et = memory_type(src_type);
    int64_t bytes = src_type.numel() * static_cast<int64_t>(mod_->getDataLayout().getTypeAllocSize(et));
    llvm::Value* base = shared(bytes);
    auto sidx = indices(src_type);
    for (size_t r = 0; r < src.size(); ++r)
      b_.CreateStore(to_memory(src[r]), b_.CreateGEP(et, base, linear(sidx[r], src_type.shape())));
    barrier();
    Regs out;
    for (const auto& idx : indices(dst_type))
      out.push_back(from_memory(b_.CreateLoad(et, b_.CreateGEP(et, base, src_of(idx))), src_type));
    return out;
  }

  // --- Blocks and ops ----------------------------------------------------------------------
  // Lowers the ops of `blk` up to its yield; returns the yielded values.
  std::vector<Regs> block(const ir::Block& blk) {
    for (const auto& op : blk.ops) {
      if (op->kind == OpKind::Yield) {
        std::vector<Regs> out;
        for (const ir::Value* v : op->operands) out.push_back(get(v));
        return out;
      }
      lower(*op);
    }
    return {};
  }

  void lower(const ir::Op& op) {
    switch (op.kind) {
      case OpKind::For: return lower_for(op);
      case OpKind::If: return lower_if(op);
      case OpKind::Reduce: return lower_reduce(op);
      case OpKind::Store: return lower_store(op);
      case OpKind::Load: vals_[op.result()] = lower_load(op); return;
      case OpKind::Dot: vals_[op.result()] = lower_dot(op); return;
      case OpKind::Scan:
      case OpKind::Philox:
      case OpKind::AtomicRMW:
      case OpKind::AtomicCAS:
      case OpKind::Print:
      case OpKind::Assert: unsupported(op);
      default: break;
    }
    vals_[op.result()] = value_op(op);
  }

  Regs value_op(const ir::Op& op) {
    const ir::Value* res = op.result();
    switch (op.kind) {
      case OpKind::Constant: {
        const auto& a = op.attrs.at("value");
        llvm::Type* t = type_of(res->type);
        if (t->isFloatingPointTy())
          return {llvm::ConstantFP::get(t, std::holds_alternative<double>(a) ? std::get<double>(a) : static_cast<double>(std::get<int64_t>(a)))};
        int64_t v = std::holds_alternative<int64_t>(a) ? std::get<int64_t>(a) : static_cast<int64_t>(std::get<double>(a));
        return {llvm::ConstantInt::get(t, static_cast<uint64_t>(v), true)};
      }
      case OpKind::ProgramId:
      case OpKind::NumPrograms: {
        static const llvm::Intrinsic::ID ids[2][3] = {
            {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z},
            {llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z}};
        return {intrinsic(ids[op.kind == OpKind::NumPrograms][op.attr_int("axis")], {})};
      }
      case OpKind::Arange: {
        Regs out;
        for (const auto& idx : indices(res->type))
          out.push_back(b_.CreateAdd(idx[0], b_.getInt32(static_cast<uint32_t>(op.attr_int("start")))));
        return out;
      }
      case OpKind::Splat: return Regs(static_cast<size_t>(num_regs(res)), get(op.operands[0])[0]);
      case OpKind::Broadcast:
      case OpKind::ExpandDims:
      case OpKind::Reshape:
      case OpKind::ConvertLayout:
      case OpKind::Trans: return lower_shape(op);
      case OpKind::MultipleOf:
      case OpKind::MaxContiguous: return get(op.operands[0]);
      default: break;
    }
    if (ir::has_trait(op.kind, ir::kElementwise)) return lower_elementwise(op);
    unsupported(op);
  }

  // --- Shapes ------------------------------------------------------------------------------
  // Register-to-register when source and result distribute their common dimensions alike
  // (broadcast, expand_dims, unit-dimension reshapes between a layout and its slice);
  // otherwise through shared memory.
  Regs lower_shape(const ir::Op& op) {
    const ir::Value* in = op.operands[0];
    const ir::Value* res = op.result();
    const Shape &is = in->type.shape(), &os = res->type.shape();
    if (op.kind != OpKind::Trans) {
      // Pair the non-unit dimensions of the result with those of the source (a broadcast
      // pairs every dimension).
      std::vector<int> src_dim(os.size(), -1);
      bool paired = true;
      if (op.kind == OpKind::Broadcast) {
        for (size_t d = 0; d < os.size(); ++d) src_dim[d] = is[d] == 1 ? -1 : static_cast<int>(d);
      } else if (op.kind != OpKind::ConvertLayout || is == os) {
        size_t j = 0;
        for (size_t d = 0; d < os.size() && paired; ++d) {
          if (os[d] == 1) continue;
          while (j < is.size() && is[j] == 1) ++j;
          if (j == is.size() || is[j] != os[d]) paired = false;
          else src_dim[d] = static_cast<int>(j++);
        }
      }
      if (paired) {
        if (auto regs = register_map(in, res, src_dim)) return *regs;
      }
    }
    const auto& perm = op.kind == OpKind::Trans ? op.attr_ints("perm") : std::vector<int64_t>{};
    return shuffle(get(in), in->type, res->type, [&](const std::vector<llvm::Value*>& idx) {
      if (op.kind != OpKind::Trans) return linear(idx, os);  // same row-major order
      std::vector<llvm::Value*> src(is.size());
      for (size_t d = 0; d < idx.size(); ++d) src[static_cast<size_t>(perm[d])] = idx[d];
      return linear(src, is);
    });
  }

  // Result registers taken from source registers, when every thread already holds what it
  // needs: the thread terms agree on paired dimensions and each result register's offset
  // matches a source register's.
  std::optional<Regs> register_map(const ir::Value* in, const ir::Value* res, const std::vector<int>& src_dim) {
    const DistributedLayout *li = layout(in), *lo = layout(res);
    const Shape &is = in->type.shape(), &os = res->type.shape();
    auto ti = li->thread_terms(), to = lo->thread_terms();
    auto same = [](const passes::ThreadTerm& a, const passes::ThreadTerm& b) {
      return a.lane_shift == b.lane_shift && a.lane_bits == b.lane_bits && a.lane_scale == b.lane_scale &&
             a.warp_shift == b.warp_shift && a.warp_bits == b.warp_bits && a.warp_scale == b.warp_scale;
    };
    // Source dimensions of extent one and unpaired result dimensions read index 0: no
    // thread bits may be spent on a paired dimension differently.
    for (size_t d = 0; d < os.size(); ++d)
      if (src_dim[d] >= 0 && !same(to[d], ti[static_cast<size_t>(src_dim[d])])) return std::nullopt;
    std::map<Shape, int64_t> by_offset;
    for (int64_t r = 0; r < li->num_regs(is); ++r) by_offset.try_emplace(masked(li->reg_offset(is, r), is), r);
    const Regs& src = get(in);
    Regs out;
    for (int64_t r = 0; r < lo->num_regs(os); ++r) {
      Shape off = masked(lo->reg_offset(os, r), os);
      Shape want(is.size(), 0);
      for (size_t d = 0; d < os.size(); ++d)
        if (src_dim[d] >= 0) want[static_cast<size_t>(src_dim[d])] = off[d];
      auto it = by_offset.find(masked(want, is));
      if (it == by_offset.end()) return std::nullopt;
      out.push_back(src[static_cast<size_t>(it->second)]);
    }
    return out;
  }

  // --- Elementwise -------------------------------------------------------------------------
  Regs lower_elementwise(const ir::Op& op) {
    size_t n = static_cast<size_t>(num_regs(op.result()));
    Regs out;
    for (size_t r = 0; r < n; ++r) {
      std::vector<llvm::Value*> a;
      for (const ir::Value* v : op.operands) a.push_back(get(v)[r]);
      out.push_back(elementwise(op, a));
    }
    return out;
  }

  llvm::Value* elementwise(const ir::Op& op, const std::vector<llvm::Value*>& a) {
    ir::Type t = op.operands[0]->type;
    DType d = t.dtype();
    bool ptr = t.element().is_pointer();
    bool flt = !ptr && is_float(d);
    bool uns = is_unsigned(d) || d == DType::i1;
    if (ir::has_trait(op.kind, ir::kFloatMath)) return math(op, a[0], d);
    switch (op.kind) {
      case OpKind::Add: return flt ? b_.CreateFAdd(a[0], a[1]) : b_.CreateAdd(a[0], a[1]);
      case OpKind::Sub: return flt ? b_.CreateFSub(a[0], a[1]) : b_.CreateSub(a[0], a[1]);
      case OpKind::Mul: return flt ? b_.CreateFMul(a[0], a[1]) : b_.CreateMul(a[0], a[1]);
      case OpKind::Div: return flt ? b_.CreateFDiv(a[0], a[1]) : uns ? b_.CreateUDiv(a[0], a[1]) : b_.CreateSDiv(a[0], a[1]);
      case OpKind::Rem: return flt ? b_.CreateFRem(a[0], a[1]) : uns ? b_.CreateURem(a[0], a[1]) : b_.CreateSRem(a[0], a[1]);
      case OpKind::Max:
        return flt ? b_.CreateMaxNum(a[0], a[1]) : intrinsic(uns ? llvm::Intrinsic::umax : llvm::Intrinsic::smax, {a[0], a[1]}, {a[0]->getType()});
      case OpKind::Min:
        return flt ? b_.CreateMinNum(a[0], a[1]) : intrinsic(uns ? llvm::Intrinsic::umin : llvm::Intrinsic::smin, {a[0], a[1]}, {a[0]->getType()});
      case OpKind::And: return b_.CreateAnd(a[0], a[1]);
      case OpKind::Or: return b_.CreateOr(a[0], a[1]);
      case OpKind::Xor: return b_.CreateXor(a[0], a[1]);
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
      case OpKind::Neg: return flt ? b_.CreateFNeg(a[0]) : b_.CreateNeg(a[0]);
      case OpKind::Not: return b_.CreateNot(a[0]);
      case OpKind::Abs:
        if (flt) return intrinsic(llvm::Intrinsic::fabs, {a[0]}, {a[0]->getType()});
        if (uns) return a[0];
        return intrinsic(llvm::Intrinsic::abs, {a[0], b_.getFalse()}, {a[0]->getType()});
      case OpKind::Cmp: return compare(op.attr_str("pred"), a[0], a[1], flt, uns || ptr);
      case OpKind::Select: return b_.CreateSelect(a[0], a[1], a[2]);
      case OpKind::Fma: return intrinsic(llvm::Intrinsic::fma, {a[0], a[1], a[2]}, {a[0]->getType()});
      case OpKind::AddPtr: {
        ir::Type ot = op.operands[1]->type;
        llvm::Value* off = a[1];
        if (off->getType() != b_.getInt64Ty())
          off = is_unsigned(ot.dtype()) ? b_.CreateZExt(off, b_.getInt64Ty()) : b_.CreateSExt(off, b_.getInt64Ty());
        return b_.CreateGEP(scalar_type(t.pointee().dtype() == DType::i1 ? DType::i8 : t.pointee().dtype()), a[0], off);
      }
      case OpKind::Cast: return cast(a[0], d, op.result()->type.dtype());
      case OpKind::Bitcast: return b_.CreateBitCast(a[0], type_of(op.result()->type));
      default: unsupported(op);
    }
  }

  llvm::Value* compare(const std::string& p, llvm::Value* x, llvm::Value* y, bool flt, bool uns) {
    using P = llvm::CmpInst::Predicate;
    P pred;
    if (flt) pred = p == "eq" ? P::FCMP_OEQ : p == "ne" ? P::FCMP_UNE : p == "lt" ? P::FCMP_OLT : p == "le" ? P::FCMP_OLE : p == "gt" ? P::FCMP_OGT : P::FCMP_OGE;
    else if (uns) pred = p == "eq" ? P::ICMP_EQ : p == "ne" ? P::ICMP_NE : p == "lt" ? P::ICMP_ULT : p == "le" ? P::ICMP_ULE : p == "gt" ? P::ICMP_UGT : P::ICMP_UGE;
    else pred = p == "eq" ? P::ICMP_EQ : p == "ne" ? P::ICMP_NE : p == "lt" ? P::ICMP_SLT : p == "le" ? P::ICMP_SLE : p == "gt" ? P::ICMP_SGT : P::ICMP_SGE;
    return flt ? b_.CreateFCmp(pred, x, y) : b_.CreateICmp(pred, x, y);
  }

  llvm::Value* cast(llvm::Value* x, DType from, DType to) {
    llvm::Type* tt = scalar_type(to);
    if (is_float(from) && is_float(to)) return b_.CreateFPCast(x, tt);
    if (is_float(from)) {
      // As the interpreter (and cvt.rzi): truncate, saturate, NaN becomes 0.
      if (to == DType::i1) return b_.CreateICmpNE(intrinsic(llvm::Intrinsic::fptosi_sat, {x}, {b_.getInt32Ty(), x->getType()}), b_.getInt32(0));
      return intrinsic(is_unsigned(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat, {x}, {tt, x->getType()});
    }
    bool uns = is_unsigned(from) || from == DType::i1;
    if (is_float(to)) return uns ? b_.CreateUIToFP(x, tt) : b_.CreateSIToFP(x, tt);
    if (to == DType::i1) return b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
    return b_.CreateIntCast(x, tt, !uns);
  }

  llvm::Value* math(const ir::Op& op, llvm::Value* x, DType d) {
    if (d != DType::f32 && d != DType::f64) {  // narrow floats compute in f32
      llvm::Value* r = math(op, b_.CreateFPExt(x, b_.getFloatTy()), DType::f32);
      return b_.CreateFPTrunc(r, x->getType());
    }
    llvm::Type* t = x->getType();
    switch (op.kind) {
      case OpKind::Sqrt: return intrinsic(llvm::Intrinsic::sqrt, {x}, {t});
      case OpKind::Floor: return intrinsic(llvm::Intrinsic::floor, {x}, {t});
      case OpKind::Ceil: return intrinsic(llvm::Intrinsic::ceil, {x}, {t});
      default: break;
    }
    std::string fn;
    switch (op.kind) {
      case OpKind::Exp: fn = "exp"; break;
      case OpKind::Exp2: fn = "exp2"; break;
      case OpKind::Log: fn = "log"; break;
      case OpKind::Log2: fn = "log2"; break;
      case OpKind::Rsqrt: fn = "rsqrt"; break;
      case OpKind::Sin: fn = "sin"; break;
      case OpKind::Cos: fn = "cos"; break;
      case OpKind::Erf: fn = "erf"; break;
      default: unsupported(op);
    }
    // libdevice, linked by the target step.
    fn = "__nv_" + fn + (d == DType::f32 ? "f" : "");
    llvm::FunctionCallee callee = mod_->getOrInsertFunction(fn, llvm::FunctionType::get(t, {t}, false));
    return b_.CreateCall(callee, {x});
  }

  // --- Memory ------------------------------------------------------------------------------
  // How many consecutive registers of `v` (a tile) hold consecutive elements along the last
  // dimension, starting at every multiple of the result.
  int contiguous_regs(const ir::Value* v) {
    const DistributedLayout* l = layout(v);
    const Shape& s = v->type.shape();
    size_t last = s.size() - 1;
    int64_t n = l->num_regs(s);
    int best = 1;
    for (int k = 2; k <= n && k <= 16; k *= 2) {
      bool ok = true;
      for (int64_t r = 0; r < n && ok; ++r) {
        Shape base = l->reg_offset(s, r - r % k), off = l->reg_offset(s, r);
        for (size_t d = 0; d < s.size() && ok; ++d)
          ok = off[d] == base[d] + (d == last ? r % k : 0);
        ok = ok && (base[last] % k) == 0 && off[last] < s[last];
      }
      if (!ok) break;
      best = k;
    }
    return best;
  }

  int vector_width(const ir::Op& op) {
    if (!op.operands[0]->type.is_tile()) return 1;
    return std::min(passes::memory_vector_width(op, axes_), contiguous_regs(op.operands[0]));
  }

  // Runs `body` only where `pred` holds (no branch when there is no predicate); returns the
  // value `body` produced there, or `otherwise` elsewhere.
  llvm::Value* predicated(llvm::Value* pred, llvm::Value* otherwise, const std::function<llvm::Value*()>& body) {
    if (!pred) return body();
    llvm::BasicBlock* from = b_.GetInsertBlock();
    auto* then_bb = llvm::BasicBlock::Create(ctx_, "masked", fn_);
    auto* join = llvm::BasicBlock::Create(ctx_, "join", fn_);
    b_.CreateCondBr(pred, then_bb, join);
    b_.SetInsertPoint(then_bb);
    llvm::Value* v = body();
    llvm::BasicBlock* end = b_.GetInsertBlock();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    if (!otherwise) return nullptr;
    llvm::PHINode* phi = b_.CreatePHI(otherwise->getType(), 2);
    phi->addIncoming(v, end);
    phi->addIncoming(otherwise, from);
    return phi;
  }

  Regs lower_load(const ir::Op& op) {
    const ir::Value* res = op.result();
    llvm::Type* et = memory_type(res->type);
    int vec = vector_width(op);
    const Regs& ptrs = get(op.operands[0]);
    const Regs* mask = op.operands.size() > 1 ? &get(op.operands[1]) : nullptr;
    const Regs* other = op.operands.size() > 2 ? &get(op.operands[2]) : nullptr;
    unsigned bytes = static_cast<unsigned>(mod_->getDataLayout().getTypeAllocSize(et));
    Regs out;
    for (size_t r = 0; r < ptrs.size(); r += static_cast<size_t>(vec)) {
      llvm::Type* vt = vec > 1 ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(et, static_cast<unsigned>(vec))) : et;
      llvm::Value* fallback = nullptr;
      if (mask) {
        fallback = llvm::UndefValue::get(vt);
        for (int j = 0; j < vec; ++j) {
          llvm::Value* o = other ? to_memory((*other)[r + static_cast<size_t>(j)]) : llvm::Constant::getNullValue(et);
          fallback = vec > 1 ? b_.CreateInsertElement(fallback, o, static_cast<uint64_t>(j)) : o;
        }
      }
      llvm::Value* v = predicated(mask ? (*mask)[r] : nullptr, fallback, [&] {
        return b_.CreateAlignedLoad(vt, ptrs[r], llvm::Align(bytes * static_cast<unsigned>(vec)));
      });
      for (int j = 0; j < vec; ++j)
        out.push_back(from_memory(vec > 1 ? b_.CreateExtractElement(v, static_cast<uint64_t>(j)) : v, res->type));
    }
    return out;
  }

  void lower_store(const ir::Op& op) {
    ir::Type vt_ir = op.operands[1]->type;
    llvm::Type* et = memory_type(vt_ir);
    int vec = vector_width(op);
    const Regs& ptrs = get(op.operands[0]);
    const Regs& vals = get(op.operands[1]);
    const Regs* mask = op.operands.size() > 2 ? &get(op.operands[2]) : nullptr;
    unsigned bytes = static_cast<unsigned>(mod_->getDataLayout().getTypeAllocSize(et));
    for (size_t r = 0; r < ptrs.size(); r += static_cast<size_t>(vec)) {
      llvm::Value* v;
      if (vec > 1) {
        v = llvm::UndefValue::get(llvm::FixedVectorType::get(et, static_cast<unsigned>(vec)));
        for (int j = 0; j < vec; ++j) v = b_.CreateInsertElement(v, to_memory(vals[r + static_cast<size_t>(j)]), static_cast<uint64_t>(j));
      } else {
        v = to_memory(vals[r]);
      }
      predicated(mask ? (*mask)[r] : nullptr, nullptr, [&] {
        b_.CreateAlignedStore(v, ptrs[r], llvm::Align(bytes * static_cast<unsigned>(vec)));
        return nullptr;
      });
    }
  }

  // --- Reductions --------------------------------------------------------------------------
  // Applies the combine region of `op` to one pair of element lists.
  std::vector<llvm::Value*> combine(const ir::Op& op, const std::vector<llvm::Value*>& lhs, const std::vector<llvm::Value*>& rhs) {
    const ir::Block& body = *op.regions[0];
    for (size_t q = 0; q < lhs.size(); ++q) {
      vals_[body.args[q].get()] = {lhs[q]};
      vals_[body.args[lhs.size() + q].get()] = {rhs[q]};
    }
    std::vector<llvm::Value*> out;
    for (const Regs& r : block(body)) out.push_back(r[0]);
    return out;
  }

  llvm::Value* shuffle_xor(llvm::Value* v, int mask) {
    llvm::Type* t = v->getType();
    unsigned bits = static_cast<unsigned>(mod_->getDataLayout().getTypeSizeInBits(t));
    auto shfl = [&](llvm::Value* i32) {
      return intrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, {b_.getInt32(0xffffffffu), i32, b_.getInt32(static_cast<uint32_t>(mask)), b_.getInt32(31)});
    };
    if (bits == 64) {
      llvm::Value* x = t->isIntegerTy() ? v : b_.CreateBitCast(v, b_.getInt64Ty());
      llvm::Value* lo = shfl(b_.CreateTrunc(x, b_.getInt32Ty()));
      llvm::Value* hi = shfl(b_.CreateTrunc(b_.CreateLShr(x, 32), b_.getInt32Ty()));
      llvm::Value* r = b_.CreateOr(b_.CreateZExt(lo, b_.getInt64Ty()), b_.CreateShl(b_.CreateZExt(hi, b_.getInt64Ty()), 32));
      return t->isIntegerTy() ? r : b_.CreateBitCast(r, t);
    }
    llvm::Type* it = b_.getIntNTy(bits);
    llvm::Value* x = t->isIntegerTy() ? v : b_.CreateBitCast(v, it);
    llvm::Value* r = shfl(bits == 32 ? x : b_.CreateZExt(x, b_.getInt32Ty()));
    if (bits != 32) r = b_.CreateTrunc(r, it);
    return t->isIntegerTy() ? r : b_.CreateBitCast(r, t);
  }

  // In-thread, then across lanes with butterfly shuffles, then across warps through shared
  // memory. Elements a layout replicates (tiles smaller than the layout) are combined once.
  void lower_reduce(const ir::Op& op) {
    size_t nin = op.operands.size();
    const ir::Value* in0 = op.operands[0];
    const DistributedLayout* l = layout(in0);
    const Shape& shape = in0->type.shape();
    size_t axis = static_cast<size_t>(op.attr_int("axis"));
    // 1. In-thread: group the registers by their index outside the axis.
    std::map<Shape, std::vector<llvm::Value*>> acc;
    std::set<Shape> seen;
    std::vector<Shape> keys;
    for (int64_t r = 0; r < l->num_regs(shape); ++r) {
      Shape off = masked(l->reg_offset(shape, r), shape);
      if (!seen.insert(off).second) continue;  // a replica
      std::vector<llvm::Value*> v;
      for (size_t q = 0; q < nin; ++q) v.push_back(get(op.operands[q])[static_cast<size_t>(r)]);
      off.erase(off.begin() + static_cast<long>(axis));
      auto it = acc.find(off);
      if (it == acc.end()) {
        acc.emplace(off, v);
        keys.push_back(off);
      } else {
        it->second = combine(op, it->second, v);
      }
    }
    // 2. Across the lanes that hold other elements along the axis.
    const passes::ThreadTerm t = l->thread_terms()[axis];
    for (int j = 0; j < t.lane_bits; ++j) {
      if ((t.lane_scale << j) >= shape[axis]) break;
      for (auto& [k, v] : acc) {
        std::vector<llvm::Value*> other;
        for (llvm::Value* x : v) other.push_back(shuffle_xor(x, 1 << (t.lane_shift + j)));
        v = combine(op, v, other);
      }
    }
    // 3. Across warps: partials through shared memory, combined in warp order by every thread.
    int warp_bits = 0;
    while (warp_bits < t.warp_bits && (t.warp_scale << warp_bits) < shape[axis]) ++warp_bits;
    Shape out_shape = shape;
    out_shape.erase(out_shape.begin() + static_cast<long>(axis));
    const ir::Value* res0 = op.result(0);
    if (warp_bits) {
      int64_t nwarps = int64_t{1} << warp_bits;
      int64_t slots = 1;
      for (int64_t d : out_shape) slots *= d;
      std::vector<llvm::Type*> types;
      std::vector<int64_t> base;
      int64_t bytes = 0;
      for (size_t q = 0; q < nin; ++q) {
        types.push_back(memory_type(op.operands[q]->type));
        base.push_back(bytes);
        bytes += slots * nwarps * static_cast<int64_t>(mod_->getDataLayout().getTypeAllocSize(types.back()));
        bytes = (bytes + 15) / 16 * 16;
      }
      llvm::Value* smem = shared(bytes);
      llvm::Value* w = b_.CreateAnd(b_.CreateLShr(warp_, t.warp_shift), static_cast<uint64_t>(nwarps - 1));
      // The slot of each group: its linear index in the result shape.
      std::map<Shape, llvm::Value*> slot;
      std::vector<llvm::Value*> thread;
      auto terms = l->thread_terms();
      for (size_t d = 0; d < shape.size(); ++d) thread.push_back(d == axis ? b_.getInt32(0) : thread_part(l, d));
      for (const Shape& k : keys) {
        std::vector<llvm::Value*> idx;
        for (size_t d = 0, kd = 0; d < shape.size(); ++d) {
          if (d == axis) continue;
          idx.push_back(b_.CreateAnd(b_.CreateAdd(thread[d], b_.getInt32(static_cast<uint32_t>(k[kd++]))), static_cast<uint64_t>(shape[d] - 1)));
        }
        slot[k] = b_.CreateMul(linear(idx, out_shape), b_.getInt32(static_cast<uint32_t>(nwarps)));
      }
      auto addr = [&](size_t q, llvm::Value* s) {
        return b_.CreateGEP(types[q], b_.CreateGEP(b_.getInt8Ty(), smem, b_.getInt64(static_cast<uint64_t>(base[q]))), s);
      };
      for (auto& [k, v] : acc)
        for (size_t q = 0; q < nin; ++q) b_.CreateStore(to_memory(v[q]), addr(q, b_.CreateAdd(slot[k], w)));
      barrier();
      for (auto& [k, v] : acc) {
        std::vector<llvm::Value*> total;
        for (int64_t i = 0; i < nwarps; ++i) {
          std::vector<llvm::Value*> part;
          for (size_t q = 0; q < nin; ++q)
            part.push_back(from_memory(b_.CreateLoad(types[q], addr(q, b_.CreateAdd(slot[k], b_.getInt32(static_cast<uint32_t>(i))))), op.operands[q]->type));
          total = i == 0 ? part : combine(op, total, part);
        }
        v = total;
      }
    }
    // 4. Results: one register per register of the slice layout.
    for (size_t q = 0; q < nin; ++q) {
      if (!res0->type.is_tile()) {
        vals_[op.result(q)] = {acc.begin()->second[q]};
        continue;
      }
      const DistributedLayout* lo = layout(op.result(q));
      Regs out;
      for (int64_t r = 0; r < lo->num_regs(out_shape); ++r) {
        Shape off = masked(lo->reg_offset(out_shape, r), out_shape);
        auto it = acc.find(off);
        TILEDSL_CHECK(it != acc.end(), "reduce: result layout is not the slice of the operand's");
        out.push_back(it->second[q]);
      }
      vals_[op.result(q)] = out;
    }
  }

  // --- Dot (FMA) ---------------------------------------------------------------------------
  // a and b go to shared memory as f32; each thread then accumulates its own elements of the
  // result with one fma per k, in k order (the interpreter's order).
  Regs lower_dot(const ir::Op& op) {
    const ir::Value *a = op.operands[0], *bv = op.operands[1], *acc = op.operands[2];
    int64_t M = a->type.shape()[0], K = a->type.shape()[1], N = bv->type.shape()[1];
    llvm::Type* f32 = b_.getFloatTy();
    llvm::Value* smem = shared((M * K + K * N) * 4);
    auto stage = [&](const ir::Value* v, llvm::Value* base) {
      auto idx = indices(v->type);
      const Regs& regs = get(v);
      for (size_t r = 0; r < regs.size(); ++r)
        b_.CreateStore(b_.CreateFPExt(regs[r], f32), b_.CreateGEP(f32, base, linear(idx[r], v->type.shape())));
    };
    llvm::Value* b_base = b_.CreateGEP(f32, smem, b_.getInt32(static_cast<uint32_t>(M * K)));
    stage(a, smem);
    stage(bv, b_base);
    barrier();
    const DistributedLayout* l = layout(acc);
    const Shape& shape = acc->type.shape();
    Regs out = get(acc);
    auto idx = indices(acc->type);
    // Distinct rows and columns this thread needs.
    std::map<int64_t, llvm::Value*> rows, cols;
    std::vector<std::pair<int64_t, int64_t>> rc;
    for (int64_t r = 0; r < l->num_regs(shape); ++r) {
      Shape off = masked(l->reg_offset(shape, r), shape);
      rows.try_emplace(off[0], idx[static_cast<size_t>(r)][0]);
      cols.try_emplace(off[1], idx[static_cast<size_t>(r)][1]);
      rc.push_back({off[0], off[1]});
    }
    for (int64_t k = 0; k < K; ++k) {
      std::map<int64_t, llvm::Value*> av, bvals;
      for (auto& [key, m] : rows)
        av[key] = b_.CreateLoad(f32, b_.CreateGEP(f32, smem, b_.CreateAdd(b_.CreateMul(m, b_.getInt32(static_cast<uint32_t>(K))), b_.getInt32(static_cast<uint32_t>(k)))));
      for (auto& [key, n] : cols)
        bvals[key] = b_.CreateLoad(f32, b_.CreateGEP(f32, b_base, b_.CreateAdd(n, b_.getInt32(static_cast<uint32_t>(k * N)))));
      for (size_t r = 0; r < out.size(); ++r)
        out[r] = intrinsic(llvm::Intrinsic::fma, {av[rc[r].first], bvals[rc[r].second], out[r]}, {f32});
    }
    return out;
  }

  // --- Control flow ------------------------------------------------------------------------
  void lower_for(const ir::Op& op) {
    const ir::Block& body = *op.regions[0];
    llvm::Value* lo = get(op.operands[0])[0];
    llvm::Value* hi = get(op.operands[1])[0];
    llvm::Value* step = get(op.operands[2])[0];
    bool uns = is_unsigned(op.operands[0]->type.dtype());
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, "for.header", fn_);
    auto* loop = llvm::BasicBlock::Create(ctx_, "for.body", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, "for.exit", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(lo->getType(), 2, "iv");
    iv->addIncoming(lo, pre);
    std::vector<std::vector<llvm::PHINode*>> phis;
    for (size_t i = 3; i < op.operands.size(); ++i) {
      std::vector<llvm::PHINode*> p;
      Regs regs;
      for (llvm::Value* init : get(op.operands[i])) {
        p.push_back(b_.CreatePHI(init->getType(), 2));
        p.back()->addIncoming(init, pre);
        regs.push_back(p.back());
      }
      vals_[body.args[i - 2].get()] = regs;
      vals_[op.result(i - 3)] = regs;
      phis.push_back(p);
    }
    b_.CreateCondBr(uns ? b_.CreateICmpULT(iv, hi) : b_.CreateICmpSLT(iv, hi), loop, exit);
    b_.SetInsertPoint(loop);
    vals_[body.args[0].get()] = {iv};
    auto yielded = block(body);
    llvm::Value* next = b_.CreateAdd(iv, step);
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    b_.CreateBr(header);
    iv->addIncoming(next, latch);
    for (size_t i = 0; i < phis.size(); ++i)
      for (size_t r = 0; r < phis[i].size(); ++r) phis[i][r]->addIncoming(yielded[i][r], latch);
    b_.SetInsertPoint(exit);
  }

  void lower_if(const ir::Op& op) {
    auto* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
    auto* else_bb = llvm::BasicBlock::Create(ctx_, "if.else", fn_);
    auto* join = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
    b_.CreateCondBr(get(op.operands[0])[0], then_bb, else_bb);
    std::vector<Regs> out[2];
    llvm::BasicBlock* ends[2];
    llvm::BasicBlock* starts[2] = {then_bb, else_bb};
    for (int k = 0; k < 2; ++k) {
      b_.SetInsertPoint(starts[k]);
      out[k] = block(*op.regions[static_cast<size_t>(k)]);
      ends[k] = b_.GetInsertBlock();
      b_.CreateBr(join);
    }
    b_.SetInsertPoint(join);
    for (size_t i = 0; i < op.results.size(); ++i) {
      Regs regs;
      for (size_t r = 0; r < out[0][i].size(); ++r) {
        llvm::PHINode* p = b_.CreatePHI(out[0][i][r]->getType(), 2);
        p->addIncoming(out[0][i][r], ends[0]);
        p->addIncoming(out[1][i][r], ends[1]);
        regs.push_back(p);
      }
      vals_[op.result(i)] = regs;
    }
  }

  void annotate() {
    llvm::NamedMDNode* md = mod_->getOrInsertNamedMetadata("nvvm.annotations");
    auto add = [&](const char* key, int v) {
      md->addOperand(llvm::MDNode::get(ctx_, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx_, key),
                                              llvm::ConstantAsMetadata::get(b_.getInt32(static_cast<uint32_t>(v)))}));
    };
    add("kernel", 1);
    add("maxntidx", 32 * opts_.num_warps);
  }

  const ir::Function& f_;
  llvm::LLVMContext& ctx_;
  const CompileOptions& opts_;
  std::unique_ptr<llvm::Module> mod_;
  llvm::IRBuilder<> b_;
  passes::AxisInfoMap axes_;
  llvm::Function* fn_ = nullptr;
  llvm::Value *lane_ = nullptr, *warp_ = nullptr;
  llvm::GlobalVariable* smem_ = nullptr;
  int64_t smem_bytes_ = 0;
  std::unordered_map<const ir::Value*, Regs> vals_;
};
}  // namespace

std::unique_ptr<llvm::Module> lower_to_llvm(const ir::Function& f, llvm::LLVMContext& ctx, const CompileOptions& opts) {
  ir::walk(f.body, [&](const ir::Op* op) {
    for (const auto& r : op->results)
      if (r->type.is_tile()) {
        const auto* l = passes::layout_of(r->type);
        TILEDSL_CHECK(l, "codegen: tile value without a layout (run assign_layouts first): ", r->type.str());
        if (l->num_warps() != opts.num_warps)
          throw Error(fmt::format("codegen: kernel '{}' was given layouts for {} warps but is compiled for {}", f.name,
                                  l->num_warps(), opts.num_warps));
      }
  });
  return Lowering(f, ctx, opts).run();
}

}  // namespace tiledsl::codegen
