#!/usr/bin/env bash
# The full test run (README's second command, and CI):
#  1. every test in a normal build;
#  2. the host suite (tests that compile no OpenCL kernel) under valgrind —
#     PoCL's LLVM JIT makes kernel builds take minutes under valgrind, so the
#     OpenCL suite is left to the sanitizer build;
#  3. every test in an ASan+UBSan build (a program that failed only by
#     LeakSanitizer's tracer crashing at its exit runs once more);
#  4. each fuzz harness (tests/fuzz/) for HS_FUZZ_SECONDS (15) seconds;
#  5. the portability steps (tools/ci-portability.sh): the kernel suites and
#     bring-up on Mesa's rusticl, every kernel under oclgrind's race and API
#     checks, Cora with the sampler on oclgrind and the trainer on PoCL.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

tools/build.sh "$build"
rm -f "$build"/meson-logs/testlog*.json "$build-asan"/meson-logs/testlog*.json \
  "$build"/meson-logs/oclgrind-*.log "$build"/meson-logs/bringup-*.json
echo "== tests (normal build)"
meson test -C "$build" --print-errorlogs

echo "== host suite under valgrind"
meson test -C "$build" --setup valgrind --suite host --print-errorlogs --logbase testlog-valgrind

echo "== tests under ASan+UBSan"
tools/build.sh "$build-asan" -Db_sanitize=address,undefined -Db_lundef=false
# Mesa's clover ICD (mesa.icd) finds no device on a machine without a GPU;
# the ICD loader then unloads it, and the 128 bytes its start-up leaves are
# reported from an unloaded module that no suppression can name. This run
# registers every other ICD of the machine (PoCL, rusticl, ...); tests that
# make their own ICD folder still set OCL_ICD_VENDORS themselves.
icds=$(mktemp -d)
trap 'rm -rf "$icds"' EXIT
for f in "${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}"/*.icd; do
  if [ -e "$f" ] && [ "$(basename "$f")" != mesa.icd ]; then cp "$f" "$icds/"; fi
done
# hwloc's PCI plugin leaks inside libpciaccess (see tests/meson.build).
asan_test() {
  HWLOC_COMPONENTS=-pci OCL_ICD_VENDORS="$icds" \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    meson test -C "$build-asan" --print-errorlogs "$@"
}
# LeakSanitizer's tracer (the thread that stops the others for the leak
# check at exit) sometimes crashes itself ("Tracer caught signal 11"), a
# fault of the sanitizer runtime seen after every case of a program had
# passed (bring-up, about one full run in three). A program that failed
# only so, with no case failed, runs once more, under the same checks;
# its first record leaves testlog.json for testlog-asan-tracer.txt, so
# the summary counts the second. Any other failure fails the step.
if ! asan_test; then
  retry=$(python3 - "$build-asan/meson-logs" <<'PY'
import json, sys
d = sys.argv[1]
recs = [json.loads(l) for l in open(d + '/testlog.json')]
bad = [r for r in recs if r['result'] not in ('OK', 'SKIP', 'EXPECTEDFAIL')]
def tracer_only(r):
    out, err = r.get('stdout') or '', r.get('stderr') or ''
    return ('Tracer caught signal' in err and 'LeakSanitizer has encountered a fatal error' in err
            and not any(l.startswith('not ok') for l in out.splitlines())
            and any(l.startswith('ok') for l in out.splitlines()))
if not bad or not all(tracer_only(r) for r in bad):
    sys.exit(0)  # nothing to retry: the step fails
with open(d + '/testlog-asan-tracer.txt', 'w') as f:
    for r in bad:
        f.write(json.dumps(r) + '\n')
with open(d + '/testlog.json', 'w') as f:
    for r in recs:
        if r not in bad:
            f.write(json.dumps(r) + '\n')
print(' '.join(r['name'].split(' / ')[-1] for r in bad))
PY
)
  if [ -z "$retry" ]; then exit 1; fi
  echo "== ASan: LeakSanitizer's tracer crashed at the exit of: $retry (every case passed); once more"
  asan_test --logbase testlog-asan-retry $retry
fi

echo "== fuzz: each libFuzzer harness for a bounded time (tests/fuzz/run.sh)"
tests/fuzz/run.sh "${HS_FUZZ_SECONDS:-15}"

echo "== portability: rusticl and oclgrind (tools/ci-portability.sh)"
tools/ci-portability.sh "$build"

echo "== summary"
python3 - "$build" "$build-asan" <<'PY'
# Counts Criterion test cases (from each program's TAP output) over every run.
import glob, json, re, sys
passed = failed = skipped = 0
for d in sys.argv[1:]:
    for log in glob.glob(d + '/meson-logs/testlog*.json'):
        for line in open(log):
            rec = json.loads(line)
            cases = 0
            for out in (rec.get('stdout') or '').splitlines():
                if re.match(r'^not ok\b', out):
                    failed += 1; cases += 1
                elif re.match(r'^ok\b', out):
                    cases += 1
                    if '# SKIP' in out: skipped += 1
                    else: passed += 1
            if rec['result'] not in ('OK', 'SKIP', 'EXPECTEDFAIL') and \
                    not any(l.startswith('not ok') for l in (rec.get('stdout') or '').splitlines()):
                failed += 1  # crashed, or failed outside any case (valgrind)
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
PY
