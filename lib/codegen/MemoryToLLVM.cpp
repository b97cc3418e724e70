#include <llvm/IR/InlineAsm.h>

#include "codegen/Lowering.h"

namespace tiledsl::codegen {

// --- Memory ------------------------------------------------------------------------------
// How many consecutive registers of `v` (a tile) hold consecutive elements along the last
// dimension, starting at every multiple of the result.
int Lowering::contiguous_regs(ir::Type t, int dim) {
  const DistributedLayout* l = passes::layout_of(t);
  const Shape& s = t.shape();
  size_t last = dim < 0 ? s.size() - 1 : static_cast<size_t>(dim);
  int64_t n = l->num_regs(s);
  int best = 1;
  for (int k = 2; k <= n && k <= 16; k *= 2) {
    bool ok = true;
    for (int64_t r = 0; r < n && ok; ++r) {
      Shape base = l->reg_offset(s, r - r % k), off = l->reg_offset(s, r);
      for (size_t d = 0; d < s.size() && ok; ++d) ok = off[d] == base[d] + (d == last ? r % k : 0);
      ok = ok && (base[last] % k) == 0 && off[last] < s[last];
    }
    if (!ok) break;
    best = k;
  }
  return best;
}

int Lowering::vector_width(const ir::Op& op) {
  if (!op.operands[0]->type.is_tile()) return 1;
  // Along the dimension the layout runs fastest (the access's own, for a load's anchor).
  const auto* blocked = dynamic_cast<const passes::BlockedLayout*>(layout(op.operands[0]));
  const int dim = blocked ? blocked->order()[0] : static_cast<int>(op.operands[0]->type.shape().size()) - 1;
  return std::min(passes::memory_vector_width(op, axes_, dim), contiguous_regs(op.operands[0], dim));
}

// Runs `body` only where `pred` holds (no branch when there is no predicate); returns the
// value `body` produced there, or `otherwise` elsewhere.
llvm::Value* Lowering::predicated(llvm::Value* pred, llvm::Value* otherwise,
                                  const std::function<llvm::Value*()>& body) {
  if (!pred) return body();
  llvm::BasicBlock* from = b_.GetInsertBlock();
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "masked", fn_);
  auto* join = llvm::BasicBlock::Create(ctx_, "join", fn_);
  b_.CreateCondBr(pred, then_bb, join);
  b_.SetInsertPoint(then_bb);
  llvm::Value* v = body();
  llvm::BasicBlock* end = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  if (!otherwise) return nullptr;
  llvm::PHINode* phi = b_.CreatePHI(otherwise->getType(), 2);
  phi->addIncoming(v, end);
  phi->addIncoming(otherwise, from);
  return phi;
}

namespace {
// The registers of a predicated access of `count` elements of `et`: 4- and 8-byte elements as
// themselves (`ld.global.v4.f32`), narrower ones packed into 32-bit words (16-bit for a
// 2-byte access).
struct Words {
  llvm::Type* type;  // one register
  const char* ptx;
  const char* constraint;
  unsigned count;
};
Words words_for(llvm::Type* et, unsigned count, unsigned elem_bytes, llvm::LLVMContext& ctx) {
  if (et->isFloatTy()) return {et, "f32", "f", count};
  if (et->isDoubleTy()) return {et, "f64", "d", count};
  if (elem_bytes == 4) return {et, "b32", "r", count};
  if (elem_bytes == 8) return {et, "b64", "l", count};
  unsigned bytes = elem_bytes * count;
  if (bytes % 4 == 0) return {llvm::Type::getInt32Ty(ctx), "b32", "r", bytes / 4};
  return {llvm::Type::getInt16Ty(ctx), "b16", "h", 1};
}
std::string operand_list(unsigned first, unsigned n) {
  std::string s;
  for (unsigned i = 0; i < n; ++i) s += (i ? ", $" : "$") + std::to_string(first + i);
  return n > 1 ? "{" + s + "}" : s;
}
// The registers of an access of `vt`, one element or a vector of them.
Words words(llvm::Type* vt) {
  auto* v = llvm::dyn_cast<llvm::FixedVectorType>(vt);
  llvm::Type* et = v ? v->getElementType() : vt;
  return words_for(et, v ? v->getNumElements() : 1, et->getPrimitiveSizeInBits() / 8, vt->getContext());
}
std::string vector_suffix(unsigned n) { return n > 1 ? ".v" + std::to_string(n) : ""; }
}  // namespace

