#include "passes/AllocateShared.h"

#include <algorithm>
#include <map>
#include <optional>

#include "passes/Layouts.h"

namespace tiledsl::passes {

namespace {
using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

constexpr int64_t kAlign = 16;

int64_t round_up(int64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }
// Bytes of one element in shared memory: booleans take a byte, pointers 8.
int64_t element_bytes(Type t) { return byte_size(t.dtype()); }
int64_t product(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
// Shape ops: through shared memory unless registers can be moved (Lowering::lower_shape).
int64_t shape_op_bytes(const Op& op) {
  const Value* in = op.operands[0];
  const Value* res = op.result();
  if (!in->type.is_tile() || !res->type.is_tile()) return 0;
  const Shape &is = in->type.shape(), &os = res->type.shape();
  if (op.kind != OpKind::Trans) {
    if (auto src_dim = paired_dims(op.kind, is, os); src_dim && register_sources(in->type, res->type, *src_dim))
      return 0;
  }
  const int64_t row = is.back(), pad = op.kind == OpKind::ConvertLayout ? conversion_row_pad(in->type) : 0;
  return in->type.numel() / row * (row + pad) * element_bytes(in->type);
}

// Reductions: partial results cross warps through shared memory when warps split the axis
// (Lowering::lower_reduce).
int64_t reduce_bytes(const Op& op) {
  const Value* in0 = op.operands[0];
  const DistributedLayout* l = layout_of(in0->type);
  if (!l) return 0;
  const Shape& shape = in0->type.shape();
  size_t axis = static_cast<size_t>(op.attr_int("axis"));
  ThreadTerm t = l->thread_terms()[axis];
  int warp_bits = 0;
  while (warp_bits < t.warp_bits && (t.warp_scale << warp_bits) < shape[axis]) ++warp_bits;
  if (!warp_bits) return 0;
  Shape out_shape = shape;
  out_shape.erase(out_shape.begin() + static_cast<long>(axis));
  int64_t slots = product(out_shape) << warp_bits, bytes = 0;
  for (const Value* v : op.operands) bytes = round_up(bytes + slots * element_bytes(v->type));
  return bytes;
}

// The bytes of shared memory `op`'s lowering uses, 0 for none.
int64_t scratch_bytes(const Op& op) {
  switch (op.kind) {
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape:
    case OpKind::ConvertLayout:
    case OpKind::Trans:
      return shape_op_bytes(op);
    case OpKind::Gather:  // the source, row-major (Lowering::lower_gather)
      return op.operands[0]->type.numel() * element_bytes(op.operands[0]->type);
    case OpKind::Dot: {
      const Shape &a = op.operands[0]->type.shape(), &b = op.operands[1]->type.shape();
      return (a[0] * a[1] + b[0] * b[1]) * element_bytes(op.operands[0]->type);  // b after a
    }
    case OpKind::Reduce:
      return reduce_bytes(op);
    case OpKind::Scan: {
      int64_t bytes = 0;
      for (const Value* v : op.operands) bytes = round_up(bytes + v->type.numel() * element_bytes(v->type));
      return bytes;
    }
    case OpKind::AtomicRMW:
    case OpKind::AtomicCAS: {
      Type t = op.result()->type;
      return std::max<int64_t>(t.is_tile() ? t.numel() : 1, 1) * element_bytes(t);
    }
    default:
      return 0;
  }
}

// Dots' operands start on a 1024-byte boundary: the swizzle patterns of ldmatrix's and wgmma's
// operands repeat every 1024 bytes and are computed from address bits.
int64_t alignment(const Op& op) { return op.kind == OpKind::Dot ? 1024 : kAlign; }

struct Buffer {
  Op* op;
  int64_t bytes;
  int64_t first, last;  // live range, in program-order op numbers
  int64_t align;
  int64_t offset = 0;
};
}  // namespace

void allocate_shared(ir::Function& f, bool wgmma) {
  std::vector<Buffer> buffers;
  std::map<const Op*, int64_t> position;
  ir::walk(f.body, [&](const Op* op) {
    int64_t n = static_cast<int64_t>(position.size());
    position[op] = n;
    Op* mut = const_cast<Op*>(op);
    mut->attrs.erase("smem_offset");
    mut->attrs.erase("smem_bytes");
    if (int64_t bytes = scratch_bytes(*op)) buffers.push_back({mut, round_up(bytes), n, n, alignment(*op)});
  });
  // A tensor-core dot that cycles through several buffers, or (on sm_90a) has an operand staged
  // once before its loop, keeps its buffers from the loop's start (or the load that fills the
  // first one) to its end.
  for (Buffer& b : buffers) {
    if (b.op->kind != OpKind::Dot) continue;
    const int count = dot_buffers(*b.op, wgmma);
    if (count == 1 && !(wgmma && (wgmma_stage_once(*b.op, 0) || wgmma_stage_once(*b.op, 1)))) continue;
    const Op* loop = b.op->parent->parent;
    b.bytes = round_up(dot_smem(*b.op, wgmma).bytes);
    b.first = position[loop];
    for (const auto& firsts : direct_copies(*b.op).first)
      for (const Op* first : firsts) b.first = std::min(b.first, position[first]);
    ir::walk(*loop->regions[0], [&](const Op* op) { b.last = std::max(b.last, position[op]); });
  }
  // Largest first, each at the lowest offset clear of the buffers already placed that are
  // live at the same time.
  std::vector<Buffer*> order;
  for (auto& b : buffers) order.push_back(&b);
  std::stable_sort(order.begin(), order.end(), [](const Buffer* a, const Buffer* b) { return a->bytes > b->bytes; });
  std::vector<const Buffer*> placed;
  int64_t total = 0;
  for (Buffer* b : order) {
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Buffer* p : placed)
      if (p->first <= b->last && b->first <= p->last) busy.emplace_back(p->offset, p->offset + p->bytes);
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (auto [lo, hi] : busy) {
      if (at + b->bytes <= lo) break;
      at = std::max(at, (hi + b->align - 1) / b->align * b->align);
    }
    b->offset = at;
    placed.push_back(b);
    total = std::max(total, at + b->bytes);
  }
  for (const auto& b : buffers) {
    b.op->attrs["smem_offset"] = b.offset;
    b.op->attrs["smem_bytes"] = b.bytes;
  }
  f.attrs.erase("shared_bytes");
  if (total) f.attrs["shared_bytes"] = total;
}

}  // namespace tiledsl::passes
