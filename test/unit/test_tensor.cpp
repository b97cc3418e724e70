// Tensors on memory the caller owns (Tensor::from_blob, issue 16): kernels read and write it in
// place through the strides they are given, the deleter runs once when the last tensor sharing
// the storage is gone, and bad views are errors. On the interpreter the memory is host memory; on
// the GPU the same tests borrow device memory from a tensor the test allocates.
#include <dlpack/dlpack.h>
#include <fmt/format.h>

#include "ops_util.h"

using namespace opt;

namespace {
using tl::_;
using tl::newaxis;

// out[i, j] = 2 * x[i, j] + 1 over an [M, N] tile, each tensor addressed through its own strides.
const tl::Kernel& affine_2d() {
  static const tl::Kernel k =
      tl::kernel("affine_2d", {"x", "out", "M", "N", "sxm", "sxn", "som", "son", "BM", "BN"},
                 [](tl::Ptr<float> x, tl::Ptr<float> out, tl::Int M, tl::Int N, tl::Int sxm, tl::Int sxn, tl::Int som,
                    tl::Int son, tl::Constexpr BM, tl::Constexpr BN) {
                   auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
                   auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
                   auto mask = (rm(_, newaxis) < M) & (rn(newaxis, _) < N);
                   auto v = tl::load(x + rm(_, newaxis) * sxm + rn(newaxis, _) * sxn, mask);
                   tl::store(out + rm(_, newaxis) * som + rn(newaxis, _) * son, v * 2.0f + 1.0f, mask);
                 });
  return k;
}

void launch_affine(const tl::Tensor& x, const tl::Tensor& out) {
  const int M = static_cast<int>(x.size(0)), N = static_cast<int>(x.size(1));
  affine_2d()[tl::grid(tl::cdiv(M, 16), tl::cdiv(N, 16))](
      x, out, M, N, static_cast<int>(x.stride(0)), static_cast<int>(x.stride(1)), static_cast<int>(out.stride(0)),
      static_cast<int>(out.stride(1)), 16, 16);
}

// `bytes` of memory on the default device, owned by the returned tensor (a u8 tensor), filled with
// `fill` (host memory for the interpreter, device memory on the GPU): what a caller would own.
tl::Tensor owner(size_t bytes, uint8_t fill) {
  tl::Tensor t = tl::Tensor::empty({static_cast<int64_t>(bytes)}, tl::DType::u8);
  std::vector<uint8_t> v(bytes, fill);
  t.copy_from_host(v.data());
  return t;
}
}  // namespace

TEST_CASE("from_blob: a kernel writes the caller's memory in place; the deleter runs once", "[interp]") {
  const int M = 37, N = 29;
  auto xs = uniform<float>(M * N, 601, -4, 4);
  tl::Tensor x_mem = owner(M * N * 4, 0), out_mem = owner(M * N * 4, 0x5a);
  x_mem.copy_from_host(xs.data());
  int deleted = 0;
  {
    auto x = tl::Tensor::from_blob(x_mem.data_ptr(), {M, N}, tl::DType::f32, x_mem.device());
    auto out = tl::Tensor::from_blob(out_mem.data_ptr(), {M, N}, tl::DType::f32, out_mem.device(),
                                     [&](void* p) { deleted += p == out_mem.data_ptr(); });
    REQUIRE(x.is_contiguous());
    REQUIRE(x.span_bytes() == x.nbytes());
    REQUIRE(x.data_ptr() == x_mem.data_ptr());
    launch_affine(x, out);
    tl::Tensor copy = out;  // shares the storage: the deleter waits for both
    (void)copy;
    CHECK(deleted == 0);
  }
  CHECK(deleted == 1);
  // The result is in the owner's memory, which outlives the views.
  std::vector<float> got(M * N);
  out_mem.copy_to_host(got.data());
  for (int i = 0; i < M * N; ++i) REQUIRE(got[i] == xs[i] * 2.0f + 1.0f);
}

