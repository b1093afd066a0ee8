#!/bin/bash
# bench_resp_store.sh - the Caffe2 helper store (dlrt-store) against a real
# redis-server, both driven by Debian's redis-benchmark.
#
#   bench/bench_resp_store.sh [PATH/TO/dlrt-store]
#
# Both servers listen on 127.0.0.1 (random ports), redis-server without any
# persistence (--save '' --appendonly no). For each of SET, GET and SETNX
# (the write-once call Caffe2 and gloo make), redis-benchmark runs 50 clients
# and N requests (default 100000) against one server, then the other, and the
# table shows requests per second and the ratio ours/redis from that run.
# The servers' CPU time per request (utime+stime from /proc, in microseconds)
# is shown too: on a shared or loaded machine the op/s of one run are noisy,
# the CPU a server spends per request much less so.
# Environment: N=requests, C=clients, PIPELINE=n (redis-benchmark -P, default 1),
# ROUNDS=r (run each pair r times and keep each server's best). Which server
# goes first alternates, and with 2+ CPUs both servers are pinned to the last
# CPU and redis-benchmark to the others (taskset), so both get the same deal.
set -u

STORE=${1:-${DLRT_STORE:-build/libexec/dlrt-store}}
N=${N:-100000}
C=${C:-50}
PIPELINE=${PIPELINE:-1}
ROUNDS=${ROUNDS:-1}
T=$(mktemp -d /tmp/dlrt-bench-resp.XXXXXX)
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

for tool in redis-benchmark redis-server redis-cli; do
	if ! command -v $tool >/dev/null; then
		echo "bench_resp_store: $tool is missing: apt-get install redis-server redis-tools" >&2
		exit 1
	fi
done
if [ ! -x "$STORE" ]; then
	echo "bench_resp_store: $STORE is not built: run make BUILD=... first, or pass its path" >&2
	exit 1
fi

NCPU=$(nproc)
SRV_PIN=()
CLI_PIN=()
if [ "$NCPU" -ge 2 ] && command -v taskset >/dev/null; then
	SRV_PIN=(taskset -c $((NCPU - 1)))
	CLI_PIN=(taskset -c 0-$((NCPU - 2)))
fi

# dlrt-store, started the way the plugin starts it: port 0, port read from --ready-fd.
: >"$T/ready"
"${SRV_PIN[@]}" "$STORE" --bind 127.0.0.1 --port 0 --ready-fd 3 3>"$T/ready" </dev/null >/dev/null 2>"$T/store.log" &
OURS_PID=$!
PIDS+=("$OURS_PID")
OURS=
for _ in $(seq 50); do
	if grep -qx '[0-9][0-9]*' "$T/ready"; then OURS=$(cat "$T/ready"); break; fi
	sleep 0.1
done
[ -n "$OURS" ] || { echo "bench_resp_store: dlrt-store did not start: $(cat "$T/store.log")" >&2; exit 1; }

REDIS=
for _ in 1 2 3 4 5; do
	REDIS=$((20000 + RANDOM % 30000))
	"${SRV_PIN[@]}" redis-server --bind 127.0.0.1 --port "$REDIS" --save '' --appendonly no --daemonize no \
		--logfile "$T/redis.log" </dev/null >/dev/null 2>&1 &
	REDIS_PID=$!
	PIDS+=("$REDIS_PID")
	for _ in $(seq 30); do
		timeout 1 redis-cli -p "$REDIS" ping 2>/dev/null | grep -q PONG && break 2
		sleep 0.1
	done
	REDIS=
done
[ -n "$REDIS" ] || { echo "bench_resp_store: redis-server did not start: $(cat "$T/redis.log")" >&2; exit 1; }

TICK=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run PORT PID ARGS... : prints "REQUESTS_PER_S CPU_US_PER_REQUEST".
run() {
	local port=$1 pid=$2 c0 c1 r
	shift 2
	c0=$(cpu_ticks "$pid")
	r=$(timeout 300 "${CLI_PIN[@]}" redis-benchmark -h 127.0.0.1 -p "$port" -c "$C" -n "$N" -P "$PIPELINE" -q "$@" 2>&1 |
		tr '\r' '\n' | grep 'requests per second' | tail -1 |
		sed 's/.*: \([0-9.]*\) requests per second.*/\1/')
	c1=$(cpu_ticks "$pid")
	awk -v r="${r:-0}" -v t=$((c1 - c0)) -v hz="$TICK" -v n="$N" \
		'BEGIN { printf "%s %.2f\n", r, t * 1e6 / hz / n }'
}

# best OLD NEW: keeps the higher op/s (and its CPU figure).
best() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); print (a == "" || y[1] > x[1]) ? b : a }'; }

printf '# redis-benchmark, %d clients, %d requests, pipeline %d, 127.0.0.1\n' "$C" "$N" "$PIPELINE"
printf '# %s; %s; %s\n' "$(redis-server --version | cut -d' ' -f1-3)" \
	"$(lscpu | sed -n 's/^Model name: *//p') x $NCPU CPUs" \
	"${SRV_PIN[*]:+servers on CPU $((NCPU - 1)), redis-benchmark on CPU 0-$((NCPU - 2))}"
printf '| %-7s | %15s | %12s | %6s | %16s | %11s |\n' command "dlrt-store op/s" "redis op/s" ratio \
	"dlrt-store us/op" "redis us/op"
printf '|---------|-----------------|--------------|--------|------------------|-------------|\n'
worst=
for t in SET GET SETNX; do
	case $t in
	SET | GET) args=(-t "${t,,}") ;;
	# -r: a fresh key per request, as ranks publishing their addresses do.
	SETNX) args=(-r 100000000 setnx 'key:__rand_int__' v) ;;
	esac
	o=
	r=
	for _ in $(seq "$ROUNDS"); do
		flip=$((1 - ${flip:-1}))
		if [ $flip = 0 ]; then
			o=$(best "$o" "$(run "$OURS" "$OURS_PID" "${args[@]}")")
			r=$(best "$r" "$(run "$REDIS" "$REDIS_PID" "${args[@]}")")
		else
			r=$(best "$r" "$(run "$REDIS" "$REDIS_PID" "${args[@]}")")
			o=$(best "$o" "$(run "$OURS" "$OURS_PID" "${args[@]}")")
		fi
	done
	ours=${o%% *}
	redis=${r%% *}
	ratio=$(awk -v a="${ours:-0}" -v b="${redis:-0}" 'BEGIN { printf "%.2f", (b > 0) ? (a / b) : 0 }')
	printf '| %-7s | %15s | %12s | %6s | %16s | %11s |\n' "$t" "${ours:-?}" "${redis:-?}" "$ratio" \
		"${o##* }" "${r##* }"
	if [ -z "$worst" ] || awk -v r="$ratio" -v w="$worst" 'BEGIN { exit !(r < w) }'; then worst=$ratio; fi
done
echo "# lowest op/s ratio: $worst (>= 1.00: at least as fast as redis-server); us/op = server CPU per request"
