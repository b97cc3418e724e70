// The lowering of one kernel, shared by the XxxToLLVM.cpp files (one per op family of
// ir/Ops.def). Internal to lib/codegen. Every tile value becomes the list of LLVM values this
// thread holds, one per register of its layout (passes/Layouts.h); a scalar is a list of one.
#pragma once

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/Lower.h"
#include "passes/AxisInfo.h"
#include "passes/Layouts.h"
#include "passes/MaskedLanes.h"
#include "support/Error.h"

namespace tiledsl::codegen {

using ir::OpKind;
using passes::DistributedLayout;
using passes::Shape;
using Regs = std::vector<llvm::Value*>;

constexpr unsigned kGlobal = 1, kShared = 3;

inline const DistributedLayout* layout(const ir::Value* v) {
  const DistributedLayout* l = passes::layout_of(v->type);
  TILEDSL_CHECK(l, "codegen: tile value without a layout (run assign_layouts first): ", v->type.str());
  return l;
}

// A load's or store's cache hints (tl::LoadOptions, tl::StoreOptions): the instruction's
// qualifiers after `ld.global` / `st.global` (`.cg`, `.L2::cache_hint`, or `ld.volatile`'s),
// and the L2 eviction policy register that `.L2::cache_hint` takes.
struct AccessHints {
  std::string cop;                // "ca", "cg", "cv" (loads), "wb", "cg", "cs", "wt" (stores)
  bool is_volatile = false;       // ld.volatile
  llvm::Value* policy = nullptr;  // createpolicy's 64-bit L2 policy
  bool any() const { return !cop.empty() || is_volatile || policy; }
};

class Lowering {
 public:
  Lowering(const ir::Function& f, llvm::LLVMContext& ctx, const CompileOptions& opts)
      : f_(f),
        ctx_(ctx),
        opts_(opts),
        mod_(std::make_unique<llvm::Module>(f.name, ctx)),
        b_(ctx),
        axes_(passes::analyze_axes(f)),
        unread_masked_lanes_(passes::loads_with_unread_masked_lanes(f)) {
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(opts.fp_fusion);
    b_.setFastMathFlags(fmf);
    find_direct_copies();
  }

  std::unique_ptr<llvm::Module> run();

 private:
  // --- Types, values, helpers (Lower.cpp) ------------------------------------------------
  llvm::Type* scalar_type(DType t);
  llvm::Type* type_of(ir::Type t);
  // Memory holds i1 as one byte.
  llvm::Type* memory_type(ir::Type t) {
    return t.dtype() == DType::i1 && !t.element().is_pointer() ? b_.getInt8Ty() : type_of(t);
  }
  unsigned alloc_size(llvm::Type* t) const { return static_cast<unsigned>(mod_->getDataLayout().getTypeAllocSize(t)); }

  [[noreturn]] void unsupported(const std::string& what) const {
    throw Error(
        fmt::format("codegen: in kernel '{}': {} is not supported by the GPU code generator yet", f_.name, what));
  }
  [[noreturn]] void unsupported(const ir::Op& op, const std::string& what = "") const {
    throw Error(fmt::format("{}: codegen: in kernel '{}': {}: {}not supported by the GPU code generator yet",
                            op.loc.line ? op.loc.str() : "<unknown>", f_.name, op.name(),
                            what.empty() ? "" : what + " "));
  }

  llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value*> args,
                         llvm::ArrayRef<llvm::Type*> types = {}) {
    return b_.CreateCall(llvm::Intrinsic::getDeclaration(mod_.get(), id, types), args);
  }

  const Regs& get(const ir::Value* v) {
    auto it = vals_.find(v);
    TILEDSL_CHECK(it != vals_.end(), "codegen: value used before it was lowered");
    return it->second;
  }
  int64_t num_regs(const ir::Value* v) { return v->type.is_tile() ? layout(v)->num_regs(v->type.shape()) : 1; }

  // The thread part of dimension `d` of `l`'s index, as an i32.
  llvm::Value* thread_part(const DistributedLayout* l, size_t d);
  // The index of every register of a tile value of `type`: idx[reg][dim], i32.
  std::vector<std::vector<llvm::Value*>> indices(ir::Type type);
  // The row-major position of `idx` in `shape`, with `row_pad` unused elements after each row
  // (the last dimension).
  llvm::Value* linear(const std::vector<llvm::Value*>& idx, const Shape& shape, int64_t row_pad = 0);
  // Which registers of a value of `type` this thread owns: each element of a tile has exactly
  // one owner among all threads and registers (layouts may replicate elements), and a scalar
  // is owned by thread 0. `pred` is an i1 that holds in the owning threads, or null when every
  // thread owns its registers.
  struct Owned {
    std::vector<int64_t> regs;
    llvm::Value* pred = nullptr;
  };
  Owned owned(ir::Type type);
  // The predicate of an access to an owned register: the owner test and `mask`, where each may
  // be null (null when both are).
  llvm::Value* owner_and(const Owned& o, llvm::Value* mask) {
    return o.pred && mask ? b_.CreateAnd(o.pred, mask) : o.pred ? o.pred : mask;
  }

