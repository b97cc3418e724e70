#!/usr/bin/env bash
# `tiledsl-bench export DIR` (what bench/torch_side_by_side.py loads) without a GPU: every line
# of DIR/kernels.jsonl names a PTX file with that entry point and the parameter list the script
# passes (add 4, softmax 5, layer norm 9, in both of its forms); the adds are vectorised as the
# benchmark launches them; with ptxas, every file assembles for sm_90 without spills.
# Usage: bench-export.sh <tiledsl-bench> [ptxas]
set -euo pipefail
bench=$1
ptxas=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
TILEDSL_BACKEND=interpreter TILEDSL_ARCH=sm_90 "$bench" export "$work" >/dev/null
lines=$(wc -l <"$work/kernels.jsonl")
[ "$lines" -eq 19 ] || { echo "kernels.jsonl has $lines lines, expected 19"; exit 1; }
while IFS= read -r line; do
  file=$(echo "$line" | sed -E 's/.*"file": "([^"]+)".*/\1/')
  entry=$(echo "$line" | sed -E 's/.*"entry": "([^"]+)".*/\1/')
  kind=$(echo "$line" | sed -E 's/.*"kernel": "([^"]+)".*/\1/')
  ptx="$work/$file"
  grep -q "\.entry $entry(" "$ptx" || { echo "$file: no entry $entry"; exit 1; }
  params=$(grep -c "\.param .* ${entry}_param_" "$ptx")
  case $kind in add) want=4 ;; softmax) want=5 ;; layernorm | layernorm_loops) want=9 ;; *) echo "$file: unknown kernel $kind"; exit 1 ;; esac
  [ "$params" -eq "$want" ] || { echo "$file: $params parameters, expected $want"; exit 1; }
  if [ "$kind" = add ]; then grep -q "ld.global.v4.f32" "$ptx" || { echo "$file: loads not vectorised"; exit 1; }; fi
  if [ -n "$ptxas" ] && [ -x "$ptxas" ]; then
    info=$("$ptxas" -arch=sm_90 -v "$ptx" -o /dev/null 2>&1)
    if echo "$info" | grep -qE "[1-9][0-9]* bytes spill"; then echo "$file spills"; exit 1; fi
  fi
  echo "$file: $kind, entry $entry, $params parameters"
done <"$work/kernels.jsonl"