TEST_CASE("from_blob: strided views (padded rows, a transpose) are read and written through their strides",
          "[interp]") {
  const int M = 21, N = 13, ld = 16;  // rows of 13 elements 16 apart: 3 padding elements per row
  auto xs = uniform<float>(M * ld, 602, -4, 4);
  tl::Tensor x_mem = owner(M * ld * 4, 0), out_mem = owner(N * M * 4 + 64, 0x77);
  x_mem.copy_from_host(xs.data());
  auto x = tl::Tensor::from_blob(x_mem.data_ptr(), {M, N}, {ld, 1}, tl::DType::f32, x_mem.device());
  // out is the transpose of an [N, M] row-major array: out[i, j] lives at j * M + i.
  auto out = tl::Tensor::from_blob(out_mem.data_ptr(), {M, N}, {1, M}, tl::DType::f32, out_mem.device());
  CHECK(!x.is_contiguous());
  CHECK(!out.is_contiguous());
  CHECK(x.span_bytes() == static_cast<size_t>(((M - 1) * ld + N) * 4));
  CHECK(out.span_bytes() == static_cast<size_t>(N * M * 4));
  // Gathered in row-major order through the strides.
  auto xd = x.to_double();
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) REQUIRE(xd[i * N + j] == xs[i * ld + j]);
  launch_affine(x, out);
  std::vector<uint8_t> raw(N * M * 4 + 64);
  out_mem.copy_to_host(raw.data());
  std::vector<float> arr(N * M);
  std::memcpy(arr.data(), raw.data(), arr.size() * 4);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) REQUIRE(arr[j * M + i] == xs[i * ld + j] * 2.0f + 1.0f);
  for (size_t b = N * M * 4; b < raw.size(); ++b) REQUIRE(raw[b] == 0x77);  // past the view: untouched
  // to_host gathers; copy_from_host scatters and leaves the padding as it was.
  auto od = out.to_host<float>();
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) REQUIRE(od[i * N + j] == arr[j * M + i]);
  std::vector<float> fresh(M * N);
  for (int i = 0; i < M * N; ++i) fresh[i] = static_cast<float>(i) - 100.0f;
  x.copy_from_host(fresh.data());
  std::vector<float> back(M * ld);
  x_mem.copy_to_host(back.data());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < ld; ++j) REQUIRE(back[i * ld + j] == (j < N ? fresh[i * N + j] : xs[i * ld + j]));
  // to() on the tensor's own device is the tensor itself, strides and all (as torch's).
  auto c = x.to(x.device());
  CHECK(c.data_ptr() == x.data_ptr());
  CHECK(c.strides() == x.strides());
}

TEST_CASE("from_blob: null data, stride counts, negative strides and overflowing spans are errors", "[unit]") {
  float buf[8] = {};
  auto message = [](auto&& make) {
    try {
      make();
    } catch (const tl::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message([&] {
               tl::Tensor::from_blob(nullptr, {2, 3}, tl::DType::f32);
             }),
             Catch::Contains("null data for a non-empty tensor"));
  CHECK(tl::Tensor::from_blob(nullptr, {0, 3}, tl::DType::f32).numel() == 0);  // empty: no memory needed
  CHECK_THAT(message([&] {
               tl::Tensor::from_blob(buf, {2, 3}, {3}, tl::DType::f32);
             }),
             Catch::Contains("1 strides for a shape of 2 dimensions ([2, 3])"));
  CHECK_THAT(message([&] {
               tl::Tensor::from_blob(buf, {2, 3}, {-3, 1}, tl::DType::f32);
             }),
             Catch::Contains("negative stride in [-3, 1]"));
  CHECK_THAT(message([&] {
               tl::Tensor::from_blob(buf, {2, 3}, {int64_t{1} << 62, 1}, tl::DType::f32);
             }),
             Catch::Contains("spans more than 2^63 bytes"));
  CHECK_THAT(message([&] { tl::Tensor::from_blob(buf, {-1}, tl::DType::f32); }), Catch::Contains("negative dimension"));
  // A broadcast view (stride 0) is fine: every row is the same 3 floats.
  auto b = tl::Tensor::from_blob(buf, {4, 3}, {0, 1}, tl::DType::f32);
  CHECK(b.span_bytes() == 12);
}

// A view of device memory (never touched: the launch is rejected first) beside a host tensor: the
// error names both arguments and their devices. Without a GPU the view's address is made up
// (from_blob asks the driver about it only where there is one); with one it is GPU 0's.
TEST_CASE("a launch with tensors on two devices is an error naming both", "[unit]") {
  float host_buf[64] = {};
  auto x = tl::Tensor::from_blob(host_buf, {8, 8}, tl::DType::f32, tl::Device::cpu);
  tl::Tensor memory = on_gpu() ? tl::Tensor::empty({8, 8}, tl::DType::f32, tl::Device::cuda) : tl::Tensor();
  void* device_ptr = on_gpu() ? memory.data_ptr() : reinterpret_cast<void*>(uintptr_t{1} << 40);
  auto out = tl::Tensor::from_blob(device_ptr, {8, 8}, tl::DType::f32, tl::Device::cuda);
  CHECK_THROWS_WITH(launch_affine(x, out),
                    Catch::Contains("argument 2 ('out') is on cuda:0 but argument 1 ('x') is on cpu; all tensors of a "
                                    "launch must be on one device"));
}

// On a GPU, from_blob asks the driver what the memory is: host memory, or an index with no GPU,
// is an error there rather than a fault in a kernel.
// Tagged [gpu] (ctest gpu.streams, skipped without a GPU): there is no driver to ask on the CPU,
// where the [unit] test above covers from_blob.
TEST_CASE("from_blob on a GPU rejects host memory and GPUs that do not exist", "[gpu]") {
  REQUIRE(on_gpu());
  std::vector<float> host(64);
  CHECK_THROWS_WITH(tl::Tensor::from_blob(host.data(), {64}, tl::DType::f32, tl::Device::cuda),
                    Catch::Contains("is not memory the CUDA driver knows"));
  auto memory = tl::Tensor::empty({64}, tl::DType::f32, tl::Device::cuda);
  const int n = tl::cuda_device_count();
  CHECK_THROWS_WITH(tl::Tensor::from_blob(memory.data_ptr(), {64}, tl::DType::f32, tl::Device::cuda(n)),
                    Catch::Contains(fmt::format("there is no GPU {}", n)));
  CHECK_THROWS_WITH(tl::Tensor::empty({64}, tl::DType::f32, tl::Device::cuda(n)),
                    Catch::Contains(fmt::format("Tensor::empty: there is no GPU {}", n)));
  auto view = tl::Tensor::from_blob(memory.data_ptr(), {8, 8}, tl::DType::f32, tl::Device::cuda(0));
  CHECK(view.device() == tl::Device::cuda(0));
}

// --- DLPack ---------------------------------------------------------------------------------

namespace {
// A producer's tensor, as another framework would hand it over: a DLManagedTensor over `bytes`
// of the default device's memory, strided, with an offset, whose deleter counts its calls.
struct Producer {
  tl::Tensor memory;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
  int deleted = 0;
  Producer(size_t bytes, std::vector<int64_t> shp, std::vector<int64_t> str, DLDataType type, uint64_t offset)
      : memory(owner(bytes, 0)), shape(std::move(shp)), strides(std::move(str)) {
    DLTensor& t = managed.dl_tensor;
    t.data = memory.data_ptr();
    t.device = DLDevice{memory.device().is_cuda() ? kDLCUDA : kDLCPU, memory.device().index()};
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = type;
    t.shape = shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
    t.byte_offset = offset;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* m) { ++static_cast<Producer*>(m->manager_ctx)->deleted; };
  }
};
}  // namespace

