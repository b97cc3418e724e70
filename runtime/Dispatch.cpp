#include "runtime/Dispatch.h"

#include <array>
#include <cstring>
#include <new>

#include "runtime/Interpreter.h"
#include "support/Error.h"

namespace tiledsl::runtime {

using detail::LaunchArg;

void launch_on_gpu(const GpuKernel& k, std::span<const ParamSpec> specs, std::span<const LaunchArg> args, Dim3 grid,
                   void* stream) {
  // Fixed storage for the usual kernel; one with more parameters packs into the heap.
  std::array<GpuArg, 64> fixed;
  std::vector<GpuArg> heap;
  if (args.size() > fixed.size()) heap.resize(args.size());
  std::span<GpuArg> packed = heap.empty() ? std::span(fixed) : std::span(heap);
  size_t n = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    uint64_t bits = 0;
    switch (specs[i].kind) {
      case ParamKind::constexpr_:
        continue;
      case ParamKind::pointer:
        bits = reinterpret_cast<uintptr_t>(args[i].t->data_ptr());
        break;
      case ParamKind::f32: {
        float f = static_cast<float>(args[i].kind == LaunchArg::floating ? args[i].f : static_cast<double>(args[i].i));
        std::memcpy(&bits, &f, 4);
        break;
      }
      default:
        bits = static_cast<uint64_t>(args[i].i);
    }
    packed[n++] = {bits};
  }
  launch_gpu_kernel(k, std::span(packed.data(), n), {grid.x, grid.y, grid.z}, stream);
}

void launch_in_interpreter(const ir::Function& f, std::span<const ParamSpec> specs, std::span<const std::string> names,
                           std::span<const LaunchArg> args, Dim3 grid, const std::string& where) {
  std::vector<InterpArg> iargs;
  for (size_t i = 0; i < args.size(); ++i) {
    InterpArg a;
    a.kind = InterpArg::integer;
    a.name = names[i];
    switch (specs[i].kind) {
      case ParamKind::constexpr_:
        continue;
      case ParamKind::pointer:
        a.kind = InterpArg::pointer;
        a.base = args[i].t->data_ptr();
        a.bytes = args[i].t->nbytes();
        break;
      case ParamKind::f32:
        a.kind = InterpArg::floating;
        a.f = args[i].kind == LaunchArg::floating ? args[i].f : static_cast<double>(args[i].i);
        break;
      default:
        a.i = args[i].i;
    }
    iargs.push_back(std::move(a));
  }
  try {
    interpret(f, iargs, {grid.x, grid.y, grid.z}, default_interpreter_threads());
  } catch (const std::bad_alloc&) {
    user_error(where, f.name, "launch",
               "the interpreter ran out of host memory for the kernel's tiles (each value of a program is held "
               "whole; use smaller tiles)");
  }
}

}  // namespace tiledsl::runtime
