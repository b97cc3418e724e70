// Mistake: loading from a tile of integers (offsets) instead of a pointer tile (x + offsets).
#include <tiledsl/tiledsl.h>
namespace tl = tiledsl;

const tl::Kernel k = tl::kernel("k", {"x", "out"}, [](tl::Ptr<float> x, tl::Ptr<float> out) {
  auto offs = tl::arange(0, 16);
  tl::store(out + offs, tl::load(offs));
  (void)x;
});
