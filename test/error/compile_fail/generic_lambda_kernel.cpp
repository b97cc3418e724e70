// Mistake: a generic lambda as the kernel; parameter types must be spelled out.
#include <tiledsl/tiledsl.h>
namespace tl = tiledsl;

const tl::Kernel k = tl::kernel("k", {"x", "n"}, [](auto x, auto n) {
  auto offs = tl::arange(0, 16);
  tl::store(x + offs, 1.0f, offs < n);
});
