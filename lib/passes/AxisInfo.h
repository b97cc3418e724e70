// Axis analysis: for every integer or pointer value, per dimension, how many consecutive
// elements increase by one (contiguity), what power of two divides the first element of each
// such run (divisibility; bytes for pointers), and how many consecutive elements are equal
// (constancy). Seeded by the specialisation (kernel arguments with divisibility = 16) and the
// multiple_of / max_contiguous hints. Layout assignment and load/store lowering read it to
// choose vector widths.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/IR.h"

namespace tiledsl::passes {

struct AxisInfo {
  // One entry per dimension; a scalar has one entry.
  std::vector<int64_t> contiguity, divisibility, constancy;
};

using AxisInfoMap = std::unordered_map<const ir::Value*, AxisInfo>;

AxisInfoMap analyze_axes(const ir::Function& f);

// The analysis of every value, one line each, named as the printer names them
// ("%5: contiguity = [1024], divisibility = [1024], constancy = [1]"): `tiledsl-opt
// --print-axis-info` and its lit tests.
std::string print_axis_info(const ir::Function& f);

// The dimension along which a load or store `op` touches consecutive addresses: the last,
// unless its pointers are contiguous along another dimension and not along the last (a
// column-major tile, as attention's K^T).
int memory_fast_dim(const ir::Op& op, const AxisInfoMap& info);
// The widest vector (in elements) a load or store `op` may use along dimension `dim` (-1: its
// memory_fast_dim): min(16 bytes, contiguity, alignment, constancy of the mask). 1 for scalar
// accesses.
int memory_vector_width(const ir::Op& op, const AxisInfoMap& info, int dim = -1);

}  // namespace tiledsl::passes
