// The fused row-softmax kernel of examples/softmax.cpp, in a header so that the benchmarks
// (bench/) time the same kernel: one program per row loads the whole row into one tile,
// subtracts the row max (for stability), exponentiates, normalises and stores, so each element
// is read and written once.
#pragma once

#include <tiledsl/tiledsl.h>

#include <cmath>

namespace softmax {
namespace tl = tiledsl;

inline const tl::Kernel softmax_kernel =
    tl::kernel("softmax_kernel", {"out", "in", "in_row_stride", "out_row_stride", "n_cols", "BLOCK"},
               [](tl::Ptr<float> out, tl::Ptr<float> in, tl::Int in_row_stride, tl::Int out_row_stride, tl::Int n_cols,
                  tl::Constexpr BLOCK) {
                 auto row = tl::program_id(0);
                 auto cols = tl::arange(0, BLOCK);
                 auto mask = cols < n_cols;
                 // -inf in the padding columns: they do not change the max and exp(-inf) adds 0 to the sum.
                 auto x = tl::load(in + row * in_row_stride + cols, mask, -INFINITY);
                 auto num = tl::exp(x - tl::max(x, 0));
                 tl::store(out + row * out_row_stride + cols, num / tl::sum(num, 0), mask);
               });

}  // namespace softmax