  // --- Shared memory (Lower.cpp) ----------------------------------------------------------
  // The buffer of `op` in the kernel's dynamic shared memory, where passes::allocate_shared
  // placed it (smem_offset), after a barrier (earlier users of those bytes are done) unless
  // `sync` is false; `bytes` is what the lowering needs, checked against what the pass reserved.
  llvm::Value* shared(const ir::Op& op, int64_t bytes, bool sync = true);
  void barrier() { intrinsic(llvm::Intrinsic::nvvm_barrier0, {}); }
  void finish_shared_memory();
  llvm::Value* to_memory(llvm::Value* v) { return v->getType()->isIntegerTy(1) ? b_.CreateZExt(v, b_.getInt8Ty()) : v; }
  llvm::Value* from_memory(llvm::Value* v, ir::Type t) {
    return t.dtype() == DType::i1 && !t.element().is_pointer() ? b_.CreateICmpNE(v, b_.getInt8(0)) : v;
  }
  // Gives every thread the value of `regs` (a tile or scalar of `type`) that its owner
  // (owned()) computed: other threads' registers may hold anything on entry.
  Regs from_owners(const ir::Op& op, const Regs& regs, ir::Type type);

  // --- Blocks and ops (Lower.cpp) ---------------------------------------------------------
  // Lowers the ops of `blk` up to its yield; returns the yielded values.
  std::vector<Regs> block(const ir::Block& blk);
  void lower(const ir::Op& op);
  Regs value_op(const ir::Op& op);
  void annotate();

  // --- Shapes and layout conversions (ConvertLayoutToLLVM.cpp) ---------------------------
  // Moves the elements of `src` (a tile of `src_type`) into the registers of `dst_type`
  // through shared memory, where src is laid out row-major with `row_pad` unused elements after
  // each row; dst element `i` reads the element at position `src_of(i)` there.
  Regs shuffle(const ir::Op& op, const Regs& src, ir::Type src_type, ir::Type dst_type,
               const std::function<llvm::Value*(const std::vector<llvm::Value*>&)>& src_of, int64_t row_pad = 0);
  // How many consecutive registers of a tile of type `t` one shared-memory access can move
  // when the tile is laid out row-major with `row_pad` elements after each row: registers
  // consecutive along the last dimension, at positions (thread part included) that are
  // multiples of the count, 16 bytes at most.
  int shared_vector_width(ir::Type t, int64_t row_pad);
  // Stores the registers `regs` of a tile of type `t` at `base`, laid out as above, in vectors
  // of `width` registers.
  void store_rows(llvm::Value* base, const Regs& regs, ir::Type t, int64_t row_pad, int width);
  // Whether a conversion's source of type `t` goes to shared memory by stmatrix (store_matrices):
  // sm_90's 16-bit mma-layout tiles that tile the layout exactly, rows 16-byte aligned.
  bool stores_matrices(ir::Type t, int64_t row_pad);
  // store_rows's array, written by stmatrix: four 8 x 8 matrices an instruction (ConvertLayoutToLLVM.cpp).
  void store_matrices(llvm::Value* base, const Regs& regs, ir::Type t, int64_t row_pad);
  Regs lower_shape(const ir::Op& op);
  // convert_layout through shared memory: vector stores in the source's layout, a barrier,
  // vector loads in the result's.
  Regs lower_convert(const ir::Op& op);
  Regs lower_gather(const ir::Op& op);
  void lower_inline_asm(const ir::Op& op);

