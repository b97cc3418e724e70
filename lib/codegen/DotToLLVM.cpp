#include "codegen/Lowering.h"

namespace tiledsl::codegen {

// --- Dot (FMA) ---------------------------------------------------------------------------
// a and b go to shared memory in their own element type; each thread then accumulates its own
// elements of the result with one f32 fma per k, in k order (the interpreter's order), or for i8
// inputs an i32 multiply-add (wrapping). The k loop stays a loop (not unrolled at lowering), so
// only the accumulators live in registers.
Regs Lowering::lower_dot(const ir::Op& op) {
  if (const auto* mma = dynamic_cast<const passes::MmaLayout*>(layout(op.result()))) return lower_dot_mma(op, *mma);
  const ir::Value *a = op.operands[0], *bv = op.operands[1], *acc = op.operands[2];
  int64_t M = a->type.shape()[0], K = a->type.shape()[1], N = bv->type.shape()[1];
  llvm::Type* f32 = b_.getFloatTy();
  llvm::Type* et = memory_type(a->type);  // a and b share their dtype
  const bool ints = a->type.dtype() == DType::i8;
  llvm::Type* acc_type = ints ? b_.getInt32Ty() : f32;
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
    sums.push_back(b_.CreatePHI(acc_type, 2));
    sums.back()->addIncoming(v, entry);
  }
  // f32 inputs go through the dot's input_precision as the interpreter's (Interpreter.cpp):
  // tf32 rounds each to tf32 (ir::round_to_tf32: the bits plus 2^12, the low 13 cleared, except
  // infinities and NaN); tf32x3 also keeps the tf32 rounding of the rest and adds, per k, lo*hi,
  // hi*lo, then hi*hi.
  const std::string precision = op.attrs.count("input_precision") ? op.attr_str("input_precision") : "ieee";
  auto tf32 = [&](llvm::Value* x) {
    llvm::Value* bits = b_.CreateBitCast(x, b_.getInt32Ty());
    llvm::Value* special = b_.CreateICmpEQ(b_.CreateAnd(bits, 0x7f800000u), b_.getInt32(0x7f800000u));
    llvm::Value* rounded = b_.CreateAnd(b_.CreateAdd(bits, b_.getInt32(0x1000u)), b_.getInt32(0xffffe000u));
    return b_.CreateBitCast(b_.CreateSelect(special, bits, rounded), f32);
  };
  // Per input element: the high part (the input, or its tf32 rounding) and tf32x3's low part.
  auto parts = [&](llvm::Value* x) -> std::pair<llvm::Value*, llvm::Value*> {
    if (precision == "ieee" || ints) return {x, nullptr};
    llvm::Value* hi = tf32(x);
    return {hi, precision == "tf32x3" ? tf32(b_.CreateFSub(x, hi)) : nullptr};
  };
  const DType in_type = a->type.dtype();
  auto widen = [&](llvm::Value* x) {
    if (ints) return b_.CreateSExt(x, acc_type);
    return is_fp8(in_type) ? decode_fp8(x, in_type) : b_.CreateFPExt(x, f32);  // fp8: exact in f32
  };
  std::map<int64_t, std::pair<llvm::Value*, llvm::Value*>> av, bvals;
  for (auto& [key, row_base] : rows)
    av[key] = parts(widen(b_.CreateLoad(et, b_.CreateGEP(et, smem, b_.CreateAdd(row_base, k)))));
  llvm::Value* k_row = b_.CreateMul(k, b_.getInt32(static_cast<uint32_t>(N)));
  for (auto& [key, n] : cols)
    bvals[key] = parts(widen(b_.CreateLoad(et, b_.CreateGEP(et, b_base, b_.CreateAdd(n, k_row)))));
  for (size_t r = 0; r < out.size(); ++r) {
    const auto& [a_hi, a_lo] = av[rc[r].first];
    const auto& [b_hi, b_lo] = bvals[rc[r].second];
    llvm::Value* s = sums[r];
    if (a_lo) {
      s = intrinsic(llvm::Intrinsic::fma, {a_lo, b_hi, s}, {f32});
      s = intrinsic(llvm::Intrinsic::fma, {a_hi, b_lo, s}, {f32});
    }
    out[r] = ints ? b_.CreateAdd(s, b_.CreateMul(a_hi, b_hi)) : intrinsic(llvm::Intrinsic::fma, {a_hi, b_hi, s}, {f32});
  }
  llvm::Value* next = b_.CreateAdd(k, b_.getInt32(1));
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  k->addIncoming(next, latch);
  for (size_t r = 0; r < out.size(); ++r) sums[r]->addIncoming(out[r], latch);
  b_.CreateCondBr(b_.CreateICmpULT(next, b_.getInt32(static_cast<uint32_t>(K))), loop, done);
  b_.SetInsertPoint(done);
  return out;  // the last iteration's sums: `done` is reached only from the loop
}

// --- Dot (tensor cores) --------------------------------------------------------------------
// Both tensor-core paths stage a [M][K] and b [K][N] in shared memory, in 16-byte vector stores
// where the operand's layout gives a thread 8 consecutive elements of a row (as loads' layouts
// do), with the 16-byte chunks of each 128-byte line XOR-swizzled by the line's index mod 8
// (swizzled() below), so that 8 rows read at once fall in 8 different bank groups.
//
// mma.sync.m16n8k16 (sm_80 and later): the arrays are row-major, or in wgmma's panels (below)
// where their rows are a multiple of 128 bytes (dot_panels: 256-byte rows gave 2-way bank
// conflicts on every ldmatrix, run 90). Each warp walks K in steps of
// 16: ldmatrix.x4 gives the a fragments of one 16-row block, ldmatrix.x4.trans the b fragments of
// two 8-column blocks (x2 for a last odd one), and one mma.sync per pair of blocks accumulates in
// registers in the mma layout (passes::MmaLayout). ldmatrix reads shared memory that LLVM does
// not see it read: it is emitted with side effects, so that it stays after the staging stores
// and the barrier, in program order.
//
// wgmma.mma_async.m64nNk16 (sm_90a): each array is cut into panels of 64 columns (128 bytes),
// each panel row-major, so that element (r, c) of a [R][C] array sits at byte
// ((c / 64) * R + r) * 128 + (c % 64) * 2 before the swizzle. That is the hardware's 128-byte
// swizzle mode: a is K-major (K runs along a panel's line) and b is N-major (transposed, N along
// the line). Matrix descriptors name where each instruction's operands start; the warpgroup's
// tensor cores read them directly. The sum over k is the tensor cores' on both paths
// (docs/language.md states the bound), not the FMA path's k order.
namespace {
// The byte offset of a 16-bit element in a swizzled array: bits 4-6 (the 16-byte chunk within a
// 128-byte line) XORed with bits 7-9 (the line's index mod 8). The array starts 1024-byte
// aligned and its rows are a multiple of 16 bytes, so 16-byte chunks stay whole.
llvm::Value* swizzled(llvm::IRBuilder<>& b, llvm::Value* byte_offset) {
  llvm::Value* line = b.CreateAnd(b.CreateLShr(byte_offset, 7), 7);
  return b.CreateXor(byte_offset, b.CreateShl(line, 4));
}
}  // namespace