// Masked accesses are one predicated instruction each, as Triton emits them: the kernel stays
// one basic block (LLVM and ptxas compile it faster than a branch per vector) and ptxas
// schedules the loads freely. They are marked as having side effects so that LLVM neither
// merges nor moves them across stores.

bool Lowering::predicated_access_ok(llvm::Type* vt) const {
  if (vt->getScalarType()->isPointerTy()) return false;
  unsigned bytes = alloc_size(vt);
  return bytes % 4 == 0 || bytes == 2;
}

AccessHints Lowering::access_hints(const ir::Op& op) {
  AccessHints h;
  if (op.has_attr("cache")) h.cop = op.attr_str("cache");
  h.is_volatile = op.has_attr("volatile") && op.attr_int("volatile") != 0;
  // Triton's eviction_policy: an L2 policy that marks every line the access touches (fraction
  // 1.0) to be evicted first or last, passed to the access by .L2::cache_hint.
  if (op.has_attr("eviction"))
    h.policy = inline_ptx(fmt::format("createpolicy.fractional.L2::{}.b64 $0, 1.0;", op.attr_str("eviction")), "=l",
                          b_.getInt64Ty(), {}, /*side_effects=*/false);
  return h;
}

llvm::Value* Lowering::predicated_load(llvm::Value* ptr, llvm::Value* pred, llvm::Value* otherwise, llvm::Type* vt,
                                       const AccessHints& hints) {
  Words w = words(vt);
  llvm::Type* word = w.type;
  llvm::Type* words = w.count > 1 ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(word, w.count)) : word;
  // Outputs $0..$n-1, then the address, the predicate, the n words of `otherwise` (none when it
  // is null: the masked-off elements are left unset) and the cache policy, those there are. The
  // outputs take `otherwise` before the load, not under the negated predicate after it: ptxas
  // turns an `@!p mov` after the load into a select that waits for the load, which stalls the
  // warp before its next load is issued (SpMM ran 21 % slower on the H200 that way).
  const unsigned n = w.count;
  std::vector<llvm::Value*> args{ptr};
  std::string constraints;
  for (unsigned i = 0; i < n; ++i) constraints += std::string("=") + w.constraint + ",";
  constraints += "l";
  auto operand = [&](llvm::Value* v, const std::string& c) {
    args.push_back(v);
    constraints += "," + c;
    return fmt::format("${}", n + args.size() - 1);
  };
  const std::string p = pred ? operand(pred, "b") : "";
  std::string text;
  if (otherwise) {
    llvm::Value* other_words = b_.CreateBitCast(otherwise, words);
    for (unsigned i = 0; i < n; ++i)
      text += fmt::format("mov.{} ${}, {};\n\t", w.ptx, i,
                          operand(n > 1 ? b_.CreateExtractElement(other_words, i) : other_words, w.constraint));
  }
  const std::string policy = hints.policy ? ", " + operand(hints.policy, "l") : "";
  const std::string instr = hints.is_volatile ? "ld.volatile.global"
                                              : "ld.global" + (hints.cop.empty() ? "" : "." + hints.cop) +
                                                    (hints.policy ? ".L2::cache_hint" : "");
  text += fmt::format("{}{}{}.{} {}, [${}]{};", pred ? "@" + p + " " : "", instr, vector_suffix(n), w.ptx,
                      operand_list(0, n), n, policy);
  llvm::Type* result =
      n > 1 ? static_cast<llvm::Type*>(llvm::StructType::get(ctx_, std::vector<llvm::Type*>(n, word))) : word;
  llvm::Value* out = inline_ptx(text, constraints, result, args, /*side_effects=*/true);
  llvm::Value* v = out;
  if (n > 1) {
    v = llvm::UndefValue::get(words);
    for (unsigned i = 0; i < n; ++i) v = b_.CreateInsertElement(v, b_.CreateExtractValue(out, i), i);
  }
  return b_.CreateBitCast(v, vt);
}

