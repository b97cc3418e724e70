#include "codegen/Lowering.h"

namespace tiledsl::codegen {

// --- Dot (FMA) ---------------------------------------------------------------------------
// a and b go to shared memory as f32; each thread then accumulates its own elements of the
// result with one fma per k, in k order (the interpreter's order).
Regs Lowering::lower_dot(const ir::Op& op) {
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

}  // namespace tiledsl::codegen
