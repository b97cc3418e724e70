// Mistake: a kernel parameter of a type the launcher cannot pass (a plain float, not tl::Float).
#include <tiledsl/tiledsl.h>
namespace tl = tiledsl;

const tl::Kernel k = tl::kernel("k", {"x", "scale"}, [](tl::Ptr<float> x, float scale) {
  auto offs = tl::arange(0, 16);
  tl::store(x + offs, tl::load(x + offs) * scale);
});