TEST_CASE("DLPack: every dtype DLPack 0.6 names goes out and back without a copy", "[interp]") {
  for (tl::DType d :
       {tl::DType::i8, tl::DType::i16, tl::DType::i32, tl::DType::i64, tl::DType::u8, tl::DType::u16, tl::DType::u32,
        tl::DType::u64, tl::DType::f16, tl::DType::bf16, tl::DType::f32, tl::DType::f64}) {
    INFO(tl::name(d));
    auto t = tl::Tensor::randint({7, 5}, 0, 100, 603, d);
    const auto want = t.to_double();
    DLManagedTensor* m = t.to_dlpack();
    CHECK(m->dl_tensor.data == t.data_ptr());
    CHECK(m->dl_tensor.ndim == 2);
    CHECK(m->dl_tensor.shape[0] == 7);
    CHECK(m->dl_tensor.strides[0] == 5);
    CHECK(m->dl_tensor.dtype.bits == 8 * tl::byte_size(d));
    CHECK(m->dl_tensor.dtype.lanes == 1);
    tl::Tensor back = tl::Tensor::from_dlpack(m);  // takes ownership: its storage calls m's deleter
    CHECK(back.dtype() == d);
    CHECK(back.data_ptr() == t.data_ptr());
    CHECK(back.shape() == t.shape());
    CHECK(back.to_double() == want);
  }
  // The export keeps the storage alive after the exporting tensor is gone.
  DLManagedTensor* m = nullptr;
  std::vector<double> want;
  {
    auto t = tl::Tensor::randn({33}, 604);
    want = t.to_double();
    m = t.to_dlpack();
  }
  auto back = tl::Tensor::from_dlpack(m);
  CHECK(back.to_double() == want);
  // Types DLPack 0.6 has no name for.
  auto flags = tl::Tensor::zeros({4}, tl::DType::i1);
  CHECK_THROWS_WITH(flags.to_dlpack(), Catch::Contains("i1 has no DLPack 0.6 type"));
}

