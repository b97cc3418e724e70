// Distributed layouts: which thread of a CTA holds which element of a tile. Each layout has one
// job, to map (register, lane, warp) to a logical index of a tile of a given shape and back; the
// codegen reads nothing else. Layouts are interned (get() returns one object per distinct
// value), so tile types that carry equal layouts are equal types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "ir/Type.h"

namespace tiledsl::passes {

using Shape = std::vector<int64_t>;

// Who holds an element: register `reg` of lane `lane` of warp `warp`.
struct Owner {
  int64_t reg = 0;
  int lane = 0, warp = 0;
  bool operator==(const Owner&) const = default;
};

// How the thread part of one dimension's index is formed from the lane and warp ids:
// ((lane >> lane_shift) & (2^lane_bits - 1)) * lane_scale + ((warp >> warp_shift) & ...) * warp_scale.
struct ThreadTerm {
  int lane_shift = 0, lane_bits = 0;
  int64_t lane_scale = 0;
  int warp_shift = 0, warp_bits = 0;
  int64_t warp_scale = 0;
};

// A layout whose index is (thread part + register part) mod shape in every dimension; every
// dimension of the tile is a power of two. When the tile is smaller than the layout's CTA
// tile, several threads hold the same element (index wraps); locate() names the lowest one.
class DistributedLayout : public ir::Layout {
 public:
  virtual int rank() const = 0;
  virtual int num_warps() const = 0;
  virtual int64_t num_regs(const Shape& shape) const = 0;
  // The register part of the index of register `reg`, per dimension.
  virtual Shape reg_offset(const Shape& shape, int64_t reg) const = 0;
  // One term per dimension.
  virtual std::vector<ThreadTerm> thread_terms() const = 0;

  Shape index(const Shape& shape, const Owner& o) const;
  // The lowest (warp, lane, register) holding `index`.
  Owner locate(const Shape& shape, const Shape& index) const;
};

class BlockedLayout final : public DistributedLayout {
 public:
  // order[0] is the fastest-varying dimension (the last, for row-major coalescing).
  static const BlockedLayout* get(std::vector<int> size_per_thread, std::vector<int> threads_per_warp,
                                  std::vector<int> warps_per_cta, std::vector<int> order);

  const std::vector<int>& size_per_thread() const { return spt_; }
  const std::vector<int>& threads_per_warp() const { return tpw_; }
  const std::vector<int>& warps_per_cta() const { return wpc_; }
  const std::vector<int>& order() const { return order_; }

  std::string str() const override;
  int rank() const override { return static_cast<int>(spt_.size()); }
  int num_warps() const override;
  int64_t num_regs(const Shape& shape) const override;
  Shape reg_offset(const Shape& shape, int64_t reg) const override;
  std::vector<ThreadTerm> thread_terms() const override;
  // How often the CTA tile repeats along each dimension of `shape` (at least 1).
  Shape repeats(const Shape& shape) const;

  BlockedLayout(std::vector<int> spt, std::vector<int> tpw, std::vector<int> wpc, std::vector<int> order)
      : spt_(std::move(spt)), tpw_(std::move(tpw)), wpc_(std::move(wpc)), order_(std::move(order)) {}

 private:
  std::vector<int> spt_, tpw_, wpc_, order_;
};

// The parent layout with dimension `dim` removed: the layout of a reduction's result, and of
// the operand of expand_dims. Each element is held by every thread that held a parent element
// of the same index outside `dim`.
class SliceLayout final : public DistributedLayout {
 public:
  static const SliceLayout* get(const DistributedLayout* parent, int dim);

  const DistributedLayout* parent() const { return parent_; }
  int dim() const { return dim_; }
  // The parent shape with `dim` reinserted (length 1: registers along it are not needed).
  Shape parent_shape(const Shape& shape) const;

  std::string str() const override;
  int rank() const override { return parent_->rank() - 1; }
  int num_warps() const override { return parent_->num_warps(); }
  int64_t num_regs(const Shape& shape) const override;
  Shape reg_offset(const Shape& shape, int64_t reg) const override;
  std::vector<ThreadTerm> thread_terms() const override;

  SliceLayout(const DistributedLayout* parent, int dim) : parent_(parent), dim_(dim) {}

