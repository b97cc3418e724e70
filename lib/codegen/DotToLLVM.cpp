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
// a [M][K] and b [K][N] go to shared memory row-major, in 16-byte vector stores where the
// operand's layout gives a thread 8 consecutive elements of a row (as loads' layouts do), with
// the 16-byte chunks of each 128-byte line XOR-swizzled by the line's index (swizzled() below),
// so that the 8 rows ldmatrix reads at once fall in 8 different bank groups. Each warp then walks
// K in steps of 16: ldmatrix.x4 gives the a fragments of one 16-row block, ldmatrix.x4.trans
// the b fragments of two 8-column blocks (x2 for a last odd one), and one mma.sync per pair of
// blocks accumulates in registers in the mma layout (passes::MmaLayout). The sum over k is the
// tensor cores' (docs/language.md states the bound), not the FMA path's k order. ldmatrix reads
// shared memory that LLVM does not see it read: it is emitted with side effects, so that it stays
// after the staging stores and the barrier, in program order.
namespace {
// The byte offset of a 16-bit element in a swizzled row-major array: bits 4-6 (the 16-byte
// chunk within a 128-byte line) XORed with bits 7-9 (the line's index mod 8). The array starts
// 128-byte aligned and its rows are a multiple of 16 bytes, so 16-byte chunks stay whole.
llvm::Value* swizzled(llvm::IRBuilder<>& b, llvm::Value* byte_offset) {
  llvm::Value* line = b.CreateAnd(b.CreateLShr(byte_offset, 7), 7);
  return b.CreateXor(byte_offset, b.CreateShl(line, 4));
}
}  // namespace

