// Builds checked IR: every method validates types and shapes, inserts the implicit broadcasts
// and promotions of the language (docs/language.md), stamps the user's location on every op it
// creates, and reports a mistake as a tiledsl::Error naming the location and the op.
#pragma once

#include <string>
#include <vector>

#include "ir/IR.h"

namespace tiledsl::ir {

// Cache hints of a load or store (empty: none): Triton's cache_modifier ("ca", "cg", "cv" for
// loads; "wb", "cg", "cs", "wt" for stores), eviction_policy ("evict_first", "evict_last") and,
// on loads, volatile.
struct MemoryHints {
  std::string cache, eviction;
  bool is_volatile = false;
};

class Builder {
 public:
  explicit Builder(Function& f) : f_(f), block_(&f.body) {}

  Function& function() { return f_; }
  Block* block() const { return block_; }
  void set_block(Block* b) { block_ = b; }

  // Unchecked creation: the parser and the passes use it; the verifier checks the result.
  Op* create(OpKind k, std::vector<Value*> operands, const std::vector<Type>& results, Attrs attrs,
             const Location& loc);

  [[noreturn]] void fail(const Location& loc, const std::string& op, const std::string& msg) const;

  // --- Checked construction -------------------------------------------------------------
  Value* constant(double v, DType t, const Location& loc);  // integers take v exactly up to 2^53
  Value* constant_int(int64_t v, DType t, const Location& loc);
  Value* program_id(int axis, const Location& loc);
  Value* num_programs(int axis, const Location& loc);
  Value* arange(int64_t start, int64_t end, const Location& loc);
  Value* full(const std::vector<int64_t>& shape, Value* scalar, const Location& loc, const char* op = "full");

  Value* splat(Value* v, const std::vector<int64_t>& shape, const Location& loc);
  Value* broadcast_to(Value* v, const std::vector<int64_t>& shape, const Location& loc,
                      const char* op = "broadcast_to");
  Value* expand_dims(Value* v, int axis, const Location& loc);
  Value* reshape(Value* v, const std::vector<int64_t>& shape, const Location& loc);
  Value* trans(Value* v, std::vector<int64_t> perm, const Location& loc);
  Value* gather(Value* src, Value* index, int axis, const Location& loc);
  std::vector<Value*> inline_asm(const std::string& asm_text, const std::string& constraints, std::vector<Value*> args,
                                 const std::vector<DType>& results, bool pure, int pack, const Location& loc);

  Value* cast(Value* v, DType to, const Location& loc);
  // Rounding toward zero (Triton's fp_downcast_rounding="rtz"): float to a narrower float only.
  Value* cast_toward_zero(Value* v, DType to, const Location& loc);
  // Pointer conversions (Triton's x.to(tl.pointer_type(T)) and p.to(tl.int64)): a 64-bit integer
  // to a pointer to `pointee`, a pointer to another pointee, or a pointer to a 64-bit integer.
  Value* to_pointer(Value* v, DType pointee, const Location& loc);
  Value* from_pointer(Value* v, DType to, const Location& loc);
  Value* bitcast(Value* v, DType to, const Location& loc);

  Value* unary(OpKind k, Value* v, const Location& loc);
  // add/sub/mul/div/rem/maximum/minimum/and/or/xor/shl/shr; pointer + integer becomes addptr.
  Value* binary(OpKind k, Value* a, Value* b, const Location& loc);
  // libdevice's function `fn` of one float operand (op math) or two (math2, promoted and broadcast
  // as a binary op's).
  Value* math(const std::string& fn, Value* a, const Location& loc);
  Value* math(const std::string& fn, Value* a, Value* b, const Location& loc);
  Value* compare(const std::string& pred, Value* a, Value* b, const Location& loc);
  Value* select(Value* c, Value* a, Value* b, const Location& loc);
  Value* fma(Value* a, Value* b, Value* c, const Location& loc);
  Value* addptr(Value* p, Value* offset, const Location& loc);

