#!/usr/bin/env bash
# Runs the IR fuzzer (test/fuzz) under libFuzzer with ASan and UBSan for a while:
#   scripts/fuzz.sh [SECONDS] [extra libFuzzer flags...]     (default 600 s)
# Builds the `fuzz` preset (clang) into build-fuzz/, seeds build-fuzz/corpus from the examples'
# IR (test/fuzz/corpus) and every lit test's inputs, and keeps what libFuzzer adds there across
# runs. A finding stops the run and leaves crash-*/timeout-* files in build-fuzz/; replay one with
#   build/test/tiledsl-fuzz-replay build-fuzz/crash-...   (or build-fuzz/test/tiledsl-fuzz FILE)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
source scripts/setup.sh
command -v clang++ >/dev/null || { echo "fuzz.sh needs clang (apt-get install clang)"; exit 2; }
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
corpus=build-fuzz/corpus
mkdir -p "$corpus"
cp test/fuzz/corpus/*.tir "$corpus/"
for f in test/lit/*/*.tir; do cp "$f" "$corpus/lit-$(basename "$f")"; done
# A .test file's inputs follow `//--- name.tir` lines (split-file's format).
for f in test/lit/*/*.test; do
  awk -v out="$corpus/lit-$(basename "$f" .test)-" '
    /^\/\/--- .*\.tir$/ { name = out substr($0, 7); next }
    /^\/\/--- / { name = ""; next }
    name != "" { print > name }' "$f"
done
cd build-fuzz
exec ./test/tiledsl-fuzz corpus -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -max_len=65536 \
  -print_final_stats=1 "$@"
