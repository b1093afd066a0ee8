#!/bin/bash
# hvd_elastic_local.sh - elastic Horovod on loopback against dlrt-hvd-driver --elastic.
#
# Starts the driver with a host plan and --elastic (no Slurm: a slot that
# never asks for its rank fails at the barrier's timeout), one
# gloo_hvd_elastic per slot paused at step 2, kills every worker of host
# LOSE, lets the others go on, and checks that they re-rendezvoused in a
# second round of the plan without LOSE and finished with right sums.
#
#   tests/unit/hvd_elastic_local.sh BUILD HOSTS LOSE
#   tests/unit/hvd_elastic_local.sh build "hA:3,hB:1,hC:2" hB
#
# Exit 0 when every survivor printed "elastic ok ... rounds=2" with the
# world size of the plan without LOSE.
set -euo pipefail

BUILD=${1:-${DLRT_BUILD:-build}}
HOSTS=${2:-hA:2,hB:1,hC:1}
LOSE=${3:-hB}
DRIVER=$BUILD/libexec/dlrt-hvd-driver
PROG=$BUILD/testprogs/gloo_hvd_elastic
TIMEOUT=${HVD_TIMEOUT:-120}

for f in "$DRIVER" "$PROG"; do
	[ -x "$f" ] || { echo "hvd_elastic_local: $f is missing: run make BUILD=$BUILD first" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'exec 7>&- 2>/dev/null || true; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/hvd_local_lib.sh"
mkdir "$tmp/flag"
hvd_driver_start hvd_elastic_local --hosts "$HOSTS" --elastic --elastic-timeout-ms 2000 --verbose

hvd_slots "$HOSTS" >"$tmp/slots"
pids=(); lose=(); keep=(); rank=0; left=0
while read -r h lr cr cs; do
	env HOROVOD_HOSTNAME="${names[h]}" HOROVOD_RANK=$rank HOROVOD_SIZE=$size \
	    HOROVOD_LOCAL_RANK=$lr HOROVOD_LOCAL_SIZE="${slots[h]}" \
	    HOROVOD_CROSS_RANK=$cr HOROVOD_CROSS_SIZE=$cs HOROVOD_ELASTIC=1 \
	    HOROVOD_GLOO_RENDEZVOUS_ADDR=127.0.0.1 HOROVOD_GLOO_RENDEZVOUS_PORT="$port" \
	    HOROVOD_GLOO_IFACE=lo HOROVOD_GLOO_TIMEOUT_SECONDS=30 \
	    timeout "$TIMEOUT" "$PROG" --steps 5 --pause-at 2 --flag "$tmp/flag" \
	    >"$tmp/rank$rank.out" 2>&1 &
	pids+=($!)
	if [ "${names[h]}" = "$LOSE" ]; then lose+=($rank); else keep+=($rank); left=$((left + 1)); fi
	rank=$((rank + 1))
done <"$tmp/slots"
# Every worker at step 2, then LOSE's workers are killed and the others go on.
for _ in $(seq 1200); do
	[ "$(find "$tmp/flag" -name 'ready.*' | wc -l)" -eq "$size" ] && break
	sleep 0.1
done
# The programs' own pids (timeout runs each as its child).
for r in "${lose[@]}"; do
	read -r p _ <"$tmp/flag/ready.$r"
	kill -KILL "$p" 2>/dev/null || true
	wait "${pids[r]}" 2>/dev/null || true
done
touch "$tmp/flag/go"
fail=0
for r in "${keep[@]}"; do
	wait "${pids[r]}" || fail=1
	cat "$tmp/rank$r.out"
	grep -Eq "^rank [0-9]+ of $left: elastic ok steps=5 rounds=2$" "$tmp/rank$r.out" || fail=1
done
# The step ends: the driver must exit 0 once its lifetime pipe closes.
hvd_driver_end hvd_elastic_local
grep -E "elastic round|failed" "$tmp/driver.log" | grep -v " -> " >&2 || true
if ((fail)); then
	echo "hvd_elastic_local: FAILED (driver log follows)" >&2
	cat "$tmp/driver.log" >&2
	exit 1
fi
echo "hvd_elastic_local: $size ranks on ${#names[@]} hosts, $LOSE lost, $left went on: ok"
