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
      if (auto regs = register_map(in, res, *src_dim)) return *regs;
  }
  const auto& perm = op.kind == OpKind::Trans ? op.attr_ints("perm") : std::vector<int64_t>{};
  return shuffle(op, get(in), in->type, res->type, [&](const std::vector<llvm::Value*>& idx) {
    if (op.kind != OpKind::Trans) return linear(idx, os);  // same row-major order
    std::vector<llvm::Value*> src(is.size());
    for (size_t d = 0; d < idx.size(); ++d) src[static_cast<size_t>(perm[d])] = idx[d];
    return linear(src, is);
  });
}


// Result registers taken from source registers, when every thread already holds what it
// needs: the thread terms agree on paired dimensions and each result register's offset
// matches a source register's.
std::optional<Regs> Lowering::register_map(const ir::Value* in, const ir::Value* res, const std::vector<int>& src_dim) {
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

}  // namespace tiledsl::codegen
