#!/usr/bin/env bash
# Installs the Debian packages tiledsl builds with, when any is missing; silent otherwise.
# Sourced by run-tests.sh and run-examples.sh.
set -euo pipefail
tiledsl_packages=(llvm-19-dev llvm-19-tools libfmt-dev libxxhash-dev libdlpack-dev catch2 cmake ninja-build g++ clang-format python3-matplotlib)
missing=()
for p in "${tiledsl_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "tiledsl: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq >/dev/null
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
