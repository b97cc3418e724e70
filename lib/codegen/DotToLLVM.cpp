#include "codegen/Lowering.h"

namespace tiledsl::codegen {

// --- Dot (FMA) ---------------------------------------------------------------------------
// a and b go to shared memory in their own element type; each thread then accumulates its own
// elements of the result with one f32 fma per k, in k order (the interpreter's order). The k
// loop stays a loop (not unrolled at lowering), so only the accumulators live in registers.
Regs Lowering::lower_dot(const ir::Op& op) {
  const ir::Value *a = op.operands[0], *bv = op.operands[1], *acc = op.operands[2];
  int64_t M = a->type.shape()[0], K = a->type.shape()[1], N = bv->type.shape()[1];
  llvm::Type* f32 = b_.getFloatTy();
  llvm::Type* et = memory_type(a->type);  // a and b share their dtype
  llvm::Value* smem = shared(op, (M * K + K * N) * alloc_size(et));
  auto stage = [&](const ir::Value* v, llvm::Value* base) {
    auto idx = indices(v->type);
    const Regs& regs = get(v);
    for (size_t r = 0; r < regs.size(); ++r)
      b_.CreateStore(regs[r], b_.CreateGEP(et, base, linear(idx[r], v->type.shape())));
  };
  llvm::Value* b_base = b_.CreateGEP(et, smem, b_.getInt32(static_cast<uint32_t>(M * K)));
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
    Shape off = passes::wrap_offset(l->reg_offset(shape, r), shape);
    rows.try_emplace(off[0], b_.CreateMul(idx[static_cast<size_t>(r)][0], b_.getInt32(static_cast<uint32_t>(K))));
    cols.try_emplace(off[1], idx[static_cast<size_t>(r)][1]);
    rc.push_back({off[0], off[1]});
  }

  llvm::BasicBlock* entry = b_.GetInsertBlock();
  llvm::Function* fn = entry->getParent();
  auto* loop = llvm::BasicBlock::Create(b_.getContext(), "dot.k", fn);
  auto* done = llvm::BasicBlock::Create(b_.getContext(), "dot.done", fn);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  llvm::PHINode* k = b_.CreatePHI(b_.getInt32Ty(), 2, "k");
  k->addIncoming(b_.getInt32(0), entry);
  std::vector<llvm::PHINode*> sums;
  for (llvm::Value* v : out) {
    sums.push_back(b_.CreatePHI(f32, 2));
    sums.back()->addIncoming(v, entry);
  }
  std::map<int64_t, llvm::Value*> av, bvals;
  for (auto& [key, row_base] : rows)
    av[key] = b_.CreateFPExt(b_.CreateLoad(et, b_.CreateGEP(et, smem, b_.CreateAdd(row_base, k))), f32);
  llvm::Value* k_row = b_.CreateMul(k, b_.getInt32(static_cast<uint32_t>(N)));
  for (auto& [key, n] : cols)
    bvals[key] = b_.CreateFPExt(b_.CreateLoad(et, b_.CreateGEP(et, b_base, b_.CreateAdd(n, k_row))), f32);
  for (size_t r = 0; r < out.size(); ++r)
    out[r] = intrinsic(llvm::Intrinsic::fma, {av[rc[r].first], bvals[rc[r].second], sums[r]}, {f32});
  llvm::Value* next = b_.CreateAdd(k, b_.getInt32(1));
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  k->addIncoming(next, latch);
  for (size_t r = 0; r < out.size(); ++r) sums[r]->addIncoming(out[r], latch);
  b_.CreateCondBr(b_.CreateICmpULT(next, b_.getInt32(static_cast<uint32_t>(K))), loop, done);
  b_.SetInsertPoint(done);
  return out;  // the last iteration's sums: `done` is reached only from the loop
}

}  // namespace tiledsl::codegen
