// Mistake: / on integers of different signedness (i32 by u32), which Triton rejects too; convert
// one of them first (x.to<uint32_t>() / y).
#include <tiledsl/tiledsl.h>
namespace tl = tiledsl;

const tl::Kernel k =
    tl::kernel("k", {"x", "y", "out"}, [](tl::Ptr<int32_t> x, tl::Ptr<uint32_t> y, tl::Ptr<int32_t> out) {
      auto offs = tl::arange(0, 16);
      tl::store(out + offs, tl::load(x + offs) / tl::load(y + offs));
    });
