#!/usr/bin/env bash
# Installs the built library into a temporary prefix, then configures, builds and runs
# test/consumer against it with find_package(tiledsl). Usage: consumer-test.sh <build dir> <source dir>
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# The tools come with the package.
"$work/prefix/bin/tiledsl-opt" --help >/dev/null
[ ! -x "$build/tools/tiledsl-aot" ] || [ -x "$work/prefix/bin/tiledsl-aot" ]
cmake -S "$src/test/consumer" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