  // --- Elementwise (ElementwiseToLLVM.cpp) -------------------------------------------------
  Regs lower_elementwise(const ir::Op& op);
  llvm::Value* elementwise(const ir::Op& op, const std::vector<llvm::Value*>& a);
  llvm::Value* compare(const std::string& p, llvm::Value* x, llvm::Value* y, bool flt, bool uns);
  llvm::Value* cast(llvm::Value* x, DType from, DType to);
  llvm::Value* int_to_bf16(llvm::Value* x, bool uns);
  // A float function op (kFloatMath, or math2's two operands) of dtype `d`; f16, bf16 and fp8
  // compute in f32 and round back.
  llvm::Value* math(const ir::Op& op, llvm::ArrayRef<llvm::Value*> args, DType d);
  llvm::Value* int_divide(OpKind k, llvm::Value* x, llvm::Value* y, bool uns);
  llvm::Value* inline_ptx(const std::string& asm_text, const std::string& constraints, llvm::Type* result,
                          llvm::ArrayRef<llvm::Value*> args, bool side_effects = false);
  llvm::Value* libdevice(const std::string& name, llvm::Type* t, llvm::ArrayRef<llvm::Value*> args);

  // --- Memory (MemoryToLLVM.cpp) -----------------------------------------------------------
  // How many consecutive registers of `v` hold consecutive elements along `dim` (-1: the last).
  int contiguous_regs(ir::Type t, int dim = -1);
  int contiguous_regs(const ir::Value* v, int dim = -1) { return contiguous_regs(v->type, dim); }
  int vector_width(const ir::Op& op);
  // Runs `body` only where `pred` holds (no branch when there is no predicate); returns the
  // value `body` produced there, or `otherwise` elsewhere.
  llvm::Value* predicated(llvm::Value* pred, llvm::Value* otherwise, const std::function<llvm::Value*()>& body);
  // A masked global access of one vector `vt` as a single predicated PTX instruction, in
  // 32-bit words (16-bit for a 2-byte access); false where it cannot be (pointer elements,
  // 1-byte accesses): the caller then branches around a plain access.
  bool predicated_access_ok(llvm::Type* vt) const;
  AccessHints access_hints(const ir::Op& op);
  // As above; `pred` null: the access is not predicated (and `otherwise` is null too).
  llvm::Value* predicated_load(llvm::Value* ptr, llvm::Value* pred, llvm::Value* otherwise, llvm::Type* vt,
                               const AccessHints& hints = {});
  void predicated_store(llvm::Value* ptr, llvm::Value* pred, llvm::Value* v, const AccessHints& hints = {});
  Regs lower_load(const ir::Op& op);
  void lower_store(const ir::Op& op);
  Regs lower_atomic(const ir::Op& op);

  // --- Reductions and scans (ReduceScanToLLVM.cpp) ----------------------------------------
  // Applies the combine region of `op` to one pair of element lists.
  std::vector<llvm::Value*> combine(const ir::Op& op, const std::vector<llvm::Value*>& lhs,
                                    const std::vector<llvm::Value*>& rhs);
  llvm::Value* shuffle_xor(llvm::Value* v, int mask);
  // `op`'s shared memory as one array per input (a reduction's or a scan's operands may differ
  // in type), `count` elements each, one after the other at 16-byte boundaries; at(q, i) is
  // element i of input q's array.
  struct InputArrays {
    Lowering* lowering;
    std::vector<llvm::Type*> types;
    std::vector<int64_t> base;
    llvm::Value* smem;
    llvm::Value* at(size_t q, llvm::Value* i) const;
  };
  InputArrays input_arrays(const ir::Op& op, int64_t count);
  void lower_reduce(const ir::Op& op);
  void lower_scan(const ir::Op& op);

