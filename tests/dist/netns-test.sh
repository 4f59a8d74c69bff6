#!/usr/bin/env bash
# Three hosts in network namespaces (netns.sh): the MPI checks with every
# byte over TCP between the namespaces, and a check that the bytes did
# cross each host's link. Exit 77 (skip) where namespaces cannot be made.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ns="$here/netns.sh"
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
  echo "1..0 # SKIP needs root and iproute2 for network namespaces"
  exit 0
fi
tag="hs$$"
cleanup() { "$ns" down "$tag" >/dev/null 2>&1 || true; }
trap cleanup EXIT
if ! "$ns" up "$tag" 3 1gbit 2>/tmp/hs-netns-$$.err; then
  echo "1..0 # SKIP cannot create network namespaces: $(head -1 /tmp/hs-netns-$$.err)"
  rm -f /tmp/hs-netns-$$.err
  exit 0
fi
rm -f /tmp/hs-netns-$$.err
before=($("$ns" rx "$tag"))
# dist_check prints TAP (1..4 and its results); two checks of this script
# follow.
out=$(timeout 240 "$ns" mpirun "$tag" 3 -- "$HS_DIST_CHECK" p2p collectives allreduce modes_exact)
rc=$?
after=($("$ns" rx "$tag"))
echo "$out" | sed 's/^1\.\.4$/1..6/'
ok=1
for i in 0 1 2; do
  got=$(( after[i] - before[i] ))
  # The exact modes alone move about 2 MB through every host.
  if [ "$got" -lt 1000000 ]; then ok=0; echo "# host $i received only $got bytes on its link"; fi
done
if [ $ok -eq 1 ] && [ $rc -eq 0 ]; then
  echo "ok 5 - every host received its traffic over its veth link (${after[*]} bytes)"
else
  echo "not ok 5 - traffic over the links (mpiexec status $rc)"
fi
# Training across the three hosts gives the bits of the same run on one
# machine: the reductions do not depend on the network or its timing.
work=$(mktemp -d)
args=(train --distributed -q --eval sampled --batch 256 --epochs 2 --compress 1bit
      --compress-min 64 --compress-warmup 2)
(cd "$work" && timeout 300 "$ns" mpirun "$tag" 3 -- "$HS_HETSAGE" "${args[@]}" \
   --checkpoint hosts >"$work/hosts.log" 2>&1)
rc2=$?
(cd "$work" && timeout 300 "$HS_MPIEXEC" -n 3 "$HS_HETSAGE" "${args[@]}" --checkpoint one \
   >"$work/one.log" 2>&1)
rc3=$?
if [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] && cmp -s "$work/hosts/last.ckpt" "$work/one/last.ckpt"; then
  echo "ok 6 - training over three namespace hosts equals the same run on one host"
  ok2=1
else
  echo "not ok 6 - training over three hosts (status $rc2, one host $rc3)"
  sed 's/^/# /' "$work/hosts.log" | tail -20
  ok2=0
fi
rm -rf "$work"
[ $rc -eq 0 ] && [ $ok -eq 1 ] && [ $ok2 -eq 1 ]
