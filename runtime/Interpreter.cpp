#include "runtime/Interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "ir/Semantics.h"
#include "runtime/ThreadPool.h"
#include "support/Env.h"
#include "support/Error.h"

namespace tiledsl::runtime {

using ir::Block;
using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k, int rounds) {
  constexpr uint64_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int r = 0; r < rounds; ++r) {
    uint64_t p0 = kMul0 * c[0], p1 = kMul1 * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return c;
}

// Philox4x64 (Triton's philox_impl on 64-bit counters): the same rounds with 64-bit words,
// multipliers and Weyl increments; the high halves of the 64x64 products come from 128 bits.
std::array<uint64_t, 4> philox4x64(std::array<uint64_t, 4> c, std::array<uint64_t, 2> k, int rounds) {
  constexpr uint64_t kMul0 = 0xD2E7470EE14C6C93ull, kMul1 = 0xCA5A826395121157ull;
  constexpr uint64_t kWeyl0 = 0x9E3779B97F4A7C15ull, kWeyl1 = 0xBB67AE8584CAA73Bull;
  for (int r = 0; r < rounds; ++r) {
    const unsigned __int128 p0 = static_cast<unsigned __int128>(kMul0) * c[0];
    const unsigned __int128 p1 = static_cast<unsigned __int128>(kMul1) * c[2];
    c = {static_cast<uint64_t>(p1 >> 64) ^ c[1] ^ k[0], static_cast<uint64_t>(p1),
         static_cast<uint64_t>(p0 >> 64) ^ c[3] ^ k[1], static_cast<uint64_t>(p0)};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return c;
}

namespace {
std::mutex host_memory_mu;
// (base, bytes) of each live registration; views of one buffer may register it more than once.
std::multimap<void*, size_t>& host_memory_map() {
  static std::multimap<void*, size_t> m;
  return m;
}
}  // namespace

void register_host_memory(void* base, size_t bytes) {
  std::lock_guard lock(host_memory_mu);
  host_memory_map().emplace(base, bytes);
}
void unregister_host_memory(void* base, size_t bytes) {
  std::lock_guard lock(host_memory_mu);
  auto [first, last] = host_memory_map().equal_range(base);
  for (auto it = first; it != last; ++it)
    if (it->second == bytes) {
      host_memory_map().erase(it);
      return;
    }
}
std::vector<std::pair<void*, size_t>> host_memory() {
  std::lock_guard lock(host_memory_mu);
  return {host_memory_map().begin(), host_memory_map().end()};
}

int default_interpreter_threads() {
  if (std::string e = env::value(env::Var::TILEDSL_INTERPRETER_THREADS); !e.empty()) {
    int n = std::atoi(e.c_str());
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace {

// The value of one IR value in one program: integers (and booleans and pointers) in `i`,
// floats in `f`, rounded to their dtype. Inside combine regions a "scalar" holds one element
// per reduction lane, so elementwise code accepts operands of n elements or of one.
struct RVal {
  std::vector<int64_t> i;
  std::vector<double> f;
  size_t size() const { return std::max(i.size(), f.size()); }
};

constexpr int kSlotShift = 40;  // pointer arguments live at (slot + 1) << 40 in a virtual address space
// Where a pointer moved out of its argument's window goes: far below every slot.
constexpr int64_t kPoisoned = std::numeric_limits<int64_t>::min() / 2;
int64_t slot_of(int64_t addr) {
  return static_cast<int64_t>((static_cast<uint64_t>(addr) + (uint64_t{1} << (kSlotShift - 1))) >> kSlotShift) - 1;
}

bool holds_float(Type t) { return !t.element().is_pointer() && is_float(t.dtype()); }

// out[j] = in[index_of(j)] for j < n, in whichever of the integer or float parts `in` holds.
template <class IndexOf>
void pick_elements(const RVal& in, RVal& out, size_t n, IndexOf index_of) {
  if (!in.f.empty()) {
    out.f.resize(n);
    for (size_t j = 0; j < n; ++j) out.f[j] = in.f[index_of(j)];
  } else {
    out.i.resize(n);
    for (size_t j = 0; j < n; ++j) out.i[j] = in.i[index_of(j)];
  }
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

std::string index_str(const std::vector<int64_t>& shape, size_t flat) {
  if (shape.empty()) return "scalar";
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = static_cast<int64_t>(flat) % shape[d];
    flat /= static_cast<size_t>(shape[d]);
  }
  return ir::shape_str(idx);
}

double float_math(OpKind k, DType t, double x) {
  if (t == DType::f64) {
    switch (k) {
      case OpKind::Exp:
        return std::exp(x);
      case OpKind::Exp2:
        return std::exp2(x);
      case OpKind::Log:
        return std::log(x);
      case OpKind::Log2:
        return std::log2(x);
      case OpKind::Sqrt:
        return std::sqrt(x);
      case OpKind::Rsqrt:
        return 1.0 / std::sqrt(x);
      case OpKind::Sin:
        return std::sin(x);
      case OpKind::Cos:
        return std::cos(x);
      case OpKind::Floor:
        return std::floor(x);
      case OpKind::Ceil:
        return std::ceil(x);
      case OpKind::Erf:
        return std::erf(x);
      default:
        break;
    }
  }
  // f32 and narrower: computed in f32 (as the GPU does), then rounded to the dtype.
  float v = static_cast<float>(x);
  switch (k) {
    case OpKind::Exp:
      return std::exp(v);
    case OpKind::Exp2:
      return std::exp2(v);
    case OpKind::Log:
      return std::log(v);
    case OpKind::Log2:
      return std::log2(v);
    case OpKind::Sqrt:
      return std::sqrt(v);
    case OpKind::Rsqrt:
      return 1.0f / std::sqrt(v);
    case OpKind::Sin:
      return std::sin(v);
    case OpKind::Cos:
      return std::cos(v);
    case OpKind::Floor:
      return std::floor(v);
    case OpKind::Ceil:
      return std::ceil(v);
    case OpKind::Erf:
      return std::erf(v);
    default:
      break;
  }
  TILEDSL_CHECK(false, "not a float math op");
  return 0;
}

struct Alloc {
  char* base;
  size_t bytes;
  std::string name;
};

// Everything shared by the programs of one launch.
struct Launch {
  const ir::Function& f;
  std::vector<Alloc> allocs;
  std::span<const InterpArg> args;
  std::array<int64_t, 3> grid;
  std::mutex print_mu;
};

class Program {
 public:
  Program(Launch& l) : l_(l), env_(l.f.num_values()) {}

  void run(std::array<int64_t, 3> pid) {
    pid_ = pid;
    for (size_t a = 0; a < l_.args.size(); ++a) {
      RVal& v = env_[l_.f.arg(a)->id];
      v = RVal{};
      const InterpArg& arg = l_.args[a];
      if (arg.kind == InterpArg::pointer)
        v.i = {static_cast<int64_t>((a + 1) << kSlotShift)};
      else if (arg.kind == InterpArg::integer)
        v.i = {arg.i};
      else
        v.f = {round_to(l_.f.arg(a)->type.dtype(), arg.f)};
    }
    block(l_.f.body);
  }

 private:
  [[noreturn]] void fail(const Op& op, const std::string& msg) const {
    user_error(op.loc.line ? op.loc.str() : std::string(), l_.f.name, op.name(), "{} (program ({}, {}, {}))", msg,
               pid_[0], pid_[1], pid_[2]);
  }

  RVal& val(const Value* v) { return env_[v->id]; }

  // Runs a block; returns the values its yield passes on.
  std::vector<RVal> block(const Block& b) {
    for (const auto& op : b.ops) {
      if (op->kind == OpKind::Yield) {
        std::vector<RVal> out;
        for (const Value* v : op->operands) out.push_back(val(v));
        return out;
      }
      exec(*op);
    }
    return {};
  }

  // A host address (from tl::Tensor::data_ptr(), loaded or computed by the kernel) as the
  // interpreter's pointer into the allocation holding it; an address in none is a pointer every
  // access rejects.
  int64_t virtual_address(int64_t host) const {
    const char* p = reinterpret_cast<const char*>(host);
    for (size_t slot = 0; slot < l_.allocs.size(); ++slot) {
      const Alloc& a = l_.allocs[slot];
      if (a.base && p >= a.base && p < a.base + a.bytes)
        return static_cast<int64_t>((slot + 1) << kSlotShift) + (p - a.base);
    }
    return kPoisoned;
  }
  // The inverse: the host address an interpreter pointer stands for (0 for an invalid one).
  int64_t host_address(int64_t addr) const {
    int64_t slot = addr < 0 ? -1 : slot_of(addr);
    if (slot < 0 || slot >= static_cast<int64_t>(l_.allocs.size())) return 0;
    const Alloc& a = l_.allocs[static_cast<size_t>(slot)];
    return reinterpret_cast<int64_t>(a.base) + (addr - ((slot + 1) << kSlotShift));
  }

  // Address of element `flat` of a pointer tile, checked against its allocation.
  char* address(const Op& op, int64_t addr, DType elem, const Type& ptr_type, size_t flat) {
    int64_t slot = addr < 0 ? -1 : slot_of(addr);
    int64_t size = byte_size(elem);
    if (slot < 0 || slot >= static_cast<int64_t>(l_.allocs.size()))
      fail(op, fmt::format(
                   "access through an invalid pointer at index {} of the tile{}", index_str(ptr_type.shape(), flat),
                   addr == kPoisoned ? " (pointer arithmetic moved it 2^39 bytes or more outside its tensor)" : ""));
    const Alloc& a = l_.allocs[static_cast<size_t>(slot)];
    int64_t offset = addr - ((slot + 1) << kSlotShift);
    if (offset < 0 || offset + size > static_cast<int64_t>(a.bytes))
      fail(op, fmt::format("out-of-bounds access at index {} of the tile: element {} of argument '{}', which holds {} "
                           "{} elements",
                           index_str(ptr_type.shape(), flat), offset / size, a.name,
                           static_cast<int64_t>(a.bytes) / size, name(elem)));
    return a.base + offset;
  }

  void exec(const Op& op);
  void exec_shape(const Op& op, RVal& out);
  void exec_gather(const Op& op, RVal& out);
  void exec_cast(const Op& op, RVal& out);
  void exec_elementwise(const Op& op, RVal& out);
  void exec_memory(const Op& op, RVal& out);
  void exec_dot(const Op& op, RVal& out);
  void exec_combine(const Op& op);
  void exec_for(const Op& op);
  void exec_if(const Op& op);
  void exec_while(const Op& op);
  void exec_print(const Op& op);

  Launch& l_;
  std::vector<RVal> env_;
  std::array<int64_t, 3> pid_{};
};

void Program::exec(const Op& op) {
  switch (op.kind) {
    case OpKind::For:
      return exec_for(op);
    case OpKind::If:
      return exec_if(op);
    case OpKind::While:
      return exec_while(op);
    case OpKind::Barrier:
      return;  // programs run one thread each: nothing to wait for
    case OpKind::Reduce:
    case OpKind::Scan:
      return exec_combine(op);
    case OpKind::Print:
      return exec_print(op);
    case OpKind::Store: {
      RVal unused;
      return exec_memory(op, unused);
    }
    case OpKind::Assert: {
      const RVal& c = val(op.operands[0]);
      for (size_t j = 0; j < c.i.size(); ++j)
        if (!c.i[j])
          fail(op, fmt::format("device_assert failed at index {}: {}", index_str(op.operands[0]->type.shape(), j),
                               op.attr_str("msg")));
      return;
    }
    case OpKind::Assume: {
      const RVal& c = val(op.operands[0]);
      const auto& shape = op.operands[0]->type.shape();
      for (size_t j = 0; j < c.i.size(); ++j)
        if (!c.i[j])
          fail(op, fmt::format("tl::assume does not hold{}: the compiler relies on it, so on the GPU the kernel's "
                               "results would be undefined",
                               shape.empty() ? "" : " at index " + index_str(shape, j)));
      return;
    }
    case OpKind::Philox: {
      const RVal& seed = val(op.operands[0]);
      const RVal& off = val(op.operands[1]);
      size_t n = off.i.size();
      std::array<RVal*, 4> outs;
      for (int r = 0; r < 4; ++r) {
        outs[r] = &val(op.result(r));
        outs[r]->i.assign(n, 0);
        outs[r]->f.clear();
      }
      int rounds = static_cast<int>(op.attr_int("rounds"));
      const bool wide = op.operands[1]->type.dtype() == DType::u64;
      for (size_t j = 0; j < n; ++j) {
        uint64_t s = static_cast<uint64_t>(seed.i[seed.i.size() == 1 ? 0 : j]);
        if (wide) {  // key (seed, 0), as Triton's
          auto r = philox4x64({static_cast<uint64_t>(off.i[j]), 0, 0, 0}, {s, 0}, rounds);
          for (int q = 0; q < 4; ++q) outs[q]->i[j] = static_cast<int64_t>(r[q]);
        } else {
          auto r = philox4x32({static_cast<uint32_t>(off.i[j]), 0, 0, 0},
                              {static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32)}, rounds);
          for (int q = 0; q < 4; ++q) outs[q]->i[j] = r[q];
        }
      }
      return;
    }
    default:
      break;
  }
  RVal& out = val(op.result());
  out.i.clear();
  out.f.clear();
  switch (op.kind) {
    case OpKind::Constant: {
      const auto& a = op.attrs.at("value");
      if (holds_float(op.result()->type))
        out.f = {std::holds_alternative<double>(a) ? std::get<double>(a) : static_cast<double>(std::get<int64_t>(a))};
      else
        out.i = {std::holds_alternative<int64_t>(a) ? std::get<int64_t>(a) : static_cast<int64_t>(std::get<double>(a))};
      return;
    }
    case OpKind::ProgramId:
      out.i = {pid_[static_cast<size_t>(op.attr_int("axis"))]};
      return;
    case OpKind::NumPrograms:
      out.i = {l_.grid[static_cast<size_t>(op.attr_int("axis"))]};
      return;
    case OpKind::Arange:
      for (int64_t v = op.attr_int("start"); v < op.attr_int("end"); ++v) out.i.push_back(v);
      return;
    case OpKind::Splat:
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape:
    case OpKind::Trans:
      return exec_shape(op, out);
    case OpKind::Gather:
      return exec_gather(op, out);
    case OpKind::InlineAsm:
      fail(op,
           "inline_asm_elementwise runs on the GPU only: the interpreter cannot execute PTX (Triton's cannot either)");
    case OpKind::Cast:
    case OpKind::Bitcast:
      return exec_cast(op, out);
    case OpKind::MultipleOf:
    case OpKind::MaxContiguous:
      out = val(op.operands[0]);
      return;
    case OpKind::Load:
    case OpKind::AtomicRMW:
    case OpKind::AtomicCAS:
      return exec_memory(op, out);
    case OpKind::Dot:
      return exec_dot(op, out);
    default:
      return exec_elementwise(op, out);
  }
}

void Program::exec_shape(const Op& op, RVal& out) {
  const RVal& in = val(op.operands[0]);
  const auto& in_shape = op.operands[0]->type.shape();
  const auto& out_shape = op.result()->type.shape();
  size_t n = static_cast<size_t>(op.result()->type.numel());
  auto gather = [&](auto index_of) { pick_elements(in, out, n, index_of); };
  switch (op.kind) {
    case OpKind::Splat:
      gather([](size_t) { return size_t{0}; });
      return;
    case OpKind::ExpandDims:
    case OpKind::Reshape:
      out = in;
      return;  // row-major order is unchanged
    case OpKind::Broadcast: {
      auto is = strides_of(in_shape);
      for (size_t d = 0; d < in_shape.size(); ++d)
        if (in_shape[d] == 1) is[d] = 0;
      gather([&](size_t j) {
        size_t src = 0;
        for (size_t d = out_shape.size(); d-- > 0;) {
          src += static_cast<size_t>(static_cast<int64_t>(j) % out_shape[d] * is[d]);
          j /= static_cast<size_t>(out_shape[d]);
        }
        return src;
      });
      return;
    }
    default: {  // Trans
      const auto& perm = op.attr_ints("perm");
      auto is = strides_of(in_shape);
      gather([&](size_t j) {
        size_t src = 0;
        for (size_t d = out_shape.size(); d-- > 0;) {
          src += static_cast<size_t>(static_cast<int64_t>(j) % out_shape[d] * is[static_cast<size_t>(perm[d])]);
          j /= static_cast<size_t>(out_shape[d]);
        }
        return src;
      });
    }
  }
}

// Element j of the result is the source's element at j's position, with the index's value along
// the axis; an index outside the source's dimension is an error naming the element.
void Program::exec_gather(const Op& op, RVal& out) {
  const RVal &src = val(op.operands[0]), &index = val(op.operands[1]);
  const auto& src_shape = op.operands[0]->type.shape();
  const auto& out_shape = op.result()->type.shape();
  const size_t axis = static_cast<size_t>(op.attr_int("axis"));
  const auto ss = strides_of(src_shape);
  const size_t n = static_cast<size_t>(op.result()->type.numel());
  std::vector<size_t> from(n);
  for (size_t j = 0; j < n; ++j) {
    const int64_t at = index.i[j];
    if (at < 0 || at >= src_shape[axis])
      fail(op, fmt::format("index {} at position {} is outside the source's {} elements along axis {}", at,
                           index_str(out_shape, j), src_shape[axis], axis));
    size_t rest = j, src_j = 0;
    for (size_t d = out_shape.size(); d-- > 0;) {
      const int64_t coord = d == axis ? at : static_cast<int64_t>(rest) % out_shape[d];
      src_j += static_cast<size_t>(coord * ss[d]);
      rest /= static_cast<size_t>(out_shape[d]);
    }
    from[j] = src_j;
  }
  pick_elements(src, out, n, [&](size_t j) { return from[j]; });
}

void Program::exec_cast(const Op& op, RVal& out) {
  const RVal& in = val(op.operands[0]);
  DType from = op.operands[0]->type.dtype(), to = op.result()->type.dtype();
  size_t n = in.size();
  const bool from_ptr = op.operands[0]->type.element().is_pointer(), to_ptr = op.result()->type.element().is_pointer();
  if (from_ptr || to_ptr) {  // pointers: the same address (between pointer types), or a host address
    out.i.resize(n);
    for (size_t j = 0; j < n; ++j)
      out.i[j] = from_ptr == to_ptr ? in.i[j] : to_ptr ? virtual_address(in.i[j]) : host_address(in.i[j]);
    return;
  }
  if (op.kind == OpKind::Bitcast) {
    auto bits_of = [&](size_t j) -> uint64_t {
      if (!is_float(from)) return static_cast<uint64_t>(in.i[j]);
      if (from == DType::f32) {
        float v = static_cast<float>(in.f[j]);
        uint32_t b;
        std::memcpy(&b, &v, 4);
        return b;
      }
      if (from == DType::f64) {
        uint64_t b;
        std::memcpy(&b, &in.f[j], 8);
        return b;
      }
      uint64_t b = 0;
      store_float(from, &b, in.f[j]);
      return b;
    };
    for (size_t j = 0; j < n; ++j) {
      uint64_t b = bits_of(j);
      if (is_float(to))
        out.f.push_back(load_float(to, &b));
      else
        out.i.push_back(load_int(to, &b));
    }
    return;
  }
  const bool toward_zero = (op.attrs.count("rounding") && op.attr_str("rounding") == "rtz");
  for (size_t j = 0; j < n; ++j) {
    if (is_float(from) && is_float(to))
      out.f.push_back(toward_zero ? round_toward_zero(to, in.f[j]) : round_to(to, in.f[j]));
    else if (is_float(from))
      out.i.push_back(ir::float_to_int(to, in.f[j]));
    else if (is_float(to))
      out.f.push_back(ir::int_to_float(from, in.i[j], to));
    else
      out.i.push_back(to == DType::i1 ? in.i[j] != 0 : wrap_int(to, in.i[j]));
  }
}

void Program::exec_elementwise(const Op& op, RVal& out) {
  size_t n = 1;
  for (const Value* v : op.operands) n = std::max(n, val(v).size());
  auto at_i = [&](size_t k, size_t j) {
    const RVal& r = val(op.operands[k]);
    return r.i[r.i.size() == 1 ? 0 : j];
  };
  auto at_f = [&](size_t k, size_t j) {
    const RVal& r = val(op.operands[k]);
    return r.f[r.f.size() == 1 ? 0 : j];
  };
  Type t = op.operands.empty() ? op.result()->type : op.operands[0]->type;
  DType d = t.dtype();
  bool flt = holds_float(t);
  switch (op.kind) {
    case OpKind::Cmp: {
      const std::string& p = op.attr_str("pred");
      out.i.resize(n);
      for (size_t j = 0; j < n; ++j)
        out.i[j] = flt ? ir::compare_floats(p, at_f(0, j), at_f(1, j)) : ir::compare_ints(p, d, at_i(0, j), at_i(1, j));
      return;
    }
    case OpKind::Select: {
      bool f = holds_float(op.operands[1]->type);
      for (size_t j = 0; j < n; ++j) {
        bool c = at_i(0, j) != 0;
        if (f)
          out.f.push_back(c ? at_f(1, j) : at_f(2, j));
        else
          out.i.push_back(c ? at_i(1, j) : at_i(2, j));
      }
      return;
    }
    case OpKind::AddPtr: {
      int64_t size = byte_size(op.operands[0]->type.pointee().dtype());
      out.i.resize(n);
      for (size_t j = 0; j < n; ++j) {
        // Wrapping, as on the GPU; a pointer moved out of its argument's window of the address
        // space (2^39 bytes or more away) is poisoned: it could otherwise land in another
        // argument, and the memory checker would take it for an access there.
        uint64_t p =
            static_cast<uint64_t>(at_i(0, j)) + static_cast<uint64_t>(at_i(1, j)) * static_cast<uint64_t>(size);
        int64_t moved = static_cast<int64_t>(p);
        out.i[j] = slot_of(moved) == slot_of(at_i(0, j)) ? moved : kPoisoned;
      }
      return;
    }
    case OpKind::Fma:
      for (size_t j = 0; j < n; ++j) {
        double r = d == DType::f64 ? std::fma(at_f(0, j), at_f(1, j), at_f(2, j))
                                   : std::fma(static_cast<float>(at_f(0, j)), static_cast<float>(at_f(1, j)),
                                              static_cast<float>(at_f(2, j)));
        out.f.push_back(round_to(d, r));
      }
      return;
    default:
      break;
  }
  if (op.kind == OpKind::Math) {
    const std::string& fn = op.attr_str("fn");
    for (size_t j = 0; j < n; ++j) out.f.push_back(round_to(d, ir::math_fn(fn, d, at_f(0, j))));
    return;
  }
  if (op.kind == OpKind::Math2) {
    const std::string& fn = op.attr_str("fn");
    for (size_t j = 0; j < n; ++j) out.f.push_back(round_to(d, ir::math2_fn(fn, d, at_f(0, j), at_f(1, j))));
    return;
  }
  if (ir::has_trait(op.kind, ir::kFloatMath)) {
    for (size_t j = 0; j < n; ++j) out.f.push_back(round_to(d, float_math(op.kind, d, at_f(0, j))));
    return;
  }
  if (op.kind == OpKind::Neg || op.kind == OpKind::Abs || op.kind == OpKind::Not) {
    for (size_t j = 0; j < n; ++j) {
      if (flt)
        out.f.push_back(op.kind == OpKind::Neg ? -at_f(0, j) : std::fabs(at_f(0, j)));
      else
        out.i.push_back(ir::int_unary(op.kind, d, at_i(0, j)));
    }
    return;
  }
  TILEDSL_CHECK(ir::has_trait(op.kind, ir::kBinary), "no interpreter case for op ", op.name());
  if (flt) {
    out.f.resize(n);
    for (size_t j = 0; j < n; ++j) out.f[j] = ir::float_binary(op.kind, d, at_f(0, j), at_f(1, j));
    return;
  }
  out.i.resize(n);
  for (size_t j = 0; j < n; ++j) out.i[j] = ir::int_binary(op.kind, d, at_i(0, j), at_i(1, j));
}

void Program::exec_memory(const Op& op, RVal& out) {
  const Type& pt = op.operands[0]->type;
  DType elem = pt.pointee().dtype();
  bool flt = is_float(elem);
  const RVal& ptr = val(op.operands[0]);
  size_t n = ptr.i.size();
  auto operand = [&](size_t k) -> const RVal* { return k < op.operands.size() ? &val(op.operands[k]) : nullptr; };
  switch (op.kind) {
    case OpKind::Load: {
      const RVal *mask = operand(1), *other = operand(2);
      if (flt)
        out.f.assign(n, 0.0);
      else
        out.i.assign(n, 0);
      for (size_t j = 0; j < n; ++j) {
        if (mask && !mask->i[j]) {
          if (other) {
            if (flt)
              out.f[j] = other->f[j];
            else
              out.i[j] = other->i[j];
          }
          continue;
        }
        char* p = address(op, ptr.i[j], elem, pt, j);
        if (flt)
          out.f[j] = load_float(elem, p);
        else
          out.i[j] = load_int(elem, p);
      }
      return;
    }
    case OpKind::Store: {
      const RVal &v = val(op.operands[1]), *mask = operand(2);
      for (size_t j = 0; j < n; ++j) {
        if (mask && !mask->i[j]) continue;
        char* p = address(op, ptr.i[j], elem, pt, j);
        if (flt)
          store_float(elem, p, v.f[j]);
        else
          store_int(elem, p, v.i[j]);
      }
      return;
    }
    case OpKind::AtomicRMW: {
      const RVal &v = val(op.operands[1]), *mask = operand(2);
      const std::string& kind = op.attr_str("kind");
      if (flt)
        out.f.assign(n, 0.0);
      else
        out.i.assign(n, 0);
      for (size_t j = 0; j < n; ++j) {
        if (mask && !mask->i[j]) continue;
        char* p = address(op, ptr.i[j], elem, pt, j);
        if (flt) {
          double old = load_float(elem, p), x = v.f[j], r = x;
          if (kind == "add")
            r = old + x;
          else if (kind == "max")
            r = std::fmax(old, x);
          else if (kind == "min")
            r = std::fmin(old, x);
          out.f[j] = old;
          store_float(elem, p, round_to(elem, r));
        } else {
          int64_t old = load_int(elem, p), x = v.i[j], r = x;
          bool uns = is_unsigned(elem);
          if (kind == "add")
            r = static_cast<int64_t>(static_cast<uint64_t>(old) + static_cast<uint64_t>(x));
          else if (kind == "max")
            r = uns ? static_cast<int64_t>(std::max<uint64_t>(old, x)) : std::max(old, x);
          else if (kind == "min")
            r = uns ? static_cast<int64_t>(std::min<uint64_t>(old, x)) : std::min(old, x);
          else if (kind == "and")
            r = old & x;
          else if (kind == "or")
            r = old | x;
          else if (kind == "xor")
            r = old ^ x;
          out.i[j] = old;
          store_int(elem, p, wrap_int(elem, r));
        }
      }
      return;
    }
    default: {  // AtomicCAS
      const RVal &cmp = val(op.operands[1]), &v = val(op.operands[2]);
      if (flt)
        out.f.assign(n, 0.0);
      else
        out.i.assign(n, 0);
      for (size_t j = 0; j < n; ++j) {
        char* p = address(op, ptr.i[j], elem, pt, j);
        if (flt) {
          double old = load_float(elem, p);
          out.f[j] = old;
          if (old == cmp.f[j]) store_float(elem, p, v.f[j]);
        } else {
          int64_t old = load_int(elem, p);
          out.i[j] = old;
          if (old == cmp.i[j]) store_int(elem, p, v.i[j]);
        }
      }
    }
  }
}

void Program::exec_dot(const Op& op, RVal& out) {
  const RVal &a = val(op.operands[0]), &b = val(op.operands[1]), &acc = val(op.operands[2]);
  const auto& sa = op.operands[0]->type.shape();
  const auto& sb = op.operands[1]->type.shape();
  size_t M = static_cast<size_t>(sa[0]), K = static_cast<size_t>(sa[1]), N = static_cast<size_t>(sb[1]);
  if (op.operands[0]->type.dtype() == DType::i8) {
    // i8 inputs: exact products summed in i32, wrapping (two's complement) as the tensor cores do.
    out.i.resize(M * N);
    out.f.clear();
    for (size_t m = 0; m < M; ++m)
      for (size_t n = 0; n < N; ++n) {
        uint32_t s = static_cast<uint32_t>(acc.i[m * N + n]);
        for (size_t k = 0; k < K; ++k) s += static_cast<uint32_t>(a.i[m * K + k] * b.i[k * N + n]);
        out.i[m * N + n] = static_cast<int32_t>(s);
      }
    return;
  }
  // Inputs are exact in f32 (f16/bf16 products are exact too); accumulate with f32 fma in k order.
  // f32 inputs first go through the dot's input_precision (ir::round_to_tf32): tf32 rounds them;
  // tf32x3 splits each into a high and a low tf32 part and adds, per k, lo*hi, hi*lo, then hi*hi.
  std::vector<float> fa(a.f.begin(), a.f.end()), fb(b.f.begin(), b.f.end());
  const std::string precision = op.attrs.count("input_precision") ? op.attr_str("input_precision") : "ieee";
  std::vector<float> la, lb;  // tf32x3's low parts
  if (precision != "ieee") {
    for (float& x : fa) x = ir::round_to_tf32(x);
    for (float& x : fb) x = ir::round_to_tf32(x);
  }
  if (precision == "tf32x3") {
    for (size_t i = 0; i < fa.size(); ++i) la.push_back(ir::round_to_tf32(static_cast<float>(a.f[i]) - fa[i]));
    for (size_t i = 0; i < fb.size(); ++i) lb.push_back(ir::round_to_tf32(static_cast<float>(b.f[i]) - fb[i]));
  }
  out.f.resize(M * N);
  for (size_t m = 0; m < M; ++m)
    for (size_t n = 0; n < N; ++n) {
      float s = static_cast<float>(acc.f[m * N + n]);
      for (size_t k = 0; k < K; ++k) {
        const size_t i = m * K + k, j = k * N + n;
        if (!la.empty()) {
          s = std::fma(la[i], fb[j], s);
          s = std::fma(fa[i], lb[j], s);
        }
        s = std::fma(fa[i], fb[j], s);
      }
      out.f[m * N + n] = s;
    }
}

// Reductions and scans: the combine region runs on whole slices at once (one lane per
// position outside the axis), so it is interpreted log2(n) times for a reduction and n times
// for a scan rather than once per element pair.
void Program::exec_combine(const Op& op) {
  const Block& body = *op.regions[0];
  size_t nin = op.operands.size();
  const auto& shape = op.operands[0]->type.shape();
  size_t axis = static_cast<size_t>(op.attr_int("axis"));
  size_t len = static_cast<size_t>(shape[axis]), inner = 1, outer = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= static_cast<size_t>(shape[d]);
  for (size_t d = 0; d < axis; ++d) outer *= static_cast<size_t>(shape[d]);
  size_t lanes = outer * inner;
  auto is_f = [&](size_t k) { return holds_float(op.operands[k]->type); };
  // Slice k of input `q` as a vector over lanes.
  auto slice = [&](size_t q, size_t k) {
    const RVal& in = val(op.operands[q]);
    RVal s;
    for (size_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < inner; ++i) {
        size_t src = (o * len + k) * inner + i;
        if (is_f(q))
          s.f.push_back(in.f[src]);
        else
          s.i.push_back(in.i[src]);
      }
    return s;
  };
  auto combine = [&](std::vector<RVal>& lhs, std::vector<RVal>& rhs) {
    for (size_t q = 0; q < nin; ++q) {
      env_[body.args[q]->id] = std::move(lhs[q]);
      env_[body.args[nin + q]->id] = std::move(rhs[q]);
    }
    return block(body);
  };
  if (op.kind == OpKind::Reduce) {
    // Pairwise tree over the axis: slices j and j + half combine, halving until one is left.
    std::vector<std::vector<RVal>> cur(len);
    for (size_t k = 0; k < len; ++k)
      for (size_t q = 0; q < nin; ++q) cur[k].push_back(slice(q, k));
    while (cur.size() > 1) {
      size_t half = cur.size() / 2;
      std::vector<std::vector<RVal>> next;
      for (size_t k = 0; k < half; ++k) next.push_back(combine(cur[k], cur[k + half]));
      if (cur.size() % 2) next.push_back(std::move(cur.back()));
      cur = std::move(next);
    }
    for (size_t q = 0; q < nin; ++q) {
      RVal& r = val(op.result(q));
      r = std::move(cur[0][q]);
      // A lane count of one inside a combine region may have been broadcast from a scalar.
      if (r.size() == 1 && lanes > 1) {
        if (!r.f.empty())
          r.f.assign(lanes, r.f[0]);
        else
          r.i.assign(lanes, r.i[0]);
      }
    }
    return;
  }
  bool reverse = op.attr_int("reverse") != 0;
  std::vector<RVal> results(nin);
  for (size_t q = 0; q < nin; ++q) {
    if (is_f(q))
      results[q].f.resize(lanes * len);
    else
      results[q].i.resize(lanes * len);
  }
  std::vector<RVal> carry;
  for (size_t step = 0; step < len; ++step) {
    size_t k = reverse ? len - 1 - step : step;
    std::vector<RVal> cur;
    for (size_t q = 0; q < nin; ++q) cur.push_back(slice(q, k));
    if (step == 0)
      carry = cur;
    else {
      std::vector<RVal> prev = carry;
      carry = combine(prev, cur);
    }
    for (size_t q = 0; q < nin; ++q) {
      size_t lane = 0;
      for (size_t o = 0; o < outer; ++o)
        for (size_t i = 0; i < inner; ++i, ++lane) {
          size_t dst = (o * len + k) * inner + i;
          const RVal& c = carry[q];
          size_t src = c.size() == 1 ? 0 : lane;
          if (is_f(q))
            results[q].f[dst] = c.f[src];
          else
            results[q].i[dst] = c.i[src];
        }
    }
  }
  for (size_t q = 0; q < nin; ++q) val(op.result(q)) = std::move(results[q]);
}

void Program::exec_for(const Op& op) {
  const RVal &lo = val(op.operands[0]), &hi = val(op.operands[1]), &step = val(op.operands[2]);
  if (step.i[0] <= 0) fail(op, fmt::format("step must be positive, got {}", step.i[0]));
  const Block& body = *op.regions[0];
  size_t n = op.operands.size() - 3;
  std::vector<RVal> carried;
  for (size_t k = 0; k < n; ++k) carried.push_back(val(op.operands[3 + k]));
  for (int64_t iv = lo.i[0]; iv < hi.i[0]; iv += step.i[0]) {
    env_[body.args[0]->id] = RVal{{iv}, {}};
    for (size_t k = 0; k < n; ++k) env_[body.args[k + 1]->id] = std::move(carried[k]);
    carried = block(body);
  }
  for (size_t k = 0; k < n; ++k) val(op.result(k)) = std::move(carried[k]);
}

void Program::exec_if(const Op& op) {
  bool c = val(op.operands[0]).i[0] != 0;
  auto out = block(*op.regions[c ? 0 : 1]);
  for (size_t k = 0; k < out.size(); ++k) val(op.result(k)) = std::move(out[k]);
}

// Read at each loop (one getenv per while op a program runs), so that a test may set it.
int64_t while_limit() {
  std::string e = env::value(env::Var::TILEDSL_INTERPRETER_WHILE_LIMIT);
  if (e.empty()) return int64_t{100'000'000};
  char* end = nullptr;
  long long n = std::strtoll(e.c_str(), &end, 10);
  if (*end || n <= 0) user_error("", "", "", "TILEDSL_INTERPRETER_WHILE_LIMIT must be a positive number, got '{}'", e);
  return static_cast<int64_t>(n);
}

void Program::exec_while(const Op& op) {
  const Block &cond = *op.regions[0], &body = *op.regions[1];
  const size_t n = op.operands.size();
  std::vector<RVal> carried;
  for (size_t k = 0; k < n; ++k) carried.push_back(val(op.operands[k]));
  const int64_t limit = while_limit();
  for (int64_t iterations = 0;; ++iterations) {
    for (size_t k = 0; k < n; ++k) env_[cond.args[k]->id] = carried[k];
    if (block(cond)[0].i[0] == 0) break;
    if (iterations == limit)
      fail(op, fmt::format("while_ ran {} iterations without its condition turning false (programs with atomics run "
                           "one after another in the interpreter, so a loop that waits for another program never "
                           "ends; TILEDSL_INTERPRETER_WHILE_LIMIT sets the limit)",
                           iterations));
    for (size_t k = 0; k < n; ++k) env_[body.args[k]->id] = std::move(carried[k]);
    carried = block(body);
  }
  for (size_t k = 0; k < n; ++k) val(op.result(k)) = std::move(carried[k]);
}

void Program::exec_print(const Op& op) {
  std::lock_guard lock(l_.print_mu);
  bool hex = op.attr_int("hex") != 0;
  for (const Value* v : op.operands) {
    const RVal& r = val(v);
    for (size_t j = 0; j < r.size(); ++j) {
      std::string s;
      if (!r.f.empty())
        s = hex ? fmt::format("{:a}", r.f[j]) : fmt::format("{:g}", r.f[j]);  // printf's %a / %g, as on the GPU
      else
        s = hex ? fmt::format("0x{:x}", static_cast<uint64_t>(r.i[j])) : fmt::format("{}", r.i[j]);
      std::cout << fmt::format("pid ({}, {}, {}) idx {} {}{}\n", pid_[0], pid_[1], pid_[2],
                               index_str(v->type.shape(), j), op.attr_str("prefix"), s);
    }
  }
  std::cout.flush();
}

// Whether a cast turns integers into pointers anywhere in `b`.
bool makes_pointers(const ir::Block& b) {
  bool found = false;
  ir::walk(b, [&](const ir::Op* op) {
    found |= op->kind == OpKind::Cast && op->result()->type.element().is_pointer() &&
             !op->operands[0]->type.element().is_pointer();
  });
  return found;
}

bool needs_serial(const ir::Block& b) {
  bool serial = false;
  ir::walk(b, [&](const Op* op) {
    serial |= op->kind == OpKind::AtomicRMW || op->kind == OpKind::AtomicCAS || op->kind == OpKind::Print;
  });
  return serial;
}
}  // namespace

void interpret(const ir::Function& f, std::span<const InterpArg> args, std::array<int64_t, 3> grid, int threads) {
  TILEDSL_CHECK(args.size() == f.num_args(), "interpreter: argument count");
  TILEDSL_CHECK(f.num_values() > 0 || f.body.ops.empty(), "interpreter: values are not numbered");
  Launch l{f, {}, args, grid, {}};
  for (const auto& a : args) l.allocs.push_back({static_cast<char*>(a.base), a.bytes, a.name});
  // Then, for a kernel that makes pointers of integers, every live host tensor: the addresses it
  // computes or loads may reach any of them.
  if (makes_pointers(f.body))
    for (const auto& [base, bytes] : host_memory())
      l.allocs.push_back({static_cast<char*>(base), bytes, fmt::format("the tensor at {}", base)});
  int64_t total = 0;
  TILEDSL_CHECK(!__builtin_mul_overflow(grid[0], grid[1], &total) && !__builtin_mul_overflow(total, grid[2], &total),
                "interpreter: the grid's program count overflows (the launch checks it)");
  auto pid_of = [&](int64_t p) {
    return std::array<int64_t, 3>{p % grid[0], (p / grid[0]) % grid[1], p / (grid[0] * grid[1])};
  };
  if (threads <= 1 || total < 2 || needs_serial(f.body)) {
    Program prog(l);
    for (int64_t p = 0; p < total; ++p) prog.run(pid_of(p));
    return;
  }
  // Programs are independent without atomics, so any split gives the same memory.
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mu;
  int64_t first_failed = std::numeric_limits<int64_t>::max();
  auto worker = [&] {
    Program prog(l);
    for (int64_t p; !failed && (p = next++) < total;) {
      try {
        prog.run(pid_of(p));
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (p < first_failed) {  // report the lowest failing program, as a serial run would
          first_failed = p;
          error = std::current_exception();
        }
        failed = true;
      }
    }
  };
  run_team(static_cast<int>(std::min<int64_t>(threads, total)), worker);
  if (error) std::rethrow_exception(error);
}

}  // namespace tiledsl::runtime
