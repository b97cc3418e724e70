// tiledsl: Triton's block programming model in C++. Include this one header; write
// `namespace tl = tiledsl;`. See docs/language.md for every op.
#pragma once

#include "tiledsl/autotune.h"
#include "tiledsl/bench.h"
#include "tiledsl/dtype.h"
#include "tiledsl/error.h"
#include "tiledsl/kernel.h"
#include "tiledsl/shapes.h"
#include "tiledsl/stream.h"
#include "tiledsl/tensor.h"
#include "tiledsl/tile.h"
#include "tiledsl/version.h"
