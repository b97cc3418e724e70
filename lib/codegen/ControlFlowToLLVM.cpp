#include <algorithm>

#include "codegen/Lowering.h"

namespace tiledsl::codegen {

std::vector<std::vector<llvm::PHINode*>> Lowering::carried_phis(const ir::Op& loop, size_t first, llvm::BasicBlock* pre,
                                                                std::initializer_list<const ir::Block*> regions) {
  std::vector<std::vector<llvm::PHINode*>> phis;
  for (size_t i = first; i < loop.operands.size(); ++i) {
    std::vector<llvm::PHINode*> p;
    Regs regs;
    for (llvm::Value* init : get(loop.operands[i])) {
      p.push_back(b_.CreatePHI(init->getType(), 2));
      p.back()->addIncoming(init, pre);
      regs.push_back(p.back());
    }
    const size_t slot = i - first;
    for (const ir::Block* r : regions)
      vals_[r->args[r->args.size() - (loop.operands.size() - first) + slot].get()] = regs;
    vals_[loop.result(slot)] = regs;
    phis.push_back(p);
  }
  return phis;
}

void Lowering::lower_for(const ir::Op& op) {
  const ir::Block& body = *op.regions[0];
  llvm::Value* lo = get(op.operands[0])[0];
  llvm::Value* hi = get(op.operands[1])[0];
  llvm::Value* step = get(op.operands[2])[0];
  bool uns = is_unsigned(op.operands[0]->type.dtype());
  // A step of zero or less would loop forever: stop the kernel with the interpreter's message
  // (a constant positive step, the usual case, needs no check).
  auto* known = llvm::dyn_cast<llvm::ConstantInt>(step);
  if (!known || (uns ? known->isZero() : !known->getValue().isStrictlyPositive())) {
    llvm::Value* bad = uns ? b_.CreateICmpEQ(step, llvm::ConstantInt::get(step->getType(), 0))
                           : b_.CreateICmpSLE(step, llvm::ConstantInt::get(step->getType(), 0));
    llvm::Value* wide = uns ? b_.CreateZExt(step, b_.getInt64Ty()) : b_.CreateSExt(step, b_.getInt64Ty());
    device_fail(bad, op, "for: step must be positive, got %lld", {wide}, "loop step must be positive");
  }
  // The dots directly in the body, with the number of shared buffers each cycles through.
  const bool wgmma = has_wgmma(opts_.arch);
  std::vector<std::pair<const ir::Op*, int>> dots;
  for (const auto& inner : body.ops)
    if (inner->kind == ir::OpKind::Dot) dots.emplace_back(inner.get(), passes::dot_buffers(*inner, wgmma));
  // The loop-invariant operands of wgmma dots (attention's Q) go to shared memory once, here.
  for (const auto& [dot, count] : dots)
    for (int x = 0; x < 2; ++x)
      if (wgmma && passes::wgmma_stage_once(*dot, x)) {
        barrier();  // earlier users of the buffer's bytes are done
        llvm::Value* buffer =
            b_.CreateGEP(b_.getInt8Ty(), smem_, b_.getInt64(static_cast<uint64_t>(dot->attr_int("smem_offset"))));
        stage_dot_operand(dot->operands[static_cast<size_t>(x)], buffer, passes::dot_smem(*dot, wgmma).at[x],
                          /*panels=*/true, x == 1 && dot_b_kmajor(*dot), wgmma_tf32(*dot));
        // wgmma reads it through the async proxy (the dots in the loop do not fence it again).
        inline_ptx("fence.proxy.async.shared::cta;", "~{memory}", b_.getVoidTy(), {}, /*side_effects=*/true);
      }
  // Dots with several buffers fill them without a barrier (their earlier readers are their own
  // MMAs, waited for): ops before the loop that used the same bytes must be done first.
  if (std::any_of(dots.begin(), dots.end(), [](const auto& d) { return d.second > 1; })) barrier();
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "for.header", fn_);
  auto* loop = llvm::BasicBlock::Create(ctx_, "for.body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "for.exit", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  llvm::PHINode* iv = b_.CreatePHI(lo->getType(), 2, "iv");
  iv->addIncoming(lo, pre);
  auto phis = carried_phis(op, 3, pre, {&body});
  // Tensor-core dots with several buffers cycle through them by the iteration's number mod their
  // count; the loop-carried result of a dot whose MMAs run on into the next iteration (async or
  // with its wait deferred), and the copies that fill the buffers, are waited for after the loop.
  std::vector<size_t> async_slots;
  std::map<int, llvm::PHINode*> stages;  // buffer count -> the iteration's number mod it
  for (auto [dot, count] : dots) {
    if (async_wgmma(*dot)) async_slots.push_back(passes::dot_accumulator(*dot).acc->index - 1);
    if (wgmma && passes::wgmma_wait_deferred(*dot))
      async_slots.push_back(static_cast<size_t>(passes::carried_slot(*dot)));
    if (count > 1 && !stages.count(count)) {
      stages[count] = b_.CreatePHI(b_.getInt32Ty(), 2, "dot.stage");
      stages[count]->addIncoming(b_.getInt32(0), pre);
    }
  }
  bool copies = false;
  for (const auto& inner : body.ops) copies |= direct_loads_.count(inner.get()) != 0;
  b_.CreateCondBr(uns ? b_.CreateICmpULT(iv, hi) : b_.CreateICmpSLT(iv, hi), loop, exit);
  b_.SetInsertPoint(loop);
  vals_[body.args[0].get()] = {iv};
  if (!stages.empty()) dot_stage_.push_back(std::map<int, llvm::Value*>(stages.begin(), stages.end()));
  const size_t running = wgmma_running_.size();
  auto yielded = block(body);
  wgmma_running_.resize(running);  // this body's async dots: waited for after the loop
  if (!stages.empty()) dot_stage_.pop_back();
  llvm::Value* next = b_.CreateAdd(iv, step);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  for (auto [count, stage] : stages) {
    llvm::Value* last = b_.CreateICmpEQ(stage, b_.getInt32(static_cast<uint32_t>(count - 1)));
    stage->addIncoming(b_.CreateSelect(last, b_.getInt32(0), b_.CreateAdd(stage, b_.getInt32(1))), latch);
  }
  llvm::BranchInst* back = b_.CreateBr(header);
  // tl::RangeOptions::unroll: the loop's metadata asks LLVM's unroller for that many copies (the
  // loop ID is a node that names itself, as LLVM's loop metadata must).
  if (op.has_attr("unroll")) {
    llvm::Metadata* count[] = {
        llvm::MDString::get(ctx_, "llvm.loop.unroll.count"),
        llvm::ConstantAsMetadata::get(b_.getInt32(static_cast<uint32_t>(op.attr_int("unroll"))))};
    llvm::MDNode* unroll = llvm::MDNode::get(ctx_, count);
    llvm::Metadata* id[] = {nullptr, unroll};
    llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx_, id);
    loop_id->replaceOperandWith(0, loop_id);
    back->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
  }
  iv->addIncoming(next, latch);
  for (size_t i = 0; i < phis.size(); ++i)
    for (size_t r = 0; r < phis[i].size(); ++r) phis[i][r]->addIncoming(yielded[i][r], latch);
  b_.SetInsertPoint(exit);
  // The last iteration's copies (of a tile past the loop's end, zero-filled) land in shared
  // memory that later ops may use.
  if (copies) inline_ptx("cp.async.wait_group 0;", "~{memory}", b_.getVoidTy(), {}, /*side_effects=*/true);
  if (async_slots.empty()) return;
  Regs pending;
  for (size_t slot : async_slots) pending.insert(pending.end(), phis[slot].begin(), phis[slot].end());
  Regs done = wgmma_wait(pending, 0);
  size_t at = 0;
  for (size_t slot : async_slots) {
    Regs& result = vals_[op.result(slot)];
    for (auto& r : result) r = done[at++];
  }
}

