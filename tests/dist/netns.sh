#!/usr/bin/env bash
# Several "hosts" on one machine: network namespaces joined by veth pairs
# to a bridge in a switch namespace, so that MPI traffic between them
# crosses a real network stack (TCP over veth), optionally through links
# limited by tc. Nothing touches the machine's own namespace.
#
#   netns.sh up TAG N [RATE]          create hosts TAG-h0 .. TAG-h(N-1)
#                                     (10.77.X.1 .. N, X from TAG), links
#                                     limited to RATE each way (tc syntax:
#                                     1gbit, 100mbit; a token bucket: tbf)
#   netns.sh hosts TAG                 print the hosts' addresses, comma-separated
#   netns.sh launcher                  the path of the launcher for mpiexec
#   netns.sh exec TAG I CMD...         run CMD in host I
#   netns.sh mpirun TAG N -- CMD...     run N ranks of CMD over the hosts
#                                     with $HS_MPIEXEC ($HS_MPI_IMPL: mpich
#                                     or openmpi), MPI over TCP only
#   netns.sh down TAG                  remove everything TAG made
#
# mpiexec runs in host 0 and starts the other ranks through the launcher
# (an ssh stand-in that enters the host's namespace by its address):
#   netns.sh exec T 0 mpiexec.mpich -launcher rsh -launcher-exec \
#       "$(netns.sh launcher)" -localhost 10.77.X.1 -hosts $(netns.sh hosts T) ...
# MPICH's UCX must use TCP between namespaces (they share the machine, and
# UCX would otherwise pick shared memory): UCX_TLS=tcp,self. Open MPI:
#   --mca plm_rsh_agent LAUNCHER --mca btl tcp,self.
# Needs root (CAP_NET_ADMIN).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

subnet() { # a /24 per tag, from a hash of the tag
  local h
  h=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
  echo $(( h % 200 + 20 ))
}

cmd=${1:-}
case "$cmd" in
  up)
    tag=$2 n=$3 rate=${4:-}
    # A failed set-up leaves nothing behind.
    trap '"$0" down "$tag"' ERR
    x=$(subnet "$tag")
    sw="$tag-sw"
    ip netns add "$sw"
    ip -n "$sw" link add br0 type bridge
    ip -n "$sw" link set br0 up
    ip -n "$sw" link set lo up
    for ((i = 0; i < n; i++)); do
      ns="$tag-h$i"
      ip netns add "$ns"
      ip -n "$ns" link set lo up
      # veth pair: eth0 in the host, p$i on the switch's bridge.
      ip link add "hsv$$-$i" type veth peer name "hsp$$-$i"
      ip link set "hsv$$-$i" netns "$ns"
      ip link set "hsp$$-$i" netns "$sw"
      ip -n "$ns" link set "hsv$$-$i" name eth0
      ip -n "$sw" link set "hsp$$-$i" name "p$i"
      ip -n "$sw" link set "p$i" master br0
      ip -n "$sw" link set "p$i" up
      ip -n "$ns" addr add "10.77.$x.$((i + 1))/24" dev eth0
      ip -n "$ns" link set eth0 up
      if [ -n "$rate" ]; then
        # Both directions: the host's egress and the switch port's egress
        # (towards the host). A token bucket (tbf: netem is not in every
        # kernel) with a burst of 1 ms at the rate (at least 32 KiB, so that
        # a full-size segment always fits) and 20 ms of queue.
        r=${rate%bit}
        bits=$(numfmt --from=si "${r^^}")
        burst=$(( bits / 8 / 1000 ))
        [ "$burst" -ge 32768 ] || burst=32768
        for side in "$ns eth0" "$sw p$i"; do
          set -- $side
          ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate" burst "$burst" \
            latency 20ms
        done
      fi
    done
    ;;
  hosts)
    tag=$2
    x=$(subnet "$tag")
    n=$(ip netns list | grep -c "^$tag-h")
    list=""
    for ((i = 0; i < n; i++)); do list="$list${list:+,}10.77.$x.$((i + 1))"; done
    echo "$list"
    ;;
  addr)
    tag=$2 i=$3
    echo "10.77.$(subnet "$tag").$((i + 1))"
    ;;
  launcher)
    echo "$here/ns-launch.sh"
    ;;
  exec)
    tag=$2 i=$3
    shift 3
    exec ip netns exec "$tag-h$i" "$@"
    ;;
  mpirun)
    tag=$2 n=$3
    shift 3
    [ "${1:-}" = "--" ] && shift
    exe=${HS_MPIEXEC:-mpiexec.mpich}
    hosts=$("$0" hosts "$tag")
    if [ "${HS_MPI_IMPL:-mpich}" = openmpi ]; then
      # Open MPI forwards only the variables it is told to.
      fwd=()
      for v in $(env | grep -oE '^(HETSAGE_|HS_|POCL_|OCL_|LD_LIBRARY_PATH|PATH)[A-Za-z0-9_]*=' | tr -d =); do
        fwd+=(-x "$v")
      done
      exec ip netns exec "$tag-h0" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        OMPI_MCA_rmaps_base_oversubscribe=1 "$exe" --mca plm_rsh_agent "$here/ns-launch.sh" \
        --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
        --mca pml ob1 "${fwd[@]}" --host "$hosts" -n "$n" "$@"
    fi
    exec ip netns exec "$tag-h0" env UCX_TLS=tcp,self "$exe" -launcher rsh \
      -launcher-exec "$here/ns-launch.sh" -localhost "$("$0" addr "$tag" 0)" -hosts "$hosts" \
      -n "$n" "$@"
    ;;
  rx)
    # Bytes each host received on its link, one line per host.
    tag=$2
    n=$(ip netns list | grep -c "^$tag-h")
    for ((i = 0; i < n; i++)); do
      ip -n "$tag-h$i" -s link show eth0 | awk '/RX:/ { getline; print $1 }'
    done
    ;;
  down)
    tag=$2
    for ns in $(ip netns list | awk '{print $1}' | grep "^$tag-" || true); do
      # Processes left in a host (a failed run) go with it.
      for pid in $(ip netns pids "$ns" 2>/dev/null || true); do kill -9 "$pid" 2>/dev/null || true; done
      ip netns del "$ns"
    done
    ;;
  *)
    sed -n '2,25p' "$0" >&2
    exit 2
    ;;
esac
