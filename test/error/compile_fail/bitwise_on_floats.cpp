// Mistake: a bitwise op on float tiles.
#include <tiledsl/tiledsl.h>
namespace tl = tiledsl;

const tl::Kernel k = tl::kernel("k", {"x", "y"}, [](tl::Ptr<float> x, tl::Ptr<float> y) {
  auto offs = tl::arange(0, 16);
  tl::store(x + offs, tl::load(x + offs) & tl::load(y + offs));
});