void Lowering::lower_while(const ir::Op& op) {
  const ir::Block &cond = *op.regions[0], &body = *op.regions[1];
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* header = llvm::BasicBlock::Create(ctx_, "while.cond", fn_);
  auto* loop = llvm::BasicBlock::Create(ctx_, "while.body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "while.exit", fn_);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  auto phis = carried_phis(op, 0, pre, {&cond, &body});
  llvm::Value* go = block(cond).at(0).at(0);
  b_.CreateCondBr(go, loop, exit);
  b_.SetInsertPoint(loop);
  auto yielded = block(body);
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  b_.CreateBr(header);
  for (size_t i = 0; i < phis.size(); ++i)
    for (size_t r = 0; r < phis[i].size(); ++r) phis[i][r]->addIncoming(yielded[i][r], latch);
  b_.SetInsertPoint(exit);
}

void Lowering::lower_if(const ir::Op& op) {
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
  auto* else_bb = llvm::BasicBlock::Create(ctx_, "if.else", fn_);
  auto* join = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
  b_.CreateCondBr(get(op.operands[0])[0], then_bb, else_bb);
  std::vector<Regs> out[2];
  llvm::BasicBlock* ends[2];
  llvm::BasicBlock* starts[2] = {then_bb, else_bb};
  // A branch that reads the result of a wgmma dot still running (a persistent matmul's
  // epilogue) waits for it first; after the if, the result is the waited registers where that
  // branch ran, so that one set of accumulators stays live.
  bool waits[2] = {false, false};
  std::vector<Regs> waited[2];
  for (int k = 0; k < 2; ++k) {
    bool reads = false;
    ir::walk(*op.regions[static_cast<size_t>(k)], [&](const ir::Op* inner) {
      for (const ir::Value* u : inner->operands)
        reads = reads || std::find(wgmma_running_.begin(), wgmma_running_.end(), u) != wgmma_running_.end();
    });
    b_.SetInsertPoint(starts[k]);
    if (reads) {
      Regs before;
      for (const ir::Value* v : wgmma_running_) before.insert(before.end(), get(v).begin(), get(v).end());
      Regs done = wgmma_wait(before, 0);
      auto at = done.begin();
      for (const ir::Value* v : wgmma_running_) {
        waited[k].push_back(Regs(at, at + static_cast<long>(get(v).size())));
        at += static_cast<long>(get(v).size());
      }
      for (size_t i = 0; i < wgmma_running_.size(); ++i) std::swap(vals_[wgmma_running_[i]], waited[k][i]);
    }
    out[k] = block(*op.regions[static_cast<size_t>(k)]);
    if (reads)  // back to the registers before the wait; waited[k] now holds the waited ones
      for (size_t i = 0; i < wgmma_running_.size(); ++i) std::swap(vals_[wgmma_running_[i]], waited[k][i]);
    waits[k] = reads;
    ends[k] = b_.GetInsertBlock();
    b_.CreateBr(join);
  }
  b_.SetInsertPoint(join);
  if (waits[0] || waits[1])
    for (size_t i = 0; i < wgmma_running_.size(); ++i) {
      const Regs original = get(wgmma_running_[i]);
      Regs merged;
      for (size_t r = 0; r < original.size(); ++r) {
        llvm::PHINode* p = b_.CreatePHI(original[r]->getType(), 2);
        for (int k = 0; k < 2; ++k) p->addIncoming(waits[k] ? waited[k][i][r] : original[r], ends[k]);
        merged.push_back(p);
      }
      vals_[wgmma_running_[i]] = merged;
    }
  for (size_t i = 0; i < op.results.size(); ++i) {
    Regs regs;
    for (size_t r = 0; r < out[0][i].size(); ++r) {
      llvm::PHINode* p = b_.CreatePHI(out[0][i][r]->getType(), 2);
      p->addIncoming(out[0][i][r], ends[0]);
      p->addIncoming(out[1][i][r], ends[1]);
      regs.push_back(p);
    }
    vals_[op.result(i)] = regs;
  }
}

}  // namespace tiledsl::codegen