llvm::Value* Lowering::dot_operand_offset(llvm::Value* row, llvm::Value* col, int64_t rows, int64_t cols, bool panels,
                                          int bytes) {
  auto u32 = [&](int64_t x) { return b_.getInt32(static_cast<uint32_t>(x)); };
  const uint64_t shift = static_cast<uint64_t>(__builtin_ctz(static_cast<unsigned>(bytes)));
  llvm::Value* at;
  if (panels) {  // 128 / bytes columns per panel
    const uint64_t cols_log2 = 7 - shift;
    llvm::Value* line = b_.CreateAdd(b_.CreateMul(b_.CreateLShr(col, cols_log2), u32(rows)), row);
    at = b_.CreateOr(b_.CreateShl(line, 7), b_.CreateShl(b_.CreateAnd(col, (1 << cols_log2) - 1), shift));
  } else {
    at = b_.CreateShl(b_.CreateAdd(b_.CreateMul(row, u32(cols)), col), shift);
  }
  return swizzled(b_, at);
}

namespace {
// The bits a thread part of an index (ThreadTerm's formula) can hold: each field's values times
// its scale (exact for a power-of-two scale), or every bit up to the highest the sum can reach
// when the fields may overlap.
int64_t bits_up_to(int64_t max) {
  int64_t m = 0;
  while (m < max) m = m * 2 + 1;
  return m;
}
int64_t field_bits(int bits, int64_t scale) {
  if (!bits || !scale) return 0;
  const int64_t values = (int64_t{1} << bits) - 1;
  return (scale & (scale - 1)) == 0 ? values * scale : bits_up_to(values * scale);
}
int64_t thread_bits(const passes::ThreadTerm& t) {
  const int64_t lane = field_bits(t.lane_bits, t.lane_scale), warp = field_bits(t.warp_bits, t.warp_scale);
  return lane & warp ? bits_up_to(lane + warp) : lane | warp;
}
}  // namespace

llvm::Value* Lowering::swizzled_address(llvm::Value* start, bool aligned, const ThreadIndex& t, int64_t dr, int64_t dc,
                                        int64_t rows, int64_t cols, bool panels, int bytes) {
  auto u32 = [&](int64_t x) { return b_.getInt32(static_cast<uint32_t>(x)); };
  const bool split = dr >= 0 && dc >= 0 && (dr & t.row_bits) == 0 && (dc & t.col_bits) == 0 &&
                     (dr | t.row_bits) < rows && (dc | t.col_bits) < cols;
  if (!split) {  // the index as it is, wrapped into the array as indices() wraps it
    llvm::Value* row = b_.CreateAnd(b_.CreateAdd(t.row, u32(dr)), u32(rows - 1));
    llvm::Value* col = b_.CreateAnd(b_.CreateAdd(t.col, u32(dc)), u32(cols - 1));
    return b_.CreateAdd(start, dot_operand_offset(row, col, rows, cols, panels, bytes));
  }
  llvm::Value* thread = dot_operand_offset(t.row, t.col, rows, cols, panels, bytes);
  const int64_t c = passes::dot_operand_byte(dr, dc, rows, cols, panels, bytes);
  TILEDSL_CHECK(static_cast<int64_t>(
                    llvm::cast<llvm::ConstantInt>(dot_operand_offset(u32(dr), u32(dc), rows, cols, panels, bytes))
                        ->getZExtValue()) == c,
                "codegen: dot_operand_offset and passes::dot_operand_byte disagree");
  if (!aligned) return b_.CreateAdd(start, b_.CreateXor(thread, u32(c)));
  // start's low 10 bits are zero: only they differ between the XOR before and after adding it.
  return b_.CreateAdd(b_.CreateXor(b_.CreateAdd(start, thread), u32(c & 1023)), u32(c & ~int64_t{1023}));
}

Lowering::ThreadIndex Lowering::thread_index(const DistributedLayout* l, size_t along) {
  const auto terms = l->thread_terms();
  return {thread_part(l, 1 - along), thread_part(l, along), thread_bits(terms[1 - along]), thread_bits(terms[along])};
}

bool Lowering::dot_operand_aligned(const ir::Op& op, int x) {
  const passes::DotSmem place = passes::dot_smem(op, has_wgmma(opts_.arch));
  return (op.attr_int("smem_offset") + place.at[x]) % 1024 == 0 && place.stride[x] % 1024 == 0;
}

void Lowering::stage_dot_operand(const ir::Value* v, llvm::Value* smem, int64_t base, bool panels, bool transposed,
                                 bool round_tf32) {
  auto u32 = [&](int64_t x) { return b_.getInt32(static_cast<uint32_t>(x)); };
  llvm::Type* et = memory_type(v->type);
  const int bytes = byte_size(v->type.dtype());
  const DistributedLayout* vl = layout(v);
  const Shape& shape = v->type.shape();
  const int64_t n = vl->num_regs(shape);
  // The array in shared memory is v, or v transposed: runs go along its lines, which are v's
  // rows (dimension 1 varies along them), or v's columns.
  const size_t along = transposed ? 0 : 1;
  const int64_t rows = shape[1 - along], cols = shape[along];
  auto terms = vl->thread_terms();
  // The widest run of registers (up to 16 bytes) that holds consecutive elements of one line,
  // starting at a multiple of its length, for every thread.
  int vec = 16 / bytes;
  auto fits = [&](int w) {
    const passes::ThreadTerm& t = terms[along];
    if (n % w || (t.lane_bits && t.lane_scale % w) || (t.warp_bits && t.warp_scale % w)) return false;
    for (int64_t r = 0; r < n; r += w) {
      Shape first = passes::wrap_offset(vl->reg_offset(shape, r), shape);
      if (first[along] % w) return false;
      for (int e = 1; e < w; ++e) {
        Shape want = first;
        want[along] += e;
        if (passes::wrap_offset(vl->reg_offset(shape, r + e), shape) != want) return false;
      }
    }
    return true;
  };
  while (vec > 1 && !fits(vec)) vec /= 2;
  auto idx = indices(v->type);
  const Regs& regs = get(v);
  llvm::Type* vt = llvm::FixedVectorType::get(et, static_cast<unsigned>(vec));
  for (int64_t r = 0; r < n; r += vec) {
    auto& at = idx[static_cast<size_t>(r)];
    llvm::Value* offset = dot_operand_offset(at[1 - along], at[along], rows, cols, panels, bytes);
    llvm::Value* addr = b_.CreateGEP(b_.getInt8Ty(), smem, b_.CreateAdd(offset, u32(base)));
    llvm::Value* x = llvm::PoisonValue::get(vt);
    for (int e = 0; e < vec; ++e) {
      llvm::Value* elem = regs[static_cast<size_t>(r + e)];
      if (round_tf32) elem = b_.CreateBitCast(cvt_rna_tf32(elem), et);
      x = b_.CreateInsertElement(x, elem, static_cast<uint64_t>(e));
    }
    b_.CreateAlignedStore(x, addr, llvm::Align(static_cast<uint64_t>(bytes * vec)));
  }
}

