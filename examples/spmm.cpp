// SpMM: a CSR sparse matrix (row_ptr, col_idx, values) times a dense matrix. Each program owns one
// row of the sparse matrix and one block of BLOCK_N output columns, and walks that row's nonzeros
// with a dynamic loop whose bounds are the two row_ptr entries, loaded as scalars.
#include <random>

#include "common.h"

namespace tl = tiledsl;

const tl::Kernel spmm_kernel =
    tl::kernel("spmm_kernel", {"row_ptr", "col_idx", "values", "b", "out", "n", "stride_b", "stride_out", "BLOCK_N"},
               [](tl::Ptr<int32_t> row_ptr, tl::Ptr<int32_t> col_idx, tl::Ptr<float> values, tl::Ptr<float> b,
                  tl::Ptr<float> out, tl::Int n, tl::Int stride_b, tl::Int stride_out, tl::Constexpr BLOCK_N) {
                 auto row = tl::program_id(0);
                 auto offs_n = tl::program_id(1) * BLOCK_N + tl::arange(0, BLOCK_N);
                 auto mask_n = offs_n < n;
                 auto start = tl::load(row_ptr + row), end = tl::load(row_ptr + row + 1);
                 auto acc = tl::zeros<float>({BLOCK_N});
                 // An empty row runs the loop zero times and stores the zero accumulator.
                 tl::range(start, end, [&](tl::Int k) {
                   auto col = tl::load(col_idx + k);
                   auto v = tl::load(values + k);
                   acc += v * tl::load(b + col * stride_b + offs_n, mask_n, 0.0f);
                 });
                 tl::store(out + row * stride_out + offs_n, acc, mask_n);
               });

int main() {
  return example::run("spmm", [] {
    const int m = 517, k = 389, n = 77;  // none a multiple of the block
    // About 3% of the entries are nonzero; every 7th row is left empty on purpose.
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uni(0.0f, 1.0f);
    std::vector<int32_t> row_ptr{0}, col_idx;
    std::vector<float> values;
    for (int r = 0; r < m; ++r) {
      if (r % 7 != 3)
        for (int c = 0; c < k; ++c)
          if (uni(rng) < 0.03f) {
            col_idx.push_back(c);
            values.push_back(2.0f * uni(rng) - 1.0f);
          }
      row_ptr.push_back(static_cast<int32_t>(col_idx.size()));
    }
    auto b = tl::Tensor::randn({k, n}, 11), out = tl::Tensor::full({m, n}, NAN);
    auto rp = tl::Tensor::from_host(row_ptr), ci = tl::Tensor::from_host(col_idx), vals = tl::Tensor::from_host(values);
    const int block_n = 32;
    spmm_kernel[tl::grid(m, tl::cdiv(n, block_n))](rp, ci, vals, b, out, n, static_cast<int>(b.stride(0)),
                                                   static_cast<int>(out.stride(0)), block_n);

    auto bs = b.to_double();
    std::vector<double> want(static_cast<size_t>(m) * n, 0.0);
    for (int r = 0; r < m; ++r)
      for (int e = row_ptr[r]; e < row_ptr[r + 1]; ++e)
        for (int c = 0; c < n; ++c) want[r * n + c] += values[e] * bs[col_idx[e] * n + c];
    // f32 accumulation over ~12 terms of magnitude ~1: a few ulps of the running sum.
    return example::report("spmm", example::max_abs_error(out.to_double(), want), 1e-5);
  });
}
