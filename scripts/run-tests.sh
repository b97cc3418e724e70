#!/usr/bin/env bash
# Installs what is missing, configures, builds and runs the whole test suite through ctest.
# Extra arguments go to ctest (e.g. -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
source scripts/setup-torch.sh  # TILEDSL_TORCH_PYTHON: tiledsl::torch and its tests, where torch installs
cmake --preset default -DTILEDSL_TORCH_PYTHON="$TILEDSL_TORCH_PYTHON" >/dev/null
cmake --build --preset default
ctest --preset default -j"$(nproc)" "$@"