TEST_CASE("DLPack: a strided import with a byte offset is a kernel's input and output in place", "[interp]") {
  const int M = 19, N = 11, ld = 14, skip = 3;  // [M, N] in rows of 14 floats, 3 floats in
  auto xs = uniform<float>(M * ld + skip, 605, -4, 4);
  Producer in(xs.size() * 4, {M, N}, {ld, 1}, DLDataType{kDLFloat, 32, 1}, skip * 4);
  in.memory.copy_from_host(xs.data());
  Producer out(N * M * 4, {M, N}, {1, M}, DLDataType{kDLFloat, 32, 1}, 0);  // a transposed output
  {
    auto x = tl::Tensor::from_dlpack(&in.managed);
    auto o = tl::Tensor::from_dlpack(&out.managed);
    CHECK(x.stride(0) == ld);
    CHECK(static_cast<char*>(x.data_ptr()) == static_cast<char*>(in.memory.data_ptr()) + skip * 4);
    launch_affine(x, o);
    CHECK(in.deleted == 0);
  }
  CHECK(in.deleted == 1);
  CHECK(out.deleted == 1);
  std::vector<float> got(N * M);
  out.memory.copy_to_host(got.data());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) REQUIRE(got[j * M + i] == xs[skip + i * ld + j] * 2.0f + 1.0f);
}

TEST_CASE("DLPack: unsupported imports are errors that still release the producer's tensor", "[interp]") {
  auto expect_error = [](Producer& p, const std::string& text) {
    CHECK_THROWS_WITH(tl::Tensor::from_dlpack(&p.managed), Catch::Contains(text));
    CHECK(p.deleted == 1);
  };
  Producer lanes(64, {4}, {}, DLDataType{kDLFloat, 32, 2}, 0);
  expect_error(lanes, "no tiledsl dtype for DLPack type code 2, 32 bits, 2 lanes");
  Producer complex(64, {4}, {}, DLDataType{kDLComplex, 64, 1}, 0);
  expect_error(complex, "type code 5");
  Producer device(64, {4}, {}, DLDataType{kDLFloat, 32, 1}, 0);
  device.managed.dl_tensor.device = DLDevice{kDLOpenCL, 0};
  expect_error(device, "device type 4 (only kDLCPU and kDLCUDA)");
  // A GPU index the machine does not have (without a driver there is none to ask: the index
  // comes through as it is).
  const int gpus = tl::cuda_device_count();
  Producer missing(64, {4}, {}, DLDataType{kDLFloat, 32, 1}, 0);
  missing.managed.dl_tensor.device = DLDevice{kDLCUDA, gpus + 1};
  if (gpus > 0) {
    expect_error(missing, fmt::format("there is no GPU {}", gpus + 1));
  } else {
    CHECK(tl::Tensor::from_dlpack(&missing.managed).device() == tl::Device::cuda(1));
    CHECK(missing.deleted == 1);
  }
  Producer negative(64, {2, 2}, {-2, 1}, DLDataType{kDLFloat, 32, 1}, 0);
  expect_error(negative, "negative stride");
  CHECK_THROWS_WITH(tl::Tensor::from_dlpack(nullptr), Catch::Contains("null DLManagedTensor"));
}

// Tensor::rand, randn and randint fill large tensors on several host threads: each element's value
// comes from its index in the seed's SplitMix64 stream alone, so a tensor is a prefix of a longer
// one with the same seed whatever the split between threads (different for each length), and the
// first values are those of a small tensor, filled on one thread.
TEST_CASE("random tensors: an element's value depends on its index and the seed only", "[unit]") {
  const int64_t small = 1000, large = (int64_t{3} << 20) | 1, larger = (int64_t{5} << 20) | 3;
  auto same_prefix = [](const tl::Tensor& a, const tl::Tensor& b) {
    auto x = a.to_double(), y = b.to_double();
    REQUIRE(x.size() <= y.size());
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i] != y[i] && !(std::isnan(x[i]) && std::isnan(y[i])))
        FAIL("element " << i << ": " << x[i] << " != " << y[i]);
  };
  for (tl::DType dtype : {tl::DType::f32, tl::DType::bf16}) {
    same_prefix(tl::Tensor::randn({small}, 17, dtype), tl::Tensor::randn({large}, 17, dtype));
    same_prefix(tl::Tensor::randn({large}, 17, dtype), tl::Tensor::randn({larger}, 17, dtype));
    same_prefix(tl::Tensor::rand({large}, 5, dtype), tl::Tensor::rand({larger}, 5, dtype));
  }
  same_prefix(tl::Tensor::randint({large}, -3, 1000, 9, tl::DType::i32),
              tl::Tensor::randint({larger}, -3, 1000, 9, tl::DType::i32));
  // Another seed gives other values.
  auto a = tl::Tensor::randn({large}, 17).to_double(), b = tl::Tensor::randn({large}, 18).to_double();
  int64_t equal = 0;
  for (size_t i = 0; i < a.size(); ++i) equal += a[i] == b[i];
  CHECK(equal < 10);
}