  // --- Dot (DotToLLVM.cpp) -----------------------------------------------------------------
  Regs lower_dot(const ir::Op& op);
  Regs lower_dot_mma(const ir::Op& op, const passes::MmaLayout& l);
  Regs lower_dot_wgmma(const ir::Op& op, const passes::MmaLayout& l);
  // A thread's part of a dot operand element's index (row, column of the array in shared memory)
  // and the bits each can hold (a superset), for swizzled_address.
  struct ThreadIndex {
    llvm::Value *row, *col;
    int64_t row_bits, col_bits;
  };
  // Stores a tile [rows][cols] into swizzled shared memory at byte `base` of `smem`
  // (DotToLLVM.cpp says how), in 16-byte stores where its layout allows.
  // `transposed`: the array in shared memory is v's transpose (a K-major b, dot_b_kmajor).
  // `round_tf32`: f32 elements are stored rounded to tf32 (cvt.rna), as wgmma, which reads
  // shared memory directly, must see them.
  void stage_dot_operand(const ir::Value* v, llvm::Value* smem, int64_t base, bool panels, bool transposed = false,
                         bool round_tf32 = false);
  // The thread parts of the index of a tile of layout `l` as a dot operand array's (row, column),
  // its rows being dimension 1 - along.
  ThreadIndex thread_index(const DistributedLayout* l, size_t along);
  // cvt.rna.tf32.f32 of the 32 bits `x` (an f32 or i32 value): the i32 bits of its tf32 rounding.
  llvm::Value* cvt_rna_tf32(llvm::Value* x);
  // Whether the tensor-core dot `dot` runs on wgmma with tf32 inputs (rounded in shared memory).
  bool wgmma_tf32(const ir::Op& dot) const;
  // Whether wgmma reads the dot operand b [K][N] K-major (transposed panels, imm-trans-b 0):
  // when its registers run along K, as a column-major tile's do, so that stores are vectors.
  bool wgmma_b_kmajor(const ir::Value* b);
  // Whether the tensor-core dot `dot` reads b from a K-major array: wgmma_b_kmajor on wgmma,
  // passes::mma_b_kmajor on mma.sync.
  bool dot_b_kmajor(const ir::Op& dot);
  // Whether operand `x` (0: a, 1: b) of the tensor-core dot `dot` is stored in panels of 128-byte
  // lines (dot_operand_offset): always on wgmma, on mma.sync where passes::mma_operand_panels says.
  bool dot_panels(const ir::Op& dot, int x);
  // Whether `dot`'s wgmma runs on into the next iteration of its loop (passes::wgmma_across_iterations).
  bool async_wgmma(const ir::Op& dot) const;
  // The swizzled byte offset of element (row, col) of a [rows][cols] dot operand of `bytes`-byte
  // elements in shared memory, row-major or in panels: passes::dot_operand_byte in LLVM IR.
  llvm::Value* dot_operand_offset(llvm::Value* row, llvm::Value* col, int64_t rows, int64_t cols, bool panels,
                                  int bytes = 2);
  // The 32-bit shared address of element (t.row + dr, t.col + dc) of the swizzled array at
  // `start` (dot_operand_offset's arguments), a thread's dr and dc constants. The unswizzled offset
  // puts the bits of the row and the column in fields of their own and the swizzle XORs bits 7-9
  // into bits 4-6: both are linear over XOR, so where dr and dc share no bit with what the thread
  // part can hold, offset(t + d) = offset(t) ^ offset(d), one thread-dependent offset serving all
  // of a thread's accesses (each one XOR and one add of constants, not one register per access
  // kept live across a loop). `aligned`: start is a multiple of 1024, so the XOR can follow the
  // add of start (only bits below 1024 differ), which keeps LLVM from hoisting each access's
  // offset out of a loop.
  llvm::Value* swizzled_address(llvm::Value* start, bool aligned, const ThreadIndex& t, int64_t dr, int64_t dc,
                                int64_t rows, int64_t cols, bool panels, int bytes);
  // Whether operand `x` of the tensor-core dot `op` starts 1024-byte aligned in every buffer.
  bool dot_operand_aligned(const ir::Op& op, int x);
  // Fills direct_loads_: the loads passes::direct_copies names whose accesses cp.async can make
  // (4 bytes or more each).
  void find_direct_copies();
  // cp.async copies of `load`'s tile into buffer `stage` of operand `x` of the tensor-core dot
  // `dot`, in its layout there (wgmma's panels or mma.sync's row-major array, b K-major where
  // dot_b_kmajor), masked-off elements zero-filled; the caller commits the group.
  void copy_to_shared(const ir::Op& load, const ir::Op& dot, int x, llvm::Value* stage);
  // Rounds to tf32, in place, the f32 elements this thread copied with copy_to_shared into the
  // buffer at `at` once they have landed (wgmma_tf32's operands).
  void round_copies_in_place(const ir::Op& load, llvm::Value* at, bool transposed);
  // The 32-bit shared address of operand `x` (0: a, 1: b) of the tensor-core dot `dot` in its
  // buffer number `stage`.
  llvm::Value* dot_operand_at(const ir::Op& dot, int x, llvm::Value* stage);
  // Whether `dot` runs on wgmma (sm_90a, and wgmma takes it); other tensor-core dots run on mma.sync.
  bool wgmma_dot(const ir::Op& dot) const;
  // Fills a tensor-core dot's shared buffers for this iteration (DotToLLVM.cpp); returns where
  // a and b start.
  std::array<llvm::Value*, 2> fill_dot_buffers(const ir::Op& op, bool wgmma);
  // The cp.async copies of the tiles of iteration i + depth into a tensor-core dot's buffer
  // (i + depth) mod its count, committed as one group; nothing for a dot without copies ahead.
  // wgmma: from fill_dot_buffers, right after the barrier; mma.sync: after the MMAs.
  void copy_ahead(const ir::Op& op);
  // A load in direct_loads_: those before the loop copy the first tiles into buffers 0, 1, ...
  // here; the one in the loop is copied by its dot (lower_dot_wgmma). None has registers.
  void lower_direct_load(const ir::Op& load);
  // wgmma.wait_group `pending` with `regs` tied through it: nothing reads them before the wait.
  // `held` (A fragments the MMAs read from registers) are inputs of the wait, so that their
  // registers are not reused before it.
  Regs wgmma_wait(const Regs& regs, int pending, const std::vector<llvm::Value*>& held = {});

