#!/usr/bin/env bash
# Checks that every C++ source git tracks is formatted by .clang-format (clang-format 14, the
# version Debian 12 ships; another version formats differently, so it skips with status 77).
# `scripts/check-format.sh --fix` formats them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format not found: skipped"; exit 77; }
clang-format --version | grep -q ' 14\.' || { echo "not clang-format 14: skipped"; exit 77; }
# test/error/compile_fail/*.cpp are inputs whose compiler messages the tests read.
mapfile -t files < <(git ls-files '*.cpp' '*.h' | grep -v '^test/error/compile_fail/')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run --Werror "${files[@]}"
  echo "${#files[@]} files formatted as .clang-format says"
fi
