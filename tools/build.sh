#!/usr/bin/env bash
# Configure (first time) or reconfigure a build directory, then build it.
# usage: tools/build.sh [BUILD_DIR] [meson options...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
# Warnings are errors here (development and CI), not in a plain meson build.
if [ -f "$dir/meson-private/coredata.dat" ]; then
  meson setup --reconfigure -Dwerror=true "$dir" "$@" >/dev/null
else
  meson setup -Dwerror=true "$dir" "$@" >/dev/null
fi
ninja -C "$dir" >/dev/null