void Lowering::predicated_store(llvm::Value* ptr, llvm::Value* pred, llvm::Value* v, const AccessHints& hints) {
  Words w = words(v->getType());
  llvm::Type* word = w.type;
  unsigned n = w.count;
  llvm::Value* as_words =
      b_.CreateBitCast(v, n > 1 ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(word, n)) : word);
  // The address $0, the n words $1..$n, then the predicate and the cache policy, those there are.
  std::string constraints = "l";
  std::vector<llvm::Value*> args{ptr};
  for (unsigned i = 0; i < n; ++i) {
    constraints += std::string(",") + w.constraint;
    args.push_back(n > 1 ? b_.CreateExtractElement(as_words, i) : as_words);
  }
  auto operand = [&](llvm::Value* x, const char* c) {
    args.push_back(x);
    constraints += std::string(",") + c;
    return fmt::format("${}", args.size() - 1);
  };
  const std::string p = pred ? "@" + operand(pred, "b") + " " : "";
  const std::string policy = hints.policy ? ", " + operand(hints.policy, "l") : "";
  const std::string instr =
      "st.global" + (hints.cop.empty() ? "" : "." + hints.cop) + (hints.policy ? ".L2::cache_hint" : "");
  std::string text =
      fmt::format("{}{}{}.{} [$0], {}{};", p, instr, vector_suffix(n), w.ptx, operand_list(1, n), policy);
  inline_ptx(text, constraints, b_.getVoidTy(), args, /*side_effects=*/true);
}

Regs Lowering::lower_load(const ir::Op& op) {
  if (direct_loads_.count(&op)) {
    lower_direct_load(op);
    return {};
  }
  const ir::Value* res = op.result();
  llvm::Type* et = memory_type(res->type);
  int vec = vector_width(op);
  const Regs& ptrs = get(op.operands[0]);
  const Regs* mask = op.operands.size() > 1 ? &get(op.operands[1]) : nullptr;
  const Regs* other = op.operands.size() > 2 ? &get(op.operands[2]) : nullptr;
  unsigned bytes = static_cast<unsigned>(mod_->getDataLayout().getTypeAllocSize(et));
  // A predicated load leaves masked-off elements unset when nobody reads them (MaskedLanes.h).
  const bool other_read = !unread_masked_lanes_.count(&op);
  // Cache hints need the PTX instruction, masked or not; where it cannot be written (1-byte and
  // pointer elements) they are dropped, but for volatile, which LLVM's load keeps.
  const AccessHints hints = access_hints(op);
  Regs out;
  for (size_t r = 0; r < ptrs.size(); r += static_cast<size_t>(vec)) {
    llvm::Type* vt =
        vec > 1 ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(et, static_cast<unsigned>(vec))) : et;
    const bool one_instruction = (mask || hints.any()) && predicated_access_ok(vt);
    llvm::Value* fallback = nullptr;
    if (mask && (other_read || !one_instruction)) {
      fallback = llvm::UndefValue::get(vt);
      for (int j = 0; j < vec; ++j) {
        llvm::Value* o = other ? to_memory((*other)[r + static_cast<size_t>(j)]) : llvm::Constant::getNullValue(et);
        fallback = vec > 1 ? b_.CreateInsertElement(fallback, o, static_cast<uint64_t>(j)) : o;
      }
    }
    llvm::Value* v;
    if (one_instruction) {
      v = predicated_load(ptrs[r], mask ? (*mask)[r] : nullptr, fallback, vt, hints);
    } else {
      v = predicated(mask ? (*mask)[r] : nullptr, fallback, [&] {
        return b_.CreateAlignedLoad(vt, ptrs[r], llvm::Align(bytes * static_cast<unsigned>(vec)), hints.is_volatile);
      });
    }
    for (int j = 0; j < vec; ++j)
      out.push_back(from_memory(vec > 1 ? b_.CreateExtractElement(v, static_cast<uint64_t>(j)) : v, res->type));
  }
  return out;
}

