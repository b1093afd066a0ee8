#!/bin/bash
# bench_resp_store.sh - the Caffe2 helper store (dlrt-store) against a real
# redis-server, both driven by Debian's redis-benchmark, in A B A B pairs.
#
#   bench/bench_resp_store.sh [PATH/TO/dlrt-store]
#
# For each of SET, GET and SETNX (the write-once call Caffe2 and gloo make,
# a fresh key per request), PAIRS times (default 5): one redis-benchmark run
# (C clients, N requests) against dlrt-store, one against redis-server, the
# order flipped from one pair to the next. The ratio dlrt/redis of each pair
# is taken, and the table shows per command the median of those ratios and
# their range. On a shared machine a single run says little; two runs right
# after each other see about the same load, so their ratio does, and the
# median of the pairs drops the outliers.
#
# Three comparisons in the same run:
#   direct   dlrt-store vs redis-server, both on 127.0.0.1, no secret;
#   relay    each behind its own dlrt-relay (the path a task takes): the
#            store started with --secret-fd, the relay answering its
#            challenge; redis-server has no challenge, so its relay runs
#            with --no-challenge (the same admission and forwarding);
#   mixed    (informative) dlrt-store through the relay vs redis-server direct.
# Servers and relays are pinned to the last CPU, redis-benchmark to the
# others (taskset, with 2+ CPUs), so every run gets the same deal. redis-server
# runs without persistence (--save '' --appendonly no). Each server's CPU time
# per request (utime+stime from /proc) is shown for the direct comparison.
# Environment: N (100000), C (50), PAIRS (5), PIPELINE (redis-benchmark -P, 1),
# RELAY=0 (direct only), BUILD (build: where dlrt-relay is), VERBOSE=1 (every
# run's op/s). Nothing here passes or fails on a number: it reports.
set -u
cd "$(dirname "$0")/.." || exit 1

BUILD=${BUILD:-build}
STORE=${1:-${DLRT_STORE:-$BUILD/libexec/dlrt-store}}
RELAY_BIN=${RELAY_BIN:-$BUILD/libexec/dlrt-relay}
N=${N:-100000}
C=${C:-50}
PAIRS=${PAIRS:-5}
PIPELINE=${PIPELINE:-1}
RELAY=${RELAY:-1}
VERBOSE=${VERBOSE:-0}
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
	echo "bench_resp_store: $STORE is not built: run make first, or pass its path" >&2
	exit 1
fi
if [ "$RELAY" = 1 ] && [ ! -x "$RELAY_BIN" ]; then
	echo "bench_resp_store: $RELAY_BIN is not built: run make first, or RELAY=0" >&2
	exit 1
fi

NCPU=$(nproc)
SRV_PIN=()
CLI_PIN=()
if [ "$NCPU" -ge 2 ] && command -v taskset >/dev/null; then
	SRV_PIN=(taskset -c $((NCPU - 1)))
	CLI_PIN=(taskset -c 0-$((NCPU - 2)))
fi

# The bench's own step secret; the store reads it from a pipe as in a step.
HEX=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
secret_bytes() { printf "$(sed 's/../\\x&/g' <<<"$HEX")"; }

# wait_port NAME: the port a program wrote to its ready fd.
wait_port() {
	for _ in $(seq 100); do
		if grep -qx '[0-9][0-9]*' "$T/$1.ready" 2>/dev/null; then
			cat "$T/$1.ready"
			return 0
		fi
		sleep 0.05
	done
	echo "bench_resp_store: $1 did not start: $(cat "$T/$1.log" 2>/dev/null)" >&2
	return 1
}

# store NAME ARGS...: a dlrt-store, started the way the plugin starts it
# (port 0, the port read from --ready-fd). Its memory bound is raised to 8 GiB
# (the plugin's default is 256 MiB) because redis-server runs without one and
# one store takes every SETNX run's fresh keys: a long pipelined run would
# otherwise measure -OOM answers.
store() {
	local name=$1
	shift
	"${SRV_PIN[@]}" "$STORE" --bind 127.0.0.1 --port 0 --ready-fd 9 --max-memory 8589934592 \
		"$@" 9>"$T/$name.ready" \
		</dev/null >/dev/null 2>"$T/$name.log" &
	PIDS+=("$!")
	eval "${name}_pid=$!"
}

# redis NAME: a redis-server on a free port (it has no port 0 to report).
redis() {
	local port
	for _ in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 30000))
		"${SRV_PIN[@]}" redis-server --bind 127.0.0.1 --port "$port" --save '' \
			--appendonly no --daemonize no --logfile "$T/$1.log" </dev/null >/dev/null 2>&1 &
		PIDS+=("$!")
		eval "${1}_pid=$!"
		for _ in $(seq 30); do
			if timeout 1 redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
				echo "$port" >"$T/$1.ready"
				return 0
			fi
			sleep 0.1
		done
	done
	echo "bench_resp_store: redis-server did not start: $(cat "$T/$1.log")" >&2
	return 1
}

# relay NAME PORT [--no-challenge]: a dlrt-relay in front of 127.0.0.1:PORT.
relay() {
	"${SRV_PIN[@]}" "$RELAY_BIN" --ready-fd 9 --config-fd 6 "${@:3}" 9>"$T/$1.ready" \
		6< <(echo "127.0.0.1:$2#$HEX") </dev/null >/dev/null 2>"$T/$1.log" &
	PIDS+=("$!")
}

