#include "codegen/Lowering.h"

namespace tiledsl::codegen {

// --- Reductions --------------------------------------------------------------------------
// Applies the combine region of `op` to one pair of element lists.
std::vector<llvm::Value*> Lowering::combine(const ir::Op& op, const std::vector<llvm::Value*>& lhs,
                                            const std::vector<llvm::Value*>& rhs) {
  const ir::Block& body = *op.regions[0];
  for (size_t q = 0; q < lhs.size(); ++q) {
    vals_[body.args[q].get()] = {lhs[q]};
    vals_[body.args[lhs.size() + q].get()] = {rhs[q]};
  }
  std::vector<llvm::Value*> out;
  for (const Regs& r : block(body)) out.push_back(r[0]);
  return out;
}

llvm::Value* Lowering::shuffle_xor(llvm::Value* v, int mask) {
  llvm::Type* t = v->getType();
  unsigned bits = static_cast<unsigned>(mod_->getDataLayout().getTypeSizeInBits(t));
  auto shfl = [&](llvm::Value* i32) {
    return intrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32,
                     {b_.getInt32(0xffffffffu), i32, b_.getInt32(static_cast<uint32_t>(mask)), b_.getInt32(31)});
  };
  if (bits == 64) {
    llvm::Value* x = t->isIntegerTy() ? v : b_.CreateBitCast(v, b_.getInt64Ty());
    llvm::Value* lo = shfl(b_.CreateTrunc(x, b_.getInt32Ty()));
    llvm::Value* hi = shfl(b_.CreateTrunc(b_.CreateLShr(x, 32), b_.getInt32Ty()));
    llvm::Value* r =
        b_.CreateOr(b_.CreateZExt(lo, b_.getInt64Ty()), b_.CreateShl(b_.CreateZExt(hi, b_.getInt64Ty()), 32));
    return t->isIntegerTy() ? r : b_.CreateBitCast(r, t);
  }
  llvm::Type* it = b_.getIntNTy(bits);
  llvm::Value* x = t->isIntegerTy() ? v : b_.CreateBitCast(v, it);
  llvm::Value* r = shfl(bits == 32 ? x : b_.CreateZExt(x, b_.getInt32Ty()));
  if (bits != 32) r = b_.CreateTrunc(r, it);
  return t->isIntegerTy() ? r : b_.CreateBitCast(r, t);
}

