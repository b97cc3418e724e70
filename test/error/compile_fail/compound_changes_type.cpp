// Mistake: h += f where h is f16 and f is f32: the sum is f32, which h cannot hold.
#include <tiledsl/tiledsl.h>
namespace tl = tiledsl;

const tl::Kernel k = tl::kernel("k", {"h", "f"}, [](tl::Ptr<tl::f16> h, tl::Ptr<float> f) {
  auto offs = tl::arange(0, 16);
  auto acc = tl::load(h + offs);
  acc += tl::load(f + offs);
  tl::store(h + offs, acc);
});
