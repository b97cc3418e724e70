#!/usr/bin/env bash
# Runs every bundled example with TILEDSL_DUMP_DIR set, then checks that each traced kernel's IR
# parses, verifies and prints back to the identical text, and so does its IR after the whole pass
# pipeline (layouts and shared-memory offsets included; 4 warps on sm_90, 8 on sm_90a).
# Usage: roundtrip-examples.sh <build dir>
set -euo pipefail
build=$1
dump=$(mktemp -d)
trap 'rm -rf "$dump"' EXIT
count=0 laid_out=0
passes=$("$build/tools/tiledsl-opt" --list-passes | grep -v '^ ' | sed 's/^/--pass=/' | tr '\n' ' ')
for ex in "$build"/examples/example-*; do
  [ -x "$ex" ] || continue
  (cd "$dump" && TILEDSL_DUMP_DIR="$dump/ir" "$ex" >/dev/null)
done
for f in "$dump"/ir/*.tir; do
  if ! "$build/tools/tiledsl-opt" "$f" | diff -u "$f" - >/dev/null; then
    echo "round trip changed $(basename "$f"):"
    "$build/tools/tiledsl-opt" "$f" | diff -u "$f" - | head -20
    exit 1
  fi
  count=$((count + 1))
  for target in "--num-warps=4 --arch=sm_90" "--num-warps=8 --arch=sm_90a"; do
    # shellcheck disable=SC2086
    "$build/tools/tiledsl-opt" $target $passes "$f" >"$dump/after.tir"
    # shellcheck disable=SC2086
    if ! "$build/tools/tiledsl-opt" $target "$dump/after.tir" | diff -u "$dump/after.tir" - >/dev/null; then
      echo "round trip after the pipeline ($target) changed $(basename "$f"):"
      "$build/tools/tiledsl-opt" $target "$dump/after.tir" | diff -u "$dump/after.tir" - | head -20
      exit 1
    fi
    grep -q "blocked<" "$dump/after.tir" || { echo "no layouts after the pipeline in $(basename "$f")"; exit 1; }
    laid_out=$((laid_out + 1))
  done
done
[ "$count" -gt 0 ] || { echo "no kernel IR was dumped"; exit 1; }
echo "$count kernel IR files round-tripped, and $laid_out after the pipeline"