// Each element is stored once, by its owner (owned()): a scalar by thread 0, a tile element
// that the layout replicates (a tile smaller than the layout) by one of its replicas. Every
// replica holds the same value, so the others' stores only cost memory transactions (a
// layer-norm row's mean, stored by all 256 threads of 8 warps, was 8 transactions, not 1).
void Lowering::lower_store(const ir::Op& op) {
  ir::Type vt_ir = op.operands[1]->type;
  llvm::Type* et = memory_type(vt_ir);
  int vec = vector_width(op);
  const Regs& ptrs = get(op.operands[0]);
  const Regs& vals = get(op.operands[1]);
  const Regs* mask = op.operands.size() > 2 ? &get(op.operands[2]) : nullptr;
  unsigned bytes = static_cast<unsigned>(mod_->getDataLayout().getTypeAllocSize(et));
  Owned mine = owned(vt_ir);
  const AccessHints hints = access_hints(op);  // dropped where the PTX cannot be written, as loads'
  for (int64_t r64 : mine.regs) {
    if (r64 % vec) continue;  // inside a vector stored from its first register
    size_t r = static_cast<size_t>(r64);
    llvm::Value* pred = owner_and(mine, mask ? (*mask)[r] : nullptr);
    llvm::Value* v;
    if (vec > 1) {
      v = llvm::UndefValue::get(llvm::FixedVectorType::get(et, static_cast<unsigned>(vec)));
      for (int j = 0; j < vec; ++j)
        v = b_.CreateInsertElement(v, to_memory(vals[r + static_cast<size_t>(j)]), static_cast<uint64_t>(j));
    } else {
      v = to_memory(vals[r]);
    }
    if ((pred || hints.any()) && predicated_access_ok(v->getType())) {
      predicated_store(ptrs[r], pred, v, hints);
      continue;
    }
    predicated(pred, nullptr, [&] {
      b_.CreateAlignedStore(v, ptrs[r], llvm::Align(bytes * static_cast<unsigned>(vec)));
      return nullptr;
    });
  }
}

// --- Atomics -----------------------------------------------------------------------------
// One atomic per element, by the element's owner only (a layout may replicate elements, and
// every thread holds a scalar), skipped where the mask is false; the old values then reach
// the replicas through shared memory. Masked-off elements read 0, as in the interpreter.
Regs Lowering::lower_atomic(const ir::Op& op) {
  const ir::Value* res = op.result();
  ir::Type rt = res->type;
  llvm::Type* et = type_of(rt);
  bool flt = is_float(rt.dtype());
  bool uns = is_unsigned(rt.dtype());
  bool cas = op.kind == OpKind::AtomicCAS;
  const Regs& ptrs = get(op.operands[0]);
  const Regs& vals = get(op.operands[cas ? 2 : 1]);
  const Regs* cmps = cas ? &get(op.operands[1]) : nullptr;
  const Regs* mask = !cas && op.operands.size() > 2 ? &get(op.operands[2]) : nullptr;
  const std::string kind = cas ? "cas" : op.attr_str("kind");
  using B = llvm::AtomicRMWInst::BinOp;
  B bop = B::Xchg;
  if (kind == "add")
    bop = flt ? B::FAdd : B::Add;
  else if (kind == "max")
    bop = flt ? B::FMax : uns ? B::UMax : B::Max;
  else if (kind == "min")
    bop = flt ? B::FMin : uns ? B::UMin : B::Min;
  else if (kind == "and")
    bop = B::And;
  else if (kind == "or")
    bop = B::Or;
  else if (kind == "xor")
    bop = B::Xor;
  else if (kind != "xchg" && kind != "cas")
    unsupported(op, "kind '" + kind + "'");
  // Bit-exact exchanges and compare-and-swaps run on integers of the same width.
  llvm::Type* it = b_.getIntNTy(static_cast<unsigned>(mod_->getDataLayout().getTypeSizeInBits(et)));
  auto as_int = [&](llvm::Value* v) { return flt ? b_.CreateBitCast(v, it) : v; };
  auto from_int = [&](llvm::Value* v) { return flt ? b_.CreateBitCast(v, et) : v; };
  llvm::Align align(alloc_size(et));
  const auto order = llvm::AtomicOrdering::AcquireRelease;
  Owned o = owned(rt);
  Regs out(ptrs.size(), llvm::Constant::getNullValue(et));
  llvm::Value* zero = llvm::Constant::getNullValue(et);
  // The op's order (default: acquire-release at GPU scope, as Triton's atomics). LLVM 19's NVPTX
  // backend emits relaxed atom instructions whatever the ordering asked, so the PTX memory
  // model's release and acquire patterns are built around relaxed atoms: a fence.acq_rel at the
  // op's scope before its atoms for release (plain stores before it become visible first) and one
  // after for acquire (plain loads after it see what the atoms observed). A spin lock of
  // atomic_cas and atomic_xchg then guards plain loads and stores. The atoms themselves are
  // LLVM's at GPU scope (stronger than CTA scope, so right for it too) or, at system scope, PTX's
  // atom.relaxed.sys (ir::atomic_scope_problem lists the types that have one).
  const std::string sem = op.has_attr("sem") ? op.attr_str("sem") : "acq_rel";
  const std::string scope = op.has_attr("scope") ? op.attr_str("scope") : "gpu";
  if (scope == "sys" && rt.dtype() == DType::bf16 && opts_.arch.rfind("sm_8", 0) == 0)
    unsupported(op, "bf16 at system scope before sm_90 (atom.add.noftz.bf16 needs sm_90) is");
  if (sem == "acq_rel" || sem == "release") fence(scope);
  for (int64_t r64 : o.regs) {
    size_t r = static_cast<size_t>(r64);
    llvm::Value* pred = owner_and(o, mask ? (*mask)[r] : nullptr);
    out[r] = predicated(pred, zero, [&]() -> llvm::Value* {
      if (scope == "sys") return system_atom(kind, rt.dtype(), ptrs[r], cas ? (*cmps)[r] : nullptr, vals[r]);
      if (cas) {
        auto* x = b_.CreateAtomicCmpXchg(ptrs[r], as_int((*cmps)[r]), as_int(vals[r]), align, order,
                                         llvm::AtomicOrdering::Monotonic);
        return from_int(b_.CreateExtractValue(x, 0));
      }
      if (bop == B::Xchg) return from_int(b_.CreateAtomicRMW(bop, ptrs[r], as_int(vals[r]), align, order));
      return b_.CreateAtomicRMW(bop, ptrs[r], vals[r], align, order);
    });
  }
  if (sem == "acq_rel" || sem == "acquire") fence(scope);
  if (!o.pred && static_cast<int64_t>(o.regs.size()) == num_regs(res)) return out;
  return from_owners(op, out, rt);
}