Regs Lowering::lower_dot_mma(const ir::Op& op, const passes::MmaLayout& l) {
  const ir::Value *a = op.operands[0], *bv = op.operands[1], *acc = op.operands[2];
  const int64_t M = a->type.shape()[0], K = a->type.shape()[1], N = bv->type.shape()[1];
  llvm::Type* et = memory_type(a->type);  // f16 or bf16, 2 bytes
  llvm::Type* i32 = b_.getInt32Ty();
  TILEDSL_CHECK(op.attr_int("smem_offset") % 128 == 0, "codegen: a dot's shared buffer must be 128-byte aligned");
  llvm::Value* smem = shared(op, (M * K + K * N) * 2);
  const int64_t b_base = M * K * 2;  // bytes; a multiple of 512
  auto u32 = [&](int64_t v) { return b_.getInt32(static_cast<uint32_t>(v)); };

  // Stores `v` ([rows][cols], row-major at byte `base`) in runs of up to 8 elements.
  auto stage = [&](const ir::Value* v, int64_t base) {
    const DistributedLayout* vl = layout(v);
    const Shape& shape = v->type.shape();
    const int64_t cols = shape[1], n = vl->num_regs(shape);
    auto terms = vl->thread_terms();
    int vec = 8;
    auto fits = [&](int w) {
      if (n % w || (terms[1].lane_bits && terms[1].lane_scale % w) || (terms[1].warp_bits && terms[1].warp_scale % w))
        return false;
      for (int64_t r = 0; r < n; r += w) {
        Shape first = passes::wrap_offset(vl->reg_offset(shape, r), shape);
        if (first[1] % w) return false;
        for (int e = 1; e < w; ++e)
          if (passes::wrap_offset(vl->reg_offset(shape, r + e), shape) != Shape{first[0], first[1] + e}) return false;
      }
      return true;
    };
    while (vec > 1 && !fits(vec)) vec /= 2;
    auto idx = indices(v->type);
    const Regs& regs = get(v);
    llvm::Type* vt = llvm::FixedVectorType::get(et, static_cast<unsigned>(vec));
    for (int64_t r = 0; r < n; r += vec) {
      auto& at = idx[static_cast<size_t>(r)];
      llvm::Value* bytes = b_.CreateShl(b_.CreateAdd(b_.CreateMul(at[0], u32(cols)), at[1]), 1);
      llvm::Value* addr = b_.CreateGEP(b_.getInt8Ty(), smem, b_.CreateAdd(swizzled(b_, bytes), u32(base)));
      llvm::Value* x = llvm::PoisonValue::get(vt);
      for (int e = 0; e < vec; ++e)
        x = b_.CreateInsertElement(x, regs[static_cast<size_t>(r + e)], static_cast<uint64_t>(e));
      b_.CreateAlignedStore(x, addr, llvm::Align(static_cast<uint64_t>(2 * vec)));
    }
  };
  stage(a, 0);
  stage(bv, b_base);
  barrier();

  const Shape& shape = acc->type.shape();
  const int64_t bm_count = l.blocks_m(shape), bn_count = l.blocks_n(shape);
  llvm::Value* warp_m = b_.CreateAnd(warp_, l.warps_m() - 1);
  llvm::Value* warp_n = b_.CreateLShr(warp_, static_cast<uint64_t>(__builtin_ctz(static_cast<unsigned>(l.warps_m()))));
  // ldmatrix: lane l gives the address of row l % 8 of matrix l / 8.
  llvm::Value* row_in = b_.CreateAnd(lane_, 7);
  llvm::Value* matrix = b_.CreateLShr(lane_, 3);
  llvm::Value* smem_addr = b_.CreatePtrToInt(smem, i32);
  // The shared address of 16-bit element (row, col) of the array at byte `base` with `cols` columns.
  auto address = [&](int64_t base, int64_t cols, llvm::Value* row, llvm::Value* col) {
    llvm::Value* bytes = b_.CreateShl(b_.CreateAdd(b_.CreateMul(row, u32(cols)), col), 1);
    return b_.CreateAdd(smem_addr, b_.CreateAdd(swizzled(b_, bytes), u32(base)));
  };
  // a: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15).
  llvm::Value* a_row_in = b_.CreateAdd(row_in, b_.CreateMul(b_.CreateAnd(matrix, 1), u32(8)));
  llvm::Value* a_col_in = b_.CreateMul(b_.CreateLShr(matrix, 1), u32(8));
  // b (x4): (k 0-7, block j), (k 8-15, block j), (k 0-7, block j + 1), (k 8-15, block j + 1).
  llvm::Value* b_row_in = b_.CreateAdd(row_in, b_.CreateMul(b_.CreateAnd(matrix, 1), u32(8)));
  llvm::Value* b_next = b_.CreateLShr(matrix, 1);  // 0 or 1: which of the two column blocks

  llvm::Type* f32 = b_.getFloatTy();
  llvm::Type* four = llvm::StructType::get(ctx_, {i32, i32, i32, i32});
  llvm::Type* two = llvm::StructType::get(ctx_, {i32, i32});
  llvm::Type* result = llvm::StructType::get(ctx_, {f32, f32, f32, f32});
  const char* ab = a->type.dtype() == DType::bf16 ? "bf16" : "f16";
  const std::string mma = fmt::format(
      "mma.sync.aligned.m16n8k16.row.col.f32.{0}.{0}.f32 {{$0, $1, $2, $3}}, {{$4, $5, $6, $7}}, {{$8, $9}}, "
      "{{$10, $11, $12, $13}};",
      ab);
  auto unpack = [&](llvm::Value* s, unsigned count) {
    std::vector<llvm::Value*> v;
    for (unsigned e = 0; e < count; ++e) v.push_back(b_.CreateExtractValue(s, e));
    return v;
  };
  Regs out = get(acc);
  for (int64_t k0 = 0; k0 < K; k0 += 16) {
    std::vector<std::vector<llvm::Value*>> af, bf(static_cast<size_t>(bn_count));
    for (int64_t bm = 0; bm < bm_count; ++bm) {
      llvm::Value* row = b_.CreateAdd(b_.CreateAdd(b_.CreateMul(warp_m, u32(16)), a_row_in),
                                      u32(bm * passes::MmaLayout::kRows * l.warps_m()));
      llvm::Value* at = address(0, K, row, b_.CreateAdd(a_col_in, u32(k0)));
      af.push_back(unpack(inline_ptx("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0, $1, $2, $3}, [$4];",
                                     "=r,=r,=r,=r,r", four, {at}, /*side_effects=*/true),
                          4));
    }
    for (int64_t bn = 0; bn < bn_count; bn += 2) {
      const bool pair = bn + 1 < bn_count;
      const int64_t step = passes::MmaLayout::kCols * l.warps_n();  // between a warp's column blocks
      llvm::Value* col = b_.CreateAdd(b_.CreateMul(warp_n, u32(8)), u32(bn * step));
      if (pair) col = b_.CreateAdd(col, b_.CreateMul(b_next, u32(step)));
      llvm::Value* at = address(b_base, N, b_.CreateAdd(b_row_in, u32(k0)), col);
      if (pair) {
        auto r = unpack(inline_ptx("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {$0, $1, $2, $3}, [$4];",
                                   "=r,=r,=r,=r,r", four, {at}, /*side_effects=*/true),
                        4);
        bf[static_cast<size_t>(bn)] = {r[0], r[1]};
        bf[static_cast<size_t>(bn + 1)] = {r[2], r[3]};
      } else {
        bf[static_cast<size_t>(bn)] =
            unpack(inline_ptx("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {$0, $1}, [$2];", "=r,=r,r", two, {at},
                              /*side_effects=*/true),
                   2);
      }
    }
    for (int64_t bm = 0; bm < bm_count; ++bm)
      for (int64_t bn = 0; bn < bn_count; ++bn) {
        size_t r = static_cast<size_t>((bm * bn_count + bn) * 4);
        const auto& x = af[static_cast<size_t>(bm)];
        const auto& y = bf[static_cast<size_t>(bn)];
        llvm::Value* d = inline_ptx(mma, "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3", result,
                                    {x[0], x[1], x[2], x[3], y[0], y[1], out[r], out[r + 1], out[r + 2], out[r + 3]});
        for (unsigned e = 0; e < 4; ++e) out[r + e] = b_.CreateExtractValue(d, e);
      }
  }
  return out;
}

}  // namespace tiledsl::codegen
