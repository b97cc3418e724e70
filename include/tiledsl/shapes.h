// Tile rearrangements built from the core ops (tile.h): join, split, interleave, cat, flip, sort,
// topk, broadcast, swizzle2d and histogram, Triton's functions of the same names. They need no op of their own: a
// dimension of size 2^m is viewed as m dimensions of size 2 (a hypercube), where the element across one of them is x ^
// xor_sum(x, that dimension) on the element's bits; code generation turns each such exchange into a register move or a
// warp shuffle, as the layout allows.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "tiledsl/tile.h"

namespace tiledsl {
namespace detail {

// The signed integer of T's width, for moving T's bits.
template <class T>
using bits_t = std::conditional_t<
    sizeof(T) == 1, int8_t,
    std::conditional_t<sizeof(T) == 2, int16_t, std::conditional_t<sizeof(T) == 4, int32_t, int64_t>>>;

inline int log2_exact(int64_t n, const char* fn, const SourceLoc& loc) {
  int m = 0;
  while ((int64_t{1} << m) < n) ++m;
  if ((int64_t{1} << m) != n) fail(fn, "the dimension must be a power of two", loc);
  return m;
}

// A tile of `rank` dimensions, all 1 but `axis` (size 2), holding 0 and 1 along it: which half of
// that dimension an element is in.
inline Tile<int32_t> half_index(int rank, int axis, const SourceLoc& loc) {
  std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
  shape[static_cast<size_t>(axis)] = 2;
  return tiledsl::reshape(tiledsl::arange(0, 2, loc), shape, loc);
}

// The element across dimension `axis` (of size 2) of h.
template <class T>
Tile<T> across(const Tile<T>& h, int axis, const SourceLoc& loc) {
  if constexpr (std::is_same_v<T, bool>) {
    auto i = h.template to<int8_t>(loc);
    return (i ^ tiledsl::xor_sum(i, axis, true, loc)).template to<bool>(loc);
  } else {
    auto i = tiledsl::bitcast<bits_t<T>>(h, loc);
    return tiledsl::bitcast<T>(i ^ tiledsl::xor_sum(i, axis, true, loc), loc);
  }
}

// The shape of x with its last dimension (2^m) split into m dimensions of size 2; dimension
// lead + j holds bit m - 1 - j of the index.
template <class T>
std::vector<int64_t> hypercube(const Tile<T>& x, int m) {
  std::vector<int64_t> shape = x.shape();
  shape.pop_back();
  shape.insert(shape.end(), static_cast<size_t>(m), 2);
  return shape;
}

// One compare-and-exchange step of a bitonic network on hypercube h: elements that differ in
// index bit `bit` are ordered, ascending where `descending` (a 0/1 tile broadcast over h, or a
// scalar) is 0. The lower of the two positions keeps the smaller value when ascending.
template <class T, class D>
Tile<T> compare_exchange(const Tile<T>& h, int bit, const D& descending, const SourceLoc& loc) {
  const int axis = h.rank() - 1 - bit;
  Tile<T> other = across(h, axis, loc);
  Tile<int32_t> upper = half_index(h.rank(), axis, loc);
  // Take the other element where it belongs here: when this one is larger and this is the lower
  // position of an ascending pair (or the upper of a descending one), and conversely.
  Tile<bool> take = (h > other) != ((upper ^ descending) != 0);
  return tiledsl::where(take, other, h, loc);
}

// Stages first..stages of a bitonic sort over the last m index bits: after stage s, runs of 2^s
// elements are sorted, alternately ascending and descending (by bit s of the index), except at
// stage m, which sorts the whole run as `descending` says.
template <class T>
Tile<T> bitonic_stages(Tile<T> h, int first, int stages, int m, bool descending, const SourceLoc& loc) {
  for (int s = first; s <= stages; ++s) {
    for (int bit = s - 1; bit >= 0; --bit) {
      if (s < m)  // runs alternate with bit s of the index
        h = compare_exchange(h, bit, half_index(h.rank(), h.rank() - 1 - s, loc), loc);
      else
        h = compare_exchange(h, bit, descending ? 1 : 0, loc);
    }
  }
  return h;
}
}  // namespace detail

// Stacks a and b (of one shape and type) along a new last dimension of size 2 (Triton's tl.join):
// join(a, b)[..., 0] is a, [..., 1] is b.
template <class T>
Tile<T> join(const Tile<T>& a, const Tile<T>& b, TILEDSL_LOC) {
  if (a.shape() != b.shape()) detail::fail("join", "the two tiles must have one shape", loc);
  std::vector<int64_t> shape = a.shape();
  shape.push_back(2);
  const int rank = static_cast<int>(shape.size());
  auto second = detail::half_index(rank, rank - 1, loc) != 0;
  return where(second, broadcast_to(expand_dims(b, rank - 1, loc), shape, loc),
               broadcast_to(expand_dims(a, rank - 1, loc), shape, loc), loc);
}
// The inverse of join: x's last dimension (size 2) taken apart (Triton's tl.split).
template <class T>
std::pair<Tile<T>, Tile<T>> split(const Tile<T>& x, TILEDSL_LOC) {
  if (x.rank() == 0 || x.shape().back() != 2) detail::fail("split", "the last dimension must have size 2", loc);
  const int last = x.rank() - 1;
  auto second = detail::half_index(x.rank(), last, loc) != 0;
  // Each half is the XOR of its own bits with zeros: exact for every value (-0.0 and NaNs too).
  auto bits = [&](const Tile<T>& t) {
    if constexpr (std::is_same_v<T, bool>)
      return t.template to<int8_t>(loc);
    else
      return bitcast<detail::bits_t<T>>(t, loc);
  };
  auto back = [&](const auto& i) {
    if constexpr (std::is_same_v<T, bool>)
      return i.template to<bool>(loc);
    else
      return bitcast<T>(i, loc);
  };
  auto i = bits(x);
  auto zero = zeros_like(i, loc);
  return {back(xor_sum(where(second, zero, i, loc), last, loc)), back(xor_sum(where(second, i, zero, loc), last, loc))};
}
// a and b (one shape) interleaved along their last dimension: a0 b0 a1 b1 ... (Triton's
// tl.interleave).
template <class T>
Tile<T> interleave(const Tile<T>& a, const Tile<T>& b, TILEDSL_LOC) {
  std::vector<int64_t> shape = a.shape();
  if (shape.empty()) return join(a, b, loc);
  shape.back() *= 2;
  return reshape(join(a, b, loc), shape, loc);
}
// a followed by b along the first dimension (Triton's tl.cat; its can_reorder=True allows any
// order, this keeps a's elements first, in order).
template <class T>
Tile<T> cat(const Tile<T>& a, const Tile<T>& b, bool /*can_reorder*/ = false, TILEDSL_LOC) {
  if (a.rank() == 0) detail::fail("cat", "needs tiles of at least one dimension", loc);
  Tile<T> j = join(a, b, loc);  // [n, ..., 2]
  std::vector<int64_t> perm{j.rank() - 1};
  for (int d = 0; d + 1 < j.rank(); ++d) perm.push_back(d);
  std::vector<int64_t> shape = a.shape();
  shape[0] *= 2;
  return reshape(permute(j, perm, loc), shape, loc);
}
// x reversed along dimension `dim` (a power of two; negative counts from the end; Triton's tl.flip).
template <class T>
Tile<T> flip(const Tile<T>& x, int dim = -1, TILEDSL_LOC) {
  const int rank = x.rank();
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank) detail::fail("flip", "dim is out of range", loc);
  const int m = detail::log2_exact(x.shape()[static_cast<size_t>(dim)], "flip", loc);
  if (m == 0) return x;
  // Reversing a power-of-two index is complementing each of its bits: one exchange per bit.
  const std::vector<int64_t> dims = x.shape();
  std::vector<int64_t> shape(dims.begin(), dims.begin() + dim);
  shape.insert(shape.end(), static_cast<size_t>(m), 2);
  shape.insert(shape.end(), dims.begin() + dim + 1, dims.end());
  Tile<T> h = reshape(x, shape, loc);
  for (int j = 0; j < m; ++j) h = detail::across(h, dim + j, loc);
  return reshape(h, x.shape(), loc);
}
// x sorted along its last dimension (a power of two), ascending unless `descending` (Triton's
// tl.sort; a bitonic network of log2(n) (log2(n) + 1) / 2 exchange steps). NaNs compare false
// both ways and so stay where the network leaves them.
template <class T>
Tile<T> sort(const Tile<T>& x, int dim = -1, bool descending = false, TILEDSL_LOC) {
  static_assert(!detail::is_ptr_v<T>, "tl::sort: needs numbers");
  if (x.rank() == 0 || (dim != -1 && dim != x.rank() - 1))
    detail::fail("sort", "sorts along the last dimension only (as Triton)", loc);
  const int m = detail::log2_exact(x.shape().back(), "sort", loc);
  if (m == 0) return x;
  Tile<T> h = reshape(x, detail::hypercube(x, m), loc);
  return reshape(detail::bitonic_stages(h, 1, m, m, descending, loc), x.shape(), loc);
}
// The k largest elements along the last dimension, largest first (Triton's tl.topk; k and the
// dimension powers of two): the result's last dimension is k.
template <class T>
Tile<T> topk(const Tile<T>& x, int64_t k, int dim = -1, TILEDSL_LOC) {
  static_assert(!detail::is_ptr_v<T>, "tl::topk: needs numbers");
  if (x.rank() == 0 || (dim != -1 && dim != x.rank() - 1))
    detail::fail("topk", "selects along the last dimension only (as Triton)", loc);
  const int m = detail::log2_exact(x.shape().back(), "topk", loc);
  const int log_k = detail::log2_exact(k, "topk", loc);
  if (log_k > m) detail::fail("topk", "k is larger than the dimension", loc);
  Tile<T> h = reshape(x, detail::hypercube(x, m), loc);
  // Sort runs of k, alternately ascending and descending (descending if k is everything).
  h = detail::bitonic_stages(h, 1, log_k, m, true, loc);
  // Then halve: an ascending run and the descending run beside it hold, element by element, the
  // larger of each pair: together a bitonic run holding the top k of both, which one merge
  // sorts (alternating again, until one run is left).
  for (int left = m; left > log_k; --left) {
    h = detail::reduce_axis(h, h.rank() - 1 - log_k, BinOp::max, loc, "topk");  // in T, unlike tl::max
    const int bits = left - 1;  // index bits still in h's last dimensions
    for (int bit = log_k - 1; bit >= 0; --bit) {
      if (bits > log_k)
        h = detail::compare_exchange(h, bit, detail::half_index(h.rank(), h.rank() - 1 - log_k, loc), loc);
      else
        h = detail::compare_exchange(h, bit, 1, loc);
    }
  }
  std::vector<int64_t> shape = x.shape();
  shape.back() = k;
  return reshape(h, shape, loc);
}