bool Lowering::wgmma_b_kmajor(const ir::Value* b) { return contiguous_regs(b, 0) > std::max(1, contiguous_regs(b, 1)); }

bool Lowering::dot_b_kmajor(const ir::Op& dot) {
  if (!wgmma_dot(dot)) return passes::mma_b_kmajor(dot);
  return passes::mma_k(dot) != 16 || wgmma_b_kmajor(dot.operands[1]);  // wgmma transposes 16-bit operands only
}

bool Lowering::dot_panels(const ir::Op& dot, int x) {
  if (wgmma_dot(dot)) return true;
  const ir::Value* v = dot.operands[static_cast<size_t>(x)];
  const Shape& s = v->type.shape();  // a [M][K], b [K][N]; the array's rows run along K, or N for an N-major b
  const int64_t cols = x == 1 && dot_b_kmajor(dot) ? s[0] : s[1];
  return passes::mma_operand_panels(cols * byte_size(v->type.dtype()));
}

llvm::Value* Lowering::cvt_rna_tf32(llvm::Value* x) {
  return inline_ptx("cvt.rna.tf32.f32 $0, $1;", "=r,r", b_.getInt32Ty(), {b_.CreateBitCast(x, b_.getInt32Ty())});
}

Regs Lowering::lower_dot_mma(const ir::Op& op, const passes::MmaLayout& l) {
  const ir::Value *a = op.operands[0], *bv = op.operands[1], *acc = op.operands[2];
  if (is_fp8(a->type.dtype()) && !has_fp8_mma(opts_.arch))
    unsupported(op, fmt::format("an fp8 dot on tensor cores (an mma result layout) on {} is", opts_.arch));
  if (wgmma_dot(op)) return lower_dot_wgmma(op, l);
  const int64_t K = a->type.shape()[1], N = bv->type.shape()[1];
  const int bytes = byte_size(a->type.dtype());
  const int64_t k_step = passes::mma_k(op);  // 32 bytes of k per instruction
  const int64_t half = 16 / bytes;           // 16 bytes of k: one 8 x 8 ldmatrix matrix's width
  const bool b_kmajor = passes::mma_b_kmajor(op);
  const std::string precision = op.attrs.count("input_precision") ? op.attr_str("input_precision") : "";
  llvm::Type* i32 = b_.getInt32Ty();
  auto u32 = [&](int64_t v) { return b_.getInt32(static_cast<uint32_t>(v)); };
  auto [a_smem, b_smem] = fill_dot_buffers(op, /*wgmma=*/false);
  llvm::Value* a_addr = b_.CreatePtrToInt(a_smem, i32);
  llvm::Value* b_addr = b_.CreatePtrToInt(b_smem, i32);

  const Shape& shape = acc->type.shape();
  const int64_t bm_count = l.blocks_m(shape), bn_count = l.blocks_n(shape);
  llvm::Value* warp_m = b_.CreateAnd(warp_, l.warps_m() - 1);
  llvm::Value* warp_n = b_.CreateLShr(warp_, static_cast<uint64_t>(__builtin_ctz(static_cast<unsigned>(l.warps_m()))));
  // ldmatrix: lane l gives the address of row l % 8 of matrix l / 8.
  llvm::Value* row_in = b_.CreateAnd(lane_, 7);
  llvm::Value* matrix = b_.CreateLShr(lane_, 3);
  // a: matrices (rows 0-7, k bytes 0-15), (rows 8-15, 0-15), (rows 0-7, 16-31), (rows 8-15,
  // 16-31): lane l gets 4 bytes of row l / 4 at byte 4 (l % 4) of each, which for every input
  // type are the A fragments a0-a3 of the instruction (two f16, one tf32 or four i8 each). The
  // thread parts of the indices (swizzled_address): the warp's row block and the lane's row and
  // matrix; the constants: the row block bm and k0.
  const int64_t M = a->type.shape()[0];
  const bool a_aligned = dot_operand_aligned(op, 0), b_aligned = dot_operand_aligned(op, 1);
  const bool a_panels = dot_panels(op, 0), b_panels = dot_panels(op, 1);
  const ThreadIndex a_thread = {
      b_.CreateAdd(b_.CreateMul(warp_m, u32(16)), b_.CreateAdd(row_in, b_.CreateMul(b_.CreateAnd(matrix, 1), u32(8)))),
      b_.CreateMul(b_.CreateLShr(matrix, 1), u32(half)), 16 * l.warps_m() - 1, half};
  // b (x4), 16-bit from the row-major array, transposed: (k 0-7, block j), (k 8-15, block j),
  // (k 0-7, block j + 1), (k 8-15, block j + 1). 8- and 32-bit from the K-major array (b's
  // transpose): (block j, k bytes 0-15), (block j, 16-31), (block j + 1, 0-15), (j + 1, 16-31),
  // lane l getting 4 bytes of column l / 4, which are b0 and b1 as for a. A warp's column blocks
  // are `step` apart; the pair's second (x4) is the lane's, the first block of a pair (bn, even)
  // the constant. A last odd block is read alone (x2), with no pair bit in the thread part.
  const int64_t step = passes::MmaLayout::kCols * l.warps_n();
  llvm::Value* b_row_in = b_.CreateAdd(row_in, b_.CreateMul(b_.CreateAnd(matrix, 1), u32(8)));
  llvm::Value* b_k_in = b_.CreateMul(b_.CreateAnd(matrix, 1), u32(half));
  llvm::Value* b_next = b_.CreateLShr(matrix, 1);  // 0 or 1: which of the two column blocks
  auto b_thread = [&](bool pair) -> ThreadIndex {
    llvm::Value* col = b_.CreateMul(warp_n, u32(8));
    if (pair) col = b_.CreateAdd(col, b_.CreateMul(b_next, u32(step)));
    const int64_t col_bits = (pair ? 2 * step : step) - 8;
    if (b_kmajor) return {b_.CreateAdd(col, row_in), b_k_in, col_bits | 7, half};
    return {b_row_in, col, 15, col_bits};
  };
  const ThreadIndex b_pair = b_thread(true), b_single = b_thread(false);
  auto b_address = [&](const ThreadIndex& t, int64_t bn, int64_t k0) {
    return b_kmajor ? swizzled_address(b_addr, b_aligned, t, bn * step, k0, N, K, b_panels, bytes)
                    : swizzled_address(b_addr, b_aligned, t, k0, bn * step, K, N, b_panels, bytes);
  };

  llvm::Type* acc_type = a->type.dtype() == DType::i8 ? i32 : b_.getFloatTy();
  llvm::Type* four = llvm::StructType::get(ctx_, {i32, i32, i32, i32});
  llvm::Type* two = llvm::StructType::get(ctx_, {i32, i32});
  llvm::Type* result = llvm::StructType::get(ctx_, {acc_type, acc_type, acc_type, acc_type});
  // fp8 (sm_89 and later, PTX 8.4) has int8's fragments: four bytes of k to a register.
  const std::string shape_types = a->type.dtype() == DType::i8       ? "m16n8k32.row.col.s32.s8.s8.s32"
                                  : a->type.dtype() == DType::f8e4m3 ? "m16n8k32.row.col.f32.e4m3.e4m3.f32"
                                  : a->type.dtype() == DType::f8e5m2 ? "m16n8k32.row.col.f32.e5m2.e5m2.f32"
                                  : a->type.dtype() == DType::f32    ? "m16n8k8.row.col.f32.tf32.tf32.f32"
                                  : a->type.dtype() == DType::bf16   ? "m16n8k16.row.col.f32.bf16.bf16.f32"
                                                                     : "m16n8k16.row.col.f32.f16.f16.f32";
  const std::string mma =
      "mma.sync.aligned." + shape_types + " {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};";
  const std::string mma_constraints =
      acc_type == i32 ? "=r,=r,=r,=r,r,r,r,r,r,r,0,1,2,3" : "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3";
  auto unpack = [&](llvm::Value* s, unsigned count) {
    std::vector<llvm::Value*> v;
    for (unsigned e = 0; e < count; ++e) v.push_back(b_.CreateExtractValue(s, e));
    return v;
  };
  // f32 fragments go through the dot's input_precision as the interpreter's inputs do
  // (ir::round_to_tf32, which is cvt.rna): tf32 keeps the rounded value (hi); tf32x3 also the
  // rounding of the rest (lo), and sums lo*hi, hi*lo, then hi*hi per instruction.
  using Fragments = std::vector<llvm::Value*>;
  auto split = [&](const Fragments& x) -> std::pair<Fragments, Fragments> {
    if (a->type.dtype() != DType::f32) return {x, {}};
    Fragments hi, lo;
    for (llvm::Value* v : x) hi.push_back(cvt_rna_tf32(v));
    if (precision == "tf32x3")
      for (size_t e = 0; e < x.size(); ++e) {
        llvm::Value* rest =
            b_.CreateFSub(b_.CreateBitCast(x[e], b_.getFloatTy()), b_.CreateBitCast(hi[e], b_.getFloatTy()));
        lo.push_back(cvt_rna_tf32(b_.CreateBitCast(rest, i32)));
      }
    return {hi, lo};
  };
  Regs out = get(acc);
  for (int64_t k0 = 0; k0 < K; k0 += k_step) {
    std::vector<std::pair<Fragments, Fragments>> af, bf(static_cast<size_t>(bn_count));
    for (int64_t bm = 0; bm < bm_count; ++bm) {
      llvm::Value* at = swizzled_address(a_addr, a_aligned, a_thread, bm * passes::MmaLayout::kRows * l.warps_m(), k0,
                                         M, K, a_panels, bytes);
      af.push_back(split(unpack(inline_ptx("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0, $1, $2, $3}, [$4];",
                                           "=r,=r,=r,=r,r", four, {at}, /*side_effects=*/true),
                                4)));
    }
    const char* trans = b_kmajor ? "" : ".trans";
    for (int64_t bn = 0; bn < bn_count; bn += 2) {
      const bool pair = bn + 1 < bn_count;
      llvm::Value* at = b_address(pair ? b_pair : b_single, bn, k0);
      if (pair) {
        auto r = unpack(
            inline_ptx(fmt::format("ldmatrix.sync.aligned.m8n8.x4{}.shared.b16 {{$0, $1, $2, $3}}, [$4];", trans),
                       "=r,=r,=r,=r,r", four, {at}, /*side_effects=*/true),
            4);
        bf[static_cast<size_t>(bn)] = split({r[0], r[1]});
        bf[static_cast<size_t>(bn + 1)] = split({r[2], r[3]});
      } else {
        bf[static_cast<size_t>(bn)] =
            split(unpack(inline_ptx(fmt::format("ldmatrix.sync.aligned.m8n8.x2{}.shared.b16 {{$0, $1}}, [$2];", trans),
                                    "=r,=r,r", two, {at}, /*side_effects=*/true),
                         2));
      }
    }
    for (int64_t bm = 0; bm < bm_count; ++bm)
      for (int64_t bn = 0; bn < bn_count; ++bn) {
        size_t r = static_cast<size_t>((bm * bn_count + bn) * 4);
        const auto& [x, x_lo] = af[static_cast<size_t>(bm)];
        const auto& [y, y_lo] = bf[static_cast<size_t>(bn)];
        auto issue = [&](const Fragments& p, const Fragments& q) {
          llvm::Value* d = inline_ptx(mma, mma_constraints, result,
                                      {p[0], p[1], p[2], p[3], q[0], q[1], out[r], out[r + 1], out[r + 2], out[r + 3]});
          for (unsigned e = 0; e < 4; ++e) out[r + e] = b_.CreateExtractValue(d, e);
        };
        if (!x_lo.empty()) {
          issue(x_lo, y);
          issue(x, y_lo);
        }
        issue(x, y);
      }
    // The copies of the tiles of iteration i + depth go out once the first k step's MMAs are
    // issued (they overwrite the buffer that iteration i - 1 read, done before this iteration's
    // barrier): issued first, their address arithmetic delayed every iteration's first ldmatrix
    // and MMA, which Triton's pipeliner avoids too; issued last, their addresses stayed live
    // through every step (spills at 128x128 blocks on 4 warps).
    if (k0 == 0) copy_ahead(op);
  }
  return out;
}

