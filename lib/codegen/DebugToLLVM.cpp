// device_print and device_assert: vprintf from each element's owner (owned()), so every
// element appears once however its layout replicates it; output order is the GPU's.
#include "codegen/Lowering.h"

namespace tiledsl::codegen {

namespace {
// A C string constant in global memory, as a generic pointer.
llvm::Value* c_string(llvm::IRBuilder<>& b, llvm::Module& m, const std::string& s) {
  llvm::GlobalVariable* g = b.CreateGlobalString(s, ".str", kGlobal, &m);
  return llvm::ConstantExpr::getAddrSpaceCast(g, b.getPtrTy());
}
}  // namespace

std::vector<llvm::Value*> Lowering::program_ids() {
  return {intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {}),
          intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y, {}),
          intrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z, {})};
}

void Lowering::device_printf(const std::string& format, const std::vector<llvm::Value*>& args) {
  llvm::Value* buffer = llvm::ConstantPointerNull::get(b_.getPtrTy());
  if (!args.empty()) {
    std::vector<llvm::Type*> types;
    for (llvm::Value* a : args) types.push_back(a->getType());
    llvm::StructType* st = llvm::StructType::get(ctx_, types);
    // In the entry block: one stack slot per call site, not one per loop iteration.
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    llvm::Value* slot = entry.CreateAlloca(st);
    for (size_t i = 0; i < args.size(); ++i)
      b_.CreateStore(args[i], b_.CreateStructGEP(st, slot, static_cast<unsigned>(i)));
    buffer = slot;
  }
  llvm::FunctionCallee vprintf = mod_->getOrInsertFunction(
      "vprintf", llvm::FunctionType::get(b_.getInt32Ty(), {b_.getPtrTy(), b_.getPtrTy()}, false));
  b_.CreateCall(vprintf, {c_string(b_, *mod_, format), buffer});
}

// printf's format of an element index of `t`: "[%d, %d]", or "scalar".
static std::string index_format(const ir::Type& t) {
  if (!t.is_tile()) return "scalar";
  std::string f = "[";
  for (size_t d = 0; d < t.shape().size(); ++d) f += d ? ", %d" : "%d";
  return f + "]";
}

// As the interpreter: "pid (x, y, z) idx [i, j] <prefix><value>" per element of each operand.
void Lowering::lower_print(const ir::Op& op) {
  bool hex = op.attr_int("hex") != 0;
  llvm::Value* prefix = c_string(b_, *mod_, op.attr_str("prefix"));
  std::vector<llvm::Value*> pid = program_ids();
  for (const ir::Value* v : op.operands) {
    ir::Type t = v->type;
    std::string format = "pid (%d, %d, %d) idx " + index_format(t) + " %s";
    std::vector<std::vector<llvm::Value*>> idx;
    if (t.is_tile()) idx = indices(t);
    Owned o = owned(t);
    const Regs& regs = get(v);
    predicated(o.pred, nullptr, [&] {
      for (int64_t r : o.regs) {
        llvm::Value* x = regs[static_cast<size_t>(r)];
        std::string spec;
        if (t.element().is_pointer()) {
          spec = "%p";
        } else if (is_float(t.dtype())) {
          spec = hex ? "%a" : "%g";
          x = cast(x, t.dtype(), DType::f64);  // fp8 is decoded from its bits
        } else {
          bool uns = is_unsigned(t.dtype()) || t.dtype() == DType::i1;
          spec = hex ? "0x%llx" : uns ? "%llu" : "%lld";
          x = b_.CreateIntCast(x, b_.getInt64Ty(), !uns);
        }
        std::vector<llvm::Value*> args = pid;
        if (t.is_tile())
          for (llvm::Value* i : idx[static_cast<size_t>(r)]) args.push_back(i);
        args.push_back(prefix);
        args.push_back(x);
        device_printf(format + spec + "\n", args);
      }
      return nullptr;
    });
  }
}

// Where the condition is false: the interpreter's message with the user's file:line, then
// __assertfail, which reports the failure and stops the kernel.
void Lowering::lower_assert(const ir::Op& op) {
  const ir::Value* c = op.operands[0];
  ir::Type t = c->type;
  std::vector<std::vector<llvm::Value*>> idx;
  if (t.is_tile()) idx = indices(t);
  Owned o = owned(t);
  const Regs& regs = get(c);
  const std::string& msg = op.attr_str("msg");
  for (int64_t r : o.regs) {
    llvm::Value* failed = b_.CreateNot(regs[static_cast<size_t>(r)]);
    if (o.pred) failed = b_.CreateAnd(o.pred, failed);
    std::vector<llvm::Value*> args;
    if (t.is_tile()) args = idx[static_cast<size_t>(r)];
    args.push_back(c_string(b_, *mod_, msg));
    device_fail(failed, op, "assert: device_assert failed at index " + index_format(t) + ": %s", args, msg);
  }
}

void Lowering::device_fail(llvm::Value* failed, const ir::Op& op, const std::string& format,
                           std::vector<llvm::Value*> args, const std::string& msg) {
  std::string where = op.loc.line ? op.loc.str() : "<unknown>";
  llvm::Value* file = c_string(b_, *mod_, op.loc.file.empty() ? "<unknown>" : op.loc.file);
  llvm::FunctionCallee assertfail = mod_->getOrInsertFunction(
      "__assertfail",
      llvm::FunctionType::get(b_.getVoidTy(),
                              {b_.getPtrTy(), b_.getPtrTy(), b_.getInt32Ty(), b_.getPtrTy(), b_.getInt64Ty()}, false));
  predicated(failed, nullptr, [&] {
    std::vector<llvm::Value*> all = {c_string(b_, *mod_, where), c_string(b_, *mod_, f_.name)};
    all.insert(all.end(), args.begin(), args.end());
    for (llvm::Value* p : program_ids()) all.push_back(p);
    device_printf("%s: in kernel '%s': " + format + " (program (%d, %d, %d))\n", all);
    b_.CreateCall(assertfail, {c_string(b_, *mod_, msg), file, b_.getInt32(op.loc.line), c_string(b_, *mod_, f_.name),
                               b_.getInt64(1)});
    return nullptr;
  });
}

}  // namespace tiledsl::codegen
