// Mistake: bitcast between types of different widths (f32 -> f64); use .to<double>().
#include <tiledsl/tiledsl.h>
namespace tl = tiledsl;

const tl::Kernel k = tl::kernel("k", {"x", "y"}, [](tl::Ptr<float> x, tl::Ptr<double> y) {
  auto offs = tl::arange(0, 16);
  tl::store(y + offs, tl::bitcast<double>(tl::load(x + offs)));
});
