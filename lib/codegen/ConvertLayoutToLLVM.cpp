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

}  // namespace tiledsl::codegen
