// DLPack 0.6 import and export (Tensor::from_dlpack, Tensor::to_dlpack): tensors shared with
// other frameworks without a copy, ownership as the DLPack contract says (the producer's deleter
// runs once the consumer is done).
#include <dlpack/dlpack.h>
#include <fmt/format.h>

#include <optional>

#include "tiledsl/tensor.h"

namespace tiledsl {

namespace {
// The DLPack type of each dtype that has one, and back.
std::optional<DLDataType> dl_type(DType t) {
  auto make = [](DLDataTypeCode code, int bits) {
    return DLDataType{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (t) {
    case DType::i8:
      return make(kDLInt, 8);
    case DType::i16:
      return make(kDLInt, 16);
    case DType::i32:
      return make(kDLInt, 32);
    case DType::i64:
      return make(kDLInt, 64);
    case DType::u8:
      return make(kDLUInt, 8);
    case DType::u16:
      return make(kDLUInt, 16);
    case DType::u32:
      return make(kDLUInt, 32);
    case DType::u64:
      return make(kDLUInt, 64);
    case DType::f16:
      return make(kDLFloat, 16);
    case DType::f32:
      return make(kDLFloat, 32);
    case DType::f64:
      return make(kDLFloat, 64);
    case DType::bf16:
      return make(kDLBfloat, 16);
    default:
      return std::nullopt;  // bool and the fp8 formats: not in DLPack 0.6
  }
}

std::optional<DType> from_dl_type(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  for (DType d : {DType::i8, DType::i16, DType::i32, DType::i64, DType::u8, DType::u16, DType::u32, DType::u64,
                  DType::f16, DType::f32, DType::f64, DType::bf16}) {
    auto dl = dl_type(d);
    if (dl->code == t.code && dl->bits == t.bits) return d;
  }
  return std::nullopt;
}

// What an exported tensor keeps alive: the storage (through a Tensor) and the arrays its
// DLTensor points to.
struct Export {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
};
}  // namespace

Tensor Tensor::from_dlpack(DLManagedTensor* managed) {
  if (!managed) throw Error("Tensor::from_dlpack: null DLManagedTensor");
  // Whatever happens below, the producer's memory is released exactly once: by the tensor's
  // storage, or here when the import fails.
  std::function<void(void*)> release = [managed](void*) {
    if (managed->deleter) managed->deleter(managed);
  };
  const DLTensor& t = managed->dl_tensor;
  auto fail = [&](const std::string& why) {
    release(nullptr);
    throw Error("Tensor::from_dlpack: " + why);
  };
  Device device = Device::cpu;
  if (t.device.device_type == kDLCUDA) {
    device = Device::cuda(t.device.device_id);  // from_blob checks that the GPU exists and owns the memory
  } else if (t.device.device_type != kDLCPU) {
    fail(fmt::format("device type {} (only kDLCPU and kDLCUDA)", static_cast<int>(t.device.device_type)));
  }
  std::optional<DType> dtype = from_dl_type(t.dtype);
  if (!dtype)
    fail(fmt::format("no tiledsl dtype for DLPack type code {}, {} bits, {} lanes", static_cast<int>(t.dtype.code),
                     static_cast<int>(t.dtype.bits), static_cast<int>(t.dtype.lanes)));
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape)) fail("a negative ndim or a null shape");
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim), strides;
  if (t.strides) {
    strides.assign(t.strides, t.strides + t.ndim);
  } else {
    strides.assign(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  }
  char* data = static_cast<char*>(t.data);
  if (data) data += t.byte_offset;
  try {
    return from_blob(data, shape, strides, *dtype, device, release);
  } catch (const Error& e) {  // from_blob's checks fail before any storage holds `release`
    release(nullptr);
    throw Error(std::string("Tensor::from_dlpack: ") + e.what());
  }
}

DLManagedTensor* Tensor::to_dlpack() const {
  if (!storage_) throw Error("Tensor::to_dlpack: an empty (default-constructed) tensor");
  std::optional<DLDataType> dtype = dl_type(dtype_);
  if (!dtype) throw Error(fmt::format("Tensor::to_dlpack: {} has no DLPack 0.6 type", name(dtype_)));
  auto* e = new Export{*this, shape_, strides_, {}};
  DLTensor& t = e->managed.dl_tensor;
  t.data = data_ptr();
  t.device = DLDevice{device().is_cuda() ? kDLCUDA : kDLCPU, device().index()};
  t.ndim = static_cast<int32_t>(shape_.size());
  t.dtype = *dtype;
  t.shape = e->shape.data();
  t.strides = e->strides.data();
  t.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = [](DLManagedTensor* m) { delete static_cast<Export*>(m->manager_ctx); };
  return &e->managed;
}

}  // namespace tiledsl