  // --- Control flow (ControlFlowToLLVM.cpp) ------------------------------------------------
  void lower_for(const ir::Op& op);
  // Phis in the current block (a loop's header) for the loop's carried values, operands `first`
  // on, entered from `pre`: they stand for the loop's results and for the last arguments of each
  // of `regions` (a for body's first argument is its induction variable).
  std::vector<std::vector<llvm::PHINode*>> carried_phis(const ir::Op& loop, size_t first, llvm::BasicBlock* pre,
                                                        std::initializer_list<const ir::Block*> regions);
  void lower_if(const ir::Op& op);
  // The condition is a scalar, the same in every thread (scalars are computed by each thread
  // from uniform values, an atomic's old value broadcast by its owner), so barriers in the body
  // are reached by all threads alike.
  void lower_while(const ir::Op& op);

  // --- Random numbers and debugging (PhiloxToLLVM.cpp, DebugToLLVM.cpp) --------------------
  void lower_philox(const ir::Op& op);
  void lower_print(const ir::Op& op);
  void lower_assert(const ir::Op& op);
  // A call of vprintf with `format` and `args` (promoted as C varargs: i32, i64, double, ptr).
  // fence.acq_rel.gpu: orders this thread's memory operations before and after it (atomics).
  // fp8 <-> float conversions (fp8 is held as its bits in an i8; ElementwiseToLLVM.cpp).
  llvm::Value* encode_fp8(llvm::Value* x, DType to);
  llvm::Value* decode_fp8(llvm::Value* x, DType from);
  // fence.acq_rel at `scope` (cta, gpu or sys).
  void fence(const std::string& scope);
  // One relaxed system-scope atom of `kind` on `t` at `ptr` (cas when `cmp` is given); the old value.
  llvm::Value* system_atom(const std::string& kind, DType t, llvm::Value* ptr, llvm::Value* cmp, llvm::Value* v);
  void device_printf(const std::string& format, const std::vector<llvm::Value*>& args);
  // Where `failed` holds: prints `format` (after "file:line: in kernel 'k': ") with `args` and
  // the program ids, then stops the kernel through __assertfail with `msg`.
  void device_fail(llvm::Value* failed, const ir::Op& op, const std::string& format, std::vector<llvm::Value*> args,
                   const std::string& msg);
  // The program id along each axis, as i32.
  std::vector<llvm::Value*> program_ids();

  const ir::Function& f_;
  llvm::LLVMContext& ctx_;
  const CompileOptions& opts_;
  std::unique_ptr<llvm::Module> mod_;
  llvm::IRBuilder<> b_;
  passes::AxisInfoMap axes_;
  // Masked loads whose masked-off elements nobody reads: no `other` is set for them.
  std::unordered_set<const ir::Op*> unread_masked_lanes_;
  llvm::Function* fn_ = nullptr;
  llvm::Value *tid_ = nullptr, *lane_ = nullptr, *warp_ = nullptr;
  llvm::GlobalVariable* smem_ = nullptr;
  std::unordered_map<const ir::Value*, Regs> vals_;
  // For each loop being lowered whose body has tensor-core dots with several buffers: the
  // iteration's number mod each such count (passes::dot_buffers), which picks a dot's buffer.
  // Innermost last.
  std::vector<std::map<int, llvm::Value*>> dot_stage_;
  // Loads copied by cp.async into a dot's shared buffers: the dot, the operand (0 or 1), and for
  // a load before the loop the buffer it fills (its iteration), for the one in the body -1.
  struct DirectLoad {
    const ir::Op* dot;
    int x, buffer;
  };
  std::unordered_map<const ir::Op*, DirectLoad> direct_loads_;
  // Results of async_wgmma dots of the loop body being lowered, whose MMAs may still be running:
  // an if branch that reads one waits for them first (lower_if).
  std::vector<const ir::Value*> wgmma_running_;
};

}  // namespace tiledsl::codegen