// The shared buffers of a tensor-core dot made ready for this iteration's MMAs or ldmatrix
// reads (`wgmma`: the dot runs on wgmma; else mma.sync), returning where a and b start. Several
// buffers (passes::dot_buffers): the iteration's stage picks one, and no barrier is needed
// before filling it (see lower_dot_wgmma). One buffer: its last readers must be done first.
// Operands come by cp.async (direct_loads_, copies issued `depth` iterations ahead: this
// iteration waits for its own, then after the barrier issues those of iteration i + depth), are
// staged once before the loop or read from registers (wgmma only), or are staged here from
// registers.
std::array<llvm::Value*, 2> Lowering::fill_dot_buffers(const ir::Op& op, bool wgmma) {
  const ir::Value *a = op.operands[0], *bv = op.operands[1];
  TILEDSL_CHECK(op.attr_int("smem_offset") % 1024 == 0, "codegen: a dot's shared buffer must be 1024-byte aligned");
  const int buffers = passes::dot_buffers(op, has_wgmma(opts_.arch));
  const passes::DotSmem place = passes::dot_smem(op, has_wgmma(opts_.arch));
  llvm::Value* smem0 = shared(op, place.bytes, /*sync=*/buffers == 1);
  llvm::Value* stage = nullptr;
  const ir::Op* next_copy[2] = {nullptr, nullptr};  // loads cp.async copies for an iteration ahead
  // Copy groups: each dot with copies commits one per iteration. wait_group keeps pending only
  // the groups of the next depth - 1 iterations and those this iteration committed before this
  // dot (of iteration i + depth), so that this iteration's copies are complete.
  int depth = 0, groups = 0, earlier = 0;
  if (buffers > 1) {
    TILEDSL_CHECK(!dot_stage_.empty(), "codegen: a pipelined dot outside its loop's lowering");
    stage = dot_stage_.back().at(buffers);
    std::set<const ir::Op*> copying;
    for (const auto& [load, use] : direct_loads_) {
      if (use.buffer >= 0 || load->parent != op.parent) continue;
      copying.insert(use.dot);
      if (use.dot == &op) next_copy[use.x] = load;
    }
    depth = passes::direct_copies(op).depth;
    groups = static_cast<int>(copying.size());
    for (const auto& other : op.parent->ops) {
      if (other.get() == &op) break;
      earlier += copying.count(other.get()) != 0;
    }
  }
  // Operands staged once before the loop (lower_for) have one copy, staged there.
  const bool once[2] = {wgmma && passes::wgmma_stage_once(op, 0), wgmma && passes::wgmma_stage_once(op, 1)};
  auto in_stage = [&](int x) {
    llvm::Value* at = b_.getInt32(static_cast<uint32_t>(place.at[x]));
    if (stage && place.stride[x])
      at = b_.CreateAdd(at, b_.CreateMul(stage, b_.getInt32(static_cast<uint32_t>(place.stride[x]))));
    return b_.CreateGEP(b_.getInt8Ty(), smem0, at);
  };
  std::array<llvm::Value*, 2> at = {in_stage(0), in_stage(1)};
  const bool b_kmajor = dot_b_kmajor(op);
  const bool a_regs = wgmma && passes::wgmma_a_in_registers(op);
  const bool round = wgmma && wgmma_tf32(op);
  // Operands neither copied ahead, staged before the loop nor read from registers: staged here.
  const bool staged[2] = {!next_copy[0] && !once[0] && !a_regs, !next_copy[1] && !once[1]};
  if (staged[0]) stage_dot_operand(a, at[0], 0, dot_panels(op, 0), false, round);
  if (staged[1]) stage_dot_operand(bv, at[1], 0, dot_panels(op, 1), b_kmajor, round);
  llvm::Type* void_ty = b_.getVoidTy();
  const bool copies = next_copy[0] || next_copy[1];
  if (copies)
    inline_ptx(fmt::format("cp.async.wait_group {};", groups * (depth - 1) + earlier), "~{memory}", void_ty, {},
               /*side_effects=*/true);
  // wgmma reads tf32 operands from shared memory as they are (the low 13 bits ignored, which
  // truncates): each thread rounds the chunks it copied itself (complete and visible to it after
  // the wait) in place, before the proxy fence, as the interpreter rounds (cvt.rna).
  if (round)
    for (int x = 0; x < 2; ++x)
      if (next_copy[x]) round_copies_in_place(*next_copy[x], dot_operand_at(op, x, stage), x == 1 && b_kmajor);
  // The tensor cores read shared memory through the async proxy; the writes that fill the
  // buffers here go through the generic proxy: stores from registers (staged operands, tf32
  // rounded in place) and cp.async alike (only the bulk copies are async-proxy operations). A barrier
  // orders generic accesses only, so each thread fences what it wrote (its copies complete after
  // the wait) before the barrier, as the PTX ISA's async-proxy rules ask for wgmma's shared
  // operands. Triton 3.6 left cp.async'ed operands unfenced; Triton 3.9 fences them too (its
  // proxy-fence analysis). Operands staged once before the loop are fenced there (lower_for).
  // One fence per iteration costs a MEMBAR.
  if (wgmma && (staged[0] || staged[1] || round || copies))
    inline_ptx("fence.proxy.async.shared::cta;", "~{memory}", void_ty, {}, /*side_effects=*/true);
  barrier();
  if (wgmma) copy_ahead(op);  // mma.sync: after the MMAs (lower_dot_mma)
  return at;
}

