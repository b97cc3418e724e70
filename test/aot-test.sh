#!/usr/bin/env bash
# Ahead-of-time compilation end to end: tiledsl-aot turns test/aot/add.tir into a cubin and C
# launcher; test/aot/main.c is compiled and linked against the generated C and libcuda only (no
# tiledsl, no LLVM), then run where a GPU exists. Usage: aot-test.sh <tiledsl-aot> <source dir> [run]
# Without `run` it stops after linking; with it, exit 77 means no GPU (skipped).
set -euo pipefail
aot=$1
src=$2
mode=${3:-build}
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -f "$cuda/include/cuda.h" ] || { echo "no CUDA toolkit headers at $cuda: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$aot" --arch=sm_90 --num-warps=4 --out-dir="$work" "$src/test/aot/add.tir"
cc -std=c11 -Wall -Wextra -Werror -I"$cuda/include" -I"$work" "$src/test/aot/main.c" "$work/add_kernel.c" \
  -L"$cuda/lib64/stubs" -lcuda -o "$work/aot-add"
if nm -C "$work/aot-add" | grep -qiE "tiledsl::|llvm::"; then echo "the AOT program links tiledsl or LLVM"; exit 1; fi
echo "aot: generated C compiled and linked with libcuda only"
[ "$mode" = run ] || exit 0
# The stub libcuda only links; running needs the real driver.
ldconfig -p 2>/dev/null | grep -q "libcuda.so.1 " || { echo "aot: no CUDA driver: skipped"; exit 77; }
"$work/aot-add"
