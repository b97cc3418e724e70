#include "codegen/Lowering.h"

namespace tiledsl::codegen {

// Moves the elements of `src` (a tile of `src_type`) into the registers of `dst_type`
// through shared memory; dst element `i` reads src element `src_of(i)` (row-major linear).
Regs Lowering::shuffle(const ir::Op& op, const Regs& src, ir::Type src_type, ir::Type dst_type,
                       const std::function<llvm::Value*(const std::vector<llvm::Value*>&)>& src_of) {
  llvm::Type* et = memory_type(src_type);
  int64_t bytes = src_type.numel() * static_cast<int64_t>(mod_->getDataLayout().getTypeAllocSize(et));
  llvm::Value* base = shared(op, bytes);
  auto sidx = indices(src_type);
  for (size_t r = 0; r < src.size(); ++r)
    b_.CreateStore(to_memory(src[r]), b_.CreateGEP(et, base, linear(sidx[r], src_type.shape())));
  barrier();
  Regs out;
  for (const auto& idx : indices(dst_type))
    out.push_back(from_memory(b_.CreateLoad(et, b_.CreateGEP(et, base, src_of(idx))), src_type));
  return out;
}

// --- Shapes ------------------------------------------------------------------------------
// Register-to-register when source and result distribute their common dimensions alike
// (broadcast, expand_dims, unit-dimension reshapes between a layout and its slice);
// otherwise through shared memory.
Regs Lowering::lower_shape(const ir::Op& op) {
  const ir::Value* in = op.operands[0];
  const ir::Value* res = op.result();
  const Shape &is = in->type.shape(), &os = res->type.shape();
  if (op.kind != OpKind::Trans) {
    if (auto src_dim = passes::paired_dims(op.kind, is, os))
      if (auto sources = passes::register_sources(in->type, res->type, *src_dim)) {
        Regs out;
        for (int64_t r : *sources) out.push_back(get(in)[static_cast<size_t>(r)]);
        return out;
      }
  }
  const auto& perm = op.kind == OpKind::Trans ? op.attr_ints("perm") : std::vector<int64_t>{};
  return shuffle(op, get(in), in->type, res->type, [&](const std::vector<llvm::Value*>& idx) {
    if (op.kind != OpKind::Trans) return linear(idx, os);  // same row-major order
    std::vector<llvm::Value*> src(is.size());
    for (size_t d = 0; d < idx.size(); ++d) src[static_cast<size_t>(perm[d])] = idx[d];
    return linear(src, is);
  });
}

// The source goes to shared memory row-major; each result register reads the element at its own
// position with the index's value (the index register of the same number: the index has the
// result's layout) along the axis, clamped into the source's dimension (the interpreter rejects
// an index outside it; on the GPU it is undefined, and the clamp keeps the read in the buffer).
Regs Lowering::lower_gather(const ir::Op& op) {
  const ir::Value *src = op.operands[0], *index = op.operands[1];
  const Shape& ss = src->type.shape();
  const size_t axis = static_cast<size_t>(op.attr_int("axis"));
  const Regs& at = get(index);
  const bool is_signed = !is_unsigned(index->type.dtype());
  llvm::Type* i32 = b_.getInt32Ty();
  const uint32_t last = static_cast<uint32_t>(ss[axis] - 1);
  size_t r = 0;
  return shuffle(op, get(src), src->type, op.result()->type, [&](const std::vector<llvm::Value*>& idx) {
    llvm::Value* i = at[r++];
    // Clamp in the index's own type first, so that no wide value truncates into range.
    llvm::Type* it = i->getType();
    llvm::Value* hi = llvm::ConstantInt::get(it, last);
    llvm::Value* below = is_signed ? b_.CreateICmpSLT(i, llvm::ConstantInt::get(it, 0)) : b_.getFalse();
    llvm::Value* above = is_signed ? b_.CreateICmpSGT(i, hi) : b_.CreateICmpUGT(i, hi);
    i = b_.CreateSelect(below, llvm::ConstantInt::get(it, 0), b_.CreateSelect(above, hi, i));
    std::vector<llvm::Value*> src_idx = idx;
    src_idx[axis] = b_.CreateIntCast(i, i32, false);
    return linear(src_idx, ss);
  });
}

}  // namespace tiledsl::codegen