void Lowering::copy_ahead(const ir::Op& op) {
  const int buffers = passes::dot_buffers(op, has_wgmma(opts_.arch));
  if (buffers == 1) return;
  const ir::Op* next_copy[2] = {nullptr, nullptr};
  for (const auto& [load, use] : direct_loads_)
    if (use.buffer < 0 && use.dot == &op) next_copy[use.x] = load;
  if (!next_copy[0] && !next_copy[1]) return;
  // Buffer (i + depth) mod buffers.
  llvm::Value* stage = dot_stage_.back().at(buffers);
  llvm::Value* ahead = b_.CreateAdd(stage, b_.getInt32(static_cast<uint32_t>(passes::direct_copies(op).depth)));
  llvm::Value* wraps = b_.CreateICmpUGE(ahead, b_.getInt32(static_cast<uint32_t>(buffers)));
  llvm::Value* next_stage =
      b_.CreateSelect(wraps, b_.CreateSub(ahead, b_.getInt32(static_cast<uint32_t>(buffers))), ahead);
  for (int x = 0; x < 2; ++x)
    if (next_copy[x]) copy_to_shared(*next_copy[x], op, x, next_stage);
  inline_ptx("cp.async.commit_group;", "~{memory}", b_.getVoidTy(), {}, /*side_effects=*/true);
}

