#!/usr/bin/env bash
# Installs what is missing, configures, builds and runs every bundled example; one line each:
# name, backend, max error, OK/FAIL. Exits non-zero if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default >/dev/null
failed=0
for ex in build/examples/example-*; do
  [ -x "$ex" ] || continue
  "$ex" || failed=1
done
exit $failed
