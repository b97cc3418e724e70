// Forward replacement of values, for rewrites that walk a kernel in program order (cse,
// canonicalize): an op's results are mapped to what replaces them, and every later operand is
// looked up as the walk reaches it, so one sweep rewrites all uses. A replaced op is kept
// alive until the pass ends, because its results are keys of the map.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "ir/IR.h"

namespace tiledsl::passes {

class Replacements {
 public:
  ir::Value* lookup(ir::Value* v) const {
    auto it = replaced_.find(v);
    return it == replaced_.end() ? v : it->second;
  }
  void rewrite_operands(ir::Op& op) const {
    for (auto& v : op.operands) v = lookup(v);
  }
  // `op` (taken out of its block by the caller) gives way: result i becomes `with[i]`.
  void replace(std::unique_ptr<ir::Op> op, const std::vector<ir::Value*>& with) {
    for (size_t i = 0; i < with.size(); ++i) replaced_[op->result(i)] = with[i];
    erased_.push_back(std::move(op));
  }
  // Ends the pass over `f`: renumbers its values when anything was replaced; whether it was.
  bool finish(ir::Function& f) const {
    if (erased_.empty()) return false;
    f.number_values();
    return true;
  }

 private:
  std::unordered_map<const ir::Value*, ir::Value*> replaced_;
  std::vector<std::unique_ptr<ir::Op>> erased_;
};

}  // namespace tiledsl::passes