// In-thread, then across lanes with butterfly shuffles, then across warps through shared
// memory. Elements a layout replicates (tiles smaller than the layout) are combined once.
void Lowering::lower_reduce(const ir::Op& op) {
  size_t nin = op.operands.size();
  const ir::Value* in0 = op.operands[0];
  const DistributedLayout* l = layout(in0);
  const Shape& shape = in0->type.shape();
  size_t axis = static_cast<size_t>(op.attr_int("axis"));
  // 1. In-thread: group the registers by their index outside the axis.
  std::map<Shape, std::vector<llvm::Value*>> acc;
  std::set<Shape> seen;
  std::vector<Shape> keys;
  for (int64_t r = 0; r < l->num_regs(shape); ++r) {
    Shape off = passes::wrap_offset(l->reg_offset(shape, r), shape);
    if (!seen.insert(off).second) continue;  // a replica
    std::vector<llvm::Value*> v;
    for (size_t q = 0; q < nin; ++q) v.push_back(get(op.operands[q])[static_cast<size_t>(r)]);
    off.erase(off.begin() + static_cast<long>(axis));
    auto it = acc.find(off);
    if (it == acc.end()) {
      acc.emplace(off, v);
      keys.push_back(off);
    } else {
      it->second = combine(op, it->second, v);
    }
  }
  // 2. Across the lanes that hold other elements along the axis.
  const passes::ThreadTerm t = l->thread_terms()[axis];
  for (int j = 0; j < t.lane_bits; ++j) {
    if ((t.lane_scale << j) >= shape[axis]) break;
    for (auto& [k, v] : acc) {
      std::vector<llvm::Value*> other;
      for (llvm::Value* x : v) other.push_back(shuffle_xor(x, 1 << (t.lane_shift + j)));
      v = combine(op, v, other);
    }
  }
  // 3. Across warps: partials through shared memory, combined in warp order by every thread.
  int warp_bits = 0;
  while (warp_bits < t.warp_bits && (t.warp_scale << warp_bits) < shape[axis]) ++warp_bits;
  Shape out_shape = shape;
  out_shape.erase(out_shape.begin() + static_cast<long>(axis));
  const ir::Value* res0 = op.result(0);
  if (warp_bits) {
    int64_t nwarps = int64_t{1} << warp_bits;
    int64_t slots = 1;
    for (int64_t d : out_shape) slots *= d;
    InputArrays partials = input_arrays(op, slots * nwarps);
    llvm::Value* w = b_.CreateAnd(b_.CreateLShr(warp_, t.warp_shift), static_cast<uint64_t>(nwarps - 1));
    // The slot of each group: its linear index in the result shape.
    std::map<Shape, llvm::Value*> slot;
    std::vector<llvm::Value*> thread;
    auto terms = l->thread_terms();
    for (size_t d = 0; d < shape.size(); ++d) thread.push_back(d == axis ? b_.getInt32(0) : thread_part(l, d));
    for (const Shape& k : keys) {
      std::vector<llvm::Value*> idx;
      for (size_t d = 0, kd = 0; d < shape.size(); ++d) {
        if (d == axis) continue;
        idx.push_back(b_.CreateAnd(b_.CreateAdd(thread[d], b_.getInt32(static_cast<uint32_t>(k[kd++]))),
                                   static_cast<uint64_t>(shape[d] - 1)));
      }
      slot[k] = b_.CreateMul(linear(idx, out_shape), b_.getInt32(static_cast<uint32_t>(nwarps)));
    }
    for (auto& [k, v] : acc)
      for (size_t q = 0; q < nin; ++q) b_.CreateStore(to_memory(v[q]), partials.at(q, b_.CreateAdd(slot[k], w)));
    barrier();
    for (auto& [k, v] : acc) {
      std::vector<llvm::Value*> total;
      for (int64_t i = 0; i < nwarps; ++i) {
        std::vector<llvm::Value*> part;
        for (size_t q = 0; q < nin; ++q)
          part.push_back(
              from_memory(b_.CreateLoad(partials.types[q],
                                        partials.at(q, b_.CreateAdd(slot[k], b_.getInt32(static_cast<uint32_t>(i))))),
                          op.operands[q]->type));
        total = i == 0 ? part : combine(op, total, part);
      }
      v = total;
    }
  }
  // 4. Results: one register per register of the slice layout.
  for (size_t q = 0; q < nin; ++q) {
    if (!res0->type.is_tile()) {
      vals_[op.result(q)] = {acc.begin()->second[q]};
      continue;
    }
    const DistributedLayout* lo = layout(op.result(q));
    Regs out;
    for (int64_t r = 0; r < lo->num_regs(out_shape); ++r) {
      Shape off = passes::wrap_offset(lo->reg_offset(out_shape, r), out_shape);
      auto it = acc.find(off);
      TILEDSL_CHECK(it != acc.end(), "reduce: result layout is not the slice of the operand's");
      out.push_back(it->second[q]);
    }
    vals_[op.result(q)] = out;
  }
}

Lowering::InputArrays Lowering::input_arrays(const ir::Op& op, int64_t count) {
  InputArrays a{this, {}, {}, nullptr};
  int64_t bytes = 0;
  for (const ir::Value* in : op.operands) {
    a.types.push_back(memory_type(in->type));
    a.base.push_back(bytes);
    bytes = (bytes + count * alloc_size(a.types.back()) + 15) / 16 * 16;
  }
  a.smem = shared(op, bytes);
  return a;
}

llvm::Value* Lowering::InputArrays::at(size_t q, llvm::Value* i) const {
  auto& b = lowering->b_;
  return b.CreateGEP(types[q], b.CreateGEP(b.getInt8Ty(), smem, b.getInt64(static_cast<uint64_t>(base[q]))), i);
}

