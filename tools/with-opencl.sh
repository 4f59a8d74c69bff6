#!/usr/bin/env bash
# Runs a command with a chosen set of OpenCL implementations visible, each
# set up to show its device:
#   pocl      PoCL's CPU device (Debian: pocl-opencl-icd)
#   rusticl   Mesa's rusticl on llvmpipe (mesa-opencl-icd; it lists
#             llvmpipe only with RUSTICL_ENABLE=llvmpipe)
#   oclgrind  the oclgrind simulator, a GPU-typed device (oclgrind; Debian
#             registers no ICD file for it, so one is made here). Its 21.10
#             release lacks the funnel shift its optimiser makes of some
#             kernels, so programs are compiled at -O0
#             (OCLGRIND_BUILD_OPTIONS).
# The ICD loader (ocl-icd) then reads only a private vendors folder
# ($OCL_ICD_VENDORS), so the machine's registration is left alone.
#
# usage: tools/with-opencl.sh [--only LIST] [--checks | --check LOG] COMMAND...
#   --only LIST   comma-separated implementations (default: all installed)
#   --checks      oclgrind checks every kernel for data races and API misuse
#                 (--data-races --check-api) and reports on stderr
#   --check LOG   the same, reports written to LOG instead (empty: nothing
#                 found); for one process only: each process that loads
#                 oclgrind starts LOG afresh
# Exit status: the command's; 3 when an implementation asked for is not
# installed.
set -euo pipefail

only="pocl,rusticl,oclgrind"
explicit=0
check=""
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only="$2"; explicit=1; shift 2 ;;
    --check) check="$2"; shift 2 ;;
    --checks) check="-"; shift ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "with-opencl: no command given (--help)" >&2; exit 2; }

lib_of() {
  case "$1" in
    oclgrind)
      if [ -r /etc/OpenCL/vendors/oclgrind.icd ]; then head -n1 /etc/OpenCL/vendors/oclgrind.icd
      elif [ -r /usr/lib/oclgrind/liboclgrind-rt-icd.so ]; then echo /usr/lib/oclgrind/liboclgrind-rt-icd.so
      fi ;;
    pocl|rusticl) [ -r "/etc/OpenCL/vendors/$1.icd" ] && head -n1 "/etc/OpenCL/vendors/$1.icd" ;;
    *) echo "with-opencl: unknown implementation '$1' (pocl, rusticl, oclgrind)" >&2; exit 2 ;;
  esac
  return 0
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/hs-vendors-XXXXXX")
trap 'rm -rf "$dir"' EXIT
IFS=, read -r -a impls <<< "$only"
for impl in "${impls[@]}"; do
  lib=$(lib_of "$impl")
  if [ -z "$lib" ]; then
    if [ $explicit -eq 1 ]; then
      echo "with-opencl: $impl is not installed (tools/install-deps.sh installs it)" >&2
      exit 3
    fi
    continue
  fi
  echo "$lib" > "$dir/$impl.icd"
done

export OCL_ICD_VENDORS="$dir"
export RUSTICL_ENABLE="${RUSTICL_ENABLE:-llvmpipe}"
export OCLGRIND_BUILD_OPTIONS="${OCLGRIND_BUILD_OPTIONS:--O0}"
if [ -n "$check" ]; then
  export OCLGRIND_DATA_RACES=1 OCLGRIND_CHECK_API=1
  if [ "$check" != "-" ]; then
    : > "$check"
    export OCLGRIND_LOG="$check"
  fi
fi
set +e
"$@"
rc=$?
exit $rc
