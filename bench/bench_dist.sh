#!/usr/bin/env bash
# Distributed training over hosts in network namespaces with limited links
# (tests/dist/netns.sh): for each link rate, the link and the bare
# exchanges (bench_dist), then real training runs of every mode with and
# without 1-bit compression, each rank's per-step compute time,
# communication time and bytes from --stats-json. Prints one JSON object;
# bench/dist_model.py turns it into the alpha-beta scaling table.
#
# usage: bench/bench_dist.sh [BUILD_DIR] [options]
#   --hosts N          namespace hosts, one rank each (default 4)
#   --rates R,R        link rates (default 1gbit,100mbit)
#   --dataset DIR      what the runs train on (default: Facebook, converted
#                      from ../shared/datasets/musae_facebook into a scratch
#                      folder); --batch B (256), --epochs E (2: the figures
#                      are the last epoch's, the first warms up)
#   --modes LIST       comma-separated "sync[+1bit]" (default every mode,
#                      both ways: allreduce,allreduce+1bit,ps,ps+1bit,
#                      local,local+1bit)
# Needs root (namespaces), MPICH or Open MPI (the build's), and takes about
# 15 minutes on 2 cores with the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then build=$1; shift; fi
hosts=4 rates=1gbit,100mbit dataset="" batch=256 epochs=2
modes=allreduce,allreduce+1bit,ps,ps+1bit,local,local+1bit
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) hosts=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --dataset) dataset=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "bench_dist.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
hs="$root/$build/tools/hetsage"
bd="$root/$build/bench/bench_dist"
ns="$root/tests/dist/netns.sh"
impl=$(sed -n "s/^ *MPI (distributed training) *: *//p" "$build/meson-logs/meson-log.txt" | tail -1)
case "$impl" in
  openmpi) export HS_MPI_IMPL=openmpi HS_MPIEXEC=${HS_MPIEXEC:-$(command -v mpiexec.openmpi)} ;;
  *) export HS_MPI_IMPL=mpich HS_MPIEXEC=${HS_MPIEXEC:-$(command -v mpiexec.mpich || command -v mpiexec)} ;;
esac
work=$(mktemp -d)
tag="hb$$"
cleanup() { "$ns" down "$tag" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
if [ -z "$dataset" ]; then
  dataset="$work/facebook"
  "$hs" convert --from musae --undirected --dedup "$root/../shared/datasets/musae_facebook" \
    "$dataset" >&2
fi
# The kernel cache is shared by every rank and kept between runs.
export HETSAGE_CACHE_DIR=${HETSAGE_CACHE_DIR:-$root/$build/tests/kernel-cache}

echo "{\"bench\": \"dist_namespaces\", \"hosts\": $hosts, \"mpi\": \"$HS_MPI_IMPL\","
echo " \"dataset\": \"$dataset\", \"batch\": $batch, \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\","
echo " \"rates\": ["
first_rate=1
for rate in ${rates//,/ }; do
  "$ns" up "$tag" "$hosts" "$rate"
  [ $first_rate -eq 1 ] || echo ","
  first_rate=0
  echo "{\"rate\": \"$rate\", \"probe\": "
  "$ns" mpirun "$tag" "$hosts" -- "$bd" --steps 30 | tr -d '\n'
  echo ", \"runs\": ["
  first=1
  for m in ${modes//,/ }; do
    sync=${m%+1bit}
    args=(--sync "$sync")
    [ "$m" != "$sync" ] && args+=(--compress 1bit)
    stats="$work/stats-$rate-$m.json"
    (cd "$work" && "$ns" mpirun "$tag" "$hosts" -- "$hs" train --distributed -q --dataset "$dataset" \
      --batch "$batch" --epochs "$epochs" --eval sampled --feature-pages file \
      --stats-json "$stats" "${args[@]}" >"$work/run.log" 2>&1) || {
      echo "bench_dist.sh: $rate $m failed:" >&2
      tail -5 "$work/run.log" >&2
      continue
    }
    [ $first -eq 1 ] || echo ","
    first=0
    echo "{\"mode\": \"$m\", \"last_epoch\": $(tail -1 "$stats")}"
  done
  echo "]}"
  "$ns" down "$tag"
done
echo "]}"