// Triton's tl.broadcast(a, b): both broadcast to their common shape (numpy's rule).
template <class T, class U>
std::pair<Tile<T>, Tile<U>> broadcast(const Tile<T>& a, const Tile<U>& b, TILEDSL_LOC) {
  std::vector<int64_t> sa = a.shape(), sb = b.shape();
  const size_t rank = std::max(sa.size(), sb.size());
  sa.insert(sa.begin(), rank - sa.size(), 1);
  sb.insert(sb.begin(), rank - sb.size(), 1);
  std::vector<int64_t> shape(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (sa[d] != sb[d] && sa[d] != 1 && sb[d] != 1) detail::fail("broadcast", "the shapes do not broadcast", loc);
    shape[d] = std::max(sa[d], sb[d]);
  }
  return {broadcast_to(a, shape, loc), broadcast_to(b, shape, loc)};
}
// Triton's tl.swizzle2d(i, j, size_i, size_j, size_g): the row-major index (i, j) of a
// size_i x size_j grid renumbered so that groups of size_g rows are walked column by column (the
// matmul tutorial's grouped ordering); the last group may have fewer rows.
template <class I>
std::pair<Tile<I>, Tile<I>> swizzle2d(const Tile<I>& i, const Tile<I>& j, const std::type_identity_t<Tile<I>>& size_i,
                                      const std::type_identity_t<Tile<I>>& size_j,
                                      const std::type_identity_t<Tile<I>>& size_g, TILEDSL_LOC) {
  static_assert(detail::is_int_v<I> && !std::is_same_v<I, bool>, "tl::swizzle2d: needs integers");
  auto linear = i * size_j + j;
  auto group_elems = size_g * size_j;  // elements in one group of size_g rows
  auto first_row = (linear / group_elems) * size_g;
  auto rows = minimum(size_i - first_row, size_g, loc);  // the last group may be short
  auto within = linear % group_elems;
  return {first_row + within % rows, within / rows};
}

// Triton's tl.histogram: how often each of the values 0 .. num_bins - 1 (a power of two) occurs in
// the 1-D integer tile x, as a [num_bins] tile of i32; other values, and the elements `mask`
// drops, are not counted. One comparison per element and bin (x's size times num_bins must be a
// tile's, at most 2^20).
template <class T>
Tile<int32_t> histogram(const Tile<T>& x, int64_t num_bins, const Tile<bool>& mask, TILEDSL_LOC) {
  static_assert(detail::is_int_v<T> && !std::is_same_v<T, bool>, "tl::histogram: needs an integer tile");
  if (x.rank() != 1) detail::fail("histogram", "needs a 1-D tile", loc);
  auto bins = arange(0, num_bins, loc);
  auto hit = (expand_dims(x, 1, loc) == expand_dims(bins, 0, loc)) & expand_dims(mask, 1, loc);
  return sum(hit.template to<int32_t>(loc), 0, loc);
}
template <class T>
Tile<int32_t> histogram(const Tile<T>& x, int64_t num_bins, TILEDSL_LOC) {
  return histogram(x, num_bins, full_like(x, 1, loc) != 0, loc);
}

}  // namespace tiledsl
