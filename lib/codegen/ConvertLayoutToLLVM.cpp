#include "codegen/Lowering.h"

namespace tiledsl::codegen {

namespace {
int64_t padded_bytes(ir::Type t, int64_t row_pad, unsigned esize) {
  const int64_t row = t.shape().back();
  return t.numel() / row * (row + row_pad) * esize;
}
}  // namespace

int Lowering::shared_vector_width(ir::Type t, int64_t row_pad) {
  if (t.element().is_pointer()) return 1;
  const Shape& s = t.shape();
  const passes::ThreadTerm term = passes::layout_of(t)->thread_terms()[s.size() - 1];
  auto fits = [&](int w) {
    return (!term.lane_bits || term.lane_scale % w == 0) && (!term.warp_bits || term.warp_scale % w == 0) &&
           (s.back() + row_pad) % w == 0;
  };
  int w = std::min<int>(contiguous_regs(t), static_cast<int>(16 / alloc_size(memory_type(t))));
  while (w > 1 && !fits(w)) w /= 2;
  return std::max(w, 1);
}

void Lowering::store_rows(llvm::Value* base, const Regs& regs, ir::Type t, int64_t row_pad, int width) {
  llvm::Type* et = memory_type(t);
  llvm::Type* vt = width > 1 ? llvm::FixedVectorType::get(et, static_cast<unsigned>(width)) : et;
  const auto idx = indices(t);
  for (size_t r = 0; r < regs.size(); r += static_cast<size_t>(width)) {
    llvm::Value* v = width > 1 ? llvm::PoisonValue::get(vt) : to_memory(regs[r]);
    for (int i = 0; width > 1 && i < width; ++i) v = b_.CreateInsertElement(v, to_memory(regs[r + i]), i);
    llvm::Value* addr = b_.CreateGEP(et, base, linear(idx[r], t.shape(), row_pad));
    b_.CreateAlignedStore(v, addr, llvm::Align(static_cast<uint64_t>(width) * alloc_size(et)));
  }
}

bool Lowering::stores_matrices(ir::Type t, int64_t row_pad) {
  const auto* l = dynamic_cast<const passes::MmaLayout*>(passes::layout_of(t));
  if (!l || !has_stmatrix(opts_.arch) || t.element().is_pointer() || t.shape().size() != 2 ||
      alloc_size(memory_type(t)) != 2)
    return false;
  const Shape& s = t.shape();
  return s[0] % (int64_t{passes::MmaLayout::kRows} * l->warps_m()) == 0 &&
         s[1] % (int64_t{passes::MmaLayout::kCols} * l->warps_n()) == 0 && (s[1] + row_pad) * 2 % 16 == 0;
}

// stmatrix writes 8 x 8 matrices of 16-bit elements whose fragments are the mma layout's: in each
// matrix lane l holds the pair (row l / 4, columns 2 (l % 4) and + 1) as one 32-bit register, and
// lane 8 j + r gives the address of row r of matrix j (16 contiguous bytes). A 16 x 8 block of the
// layout is two matrices (its registers 0-1 the top one, 2-3 the bottom one); two column blocks
// of one row block, kCols * warps_n apart, make one .x4, a last odd one an .x2 (lanes 16-31
// repeat the addresses of 0-15). The array is row-major with rows of shape[1] + row_pad elements,
// as store_rows writes it.
void Lowering::store_matrices(llvm::Value* base, const Regs& regs, ir::Type t, int64_t row_pad) {
  const auto& l = static_cast<const passes::MmaLayout&>(*passes::layout_of(t));
  const Shape& s = t.shape();
  const int64_t row_len = s[1] + row_pad, bm_count = l.blocks_m(s), bn_count = l.blocks_n(s);
  const int64_t col_step = int64_t{passes::MmaLayout::kCols} * l.warps_n();
  const int64_t row_step = int64_t{passes::MmaLayout::kRows} * l.warps_m();
  llvm::Type* i32 = b_.getInt32Ty();
  auto u32 = [&](int64_t v) { return b_.getInt32(static_cast<uint32_t>(v)); };
  llvm::Value* warp_m = b_.CreateAnd(warp_, u32(l.warps_m() - 1));
  llvm::Value* warp_n = b_.CreateLShr(warp_, u32(__builtin_ctz(static_cast<unsigned>(l.warps_m()))));
  // This lane's row: the warp's row block, the matrix's half (bit 3 of the lane: top or bottom)
  // and the row in the matrix; its column: the warp's column block and (x4, bit 4) which of the two.
  llvm::Value* row = b_.CreateAdd(b_.CreateMul(warp_m, u32(passes::MmaLayout::kRows)),
                                  b_.CreateAnd(lane_, u32(15)));  // (lane & 7) + 8 * ((lane >> 3) & 1)
  llvm::Value* col = b_.CreateMul(warp_n, u32(passes::MmaLayout::kCols));
  llvm::Value* second = b_.CreateMul(b_.CreateAnd(b_.CreateLShr(lane_, u32(4)), u32(1)), u32(col_step));
  llvm::Value* at1 = b_.CreateAdd(b_.CreateMul(row, u32(row_len)), col);  // x2: one column block
  llvm::Value* at2 = b_.CreateAdd(at1, second);                           // x4: two
  llvm::Value* start = b_.CreatePtrToInt(base, i32);
  llvm::Type* pair = llvm::FixedVectorType::get(memory_type(t), 2);
  auto word = [&](size_t r) {
    llvm::Value* v = llvm::PoisonValue::get(pair);
    v = b_.CreateInsertElement(v, to_memory(regs[r]), uint64_t{0});
    v = b_.CreateInsertElement(v, to_memory(regs[r + 1]), uint64_t{1});
    return b_.CreateBitCast(v, i32);
  };
  for (int64_t bm = 0; bm < bm_count; ++bm)
    for (int64_t bn = 0; bn < bn_count; bn += 2) {
      const bool x4 = bn + 1 < bn_count;
      const int64_t offset = bm * row_step * row_len + bn * col_step;  // elements
      llvm::Value* addr = b_.CreateAdd(start, b_.CreateShl(b_.CreateAdd(x4 ? at2 : at1, u32(offset)), u32(1)));
      const size_t r = static_cast<size_t>(4 * (bm * bn_count + bn));
      if (x4)
        inline_ptx("stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {$1, $2, $3, $4};", "r,r,r,r,r,~{memory}",
                   b_.getVoidTy(), {addr, word(r), word(r + 2), word(r + 4), word(r + 6)}, /*side_effects=*/true);
      else
        inline_ptx("stmatrix.sync.aligned.m8n8.x2.shared.b16 [$0], {$1, $2};", "r,r,r,~{memory}", b_.getVoidTy(),
                   {addr, word(r), word(r + 2)}, /*side_effects=*/true);
    }
}

Regs Lowering::shuffle(const ir::Op& op, const Regs& src, ir::Type src_type, ir::Type dst_type,
                       const std::function<llvm::Value*(const std::vector<llvm::Value*>&)>& src_of, int64_t row_pad) {
  llvm::Type* et = memory_type(src_type);
  llvm::Value* base = shared(op, padded_bytes(src_type, row_pad, alloc_size(et)));
  store_rows(base, src, src_type, row_pad, shared_vector_width(src_type, row_pad));
  barrier();
  Regs out;
  for (const auto& idx : indices(dst_type))
    out.push_back(from_memory(b_.CreateLoad(et, b_.CreateGEP(et, base, src_of(idx))), src_type));
  return out;
}

Regs Lowering::lower_convert(const ir::Op& op) {
  const ir::Type st = op.operands[0]->type, dt = op.result()->type;
  const int64_t pad = passes::conversion_row_pad(st);
  llvm::Type* et = memory_type(st);
  llvm::Value* base = shared(op, padded_bytes(st, pad, alloc_size(et)));
  if (stores_matrices(st, pad))
    store_matrices(base, get(op.operands[0]), st, pad);
  else
    store_rows(base, get(op.operands[0]), st, pad, shared_vector_width(st, pad));
  barrier();
  const int width = shared_vector_width(dt, pad);
  llvm::Type* vt = width > 1 ? llvm::FixedVectorType::get(et, static_cast<unsigned>(width)) : et;
  const auto idx = indices(dt);
  Regs out;
  for (size_t r = 0; r < idx.size(); r += static_cast<size_t>(width)) {
    llvm::Value* addr = b_.CreateGEP(et, base, linear(idx[r], st.shape(), pad));
    llvm::Value* v = b_.CreateAlignedLoad(vt, addr, llvm::Align(static_cast<uint64_t>(width) * alloc_size(et)));
    for (int i = 0; i < width; ++i) out.push_back(from_memory(width > 1 ? b_.CreateExtractElement(v, i) : v, st));
  }
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
  if (op.kind == OpKind::ConvertLayout) return lower_convert(op);
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
