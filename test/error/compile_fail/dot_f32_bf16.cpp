// Mistake: tl::dot of an f32 tile with a bf16 tile.
#include <tiledsl/tiledsl.h>
namespace tl = tiledsl;

const tl::Kernel k = tl::kernel("k", {"a", "b", "c"}, [](tl::Ptr<float> a, tl::Ptr<tl::bf16> b, tl::Ptr<float> c) {
  auto r = tl::arange(0, 16);
  auto offs = r(tl::_, tl::newaxis) * 16 + r(tl::newaxis, tl::_);
  tl::store(c + offs, tl::dot(tl::load(a + offs), tl::load(b + offs)));
});
