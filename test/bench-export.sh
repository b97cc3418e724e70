#!/usr/bin/env bash
# `tiledsl-bench export DIR` (what bench/torch_side_by_side.py loads) without a GPU, for sm_90a:
# every line of DIR/kernels.jsonl names a PTX file with that entry point and the parameter list
# the script passes (add 4, softmax 5, layer norm 9 in both of its forms, matmul 12, attention
# 11), and the cubin it names, if any, exists; the adds are vectorised as the benchmark launches
# them; matmul and attention blocks that wgmma takes use it; with ptxas, the memory-bound kernels
# assemble without spills (test_compile.cpp checks the tensor-core configurations the benchmark
# picks; some of the others, D128 attention on one warpgroup, spill by design of the search).
# With python3, bench/torch_side_by_side.py then runs over them with torch, Triton and the driver
# stubbed (side-by-side-dry-run.py): every workload must reach its summary line.
# Usage: bench-export.sh <tiledsl-bench> [ptxas]
set -euo pipefail
bench=$1
ptxas=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
TILEDSL_BACKEND=interpreter TILEDSL_ARCH=sm_90a "$bench" export "$work" >/dev/null
lines=$(wc -l <"$work/kernels.jsonl")
# 19 memory-bound kernels, 13 matmul configurations for bf16 and for f16, 13 attention ones for
# each of 4 workloads
[ "$lines" -eq 97 ] || { echo "kernels.jsonl has $lines lines, expected 97"; exit 1; }
while IFS= read -r line; do
  file=$(echo "$line" | sed -E 's/.*"file": "([^"]+)".*/\1/')
  entry=$(echo "$line" | sed -E 's/.*"entry": "([^"]+)".*/\1/')
  kind=$(echo "$line" | sed -E 's/.*"kernel": "([^"]+)".*/\1/')
  ptx="$work/$file"
  grep -q "\.entry $entry(" "$ptx" || { echo "$file: no entry $entry"; exit 1; }
  params=$(grep -c "\.param .* ${entry}_param_" "$ptx")
  case $kind in
    add) want=4 ;; softmax) want=5 ;; layernorm | layernorm_loops) want=9 ;; matmul) want=12 ;; attention) want=11 ;;
    *) echo "$file: unknown kernel $kind"; exit 1 ;;
  esac
  [ "$params" -eq "$want" ] || { echo "$file: $params parameters, expected $want"; exit 1; }
  if [ "$kind" = add ]; then grep -q "ld.global.v4.f32" "$ptx" || { echo "$file: loads not vectorised"; exit 1; }; fi
  if echo "$line" | grep -q '"cubin"'; then
    cubin=$(echo "$line" | sed -E 's/.*"cubin": "([^"]+)".*/\1/')
    [ -s "$work/$cubin" ] || { echo "$file: no cubin $cubin"; exit 1; }
  fi
  # The 128x256x64 matmul and 128x128 attention blocks: whole warpgroups along M, N multiple of 64.
  case $file in matmul-128x256x64-* | matmul_f16-128x256x64-* | attention-*-128x128-w8-*)
    grep -q "wgmma.mma_async" "$ptx" || { echo "$file: no wgmma"; exit 1; } ;;
  esac
  if [ "$kind" != matmul ] && [ "$kind" != attention ] && [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
    info=$("$ptxas" -arch=sm_90a -v "$ptx" -o /dev/null 2>&1)
    if echo "$info" | grep -qE "[1-9][0-9]* bytes spill"; then echo "$file spills"; exit 1; fi
  fi
  echo "$file: $kind, entry $entry, $params parameters"
done <"$work/kernels.jsonl"
if command -v python3 >/dev/null; then
  out=$(python3 "$(dirname "$0")/side-by-side-dry-run.py" "$work" --rounds 2 --select-rounds 1 2>&1) ||
    { echo "$out" | tail -20; echo "torch_side_by_side.py failed on the exported kernels"; exit 1; }
  # add at 3 sizes, softmax at 2, layer norm in 2 forms, matmul at 2 sizes in 2 types, attention in 3 forms
  lines=$(echo "$out" | grep -c '^side-by-side')
  [ "$lines" -eq 14 ] || { echo "$out" | tail -20; echo "side-by-side printed $lines summary lines, expected 14"; exit 1; }
  echo "torch_side_by_side.py (stubbed): $lines workloads"
fi