// Warpgroup g (warps 4g to 4g + 3) computes rows 64 g + 16 wm bm of the result for each of its
// row blocks bm, in instructions of up to 256 columns, K in steps of 16. The accumulator layout
// of wgmma.m64nNk16 is the mma layout with every warp along M: warp w of a warpgroup holds rows
// 16 w to 16 w + 15, its registers running over 16 x 8 blocks as mma.sync's do. The staging
// stores reach the tensor cores through the async proxy, hence the proxy fence before the
// barrier; the accumulators pass through the wait (tied operands) so that nothing reads them
// before the group is done, and the shared buffer's next user waits behind a barrier.
//
// A dot with async_wgmma (a matmul's k loop) waits only for the previous iteration's group
// (wait_group 1): this iteration's MMAs run on while the next iteration loads and stages its
// operands. Its buffers (passes::dot_buffers; the iteration's number mod their count picks
// one) are never refilled before every warpgroup has waited for their last MMAs: with operands
// staged from registers there are 3, iteration i filling buffer i while the MMAs of i - 1 may
// still read buffer i - 1; buffer i was last read by the MMAs of i - 3, which every warpgroup
// waited for (at i - 2) before the barrier of i - 1, so no barrier is needed before the staging
// stores. Operands that direct_loads_ copies arrive by cp.async instead, prefetch-loads' depth d
// iterations ahead, through d + 2 buffers: right after this iteration's barrier the copy of the
// tile of iteration i + d starts into buffer i + d = i - 2 (mod d + 2), whose last readers, the
// MMAs of i - 2, are then done everywhere; before the barrier, this iteration waits for its own
// copies (issued d iterations earlier). A dot that waits for its MMAs in each iteration but has
// such copies (attention's K and V) cycles through d + 1 buffers the same way (buffer i + d was
// last read by the MMAs of i - 1, done before the barrier of i). An operand staged once before
// the loop (wgmma_stage_once: attention's Q) stays in buffer 0. The loop waits for the last
// groups after it ends (lower_for).
Regs Lowering::lower_dot_wgmma(const ir::Op& op, const passes::MmaLayout& l) {
  // The accumulator, and when it starts from zero instead (dot_accumulator): the first k step's
  // MMAs then ignore it (scale-d 0).
  const auto [acc, zero_when] = passes::dot_accumulator(op);
  const ir::Value *a = op.operands[0], *bv = op.operands[1];
  const int64_t M = a->type.shape()[0], K = a->type.shape()[1], N = bv->type.shape()[1];
  const bool async = async_wgmma(op);
  const bool a_regs = passes::wgmma_a_in_registers(op);
  const bool b_kmajor = dot_b_kmajor(op);  // as fill_dot_buffers staged it
  auto [a_smem, b_smem] = fill_dot_buffers(op, /*wgmma=*/true);
  llvm::Type* void_ty = b_.getVoidTy();

  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Type* f32 = b_.getFloatTy();
  auto u64 = [&](uint64_t v) { return b_.getInt64(v); };
  // The 64-bit matrix descriptor of an operand starting at shared byte `start`: address >> 4 in
  // bits 0-13, the leading-dimension byte offset >> 4 in bits 16-29 (between panels of 64
  // columns; not used by K-major operands), the stride byte offset >> 4 in bits 32-45 (between
  // groups of 8 lines: 1024 bytes), the 128-byte swizzle (1) in bits 62-63. Shared addresses are
  // below 2^18 (at most 228 KiB), so address >> 4 fills bits 0-13 without a mask, and the
  // descriptor of start + c (c a multiple of 16 within the buffer) is this one plus c >> 4: each
  // instruction's descriptor is one 64-bit add of a constant to its operand's (uniform) base.
  auto descriptor = [&](llvm::Value* start, int64_t panel_bytes) {
    const uint64_t fixed =
        (uint64_t{1} << 62) | (uint64_t{1024 >> 4} << 32) | (static_cast<uint64_t>((panel_bytes >> 4) & 0x3fff) << 16);
    return b_.CreateOr(b_.CreateZExt(b_.CreateLShr(start, 4), i64), u64(fixed));
  };
  auto advanced = [&](llvm::Value* desc, int64_t bytes_on) {
    return bytes_on ? b_.CreateAdd(desc, u64(static_cast<uint64_t>(bytes_on >> 4)), "", /*HasNUW=*/true) : desc;
  };
  llvm::Value* a_addr = b_.CreatePtrToInt(a_smem, b_.getInt32Ty());
  llvm::Value* b_addr = b_.CreatePtrToInt(b_smem, b_.getInt32Ty());
  auto u32 = [&](int64_t v) { return b_.getInt32(static_cast<uint32_t>(v)); };
  llvm::Value* group_row = b_.CreateMul(b_.CreateLShr(warp_, 2), u32(64));

  const Shape& shape = acc->type.shape();
  const int64_t bm_count = l.blocks_m(shape), bn_count = l.blocks_n(shape);
  // 16-bit inputs: m64nNk16, 64 columns to a panel; tf32: m64nNk8 (both operands K-major: wgmma
  // transposes 16-bit ones only), 32 columns to a panel; fp8: m64nNk32, K-major too, 128 columns
  // to a panel. Each way 32 bytes of k per instruction.
  const DType in = a->type.dtype();
  const char* ab = in == DType::f32      ? "tf32"
                   : in == DType::f8e4m3 ? "e4m3"
                   : in == DType::f8e5m2 ? "e5m2"
                   : in == DType::bf16   ? "bf16"
                                         : "f16";
  const int bytes = byte_size(in);
  const int64_t k_step = 32 / bytes, panel = 128 / bytes;
  Regs out = get(acc);
  // a in registers (wgmma_a_in_registers): its layout is the accumulator's, whose registers run
  // over 16 x 8 blocks, four each ((r, c), (r, c + 1), (r + 8, c), (r + 8, c + 1)). wgmma's A
  // fragments of row block bm and k step s are, as 32-bit pairs, the top and bottom halves of
  // blocks (bm, 2s) and (bm, 2s + 1).
  std::vector<llvm::Value*> held;  // every fragment, kept alive through the wait
  std::map<std::pair<int64_t, int64_t>, std::vector<llvm::Value*>> fragments;
  auto a_fragments = [&](int64_t bm, int64_t step) -> const std::vector<llvm::Value*>& {
    auto [it, fresh] = fragments.try_emplace({bm, step});
    if (!fresh) return it->second;
    const Regs& ar = get(a);
    const int64_t a_blocks_n = l.blocks_n(a->type.shape());
    llvm::Type* pair = llvm::FixedVectorType::get(memory_type(a->type), 2);
    for (int64_t half = 0; half < 2; ++half)
      for (int64_t top = 0; top < 2; ++top) {  // (a0, a1), (a2, a3): block 2s; (a4, a5), (a6, a7): 2s + 1
        const size_t r = static_cast<size_t>(4 * (bm * a_blocks_n + 2 * step + half) + 2 * top);
        llvm::Value* v = llvm::PoisonValue::get(pair);
        v = b_.CreateInsertElement(v, ar[r], uint64_t{0});
        v = b_.CreateInsertElement(v, ar[r + 1], uint64_t{1});
        it->second.push_back(b_.CreateBitCast(v, b_.getInt32Ty()));
      }
    held.insert(held.end(), it->second.begin(), it->second.end());
    return it->second;
  };
  // The fragments are written before the fence (wgmma reads registers written before it).
  if (a_regs)
    for (int64_t bm = 0; bm < bm_count; ++bm)
      for (int64_t k0 = 0; k0 < K; k0 += k_step) a_fragments(bm, k0 / k_step);
  inline_ptx("wgmma.fence.sync.aligned;", "~{memory}", void_ty, {}, /*side_effects=*/true);
  llvm::Value* b_desc = descriptor(b_addr, (b_kmajor ? N : K) * 128);
  for (int64_t bm = 0; bm < bm_count; ++bm) {
    llvm::Value* row = b_.CreateAdd(group_row, u32(bm * passes::MmaLayout::kRows * l.warps_m()));
    llvm::Value* a_desc = a_regs ? nullptr : descriptor(b_.CreateAdd(a_addr, b_.CreateMul(row, u32(128))), M * 128);
    for (int64_t n0 = 0; n0 < N; n0 += 256) {
      const int64_t width = std::min<int64_t>(256, N - n0), count = width / 2;  // accumulators per thread
      const size_t first = static_cast<size_t>((bm * bn_count + n0 / 8) * 4);
      std::string regs, constraints;
      for (int64_t i = 0; i < count; ++i) {
        regs += fmt::format("{}${}", i ? ", " : "", i);
        constraints += "=f,";
      }
      for (int64_t i = 0; i < count; ++i) constraints += fmt::format("{},", i);
      // a from shared memory: its descriptor; from registers: four 32-bit fragments.
      const int64_t na = a_regs ? 4 : 1;
      std::string a_operand = a_regs ? "{" : "";
      for (int64_t i = 0; i < na; ++i) a_operand += fmt::format("{}${}", i ? ", " : "", 2 * count + i);
      if (a_regs) a_operand += "}";
      constraints += a_regs ? "r,r,r,r,l,r" : "l,l,r";
      // The transpose immediates (a from shared memory: imm-trans-a 0; b: 0 K-major, 1 N-major)
      // exist for 16-bit inputs only.
      const std::string trans = bytes != 2 ? "" : fmt::format(", {}{}", a_regs ? "" : "0, ", b_kmajor ? 0 : 1);
      const std::string text = fmt::format(
          "{{\n.reg .pred p;\nsetp.ne.b32 p, ${3}, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n{0}k{7}.f32.{1}.{1} {{{2}}}, {4}, ${5}, p, 1, 1{6};\n}}",
          width, ab, regs, 2 * count + na + 1, a_operand, 2 * count + na, trans, k_step);
      std::vector<llvm::Type*> types(static_cast<size_t>(count), f32);
      llvm::Type* result = llvm::StructType::get(ctx_, types);
      for (int64_t k0 = 0; k0 < K; k0 += k_step) {
        // a: panel k0 / panel of M lines. b: panel n0 / 64 of K lines, line k0 (N-major), or
        // K-major as a is: panel k0 / panel of N lines, line n0.
        const int64_t k_at = (k0 % panel) * bytes;
        const int64_t a_on = (k0 / panel) * M * 128 + k_at,
                      b_on = b_kmajor ? (k0 / panel) * N * 128 + n0 * 128 + k_at : (n0 / 64) * K * 128 + k0 * 128;
        std::vector<llvm::Value*> args(out.begin() + static_cast<long>(first),
                                       out.begin() + static_cast<long>(first + static_cast<size_t>(count)));
        if (a_regs) {
          const auto& frag = a_fragments(bm, k0 / k_step);
          args.insert(args.end(), frag.begin(), frag.end());
        } else {
          args.push_back(advanced(a_desc, a_on));
        }
        args.push_back(advanced(b_desc, b_on));
        args.push_back(k0 == 0 && zero_when ? b_.CreateZExt(b_.CreateNot(get(zero_when)[0]), b_.getInt32Ty()) : u32(1));
        llvm::Value* d = inline_ptx(text, constraints, result, args, /*side_effects=*/true);
        for (int64_t i = 0; i < count; ++i)
          out[first + static_cast<size_t>(i)] = b_.CreateExtractValue(d, static_cast<unsigned>(i));
      }
    }
  }
  inline_ptx("wgmma.commit_group.sync.aligned;", "~{memory}", void_ty, {}, /*side_effects=*/true);
  if (passes::wgmma_wait_deferred(op)) return out;  // waited for by the next iteration's earlier dot
  // The carried results of the dots that defer their wait to this one's (their MMAs of the
  // previous iteration, committed before this dot's) complete with it: they pass through it.
  std::vector<const ir::Value*> completed;
  for (const auto& other : op.parent->ops)
    if (other->kind == ir::OpKind::Dot && passes::wgmma_deferred_to(*other) == &op)
      completed.push_back(op.parent->args[static_cast<size_t>(passes::carried_slot(*other)) + 1].get());
  Regs all = out;
  for (const ir::Value* v : completed) all.insert(all.end(), get(v).begin(), get(v).end());
  all = wgmma_wait(all, async ? 1 : 0, held);
  if (async) wgmma_running_.push_back(op.result());
  auto at = all.begin() + static_cast<long>(out.size());
  for (const ir::Value* v : completed) {
    Regs& regs = vals_[v];
    for (auto& r : regs) r = *at++;
  }
  all.resize(out.size());
  return all;
}

