#include "codegen/Lowering.h"

namespace tiledsl::codegen {

// Philox4x32 or, on u64 offsets, Philox4x64 (runtime/Interpreter.cpp philox4x32, philox4x64), per
// element of the offsets: counter (offset, 0, 0, 0), key (seed low 32 bits, seed high 32 bits) or
// (seed, 0). The two halves of each product are mul.hi and mul.lo of the word's width.
void Lowering::lower_philox(const ir::Op& op) {
  llvm::Value* seed = get(op.operands[0])[0];
  if (seed->getType() != b_.getInt64Ty()) seed = b_.CreateZExt(seed, b_.getInt64Ty());
  const bool wide = op.operands[1]->type.dtype() == DType::u64;
  llvm::Type* word = wide ? b_.getInt64Ty() : b_.getInt32Ty();
  auto c = [&](uint64_t v) { return llvm::ConstantInt::get(word, v); };
  llvm::Value* k0_init = wide ? seed : b_.CreateTrunc(seed, word);
  llvm::Value* k1_init = wide ? c(0) : b_.CreateTrunc(b_.CreateLShr(seed, 32), word);
  const uint64_t mul0 = wide ? 0xD2E7470EE14C6C93ull : 0xD2511F53u, mul1 = wide ? 0xCA5A826395121157ull : 0xCD9E8D57u;
  const uint64_t weyl0 = wide ? 0x9E3779B97F4A7C15ull : 0x9E3779B9u, weyl1 = wide ? 0xBB67AE8584CAA73Bull : 0xBB67AE85u;
  const auto mulhi = wide ? llvm::Intrinsic::nvvm_mulhi_ull : llvm::Intrinsic::nvvm_mulhi_ui;
  int64_t rounds = op.attr_int("rounds");
  const Regs& offsets = get(op.operands[1]);
  std::array<Regs, 4> out;
  for (llvm::Value* off : offsets) {
    std::array<llvm::Value*, 4> x = {off, c(0), c(0), c(0)};
    llvm::Value *k0 = k0_init, *k1 = k1_init;
    for (int64_t r = 0; r < rounds; ++r) {
      llvm::Value *m0 = c(mul0), *m1 = c(mul1);
      llvm::Value* hi0 = intrinsic(mulhi, {x[0], m0});
      llvm::Value* hi1 = intrinsic(mulhi, {x[2], m1});
      x = {b_.CreateXor(b_.CreateXor(hi1, x[1]), k0), b_.CreateMul(x[2], m1), b_.CreateXor(b_.CreateXor(hi0, x[3]), k1),
           b_.CreateMul(x[0], m0)};
      k0 = b_.CreateAdd(k0, c(weyl0));
      k1 = b_.CreateAdd(k1, c(weyl1));
    }
    for (size_t q = 0; q < 4; ++q) out[q].push_back(x[q]);
  }
  for (size_t q = 0; q < 4; ++q) vals_[op.result(q)] = out[q];
}

}  // namespace tiledsl::codegen
