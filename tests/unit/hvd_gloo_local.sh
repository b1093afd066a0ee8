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

# The lifetime pipe: the driver exits when our write end (fd 7) closes.
mkfifo "$tmp/life" "$tmp/ready"
"$DRIVER" --bind 127.0.0.1 --port 0 --hosts "$HOSTS" --idle-timeout-ms 3000 \
	--lifetime-fd 8 --ready-fd 9 ${HVD_VERBOSE:+--verbose} \
	8<"$tmp/life" 9>"$tmp/ready" 2>"$tmp/driver.log" &
drv=$!
exec 7>"$tmp/life"
# Readiness handshake: one line with the port, bounded.
read -r -t 10 port <"$tmp/ready" || { echo "hvd_gloo_local: driver not ready in 10 s" >&2; cat "$tmp/driver.log" >&2; exit 1; }
echo "# driver pid $drv listening on 127.0.0.1:$port, hosts $HOSTS"

# get_host_assignments, as the plugin computes it.
IFS=, read -ra entries <<<"$HOSTS"
names=(); slots=()
for e in "${entries[@]}"; do names+=("${e%%:*}"); slots+=("${e##*:}"); done
size=0; for s in "${slots[@]}"; do size=$((size + s)); done
pids=(); rank=0
for h in "${!names[@]}"; do
	for ((lr = 0; lr < slots[h]; lr++)); do
		cr=0; cs=0
		for o in "${!names[@]}"; do
			if ((slots[o] > lr)); then
				((o < h)) && cr=$((cr + 1))
				cs=$((cs + 1))
			fi
		done
		env HOROVOD_HOSTNAME="${names[h]}" HOROVOD_RANK=$rank HOROVOD_SIZE=$size \
		    HOROVOD_LOCAL_RANK=$lr HOROVOD_LOCAL_SIZE="${slots[h]}" \
		    HOROVOD_CROSS_RANK=$cr HOROVOD_CROSS_SIZE=$cs \
		    HOROVOD_GLOO_RENDEZVOUS_ADDR=127.0.0.1 HOROVOD_GLOO_RENDEZVOUS_PORT="$port" \
		    HOROVOD_CONTROLLER=gloo HOROVOD_CPU_OPERATIONS=gloo HOROVOD_GLOO_IFACE=lo \
		    HOROVOD_GLOO_TIMEOUT_SECONDS=30 \
		    timeout "$TIMEOUT" "$PROG" >"$tmp/rank$rank.out" 2>&1 &
		pids+=($!)
		rank=$((rank + 1))
	done
done
fail=0
for r in "${!pids[@]}"; do
	if ! wait "${pids[r]}"; then fail=1; fi
	cat "$tmp/rank$r.out"
	grep -qx "rank $r of $size: allreduce ok sum=$((size * (size - 1) / 2))" "$tmp/rank$r.out" || fail=1
done

# The step ends: close the lifetime pipe, the driver must exit within ~1 s.
exec 7>&-
for _ in $(seq 50); do kill -0 "$drv" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$drv" 2>/dev/null; then
	echo "hvd_gloo_local: driver still running after its lifetime fd closed" >&2
	kill "$drv"; fail=1
else
	wait "$drv" || { echo "hvd_gloo_local: driver exited with $?" >&2; fail=1; }
fi
[ -n "${HVD_VERBOSE:-}" ] && cat "$tmp/driver.log" >&2
if ((fail)); then
	echo "hvd_gloo_local: FAILED (driver log follows)" >&2
	cat "$tmp/driver.log" >&2
	exit 1
fi
echo "hvd_gloo_local: $size ranks on ${#names[@]} host(s): ok"