bool Lowering::wgmma_dot(const ir::Op& dot) const { return has_wgmma(opts_.arch) && passes::wgmma_dot(dot); }

void Lowering::find_direct_copies() {
  ir::walk(f_.body, [&](const ir::Op* op) {
    if (op->kind != ir::OpKind::Dot) return;
    passes::DirectCopies d = passes::direct_copies(*op);
    for (int x = 0; x < 2; ++x) {
      // cp.async copies 4, 8 or 16 bytes.
      auto narrow = [&](const ir::Op* l) { return vector_width(*l) * byte_size(l->result()->type.dtype()) < 4; };
      if (!d.next[x] || narrow(d.next[x])) continue;
      if (std::any_of(d.first[x].begin(), d.first[x].end(), narrow)) continue;
      // copy_to_shared's runs go along the lines of the operand in shared memory: a's rows, b's
      // rows (N-major) or columns (K-major, dot_b_kmajor).
      const auto* l = dynamic_cast<const passes::BlockedLayout*>(layout(d.next[x]->operands[0]));
      const int along = x == 1 && dot_b_kmajor(*op) ? 0 : 1;
      if (!l || l->order()[0] != along) continue;
      direct_loads_[d.next[x]] = {op, x, -1};
      for (size_t j = 0; j < d.first[x].size(); ++j) direct_loads_[d.first[x][j]] = {op, x, static_cast<int>(j)};
    }
  });
}