store sd
redis rd || exit 1
P_sd=$(wait_port sd) && P_rd=$(wait_port rd) || exit 1
paths="sd rd"
if [ "$RELAY" = 1 ]; then
	store ss --secret-fd 5 5< <(secret_bytes)
	redis rr || exit 1
	P_ss=$(wait_port ss) && P_rr=$(wait_port rr) || exit 1
	relay xs "$P_ss"
	relay xr "$P_rr" --no-challenge
	P_xs=$(wait_port xs) && P_xr=$(wait_port xr) || exit 1
	paths="sd rd xs xr"
fi

TICK=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run PORT ARGS...: prints the requests per second of one redis-benchmark run.
run() {
	local port=$1
	shift
	timeout 300 "${CLI_PIN[@]}" redis-benchmark -h 127.0.0.1 -p "$port" -c "$C" -n "$N" \
		-P "$PIPELINE" -q "$@" 2>&1 | tr '\r' '\n' | grep 'requests per second' | tail -1 |
		sed 's/.*: \([0-9.]*\) requests per second.*/\1/'
}

# One line per run in $T/runs: command pair path op/s cpu-us-per-request.
: >"$T/runs"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u '+%Y-%m-%d %H:%M UTC')
for t in SET GET SETNX; do
	case $t in
	SET | GET) args=(-t "${t,,}") ;;
	# -r: a fresh key per request, as ranks publishing their addresses do.
	SETNX) args=(-r 100000000 setnx 'key:__rand_int__' v) ;;
	esac
	for i in $(seq "$PAIRS"); do
		# A B, then B A: neither side always runs on the warmer machine.
		if [ $((i % 2)) = 1 ]; then order=$paths; else order=$(echo "$paths" | tr ' ' '\n' | tac | tr '\n' ' '); fi
		for p in $order; do
			port_var=P_$p
			pid_var=${p}_pid
			pid=${!pid_var:-}
			c0=0
			[ -n "$pid" ] && c0=$(cpu_ticks "$pid")
			r=$(run "${!port_var}" "${args[@]}")
			c1=0
			[ -n "$pid" ] && c1=$(cpu_ticks "$pid")
			us=$(awk -v t=$((c1 - c0)) -v hz="$TICK" -v n="$N" 'BEGIN { printf "%.2f", t * 1e6 / hz / n }')
			echo "$t $i $p ${r:-0} $us" >>"$T/runs"
			[ "$VERBOSE" = 1 ] && echo "# $t pair $i $p ${r:-0} op/s $us us/op" >&2
		done
	done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# table A B LABEL: per command, the median and range of the per-pair ratios A/B.
table() {
	awk -v a="$1" -v b="$2" -v label="$3" -v us="$4" '
	function median(arr, n,   i, j, x) {
		for (i = 2; i <= n; i++) {
			x = arr[i]
			for (j = i - 1; j >= 1 && arr[j] > x; j--) arr[j + 1] = arr[j]
			arr[j + 1] = x
		}
		return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
	}
	{ ops[$1, $2, $3] = $4; cpu[$1, $2, $3] = $5; if (!($1 in seen)) { seen[$1] = 1; cmds[++nc] = $1 } if ($2 > np) np = $2 }
	END {
		for (c = 1; c <= nc; c++) {
			t = cmds[c]; n = 0; lo = ""; hi = ""
			for (i = 1; i <= np; i++) {
				if (!(ops[t, i, b] > 0)) continue
				r = ops[t, i, a] / ops[t, i, b]
				ra[++n] = r; oa[n] = ops[t, i, a]; ob[n] = ops[t, i, b]
				ca[n] = cpu[t, i, a]; cb[n] = cpu[t, i, b]
				if (lo == "" || r < lo) lo = r
				if (hi == "" || r > hi) hi = r
			}
			if (!n) { printf "| %s | %s | - | - | - | - |\n", label, t; continue }
			m = median(ra, n); ma = median(oa, n); mb = median(ob, n)
			if (us) {
				mca = median(ca, n); mcb = median(cb, n)
				printf "| %s | %s | %.0f | %.0f | **%.2f** | %.2f-%.2f | %.2f | %.2f |\n",
					label, t, ma, mb, m, lo, hi, mca, mcb
			} else {
				printf "| %s | %s | %.0f | %.0f | **%.2f** | %.2f-%.2f | | |\n",
					label, t, ma, mb, m, lo, hi
			}
		}
	}' "$T/runs"
}

printf '# redis-benchmark, %d clients, %d requests, pipeline %d, 127.0.0.1, %d A B pairs, %s\n' \
	"$C" "$N" "$PIPELINE" "$PAIRS" "$start"
printf '# %s; %s x %d CPUs; %s; load average %s before, %s after\n' \
	"$(redis-server --version | cut -d' ' -f1-3)" "$(lscpu | sed -n 's/^Model name: *//p')" \
	"$NCPU" "${SRV_PIN[*]:+servers and relays on CPU $((NCPU - 1)), redis-benchmark on CPU 0-$((NCPU - 2))}" \
	"$load0" "$load1"
echo "| path | command | dlrt op/s (median) | redis op/s (median) | median ratio | ratio range | dlrt us/op | redis us/op |"
echo "|---|---|---|---|---|---|---|---|"
table sd rd direct 1
if [ "$RELAY" = 1 ]; then
	table xs xr relay 0
	table xs rd "mixed (relay vs direct)" 0
fi
echo "# ratio = dlrt/redis op/s of the runs of one pair; median and range over the pairs."
echo "# us/op = the server's CPU time per request (median)."