 private:
  const DistributedLayout* parent_;
  int dim_;
};

// The accumulator layout of the tensor cores' mma.sync.m16n8k16 (and m16n8k8): each warp holds
// 16 x 8 blocks of the result, lane l holding rows l/4 and l/4 + 8 and columns 2(l%4) and
// 2(l%4) + 1 of each. Warps tile the result warps_per_cta[0] x warps_per_cta[1] blocks at a
// time (warp w at block (w % wm, w / wm)), and that CTA tile repeats over the shape. Registers
// run over the four elements of a block (row-major), then over blocks (row-major).
class MmaLayout final : public DistributedLayout {
 public:
  static constexpr int kRows = 16, kCols = 8;  // the instruction's accumulator block
  static const MmaLayout* get(int warps_m, int warps_n);

  int warps_m() const { return wm_; }
  int warps_n() const { return wn_; }
  // Blocks of 16 x 8 per warp along each dimension of `shape`.
  int64_t blocks_m(const Shape& shape) const { return shape[0] / (int64_t{kRows} * wm_); }
  int64_t blocks_n(const Shape& shape) const { return shape[1] / (int64_t{kCols} * wn_); }

  std::string str() const override;
  int rank() const override { return 2; }
  int num_warps() const override { return wm_ * wn_; }
  int64_t num_regs(const Shape& shape) const override;
  Shape reg_offset(const Shape& shape, int64_t reg) const override;
  std::vector<ThreadTerm> thread_terms() const override;

  MmaLayout(int wm, int wn) : wm_(wm), wn_(wn) {}

