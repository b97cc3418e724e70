#!/usr/bin/env bash
# Builds, on this machine, everything a GPU run needs into build-gpu/ (git-ignored): libtiledsl.so
# with LLVM linked in statically, the tests, examples, benchmarks and tiledsl-opt, stripped, with
# libfmt beside the library, staged into .device/. Carry .device to the GPU machine and run
# scripts/gpu-check.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
# Static LLVM's Support library links zstd.
dpkg-query -W -f='${Status}' libzstd-dev 2>/dev/null | grep -q "install ok installed" ||
  { [ "$(id -u)" -eq 0 ] && apt-get install -y -qq libzstd-dev >/dev/null || sudo apt-get install -y -qq libzstd-dev >/dev/null; }
# tiledsl::torch too where .venv-torch can provide LibTorch (the GPU machine's torch, the same
# version, is found there through LD_LIBRARY_PATH: scripts/gpu-check.sh).
source scripts/setup-torch.sh
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEDSL_BUILD_SHARED=ON -DTILEDSL_LLVM_SHARED=OFF \
  -DTILEDSL_ENABLE_CODEGEN=ON -DTILEDSL_TORCH_PYTHON="$TILEDSL_TORCH_PYTHON" >/dev/null
cmake --build build-gpu
# Stage what the GPU machine runs into .device/ (git-ignored): bin/ and lib/, found via $ORIGIN/../lib.
rm -rf .device && mkdir -p .device/bin .device/lib
cp build-gpu/lib/libtiledsl.so .device/lib/
cp -L /usr/lib/x86_64-linux-gnu/libfmt.so.9 .device/lib/
cp build-gpu/examples/example-* build-gpu/test/tiledsl-tests build-gpu/bench/tiledsl-bench build-gpu/tools/tiledsl-opt build-gpu/tools/tiledsl-aot \
  .device/bin/
if [ -f build-gpu/test/tiledsl-torch-tests ]; then
  cp build-gpu/test/tiledsl-torch-tests .device/bin/
  cp build-gpu/lib/libtiledsl_torch_examples.so .device/lib/
fi
strip --strip-unneeded .device/lib/* .device/bin/*
du -sh .device
