// Shared by the op tests (test_ops*.cpp): host buffers for every dtype (bool as one byte per
// element, as tensors store it), seeded random inputs, and tensor conversions.
#pragma once

#include <tiledsl/tiledsl.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace tl = tiledsl;

namespace opt {

// The host element type of T: bool travels as uint8_t (std::vector<bool> has no data()).
template <class T>
using H = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

template <class T>
constexpr bool is_fp = std::is_floating_point_v<T> || std::is_same_v<T, tl::f16> || std::is_same_v<T, tl::bf16>;

template <class T>
tl::Tensor tensor(const std::vector<H<T>>& v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  tl::Tensor t = tl::Tensor::empty(shape, tl::dtype_v<T>);
  REQUIRE(static_cast<int64_t>(v.size()) == t.numel());
  t.copy_from_host(v.data());
  return t;
}

template <class T>
std::vector<H<T>> host(const tl::Tensor& t) {
  REQUIRE(t.dtype() == tl::dtype_v<T>);
  std::vector<H<T>> out(static_cast<size_t>(t.numel()));
  t.copy_to_host(out.data());
  return out;
}

// A tensor of n elements filled with a recognisable value, so that unwritten elements show.
template <class T>
tl::Tensor poison(std::vector<int64_t> shape) {
  tl::Tensor t = tl::Tensor::empty(shape, tl::dtype_v<T>);
  std::vector<unsigned char> bytes(t.nbytes(), 0x5a);
  t.copy_from_host(bytes.data());  // the tensor may live on the GPU
  return t;
}

// Whether kernels run on the GPU (the same tests run there with TILEDSL_BACKEND=gpu): the few
// results that are the interpreter's own (C library math, stdout) are then checked loosely.
inline bool on_gpu() { return tl::default_device().is_cuda(); }

// Seeded random values in [lo, hi]: uniform reals rounded to T, or uniform integers.
template <class T>
std::vector<H<T>> uniform(size_t n, uint64_t seed, double lo, double hi) {
  std::mt19937_64 g(seed);
  std::vector<H<T>> v(n);
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, bool>) {
      x = static_cast<uint8_t>(g() & 1);
    } else if constexpr (is_fp<T>) {
      std::uniform_real_distribution<double> d(lo, hi);
      if constexpr (std::is_same_v<T, double>)
        x = d(g);
      else
        x = T(static_cast<float>(d(g)));
    } else {
      std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
      x = static_cast<T>(d(g));
    }
  }
  return v;
}

// Random values over the whole range of an integer type.
template <class T>
std::vector<H<T>> random_bits(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<H<T>> v(n);
  for (auto& x : v) {
    uint64_t r = g();
    std::memcpy(&x, &r, sizeof(x));
    if constexpr (std::is_same_v<T, bool>) x &= 1;
  }
  return v;
}

// Multiples of 1/8 in [lo, hi] (exact in every float type for small ranges).
template <class T>
std::vector<H<T>> random_eighths(size_t n, uint64_t seed, int lo, int hi) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> d(lo * 8, hi * 8);
  std::vector<H<T>> v(n);
  for (auto& x : v) x = T(static_cast<float>(d(g)) / 8.0f);
  return v;
}

// Bitwise equality of two host values, with NaN equal to NaN.
template <class T>
bool same(T a, T b) {
  if constexpr (std::is_same_v<T, tl::f16> || std::is_same_v<T, tl::bf16>) {
    if (std::isnan(static_cast<float>(a)) && std::isnan(static_cast<float>(b))) return true;
    return a.bits == b.bits;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) && std::isnan(b)) return true;
    return std::memcmp(&a, &b, sizeof(T)) == 0;
  } else {
    return a == b;
  }
}

template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, tl::f16> || std::is_same_v<T, tl::bf16>)
    return static_cast<float>(v);
  else
    return static_cast<double>(v);
}

// Checks got == want element by element; reports the first few mismatches.
template <class T>
void require_equal(const std::vector<T>& got, const std::vector<T>& want) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!same(got[i], want[i])) {
      if (++bad <= 5)
        FAIL_CHECK("index " << i << ": got " << std::setprecision(17) << as_double(got[i]) << ", want "
                            << as_double(want[i]));
    }
  REQUIRE(bad == 0);
}

// |got - want| <= atol + rtol * |want| everywhere.
template <class T>
void require_close(const std::vector<T>& got, const std::vector<double>& want, double atol, double rtol) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double g = as_double(got[i]);
    if (!(std::fabs(g - want[i]) <= atol + rtol * std::fabs(want[i]))) {
      if (++bad <= 5) FAIL_CHECK("index " << i << ": got " << std::setprecision(17) << g << ", want " << want[i]);
    }
  }
  REQUIRE(bad == 0);
}

// Rounds a float result to T the way a kernel of element type T stores it.
template <class T>
H<T> round_as(double x) {
  if constexpr (std::is_same_v<T, double>)
    return x;
  else if constexpr (std::is_same_v<T, float>)
    return static_cast<float>(x);
  else
    return T(x);
}

// What `run` writes to file descriptor 1: the interpreter writes through std::cout, the GPU's
// printf buffer reaches the process's stdout at the next blocking copy.
inline std::string captured_stdout(const std::function<void()>& run) {
  std::cout.flush();
  std::fflush(stdout);
  char path[] = "/tmp/tiledsl-stdout-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  int saved = dup(1);
  dup2(fd, 1);
  std::exception_ptr error;
  try {
    run();
  } catch (...) {
    error = std::current_exception();
  }
  std::cout.flush();
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  close(fd);
  std::remove(path);
  if (error) std::rethrow_exception(error);
  return text;
}

// fp8 dots (a [M, K] by b [K, N], f32 results from 0) against the exact sum, within the bound of
// the fp8 tensor cores of Ada and Hopper, which do not sum in f32: within an instruction the 32
// products are aligned to the largest and truncated to 14 bits, and the accumulator keeps 13
// mantissa bits (published measurements: DeepSeek-V3's report, SageAttention 2; Triton's default
// accumulation on sm_90 is the same). The bound is that model's, doubled: per 32 k, 2 * 32 *
// 2^-13 of the largest product and 2 * 2^-13 of the sum of |products| so far. A wrong fragment
// or swizzle is off by whole products.
template <class T>
void require_within_fp8_dot_bound(const std::vector<float>& got, const std::vector<T>& a, const std::vector<T>& b,
                                  int M, int N, int K) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double exact = 0, so_far = 0, bound = 0;
      for (int k0 = 0; k0 < K; k0 += 32) {
        double largest = 0;
        for (int k = k0; k < std::min(K, k0 + 32); ++k) {
          const double p = static_cast<double>(static_cast<float>(a[m * K + k])) * static_cast<float>(b[k * N + n]);
          exact += p;
          so_far += std::fabs(p);
          largest = std::max(largest, std::fabs(p));
        }
        bound += 2 * 32 * 0x1p-13 * largest + 2 * 0x1p-13 * so_far;
      }
      INFO("element (" << m << ", " << n << ") of " << M << "x" << N << ", K " << K);
      REQUIRE(std::fabs(got[m * N + n] - exact) <= bound);
    }
}

}  // namespace opt
