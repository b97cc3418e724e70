#!/usr/bin/env bash
# bench/plot_sweep.py on a sample of tiledsl-bench sweep's CSV: one SVG per workload, each with
# both series and the axis unit in it. Usage: plot-sweep-test.sh <source dir>
set -euo pipefail
src=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The first Python with matplotlib: the one on PATH, else the system's (Debian's python3-matplotlib,
# which scripts/setup.sh installs, is for /usr/bin/python3 where PATH leads elsewhere).
py=python3
python3 -c "import matplotlib" 2>/dev/null || py=/usr/bin/python3
"$py" "$src/bench/plot_sweep.py" "$src/test/bench/sweep-sample.csv" --out "$out" --title ", sample"
for w in add matmul_bf16; do
  f="$out/sweep-$w.svg"
  [ -s "$f" ] || { echo "no $f"; exit 1; }
  grep -q "tiledsl" "$f" || { echo "$f: no 'tiledsl' series"; exit 1; }
done
grep -q "cuBLAS" "$out/sweep-matmul_bf16.svg" && grep -q "TFLOP/s" "$out/sweep-matmul_bf16.svg"
grep -q "copy (same bytes)" "$out/sweep-add.svg" && grep -q "GB/s" "$out/sweep-add.svg"
[ "$(ls "$out" | wc -l)" -eq 2 ]
echo "plot-sweep: OK"
