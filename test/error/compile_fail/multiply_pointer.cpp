// Mistake: scaling a pointer tile (the offsets should be scaled: x + offs * 2).
#include <tiledsl/tiledsl.h>
namespace tl = tiledsl;

const tl::Kernel k = tl::kernel("k", {"x"}, [](tl::Ptr<float> x) {
  auto offs = tl::arange(0, 16);
  tl::store(x * 2 + offs, 1.0f);
});
