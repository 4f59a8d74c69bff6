#!/usr/bin/env bash
# An ssh stand-in for MPI launchers (see netns.sh): "ns-launch.sh [-x]
# ADDRESS COMMAND..." runs COMMAND in the network namespace whose eth0
# has ADDRESS.
set -euo pipefail
while [ "${1:-}" != "" ] && [ "${1#-}" != "$1" ]; do shift; done
addr=$1
shift
for ns in $(ip netns list | awk '{print $1}'); do
  if ip -n "$ns" -4 -o addr show dev eth0 2>/dev/null | grep -q " $addr/"; then
    # The launcher passes one command line, quoted as for a remote shell.
    exec ip netns exec "$ns" sh -c "$*"
  fi
done
echo "ns-launch: no namespace has address $addr" >&2
exit 255
