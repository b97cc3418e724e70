// Lowering: the kernel function, types, thread indices, shared memory, and the dispatch of
// each op to the file of its family (Lowering.h lists them). The files follow the op
// families of ir/Ops.def.
#include "codegen/Lower.h"

#include "codegen/Lowering.h"

namespace tiledsl::codegen {

std::unique_ptr<llvm::Module> Lowering::run() {
  std::vector<llvm::Type*> params;
  for (size_t i = 0; i < f_.num_args(); ++i) params.push_back(type_of(f_.arg(i)->type));
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, f_.name, mod_.get());
  for (size_t i = 0; i < f_.num_args(); ++i) {
    fn_->getArg(static_cast<unsigned>(i))->setName(f_.arg_names.at(i));
    vals_[f_.arg(i)] = {fn_->getArg(static_cast<unsigned>(i))};
  }
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));
  tid_ = intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {});
  lane_ = b_.CreateAnd(tid_, 31, "lane");
  // The warp's index, broadcast from lane 0 so that ptxas knows it is the same in every lane:
  // values made of it (wgmma's matrix descriptors, warp offsets) then live in uniform registers
  // rather than being moved to them per instruction (R2UR). Removed again when nothing uses it.
  llvm::Value* warp_bits = b_.CreateLShr(tid_, 5);
  warp_ = intrinsic(llvm::Intrinsic::nvvm_shfl_sync_idx_i32,
                    {b_.getInt32(0xffffffffu), warp_bits, b_.getInt32(0), b_.getInt32(0x1f)});
  warp_->setName("warp");
  // `.extern .shared .align 1024 .b8 tiledsl_smem[]`: sized at launch (the function's
  // shared_bytes attribute), so a kernel may use more than the 48 KiB of static shared memory.
  smem_ = new llvm::GlobalVariable(*mod_, llvm::ArrayType::get(b_.getInt8Ty(), 0), false,
                                   llvm::GlobalValue::ExternalLinkage, nullptr, "tiledsl_smem", nullptr,
                                   llvm::GlobalValue::NotThreadLocal, kShared);
  smem_->setAlignment(llvm::Align(1024));  // swizzled dot operands (DotToLLVM.cpp) need 1024
  block(f_.body);
  b_.CreateRetVoid();
  for (llvm::Value* v : {warp_, warp_bits})
    if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v); inst && inst->use_empty()) inst->eraseFromParent();
  finish_shared_memory();
  annotate();
  return std::move(mod_);
}

llvm::Type* Lowering::scalar_type(DType t) {
  switch (t) {
    case DType::i1:
      return b_.getInt1Ty();
    case DType::i8:
    case DType::u8:
      return b_.getInt8Ty();
    case DType::i16:
    case DType::u16:
      return b_.getInt16Ty();
    case DType::i32:
    case DType::u32:
      return b_.getInt32Ty();
    case DType::i64:
    case DType::u64:
      return b_.getInt64Ty();
    case DType::f16:
      return b_.getHalfTy();
    case DType::bf16:
      return b_.getBFloatTy();
    case DType::f32:
      return b_.getFloatTy();
    case DType::f64:
      return b_.getDoubleTy();
    case DType::f8e4m3:
    case DType::f8e5m2:
      return b_.getInt8Ty();  // the bits; cast() converts them
    default:
      unsupported(fmt::format("element type {}", name(t)));
  }
}

llvm::Type* Lowering::type_of(ir::Type t) {
  ir::Type e = t.element();
  if (e.is_pointer()) return b_.getPtrTy(kGlobal);
  return scalar_type(e.dtype());
}

