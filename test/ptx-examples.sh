#!/usr/bin/env bash
# Compiles every bundled example's kernels (as traced and launched at their default configuration,
# num_warps included) for sm_80
# sm_90 and sm_90a (wgmma) through the full pipeline, assembles the PTX with ptxas and checks: no spills, no
# local memory. Usage: ptx-examples.sh <build dir> <ptxas>. Exit 77 (skipped) without ptxas.
set -euo pipefail
build=$1
ptxas=${2:-}
[ -n "$ptxas" ] && [ -x "$ptxas" ] || { echo "ptxas not found: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for ex in "$build"/examples/example-*; do
  (cd "$work" && TILEDSL_BACKEND=interpreter TILEDSL_DUMP_DIR="$work/ir" "$ex" >/dev/null)
done
count=0
failed=0
for f in "$work"/ir/*.tir; do
  name=$(basename "$f" .tir)
  warps=${name##*.w}  # the launch's num_warps, recorded in the file name
  for arch in sm_80 sm_90 sm_90a; do
    "$build/tools/tiledsl-opt" --emit=ptx --arch=$arch --num-warps="$warps" "$f" >"$work/$name.$arch.ptx"
    if grep -q '\.local' "$work/$name.$arch.ptx"; then echo "$name ($arch): uses local memory"; exit 1; fi
    info=$("$ptxas" -arch=$arch -v "$work/$name.$arch.ptx" -o /dev/null 2>&1)
    if echo "$info" | grep -E "[1-9][0-9]* bytes spill" >/dev/null; then
      echo "$name ($arch) spills: $(echo "$info" | grep -oE "[0-9]+ bytes spill stores")"
      failed=1
      continue
    fi
    regs=$(echo "$info" | grep -oE "Used [0-9]+ registers" | head -1)
    echo "$name $arch: $regs"
    count=$((count + 1))
  done
done
[ "$count" -gt 0 ] || { echo "no kernels compiled"; exit 1; }
[ "$failed" -eq 0 ] || exit 1
echo "$count kernel compilations assembled with no spills and no local memory"
