#!/usr/bin/env bash
# The installed library as an embedder meets it: install the build into a
# scratch root (meson install --destdir), check that libhetsage.so exports
# exactly the functions the installed headers declare (HS_API), then build
# examples/embed.c with `pkg-config --cflags --libs hetsage` against that
# tree and run it against the installed library.
# usage: tests/install_check.sh BUILD_DIR SOURCE_ROOT
set -euo pipefail
build=$1
src=$2
root=$(mktemp -d "${TMPDIR:-/tmp}/hs-install-XXXXXX")
trap 'rm -rf "$root"' EXIT

meson install -C "$build" --destdir "$root" --no-rebuild --quiet >/dev/null
opt() {
  meson introspect "$build" --buildoptions |
    python3 -c "import json,sys; print(next(o['value'] for o in json.load(sys.stdin) if o['name'] == '$1'))"
}
prefix=$(opt prefix)
libdir=$(opt libdir)
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
lib=$root$libdir/libhetsage.so
inc=$root$prefix/$(opt includedir)
[ -e "$lib" ] || { echo "not installed: $lib"; exit 1; }

# Exported functions against the HS_API declarations of the headers.
nm -D --defined-only "$lib" | awk '$2 ~ /^[TW]$/ {print $3}' | sort -u > "$root/exported"
cat "$inc/hetsage.h" "$inc"/hetsage/*.h |
  python3 -c '
import re, sys
text = sys.stdin.read()
for m in re.finditer(r"HS_API\s+[^;{(]*?\b(hs_\w+)\s*\(", text):
    print(m.group(1))' | sort -u > "$root/declared"
if ! diff -u "$root/declared" "$root/exported" > "$root/diff"; then
  echo "libhetsage.so exports differ from the installed headers' HS_API functions:"
  echo "(-: declared, not exported; +: exported, not declared)"
  cat "$root/diff"
  exit 1
fi
echo "exports: $(wc -l < "$root/exported") functions, exactly the headers' HS_API ones"
for h in bringup.h bench.h harness.h; do
  [ ! -e "$inc/hetsage/$h" ] || { echo "the harness header $h is installed"; exit 1; }
done

# An embedder's build: pkg-config against the installed tree.
export PKG_CONFIG_PATH=$root$libdir/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$root
flags=$(pkg-config --cflags --libs hetsage)
cc -std=c11 -Wall -Wextra -Werror "$src/examples/embed.c" $flags -o "$root/embed"
echo "built examples/embed.c with: $flags"
# (grep reads all of nm's output: with -q, nm's SIGPIPE would fail the
# pipeline under pipefail.)
if nm -D "$lib" | grep __asan_init >/dev/null; then
  echo "sanitizer build: not run (the ASan runtime must load first)"
  exit 0
fi
# Against the installed library, every symbol bound at load: a dataset that
# does not exist is reported after the runtime opened.
set +e
out=$(LD_LIBRARY_PATH=$root$libdir LD_BIND_NOW=1 "$root/embed" /nonexistent/dataset 2>&1)
rc=$?
set -e
deps=$(LD_LIBRARY_PATH=$root$libdir ldd "$root/embed")
case $deps in
  *"=> $root$libdir/libhetsage.so"*) ;;
  *) echo "embed does not load the installed library:"; echo "$deps"; exit 1 ;;
esac
case $out in
  *"/nonexistent/dataset"*) echo "embed ran against the installed library (exit $rc): $out" ;;
  *"no OpenCL"*|*"no suitable device"*) echo "embed ran, no OpenCL device: $out" ;;
  *) echo "embed: unexpected output (exit $rc): $out"; exit 1 ;;
esac
[ "$rc" -ne 0 ] || { echo "embed succeeded on a dataset that does not exist"; exit 1; }
