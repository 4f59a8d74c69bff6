#!/usr/bin/env bash
# Build the libFuzzer harnesses with clang (ASan + UBSan) and run each for a
# bounded time on its committed seed corpus.
# usage: tests/fuzz/run.sh [SECONDS_PER_HARNESS] [HARNESS...]
# New inputs go to build-fuzz/corpus-<harness>/, never into the committed
# corpus; a crash, leak, timeout or out-of-memory leaves its input in
# build-fuzz/ and fails the script.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-20}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] &&
  harnesses=(npy dataset sparse linqs musae edgelist ogb gzip checkpoint board benchjson cli ctr)
out=build-fuzz
cc=${CLANG:-clang}

mkdir -p "$out"
if ! command -v "$cc" >/dev/null ||
   ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' |
     "$cc" -x c -fsanitize=fuzzer - -o "$out/probe" 2>/dev/null; then
  echo "fuzz: skipped: clang with the libFuzzer runtime is missing (apt-get install clang libclang-rt-dev)"
  exit 0
fi

printf '#define HS_VERSION "fuzz"\n#define HS_HAVE_CLBLAST 0\n#define HS_HAVE_CBLAS 0\n' > "$out/hs_config.h"
# hetsage/version.h, which meson generates from its template.
mkdir -p "$out/hetsage"
sed 's/@MAJOR@/0/; s/@MINOR@/0/; s/@PATCH@/0/; s/@VERSION@/fuzz/' \
  runtime/include/hetsage/version.h.in > "$out/hetsage/version.h"
flags=(-std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=address,undefined
       -fno-sanitize-recover=undefined -Iruntime -Iruntime/include -Iruntime/harness -Idevices -Itools -I"$out")
# The sources with parsers (and what they call), compiled once, instrumented
# for coverage, into an archive each harness links what it needs from.
# bundled.c imports a shipped dataset into the cache: no parser of its own.
srcs=(devices/*.c
      runtime/data/*.c runtime/nn/*.c runtime/board/profile.c
      runtime/board/values.c runtime/util/*.c runtime/bench/results.c
      runtime/harness/harness.c runtime/core/afile.c
      runtime/cache/sparse_tier.c runtime/sample/gather.c runtime/ctr/criteo.c
      tools/cli.c tools/cli_data.c)
rm -f "$out"/lib-*.o "$out"/libhs-fuzz.a
# The board profile parser checks program names against the registry,
# which carries the kernel sources, embedded as the library embeds them.
python3 cl_kernels/embed.py "$out/hs_kernels.c" cl_kernels/*.h cl_kernels/*.cl
srcs+=("$out/hs_kernels.c")
pids=()
for src in "${srcs[@]}"; do
  [ "$(basename "$src")" = bundled.c ] && continue
  obj="$out/lib-$(echo "${src%.c}" | tr / -).o"
  "$cc" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
ar rcs "$out/libhs-fuzz.a" "$out"/lib-*.o
for h in "${harnesses[@]}"; do
  "$cc" "${flags[@]}" -fsanitize=fuzzer "tests/fuzz/fuzz_$h.c" "$out/libhs-fuzz.a" \
    -linih -lOpenCL -lz -lm -lpthread -o "$out/fuzz_$h"
done

for h in "${harnesses[@]}"; do
  mkdir -p "$out/corpus-$h"
  echo "== fuzz $h (${secs} s)"
  rc=0
  (cd "$out" && ./"fuzz_$h" -max_total_time="$secs" -max_len=8192 -rss_limit_mb=2048 \
     -timeout=10 -print_final_stats=1 "corpus-$h" "../tests/fuzz/corpus/$h") \
     > "$out/log-$h.txt" 2>&1 || rc=$?
  grep -E '^stat::(number_of_executed_units|new_units_added)' "$out/log-$h.txt" || true
  if [ "$rc" -ne 0 ]; then
    grep -E 'ERROR|runtime error|SUMMARY|Test unit written|#[0-9]+ ' "$out/log-$h.txt" | head -30
    echo "fuzz: $h failed (input saved as $out/{crash,oom,timeout,leak}-*; log $out/log-$h.txt)"
    exit 1
  fi
done
echo "fuzz: all harnesses clean"
