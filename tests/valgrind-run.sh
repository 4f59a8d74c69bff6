#!/usr/bin/env bash
# Runs a Criterion test program under valgrind. Criterion runs each test in a
# child process whose valgrind exit status it does not look at, so every
# process writes its own log and this wrapper fails the run if any log has
# an error (invalid access, uninitialised use, definite leak).
set -u
supp="$(dirname "$0")/valgrind.supp"
logdir=$(mktemp -d)
valgrind --trace-children=yes --leak-check=full --errors-for-leak-kinds=definite \
  --track-origins=yes --suppressions="$supp" --log-file="$logdir/vg.%p.log" "$@"
rc=$?
bad=0
for f in "$logdir"/vg.*.log; do
  [ -e "$f" ] || continue
  if grep -qE 'ERROR SUMMARY: [1-9]' "$f"; then
    bad=1
    cat "$f" >&2
  fi
done
rm -rf "$logdir"
[ $bad -eq 0 ] || { echo "valgrind reported errors" >&2; exit 1; }
exit $rc