llvm::Value* Lowering::dot_operand_at(const ir::Op& dot, int x, llvm::Value* stage) {
  const passes::DotSmem place = passes::dot_smem(dot, has_wgmma(opts_.arch));
  llvm::Value* at = b_.CreateAdd(b_.CreatePtrToInt(smem_, b_.getInt32Ty()),
                                 b_.getInt32(static_cast<uint32_t>(dot.attr_int("smem_offset") + place.at[x])));
  return b_.CreateAdd(at, b_.CreateMul(stage, b_.getInt32(static_cast<uint32_t>(place.stride[x]))));
}

void Lowering::copy_to_shared(const ir::Op& load, const ir::Op& dot, int x, llvm::Value* stage) {
  llvm::Value* at = dot_operand_at(dot, x, stage);
  const bool aligned = dot_operand_aligned(dot, x), panels = dot_panels(dot, x);
  const ir::Value* res = load.result();
  const Shape& shape = res->type.shape();
  const size_t along = x == 1 && dot_b_kmajor(dot) ? 0 : 1;  // the dimension runs go along (vector_width's)
  const int vec = vector_width(load);
  const int elem = byte_size(res->type.dtype());
  const int bytes = elem * vec;  // 4, 8 or 16 bytes a copy (find_direct_copies)
  const Regs& ptrs = get(load.operands[0]);
  const Regs* mask = load.operands.size() > 1 ? &get(load.operands[1]) : nullptr;
  const DistributedLayout* l = layout(res);
  const ThreadIndex t = thread_index(l, along);
  // A masked-off copy reads nothing and zero-fills the destination: cp.async's ignore-src
  // predicate, which the copy instruction takes as it is (a src-size of select(mask, 16, 0)
  // costs ptxas a select and a compare back to a predicate per copy, two selects where the mask
  // is a conjunction).
  const std::string text =
      fmt::format("cp.async.{}.shared.global [$0], [$1], {}{};", bytes == 16 ? "cg" : "ca", bytes, mask ? ", $2" : "");
  const std::string constraints = mask ? "r,l,b,~{memory}" : "r,l,~{memory}";
  for (size_t r = 0; r < ptrs.size(); r += static_cast<size_t>(vec)) {
    const Shape off = l->reg_offset(shape, static_cast<int64_t>(r));
    llvm::Value* addr =
        swizzled_address(at, aligned, t, off[1 - along], off[along], shape[1 - along], shape[along], panels, elem);
    llvm::Value* args[] = {addr, b_.CreatePtrToInt(ptrs[r], b_.getInt64Ty()),
                           mask ? b_.CreateNot((*mask)[r]) : nullptr};
    inline_ptx(text, constraints, b_.getVoidTy(), llvm::ArrayRef(args, mask ? 3 : 2), /*side_effects=*/true);
  }
}

void Lowering::round_copies_in_place(const ir::Op& load, llvm::Value* at, bool transposed) {
  const ir::Value* res = load.result();
  const Shape& shape = res->type.shape();
  const size_t along = transposed ? 0 : 1;
  const int vec = vector_width(load);
  llvm::Type* f32 = b_.getFloatTy();
  llvm::Type* vt = llvm::FixedVectorType::get(f32, static_cast<unsigned>(vec));
  auto idx = indices(res->type);
  for (size_t r = 0; r < idx.size(); r += static_cast<size_t>(vec)) {
    llvm::Value* offset = dot_operand_offset(idx[r][1 - along], idx[r][along], shape[1 - along], shape[along],
                                             /*panels=*/true, 4);
    llvm::Value* addr = b_.CreateIntToPtr(b_.CreateAdd(at, offset), llvm::PointerType::get(ctx_, 3));
    llvm::Value* x = b_.CreateAlignedLoad(vt, addr, llvm::Align(static_cast<uint64_t>(4 * vec)));
    for (int e = 0; e < vec; ++e) {
      llvm::Value* elem = b_.CreateExtractElement(x, static_cast<uint64_t>(e));
      x = b_.CreateInsertElement(x, b_.CreateBitCast(cvt_rna_tf32(elem), f32), static_cast<uint64_t>(e));
    }
    b_.CreateAlignedStore(x, addr, llvm::Align(static_cast<uint64_t>(4 * vec)));
  }
}

bool Lowering::wgmma_tf32(const ir::Op& dot) const {
  return wgmma_dot(dot) && dot.operands[0]->type.dtype() == DType::f32;
}

void Lowering::lower_direct_load(const ir::Op& load) {
  const auto& [dot, x, buffer] = direct_loads_.at(&load);
  if (buffer < 0) return;  // the tile of an iteration ahead: its dot copies it
  barrier();               // earlier users of the buffer's bytes are done
  copy_to_shared(load, *dot, x, b_.getInt32(static_cast<uint32_t>(buffer)));
  inline_ptx("cp.async.commit_group;", "~{memory}", b_.getVoidTy(), {}, /*side_effects=*/true);
}

bool Lowering::async_wgmma(const ir::Op& dot) const {
  return has_wgmma(opts_.arch) && passes::wgmma_across_iterations(dot);
}

Regs Lowering::wgmma_wait(const Regs& regs, int pending, const std::vector<llvm::Value*>& held) {
  if (regs.empty()) return regs;
  std::string constraints;
  std::vector<llvm::Type*> types;
  for (llvm::Value* r : regs) {
    constraints += "=f,";
    types.push_back(r->getType());
  }
  for (size_t i = 0; i < regs.size(); ++i) constraints += fmt::format("{},", i);
  for (size_t i = 0; i < held.size(); ++i) constraints += "r,";
  std::vector<llvm::Value*> args(regs.begin(), regs.end());
  args.insert(args.end(), held.begin(), held.end());
  llvm::Value* waited = inline_ptx(fmt::format("wgmma.wait_group.sync.aligned {};", pending), constraints + "~{memory}",
                                   llvm::StructType::get(ctx_, types), args, /*side_effects=*/true);
  Regs out;
  for (size_t i = 0; i < regs.size(); ++i) out.push_back(b_.CreateExtractValue(waited, static_cast<unsigned>(i)));
  return out;
}

}  // namespace tiledsl::codegen
