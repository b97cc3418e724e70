#include "codegen/Lowering.h"

namespace tiledsl::codegen {

// Philox4x32 (runtime/Interpreter.cpp philox4x32), per element of the offsets: counter
// (offset, 0, 0, 0), key (seed low 32 bits, seed high 32 bits). The two halves of each
// 32x32->64 product are mul.hi.u32 and mul.lo.
void Lowering::lower_philox(const ir::Op& op) {
  llvm::Value* seed = get(op.operands[0])[0];
  if (seed->getType() != b_.getInt64Ty()) seed = b_.CreateZExt(seed, b_.getInt64Ty());
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Value* k0_init = b_.CreateTrunc(seed, i32);
  llvm::Value* k1_init = b_.CreateTrunc(b_.CreateLShr(seed, 32), i32);
  int64_t rounds = op.attr_int("rounds");
  const Regs& offsets = get(op.operands[1]);
  std::array<Regs, 4> out;
  for (llvm::Value* off : offsets) {
    llvm::Value* zero = b_.getInt32(0);
    std::array<llvm::Value*, 4> c = {off, zero, zero, zero};
    llvm::Value *k0 = k0_init, *k1 = k1_init;
    for (int64_t r = 0; r < rounds; ++r) {
      llvm::Value *m0 = b_.getInt32(0xD2511F53u), *m1 = b_.getInt32(0xCD9E8D57u);
      llvm::Value* hi0 = intrinsic(llvm::Intrinsic::nvvm_mulhi_ui, {c[0], m0});
      llvm::Value* hi1 = intrinsic(llvm::Intrinsic::nvvm_mulhi_ui, {c[2], m1});
      c = {b_.CreateXor(b_.CreateXor(hi1, c[1]), k0), b_.CreateMul(c[2], m1), b_.CreateXor(b_.CreateXor(hi0, c[3]), k1),
           b_.CreateMul(c[0], m0)};
      k0 = b_.CreateAdd(k0, b_.getInt32(0x9E3779B9u));
      k1 = b_.CreateAdd(k1, b_.getInt32(0xBB67AE85u));
    }
    for (size_t q = 0; q < 4; ++q) out[q].push_back(c[q]);
  }
  for (size_t q = 0; q < 4; ++q) vals_[op.result(q)] = out[q];
}

}  // namespace tiledsl::codegen