// The thread part of dimension `d` of `l`'s index, as an i32.
llvm::Value* Lowering::thread_part(const DistributedLayout* l, size_t d) {
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

std::vector<std::vector<llvm::Value*>> Lowering::indices(ir::Type type) {
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

llvm::Value* Lowering::linear(const std::vector<llvm::Value*>& idx, const Shape& shape, int64_t row_pad) {
  llvm::Value* v = b_.getInt32(0);
  for (size_t d = 0; d < idx.size(); ++d) {
    const int64_t extent = shape[d] + (d + 1 == idx.size() ? row_pad : 0);
    v = b_.CreateAdd(b_.CreateMul(v, b_.getInt32(static_cast<uint32_t>(extent))), idx[d]);
  }
  return v;
}

Lowering::Owned Lowering::owned(ir::Type type) {
  Owned o;
  if (!type.is_tile()) {
    o.regs = {0};
    o.pred = b_.CreateICmpEQ(tid_, b_.getInt32(0));
    return o;
  }
  const DistributedLayout* l = passes::layout_of(type);
  const Shape& shape = type.shape();
  // Registers: the first of each distinct (wrapped) offset.
  std::set<Shape> seen;
  for (int64_t r = 0; r < l->num_regs(shape); ++r)
    if (seen.insert(passes::wrap_offset(l->reg_offset(shape, r), shape)).second) o.regs.push_back(r);
  // Threads: lane and warp bits that move no index (they are beyond the tile, or belong to a
  // dimension a slice removed) must be zero.
  uint32_t lane_used = 0, warp_used = 0;
  auto terms = l->thread_terms();
  for (size_t d = 0; d < shape.size(); ++d) {
    const passes::ThreadTerm& t = terms[d];
    for (int j = 0; j < t.lane_bits; ++j)
      if ((t.lane_scale << j) < shape[d]) lane_used |= 1u << (t.lane_shift + j);
    for (int j = 0; j < t.warp_bits; ++j)
      if ((t.warp_scale << j) < shape[d]) warp_used |= 1u << (t.warp_shift + j);
  }
  uint32_t lane_free = 31u & ~lane_used, warp_free = static_cast<uint32_t>(l->num_warps() - 1) & ~warp_used;
  if (lane_free || warp_free) {
    llvm::Value* free = b_.CreateOr(b_.CreateAnd(lane_, lane_free), b_.CreateAnd(warp_, warp_free));
    o.pred = b_.CreateICmpEQ(free, b_.getInt32(0));
  }
  return o;
}

// --- Shared memory ---------------------------------------------------------------------
llvm::Value* Lowering::shared(const ir::Op& op, int64_t bytes, bool sync) {
  TILEDSL_CHECK(op.has_attr("smem_offset") && op.has_attr("smem_bytes") && f_.attrs.count("shared_bytes"),
                "codegen: ", op.name(), " uses shared memory but allocate-shared gave it none (run the pipeline)");
  TILEDSL_CHECK(bytes <= op.attr_int("smem_bytes"), "codegen: ", op.name(), " needs ", bytes,
                " bytes of shared memory; allocate-shared reserved ", op.attr_int("smem_bytes"));
  if (sync) barrier();
  return b_.CreateGEP(b_.getInt8Ty(), smem_, b_.getInt64(static_cast<uint64_t>(op.attr_int("smem_offset"))));
}

int64_t dynamic_shared_bytes(const ir::Function& f) {
  auto it = f.attrs.find("shared_bytes");
  return it == f.attrs.end() ? 0 : std::get<int64_t>(it->second);
}

void Lowering::finish_shared_memory() {
  if (smem_->use_empty()) smem_->eraseFromParent();
}

Regs Lowering::from_owners(const ir::Op& op, const Regs& regs, ir::Type type) {
  llvm::Type* et = memory_type(type);
  llvm::Value* base = shared(op, std::max<int64_t>(type.numel(), 1) * alloc_size(et));
  Owned o = owned(type);
  std::vector<std::vector<llvm::Value*>> idx;
  if (type.is_tile()) idx = indices(type);
  auto addr = [&](size_t r) { return type.is_tile() ? b_.CreateGEP(et, base, linear(idx[r], type.shape())) : base; };
  predicated(o.pred, nullptr, [&] {
    for (int64_t r : o.regs) b_.CreateStore(to_memory(regs[static_cast<size_t>(r)]), addr(static_cast<size_t>(r)));
    return nullptr;
  });
  barrier();
  Regs out;
  for (size_t r = 0; r < regs.size(); ++r) out.push_back(from_memory(b_.CreateLoad(et, addr(r)), type));
  return out;
}

// --- Blocks and ops ----------------------------------------------------------------------
// Lowers the ops of `blk` up to its yield; returns the yielded values.
std::vector<Regs> Lowering::block(const ir::Block& blk) {
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

void Lowering::lower(const ir::Op& op) {
  switch (op.kind) {
    case OpKind::For:
      return lower_for(op);
    case OpKind::If:
      return lower_if(op);
    case OpKind::While:
      return lower_while(op);
    case OpKind::Barrier:
      return barrier();
    case OpKind::Reduce:
      return lower_reduce(op);
    case OpKind::Store:
      return lower_store(op);
    case OpKind::Load:
      vals_[op.result()] = lower_load(op);
      return;
    case OpKind::Dot:
      vals_[op.result()] = lower_dot(op);
      return;
    case OpKind::Scan:
      return lower_scan(op);
    case OpKind::Philox:
      return lower_philox(op);
    case OpKind::InlineAsm:
      return lower_inline_asm(op);
    case OpKind::AtomicRMW:
    case OpKind::AtomicCAS:
      vals_[op.result()] = lower_atomic(op);
      return;
    case OpKind::Print:
      return lower_print(op);
    case OpKind::Assert:
      return lower_assert(op);
    case OpKind::Assume:  // LLVM may use a scalar fact too; the passes have used it already
      if (op.operands[0]->type.shape().empty()) intrinsic(llvm::Intrinsic::assume, {get(op.operands[0])[0]});
      return;
    default:
      break;
  }
  vals_[op.result()] = value_op(op);
}

Regs Lowering::value_op(const ir::Op& op) {
  const ir::Value* res = op.result();
  switch (op.kind) {
    case OpKind::Constant: {
      const auto& a = op.attrs.at("value");
      llvm::Type* t = type_of(res->type);
      if (is_fp8(res->type.dtype()))
        return {b_.getInt8(static_cast<uint8_t>(encode_float(float_format(res->type.dtype()), std::get<double>(a))))};
      if (t->isFloatingPointTy())
        return {llvm::ConstantFP::get(
            t, std::holds_alternative<double>(a) ? std::get<double>(a) : static_cast<double>(std::get<int64_t>(a)))};
      int64_t v = std::holds_alternative<int64_t>(a) ? std::get<int64_t>(a) : static_cast<int64_t>(std::get<double>(a));
      return {llvm::ConstantInt::get(t, static_cast<uint64_t>(v), true)};
    }
    case OpKind::ProgramId:
    case OpKind::NumPrograms: {
      static const llvm::Intrinsic::ID ids[2][3] = {
          {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
           llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z},
          {llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y,
           llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z}};
      return {intrinsic(ids[op.kind == OpKind::NumPrograms][op.attr_int("axis")], {})};
    }
    case OpKind::Arange: {
      Regs out;
      for (const auto& idx : indices(res->type))
        out.push_back(b_.CreateAdd(idx[0], b_.getInt32(static_cast<uint32_t>(op.attr_int("start")))));
      return out;
    }
    case OpKind::Splat:
      return Regs(static_cast<size_t>(num_regs(res)), get(op.operands[0])[0]);
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape:
    case OpKind::ConvertLayout:
    case OpKind::Trans:
      return lower_shape(op);
    case OpKind::Gather:
      return lower_gather(op);
    case OpKind::MultipleOf:
    case OpKind::MaxContiguous:
      return get(op.operands[0]);
    default:
      break;
  }
  if (ir::has_trait(op.kind, ir::kElementwise)) return lower_elementwise(op);
  unsupported(op);
}

void Lowering::annotate() {
  llvm::NamedMDNode* md = mod_->getOrInsertNamedMetadata("nvvm.annotations");
  auto add = [&](const char* key, int v) {
    md->addOperand(llvm::MDNode::get(ctx_, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx_, key),
                                            llvm::ConstantAsMetadata::get(b_.getInt32(static_cast<uint32_t>(v)))}));
  };
  add("kernel", 1);
  add("maxntidx", 32 * opts_.num_warps);
}

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
