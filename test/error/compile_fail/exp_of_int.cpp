// Mistake: tl::exp of an integer tile.
#include <tiledsl/tiledsl.h>
namespace tl = tiledsl;

const tl::Kernel k = tl::kernel("k", {"out"}, [](tl::Ptr<float> out) {
  auto offs = tl::arange(0, 16);
  tl::store(out + offs, tl::exp(offs));
});