 private:
  int wm_, wn_;
};

// The k extent of one mma.sync instruction for `dot`, 32 bytes of an operand's row: 16 for f16
// and bf16 inputs (m16n8k16), 8 for f32 inputs whose input_precision is tf32 or tf32x3
// (m16n8k8.tf32), 32 for i8 (m16n8k32.s8, i32 accumulator) and fp8 (m16n8k32.e4m3 or .e5m2, on
// sm_89 and later); 0 where tensor cores do not take the dot's inputs (f32 with ieee precision).
int mma_k(const ir::Op& dot);
// Whether mma.sync reads `dot`'s b from a K-major array (b transposed, K along its lines) rather
// than a row-major one: for 8- and 32-bit inputs, whose fragments ldmatrix cannot transpose.
bool mma_b_kmajor(const ir::Op& dot);

// Tensor-core operands in shared memory: a [rows][cols] array of `bytes`-byte elements whose
// 16-byte chunks are XOR-swizzled by their 128-byte line's index mod 8, row-major or in panels of
// 128-byte lines (128 / bytes columns each, a panel's rows consecutive). dot_operand_byte is the
// byte offset of element (row, col); codegen's dot_operand_offset builds the same sum in LLVM IR
// and checks its constants against this one. rows and cols are powers of two.
int64_t dot_operand_byte(int64_t row, int64_t col, int64_t rows, int64_t cols, bool panels, int bytes);
// Whether an operand array with rows of `row_bytes` bytes goes in panels on mma.sync: when its rows
// are a multiple of 128 bytes. Row-major rows of 256 bytes or more put the 8 rows that one ldmatrix
// matrix reads 2 or more lines apart, so the swizzle spreads them over 4 bank groups or fewer
// (2-way bank conflicts or worse, run 90); in panels each row of a panel is one line. wgmma always
// reads panels (its 128-byte swizzle mode).
bool mma_operand_panels(int64_t row_bytes);

// The mma.sync layout for `dot` (a [M, K] by b [K, N]) with `num_warps` warps, or null when
// the dot runs on FMA: mma_k must take its inputs, and M, N, K must be multiples of 16, 8 and
// mma_k, large enough that no two warps compute the same block. `rows_first`: warps go along M while
// each gets 16 rows of its own (dots in a chain, as attention's: a row then lives in one warp, so
// row reductions stay in the warp, and both dots' rows have one layout).
// `wgmma`: the target has warpgroup MMA (sm_90a); dots that wgmma_takes() accepts then get every
// warp along M, which is the wgmma accumulator's layout. `fp8_mma`: the target has fp8 tensor
// cores (sm_89 and later); without them fp8 dots run on FMA.
const MmaLayout* mma_layout_for(const ir::Op& dot, int num_warps, bool rows_first = false, bool wgmma = false,
                                bool fp8_mma = false);

// Whether `dot` (a [M, K] by b [K, N]) with result layout `l` runs on wgmma.mma_async (on
// sm_90a): f16 or bf16 inputs (m64nNk16), f32 with input_precision tf32 (m64nNk8 on tf32;
// tf32x3 stays on mma.sync) or fp8 (m64nNk32 on e4m3 or e5m2), whole warpgroups along M only
// (warps_n 1, warps_m a multiple of 4), M a multiple of 16 * warps_m, N of 64 and K of a panel's
// width (128 bytes: 64 16-bit columns, 32 f32, 128 fp8), so that both operands sit in shared
// memory as 128-byte swizzled panels.
bool wgmma_takes(const ir::Op& dot, const MmaLayout& l);
// Whether `dot`'s result has an mma layout that wgmma_takes with its operands (on sm_90a the dot
// then runs on wgmma; elsewhere on mma.sync).
bool wgmma_dot(const ir::Op& dot);

// The value a dot adds its products to, and the scalar condition under which it adds them to
// zero instead: for dot(a, b, select(splat(c), zeros, acc)), the select read by the dot alone
// (a persistent matmul's one flat loop over tiles and k steps, its accumulator cleared at each
// tile's first step), {acc, c}; for any other dot {its third operand, null}. wgmma clears the
// accumulator by its scale-d predicate, so the select costs nothing there.
struct DotAccumulator {
  const ir::Value* acc;
  const ir::Value* zero_when;  // a scalar i1, or null
};
DotAccumulator dot_accumulator(const ir::Op& dot);

// Whether `dot` (on sm_90a) may leave its wgmma running into the next iteration of its loop:
// wgmma takes it, it sits directly in a for loop's body, its accumulator (dot_accumulator) is a
// loop-carried value that nothing else reads, and its result goes back into that value and
// otherwise only into tl::if_ branches after the dot (a persistent matmul's epilogue, which waits
// for the MMAs where it runs: lower_if). Its operands then cycle through shared buffers that live
// as long as the loop, and the loop's result is waited for after the loop (DotToLLVM.cpp,
// ControlFlowToLLVM.cpp).
bool wgmma_across_iterations(const ir::Op& dot);
// Whether `dot` (on sm_90a) leaves its MMAs running past the end of its iteration, into the next
// one, where the wait of an earlier wgmma dot completes them (a warpgroup's MMAs complete in
// order): attention's P V, whose MMAs then overlap the next iteration's start and its Q K^T.
// wgmma takes it in a for loop's body, N is 128 or more (narrower MMAs were measured slower
// deferred), and it does not wgmma_across_iterations; its result goes
// only back into a carried value, and every use of that value in the body comes after a dot
// of the body before it that waits for its own MMAs there (its result is used in the body).
// The loop waits for the last ones after it ends.
bool wgmma_wait_deferred(const ir::Op& dot);
// The index among its loop's carried values (0 for the first after the induction variable) that
// the body yields `op`'s result as, or -1 when `op` is not directly in a for body or its result
// is not yielded.
int carried_slot(const ir::Op& op);
// The dot whose wait completes a wgmma_wait_deferred dot's MMAs of the previous iteration.
const ir::Op* wgmma_deferred_to(const ir::Op& dot);

// How many shared buffers a tensor-core dot cycles through, one per iteration of its loop
// (`wgmma`: the target is sm_90a). With direct_copies d iterations ahead: d + 2 for a dot that
// wgmma_across_iterations on sm_90a (its MMAs of iteration i may still read buffer i - 1 while
// the copies for i + d land in another), d + 1 for another dot (the copies for i + d land while
// iteration i reads). Without: 3 for a dot that wgmma_across_iterations (iteration i stages its
// operands while the MMAs of i - 1 may still read), 1 otherwise.
int dot_buffers(const ir::Op& dot, bool wgmma);

// For a tensor-core dot (mma.sync or wgmma) directly in a for loop's body, per operand (a, b):
// the loads whose values reach it only through its loop, as prefetch-loads leaves them `depth` iterations ahead: `next`
// in the body loads the tile of iteration i + depth, `first` before the loop the tiles of the first `depth` iterations,
// in order; masked-off elements are zero. Code generation may copy them with cp.async straight into the dot's shared
// buffers instead of through registers. Null (and no firsts) where an operand comes some other way; both operands found
// have one depth.
struct DirectCopies {
  const ir::Op* next[2] = {nullptr, nullptr};
  std::vector<const ir::Op*> first[2];
  int depth = 0;  // 0: neither operand
};
DirectCopies direct_copies(const ir::Op& dot);

// A load whose masked-off elements are zero (no mask, no `other`, or a zero constant).
bool zero_filled_load(const ir::Op* op);

// Whether operand `x` (0: a, 1: b) of `dot` (on sm_90a) is staged in shared memory once, before
// its loop, rather than in every iteration: wgmma takes the dot, which sits directly in a for
// loop's body and waits for its MMAs within the iteration, and the operand is defined outside
// the loop (attention's Q). The dot's buffer then lives as long as the loop.
bool wgmma_stage_once(const ir::Op& dot, int x);

// Whether wgmma reads operand a of `dot` (on sm_90a) from registers rather than shared memory:
// wgmma takes the dot on 16-bit inputs, a's layout is the dot's accumulator layout (attention's P, computed
// elementwise from the first dot's result), which packed in pairs is the layout of wgmma's A
// fragments, and the dot waits for its MMAs within its iteration (not wgmma_across_iterations).
bool wgmma_a_in_registers(const ir::Op& dot);

// Where a tensor-core dot keeps its operands in its shared buffer (`wgmma`: the target is
// sm_90a): operand x (0: a, 1: b) of buffer number s (dot_buffers) at byte at[x] + s * stride[x],
// `bytes` in all. a's copies come first, then b's; on sm_90a an operand staged once
// (wgmma_stage_once) has one copy (stride 0), an a read from registers (wgmma_a_in_registers)
// none. Each operand starts 512-byte aligned, 1024 for wgmma's.
struct DotSmem {
  int64_t at[2] = {0, 0}, stride[2] = {0, 0}, bytes = 0;
};
DotSmem dot_smem(const ir::Op& dot, bool wgmma);

// The layout of a tile type as a DistributedLayout, or null when it has none.
const DistributedLayout* layout_of(ir::Type t);

// The default layout of a tile of `shape`: `vec` contiguous elements per thread along the last
// dimension, then lanes and warps along the last dimension first (coalesced row-major access).
// `fast_dim` (-1: the last) is the dimension the `vec` elements run along, lanes first.
const BlockedLayout* default_blocked(const Shape& shape, int num_warps, int vec = 1, int fast_dim = -1);

// For a shape op (broadcast, expand_dims, reshape, convert_layout; not trans) from `in` to `out`:
// the source dimension each result dimension takes its index from (-1 for a new or unit
// dimension), or nothing when the non-unit dimensions do not pair up. Codegen moves registers
// directly when the layouts agree on these pairs; the shared-memory allocation must agree.
std::optional<std::vector<int>> paired_dims(ir::OpKind kind, const Shape& in, const Shape& out);

// A register offset reduced into `shape` (replicated registers wrap around).
inline Shape wrap_offset(Shape off, const Shape& shape) {
  for (size_t d = 0; d < off.size(); ++d) off[d] &= shape[d] - 1;
  return off;
}

// For a shape op from a tile of type `in` to one of type `out` whose dimensions pair as
// `src_dim` says (paired_dims): the source register each result register can be moved from,
// when every thread already holds the elements it needs (the thread terms agree on paired
// dimensions and each result register's offset matches a source register's); nothing when
// elements must move between threads, through shared memory. Codegen lowers the op from this
// and allocate-shared reserves memory only when it is nothing.
std::optional<std::vector<int64_t>> register_sources(ir::Type in, ir::Type out, const std::vector<int>& src_dim);

// The elements of padding after each row (the last dimension) of the shared buffer a
// convert_layout from a tile of type `src` moves its elements through: 8 (one mma block's
// columns) for an mma source whose rows are a multiple of 128 bytes, 0 otherwise. A warp's store
// of an mma accumulator writes 8 rows of 8 elements at once; unpadded, those rows start in the
// same bank and the store takes 8 times as long (16 bytes of padding for 2-byte elements, 32
// for 4-byte ones, put them in 8 different banks). Rows stay 16-byte aligned for vector reads.
int64_t conversion_row_pad(ir::Type src);

}  // namespace tiledsl::passes
