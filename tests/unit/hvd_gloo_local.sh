#!/bin/bash
# hvd_gloo_local.sh - a real gloo job on loopback against dlrt-hvd-driver.
#
# Starts the driver on 127.0.0.1 with a host plan, waits for its readiness
# line (the port), then starts one gloo_hvd_allreduce per slot with the
# HOROVOD_* variables Horovod's get_host_assignments gives it, exactly as the
# SPANK plugin does on a cluster. Every "host" is simulated on loopback: the
# HOROVOD_HOSTNAME values differ, the data plane uses lo.
#
#   tests/unit/hvd_gloo_local.sh [BUILD] [HOSTS]     default: build localhost:3
#   tests/unit/hvd_gloo_local.sh build-hvd "n1:3,n2:1,n3:2"
#
# Exit 0 when every rank printed "allreduce ok" with the right sum and the
# driver exited once its lifetime pipe closed.
set -euo pipefail

BUILD=${1:-${DLRT_BUILD:-build}}
HOSTS=${2:-localhost:3}
DRIVER=$BUILD/libexec/dlrt-hvd-driver
PROG=$BUILD/testprogs/gloo_hvd_allreduce
TIMEOUT=${HVD_TIMEOUT:-60}

for f in "$DRIVER" "$PROG"; do
	[ -x "$f" ] || { echo "hvd_gloo_local: $f is missing: run make BUILD=$BUILD first" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'exec 7>&- 2>/dev/null || true; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/hvd_local_lib.sh"

hvd_driver_start hvd_gloo_local --hosts "$HOSTS" --idle-timeout-ms 3000 ${HVD_VERBOSE:+--verbose}
echo "# driver pid $drv listening on 127.0.0.1:$port, hosts $HOSTS"

hvd_slots "$HOSTS" >"$tmp/slots"
pids=(); rank=0
while read -r h lr cr cs; do
	env HOROVOD_HOSTNAME="${names[h]}" HOROVOD_RANK=$rank HOROVOD_SIZE=$size \
	    HOROVOD_LOCAL_RANK=$lr HOROVOD_LOCAL_SIZE="${slots[h]}" \
	    HOROVOD_CROSS_RANK=$cr HOROVOD_CROSS_SIZE=$cs \
	    HOROVOD_GLOO_RENDEZVOUS_ADDR=127.0.0.1 HOROVOD_GLOO_RENDEZVOUS_PORT="$port" \
	    HOROVOD_CONTROLLER=gloo HOROVOD_CPU_OPERATIONS=gloo HOROVOD_GLOO_IFACE=lo \
	    HOROVOD_GLOO_TIMEOUT_SECONDS=30 \
	    timeout "$TIMEOUT" "$PROG" >"$tmp/rank$rank.out" 2>&1 &
	pids+=($!)
	rank=$((rank + 1))
done <"$tmp/slots"
fail=0
for r in "${!pids[@]}"; do
	if ! wait "${pids[r]}"; then fail=1; fi
	cat "$tmp/rank$r.out"
	grep -qx "rank $r of $size: allreduce ok sum=$((size * (size - 1) / 2))" "$tmp/rank$r.out" || fail=1
done

# The step ends: the driver must exit once its lifetime pipe closes.
hvd_driver_end hvd_gloo_local
[ -n "${HVD_VERBOSE:-}" ] && cat "$tmp/driver.log" >&2
if ((fail)); then
	echo "hvd_gloo_local: FAILED (driver log follows)" >&2
	cat "$tmp/driver.log" >&2
	exit 1
fi
echo "hvd_gloo_local: $size ranks on ${#names[@]} host(s): ok"