void Lowering::fence(const std::string& scope) {
  inline_ptx("fence.acq_rel." + scope + ";", "~{memory}", b_.getVoidTy(), {}, /*side_effects=*/true);
}

llvm::Value* Lowering::system_atom(const std::string& kind, DType t, llvm::Value* ptr, llvm::Value* cmp,
                                   llvm::Value* v) {
  const int bits = bit_width(t);
  const bool flt = is_float(t);
  // The instruction's type: add takes the value's own (.u64 for s64 too: the same bits), max and
  // min their signedness, the bitwise ops, exchange and compare-and-swap bits.
  std::string type;
  if (kind == "add")
    type = t == DType::f16 ? "noftz.f16" : t == DType::bf16 ? "noftz.bf16" : flt ? name(t) : "u" + std::to_string(bits);
  else if (kind == "max" || kind == "min")
    type = (is_unsigned(t) ? "u" : "s") + std::to_string(bits);
  else
    type = "b" + std::to_string(bits);
  const std::string instr = kind == "xchg" ? "exch" : kind;
  const char* c = bits == 16 ? "h" : bits == 64 ? (t == DType::f64 ? "d" : "l") : (t == DType::f32 ? "f" : "r");
  llvm::Type* et = v->getType();
  llvm::Type* reg = bits == 16 ? b_.getInt16Ty() : et;  // 16-bit floats travel as b16 registers
  auto in = [&](llvm::Value* x) { return bits == 16 ? b_.CreateBitCast(x, reg) : x; };
  std::vector<llvm::Value*> args{ptr, in(v)};
  std::string operands = "$0, [$1], $2", constraints = std::string("=") + c + ",l," + c;
  if (cmp) {
    args = {ptr, in(cmp), in(v)};
    operands = "$0, [$1], $2, $3";
    constraints += std::string(",") + c;
  }
  llvm::Value* old = inline_ptx(fmt::format("atom.relaxed.sys.global.{}.{} {};", instr, type, operands),
                                constraints + ",~{memory}", reg, args, /*side_effects=*/true);
  return bits == 16 ? b_.CreateBitCast(old, et) : old;
}

}  // namespace tiledsl::codegen
