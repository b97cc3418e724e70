#include "codegen/InvariantDivision.h"

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Intrinsics.h>

#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "codegen/Lower.h"

namespace tiledsl::codegen {

namespace {
// InvariantDivision.h's operations as IR.
struct Builder {
  using Value = llvm::Value*;
  llvm::IRBuilder<>& b;
  Value k(uint32_t v) { return b.getInt32(v); }
  Value add(Value x, Value y) { return b.CreateAdd(x, y); }
  Value sub(Value x, Value y) { return b.CreateSub(x, y); }
  Value xor_(Value x, Value y) { return b.CreateXor(x, y); }
  Value lshr(Value x, Value y) { return b.CreateLShr(x, y); }
  Value ashr(Value x, Value y) { return b.CreateAShr(x, y); }
  Value umin(Value x, Value y) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, x, y); }
  Value clz(Value x) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, x, b.getFalse()); }
  Value is_negative(Value x) { return b.CreateICmpSLT(x, k(0)); }
  Value equal(Value x, Value y) { return b.CreateICmpEQ(x, y); }
  Value select(Value c, Value x, Value y) { return b.CreateSelect(c, x, y); }
  Value mulhi(Value x, Value y) {
    Value p = b.CreateMul(b.CreateZExt(x, b.getInt64Ty()), b.CreateZExt(y, b.getInt64Ty()));
    return b.CreateTrunc(b.CreateLShr(p, 32), b.getInt32Ty());
  }
  Value wide_quotient(Value l, Value d) {
    Value d64 = b.CreateZExt(d, b.getInt64Ty());
    Value gap = b.CreateSub(b.CreateShl(b.getInt64(1), b.CreateZExt(l, b.getInt64Ty())), d64);  // 2^l - d
    return b.CreateTrunc(b.CreateUDiv(b.CreateShl(gap, 32), d64), b.getInt32Ty());
  }
};

// The outermost loop around `i` in which `d` does not change, or null. What computes d in a loop
// from values outside it and can run unconditionally (the freeze O3 leaves beside a division,
// say) moves to the loop's preheader first.
llvm::Loop* invariant_loop(llvm::LoopInfo& li, llvm::Instruction* i, llvm::Value* d) {
  llvm::Loop* found = nullptr;
  bool changed = false;
  for (llvm::Loop* l = li.getLoopFor(i->getParent()); l && l->getLoopPreheader() && l->makeLoopInvariant(d, changed);
       l = l->getParentLoop())
    found = l;
  return found;
}
}  // namespace

int divide_by_loop_invariants(llvm::Module& m) {
  int rewritten = 0;
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    llvm::DominatorTree dt(f);
    llvm::LoopInfo li(dt);
    const llvm::DataLayout& dl = m.getDataLayout();
    std::vector<std::pair<llvm::BinaryOperator*, llvm::Loop*>> work;
    for (llvm::Instruction& i : llvm::instructions(f)) {
      auto* op = llvm::dyn_cast<llvm::BinaryOperator>(&i);
      if (!op || !op->getType()->isIntegerTy(32) || llvm::isa<llvm::Constant>(op->getOperand(1))) continue;
      const auto code = op->getOpcode();
      if (code != llvm::Instruction::SDiv && code != llvm::Instruction::UDiv && code != llvm::Instruction::SRem &&
          code != llvm::Instruction::URem)
        continue;
      if (llvm::Loop* l = invariant_loop(li, op, op->getOperand(1))) work.emplace_back(op, l);
    }
    // One set of constants per divisor, signedness and preheader (i / d and i % d share them).
    std::map<std::tuple<llvm::Value*, bool, llvm::BasicBlock*>, division::Magic<llvm::Value*>> magics;
    for (auto [op, loop] : work) {
      llvm::Value *n = op->getOperand(0), *d = op->getOperand(1);
      const auto code = op->getOpcode();
      const bool is_signed = code == llvm::Instruction::SDiv || code == llvm::Instruction::SRem;
      // Signed operands known to be non-negative divide as unsigned ones.
      const bool d_signed = is_signed && !llvm::isKnownNonNegative(d, dl);
      const bool n_signed = is_signed && !llvm::isKnownNonNegative(n, dl);
      llvm::BasicBlock* pre = loop->getLoopPreheader();
      auto key = std::make_tuple(d, d_signed, pre);
      auto it = magics.find(key);
      if (it == magics.end()) {
        llvm::IRBuilder<> b(pre->getTerminator());
        Builder a{b};
        it = magics.emplace(key, division::unsigned_magic(a, d_signed ? division::magnitude(a, d) : d)).first;
      }
      llvm::IRBuilder<> b(op);
      Builder a{b};
      llvm::Value* q = d_signed || n_signed ? division::signed_divide(a, n, d, it->second)
                                            : division::unsigned_divide(a, n, it->second);
      llvm::Value* result =
          code == llvm::Instruction::SDiv || code == llvm::Instruction::UDiv ? q : b.CreateSub(n, b.CreateMul(q, d));
      result->takeName(op);
      op->replaceAllUsesWith(result);
      op->eraseFromParent();
      ++rewritten;
    }
  }
  return rewritten;
}

}  // namespace tiledsl::codegen
