#!/usr/bin/env bash
# Runs every bundled example with TILEDSL_DUMP_DIR set, then checks that each traced kernel's IR
# parses, verifies and prints back to the identical text. Usage: roundtrip-examples.sh <build dir>
set -euo pipefail
build=$1
dump=$(mktemp -d)
trap 'rm -rf "$dump"' EXIT
count=0
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
done
[ "$count" -gt 0 ] || { echo "no kernel IR was dumped"; exit 1; }
echo "$count kernel IR files round-tripped"