// --- Scans -------------------------------------------------------------------------------
// Through shared memory: the tile goes to shared memory row-major, each thread then scans
// whole lines along the axis (line = tid, tid + threads, ...) in the interpreter's order
// (carry = combine(carry, next), from the first element or, reversed, from the last), in
// place, and every thread reads its registers back. Results are bit-exact with the
// interpreter for any combine function, floats included.
void Lowering::lower_scan(const ir::Op& op) {
  size_t nin = op.operands.size();
  ir::Type t0 = op.operands[0]->type;
  const Shape& shape = t0.shape();
  size_t axis = static_cast<size_t>(op.attr_int("axis"));
  bool reverse = op.attr_int("reverse") != 0;
  int64_t len = shape[axis], inner = 1, outer = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  for (size_t d = 0; d < axis; ++d) outer *= shape[d];
  InputArrays tile = input_arrays(op, t0.numel());
  const std::vector<llvm::Type*>& types = tile.types;
  auto addr = [&](size_t q, llvm::Value* i) { return tile.at(q, i); };
  auto idx = indices(t0);
  for (size_t q = 0; q < nin; ++q) {
    const Regs& regs = get(op.operands[q]);
    for (size_t r = 0; r < regs.size(); ++r) b_.CreateStore(to_memory(regs[r]), addr(q, linear(idx[r], shape)));
  }
  barrier();

  // for (line = tid; line < outer * inner; line += threads)
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* line_head = llvm::BasicBlock::Create(ctx_, "scan.line", fn_);
  auto* line_body = llvm::BasicBlock::Create(ctx_, "scan.first", fn_);
  auto* step_head = llvm::BasicBlock::Create(ctx_, "scan.step", fn_);
  auto* step_body = llvm::BasicBlock::Create(ctx_, "scan.combine", fn_);
  auto* line_next = llvm::BasicBlock::Create(ctx_, "scan.next", fn_);
  auto* done = llvm::BasicBlock::Create(ctx_, "scan.done", fn_);
  b_.CreateBr(line_head);
  b_.SetInsertPoint(line_head);
  llvm::PHINode* line = b_.CreatePHI(b_.getInt32Ty(), 2, "line");
  line->addIncoming(tid_, pre);
  b_.CreateCondBr(b_.CreateICmpULT(line, b_.getInt32(static_cast<uint32_t>(outer * inner))), line_body, done);

  b_.SetInsertPoint(line_body);
  llvm::Value* o = b_.CreateUDiv(line, b_.getInt32(static_cast<uint32_t>(inner)));
  llvm::Value* i = b_.CreateURem(line, b_.getInt32(static_cast<uint32_t>(inner)));
  llvm::Value* start = b_.CreateAdd(b_.CreateMul(o, b_.getInt32(static_cast<uint32_t>(len * inner))), i);
  auto element = [&](llvm::Value* k) {
    return b_.CreateAdd(start, b_.CreateMul(k, b_.getInt32(static_cast<uint32_t>(inner))));
  };
  auto position = [&](llvm::Value* step) {
    return reverse ? b_.CreateSub(b_.getInt32(static_cast<uint32_t>(len - 1)), step) : step;
  };
  std::vector<llvm::Value*> first;
  llvm::Value* first_at = element(position(b_.getInt32(0)));
  for (size_t q = 0; q < nin; ++q)
    first.push_back(from_memory(b_.CreateLoad(types[q], addr(q, first_at)), op.operands[q]->type));
  b_.CreateBr(step_head);

  b_.SetInsertPoint(step_head);
  llvm::PHINode* step = b_.CreatePHI(b_.getInt32Ty(), 2, "step");
  step->addIncoming(b_.getInt32(1), line_body);
  std::vector<llvm::PHINode*> carry;
  std::vector<llvm::Value*> carry_vals;
  for (size_t q = 0; q < nin; ++q) {
    carry.push_back(b_.CreatePHI(first[q]->getType(), 2));
    carry[q]->addIncoming(first[q], line_body);
    carry_vals.push_back(carry[q]);
  }
  b_.CreateCondBr(b_.CreateICmpULT(step, b_.getInt32(static_cast<uint32_t>(len))), step_body, line_next);

  b_.SetInsertPoint(step_body);
  llvm::Value* at = element(position(step));
  std::vector<llvm::Value*> cur;
  for (size_t q = 0; q < nin; ++q)
    cur.push_back(from_memory(b_.CreateLoad(types[q], addr(q, at)), op.operands[q]->type));
  std::vector<llvm::Value*> next = combine(op, carry_vals, cur);
  for (size_t q = 0; q < nin; ++q) b_.CreateStore(to_memory(next[q]), addr(q, at));
  llvm::BasicBlock* step_end = b_.GetInsertBlock();
  step->addIncoming(b_.CreateAdd(step, b_.getInt32(1)), step_end);
  for (size_t q = 0; q < nin; ++q) carry[q]->addIncoming(next[q], step_end);
  b_.CreateBr(step_head);

  b_.SetInsertPoint(line_next);
  line->addIncoming(b_.CreateAdd(line, b_.getInt32(static_cast<uint32_t>(32 * opts_.num_warps))), line_next);
  b_.CreateBr(line_head);

  b_.SetInsertPoint(done);
  barrier();
  for (size_t q = 0; q < nin; ++q) {
    ir::Type rt = op.result(q)->type;
    auto ridx = indices(rt);
    Regs out;
    for (const auto& ri : ridx) out.push_back(from_memory(b_.CreateLoad(types[q], addr(q, linear(ri, shape))), rt));
    vals_[op.result(q)] = out;
  }
}

}  // namespace tiledsl::codegen
