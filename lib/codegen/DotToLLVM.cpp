#include "codegen/Lowering.h"

namespace tiledsl::codegen {

// --- Dot (FMA) ---------------------------------------------------------------------------
// a and b go to shared memory in their own element type; each thread then accumulates its own
// elements of the result with one f32 fma per k, in k order (the interpreter's order). The k
// loop stays a loop (not unrolled at lowering), so only the accumulators live in registers.
Regs Lowering::lower_dot(const ir::Op& op) {
  if (const auto* mma = dynamic_cast<const passes::MmaLayout*>(layout(op.result()))) return lower_dot_mma(op, *mma);
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

// --- Dot (tensor cores: mma.sync.m16n8k16) ------------------------------------------------
// a goes to shared memory row-major [M][K] and b transposed [N][K], so that every operand
// register of the instruction (two consecutive k of one row of a, or of one column of b) is
// one aligned 32-bit load. Each warp then walks K in steps of 16: it loads the a fragments of
// its row blocks and the b fragments of its column blocks and issues one mma per pair, the
// accumulators staying in registers in the mma layout (passes::MmaLayout). The sum over k is
// the tensor cores' (docs/language.md states the bound), not the FMA path's k order.
Regs Lowering::lower_dot_mma(const ir::Op& op, const passes::MmaLayout& l) {
  const ir::Value *a = op.operands[0], *bv = op.operands[1], *acc = op.operands[2];
  const int64_t M = a->type.shape()[0], K = a->type.shape()[1], N = bv->type.shape()[1];
  llvm::Type* et = memory_type(a->type);  // f16 or bf16, 2 bytes
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Value* smem = shared(op, (M * K + K * N) * alloc_size(et));
  llvm::Value* bt = b_.CreateGEP(et, smem, b_.getInt32(static_cast<uint32_t>(M * K)));
  auto stage = [&](const ir::Value* v, llvm::Value* base, bool transpose) {
    auto idx = indices(v->type);
    const Regs& regs = get(v);
    const int64_t cols = v->type.shape()[1], rows = v->type.shape()[0];
    for (size_t r = 0; r < regs.size(); ++r) {
      llvm::Value* at =
          transpose ? b_.CreateAdd(b_.CreateMul(idx[r][1], b_.getInt32(static_cast<uint32_t>(rows))), idx[r][0])
                    : b_.CreateAdd(b_.CreateMul(idx[r][0], b_.getInt32(static_cast<uint32_t>(cols))), idx[r][1]);
      b_.CreateStore(regs[r], b_.CreateGEP(et, base, at));
    }
  };
  stage(a, smem, false);
  stage(bv, bt, true);
  barrier();

  // Lane l holds rows (or columns) l / 4 and pairs of k starting at 2 (l % 4).
  llvm::Value* g = b_.CreateLShr(lane_, 2);
  llvm::Value* t2 = b_.CreateShl(b_.CreateAnd(lane_, 3), 1);
  llvm::Value* warp_m = b_.CreateAnd(warp_, l.warps_m() - 1);
  llvm::Value* warp_n = b_.CreateLShr(warp_, static_cast<uint64_t>(__builtin_ctz(static_cast<unsigned>(l.warps_m()))));
  const Shape& shape = acc->type.shape();
  const int64_t bm_count = l.blocks_m(shape), bn_count = l.blocks_n(shape);
  // 32 bits at element `row * K + k` of an array of 16-bit elements.
  auto word = [&](llvm::Value* base, llvm::Value* row, int64_t k_const, llvm::Value* k) {
    llvm::Value* at = b_.CreateAdd(b_.CreateMul(row, b_.getInt32(static_cast<uint32_t>(K))),
                                   b_.CreateAdd(k, b_.getInt32(static_cast<uint32_t>(k_const))));
    return b_.CreateAlignedLoad(i32, b_.CreateGEP(et, base, at), llvm::Align(4));
  };
  std::vector<llvm::Value*> a_row(static_cast<size_t>(bm_count)), b_col(static_cast<size_t>(bn_count));
  for (int64_t bm = 0; bm < bm_count; ++bm)
    a_row[static_cast<size_t>(bm)] =
        b_.CreateAdd(b_.CreateAdd(b_.CreateMul(warp_m, b_.getInt32(16)), g),
                     b_.getInt32(static_cast<uint32_t>(bm * passes::MmaLayout::kRows * l.warps_m())));
  for (int64_t bn = 0; bn < bn_count; ++bn)
    b_col[static_cast<size_t>(bn)] =
        b_.CreateAdd(b_.CreateAdd(b_.CreateMul(warp_n, b_.getInt32(8)), g),
                     b_.getInt32(static_cast<uint32_t>(bn * passes::MmaLayout::kCols * l.warps_n())));
  const char* ab = a->type.dtype() == DType::bf16 ? "bf16" : "f16";
  const std::string text = fmt::format(
      "mma.sync.aligned.m16n8k16.row.col.f32.{0}.{0}.f32 {{$0, $1, $2, $3}}, {{$4, $5, $6, $7}}, {{$8, $9}}, "
      "{{$10, $11, $12, $13}};",
      ab);
  llvm::Type* f32 = b_.getFloatTy();
  llvm::Type* result = llvm::StructType::get(ctx_, {f32, f32, f32, f32});
  Regs out = get(acc);
  for (int64_t k0 = 0; k0 < K; k0 += 16) {
    std::vector<std::array<llvm::Value*, 4>> af(static_cast<size_t>(bm_count));
    std::vector<std::array<llvm::Value*, 2>> bf(static_cast<size_t>(bn_count));
    for (int64_t bm = 0; bm < bm_count; ++bm) {
      llvm::Value* r0 = a_row[static_cast<size_t>(bm)];
      llvm::Value* r1 = b_.CreateAdd(r0, b_.getInt32(8));
      af[static_cast<size_t>(bm)] = {word(smem, r0, k0, t2), word(smem, r1, k0, t2), word(smem, r0, k0 + 8, t2),
                                     word(smem, r1, k0 + 8, t2)};
    }
    for (int64_t bn = 0; bn < bn_count; ++bn) {
      llvm::Value* n = b_col[static_cast<size_t>(bn)];
      bf[static_cast<size_t>(bn)] = {word(bt, n, k0, t2), word(bt, n, k0 + 8, t2)};
    }
    for (int64_t bm = 0; bm < bm_count; ++bm)
      for (int64_t bn = 0; bn < bn_count; ++bn) {
        size_t r = static_cast<size_t>((bm * bn_count + bn) * 4);
        const auto& x = af[static_cast<size_t>(bm)];
        const auto& y = bf[static_cast<size_t>(bn)];
        llvm::Value* d = inline_ptx(text, "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3", result,
                                    {x[0], x[1], x[2], x[3], y[0], y[1], out[r], out[r + 1], out[r + 2], out[r + 3]});
        for (unsigned e = 0; e < 4; ++e) out[r + e] = b_.CreateExtractValue(d, e);
      }
  }
  return out;
}

}  // namespace tiledsl::codegen