  Value* load(Value* ptr, Value* mask, Value* other, const Location& loc, const MemoryHints& hints = {});
  void store(Value* ptr, Value* v, Value* mask, const Location& loc, const MemoryHints& hints = {});
  // `sem` ("relaxed", "acquire", "release", "acq_rel") and `scope` ("cta", "gpu", "sys"): empty
  // for the default, acq_rel at gpu scope, which is then not recorded.
  Value* atomic_rmw(const std::string& kind, Value* ptr, Value* v, Value* mask, const Location& loc,
                    const std::string& sem = "", const std::string& scope = "");
  Value* atomic_cas(Value* ptr, Value* cmp, Value* v, const Location& loc, const std::string& sem = "",
                    const std::string& scope = "");

  // `input_precision` ("ieee", "tf32", "tf32x3"; empty: Triton's default, tf32) is recorded on
  // dots of f32 operands; f16 and bf16 values are exact in tf32, so it is dropped for them.
  Value* dot(Value* a, Value* b, Value* acc, const Location& loc, const std::string& input_precision = "");
  Value* batched_dot(Value* a, Value* b, Value* acc, const Location& loc, const std::string& input_precision);
  // Reductions and scans: the op is created with an empty combine region holding 2N scalar
  // arguments; the caller fills it (ending with yield) and calls finish_combine.
  Op* begin_reduce(const std::vector<Value*>& inputs, int axis, const Location& loc, const char* name);
  Op* begin_scan(const std::vector<Value*>& inputs, int axis, bool reverse, const Location& loc, const char* name);
  void finish_combine(Op* op, const std::vector<Value*>& yielded, const Location& loc);
  std::vector<Value*> philox(Value* seed, Value* offsets, int rounds, const Location& loc);

  // Control flow. The caller fills the region blocks and ends them with yield.
  Op* begin_for(Value* lo, Value* hi, Value* step, const std::vector<Value*>& inits, const Location& loc);
  // `op` names the caller in errors (if_, return_if).
  Op* begin_if(Value* cond, const Location& loc, const char* op = "if_");
  // A while loop carrying `inits`: its condition region and body take one argument per init.
  Op* begin_while(const std::vector<Value*>& inits, const Location& loc);
  void yield(const std::vector<Value*>& values, const Location& loc);
  // An early return (tl::return_if): if `cond`, the program ends here. The ops built after it go
  // into the else branch of an `if` whose then branch is empty, closed by close_returns when the
  // kernel's body ends. This is the kernel body's form; in tl::if_ branches the frontend builds
  // its own (frontend/Ops.cpp, ReturnScope), and in loops a return is an error.
  void return_if(Value* cond, const Location& loc);
  void close_returns();
  // The error for a return_if where none is allowed (here and in the frontend's branches).
  static constexpr const char* kReturnIfPlacement =
      "an early return is allowed in the kernel's body and in tl::if_ branches, not inside tl::range or "
      "tl::while_ (assign a flag there and return after the loop)";

  Value* hint(OpKind k, Value* v, std::vector<int64_t> values, const Location& loc);
  void print(const std::string& prefix, bool hex, const std::vector<Value*>& values, const Location& loc);
  void device_assert(Value* cond, const std::string& msg, const Location& loc);
  void assume(Value* cond, const Location& loc);
  void barrier(const Location& loc);

  // Implicit conversions shared by several ops.
  std::vector<int64_t> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                       const Location& loc, const std::string& op) const;

 private:
  Value* make(OpKind k, std::vector<Value*> operands, Type result, Attrs attrs, const Location& loc);
  void check_pow2_shape(const std::vector<int64_t>& shape, const Location& loc, const std::string& op) const;

  Function& f_;
  Block* block_;
  std::vector<Block*> returns_;  // the else branches return_if opened, innermost last
};

}  // namespace tiledsl::ir
