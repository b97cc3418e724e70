// The control for compile_fail/: a correct kernel that compiles with the same command line, so
// each compile_fail test fails because of its one mistake and not because of the setup.
#include <tiledsl/tiledsl.h>
namespace tl = tiledsl;

const tl::Kernel k =
    tl::kernel("k", {"a", "b", "c", "x", "n"},
               [](tl::Ptr<tl::bf16> a, tl::Ptr<tl::bf16> b, tl::Ptr<float> c, tl::Ptr<int32_t> x, tl::Int n) {
                 auto r = tl::arange(0, 16);
                 auto offs = r(tl::_, tl::newaxis) * 16 + r(tl::newaxis, tl::_);
                 auto acc = tl::load(c + offs);
                 acc += tl::dot(tl::load(a + offs), tl::load(b + offs));
                 tl::store(c + offs, tl::exp(acc));
                 auto v = tl::load(x + r, r < n);
                 tl::store(x + r * 2, (v & 7) << 1, r < n);
                 tl::store(x + r, tl::bitcast<int32_t>(tl::load(c + r)), r < n);
               });
