#!/usr/bin/env bash
# Installs the Debian packages hetsage needs to build, run and test, skipping
# those already present. Safe to run again; needs root or sudo.
set -euo pipefail

pkgs=(
  build-essential pkg-config meson ninja-build python3
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  libclblast-dev libhwloc-dev libopenblas-dev libinih-dev zlib1g-dev
  libcriterion-dev valgrind clang libclang-rt-dev
  oclgrind mesa-opencl-icd
  mpich libmpich-dev iproute2
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}" >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
