#!/bin/bash
# relay.sh - what the node relay (dlrt-relay) costs the step's services.
#
#   bench/relay.sh            (bench/run-all.sh runs it; no cluster needed)
#
# Since the relay, a task reaches its step's service through its node's
# dlrt-relay (peer-uid check at accept, the service's challenge answered with
# the step secret, then bytes forwarded). Before, it connected to the service
# directly. Both paths here, on 127.0.0.1, in one run:
#   - Horovod's rendezvous under 48 concurrent ranks: bench_hvd_driver, 48
#     clients x ROUNDS x (PUT, GET, DELETE), one TCP connection per request as
#     Horovod's client does, so the relay's per-connection cost (accept, the
#     kernel's sock_diag lookup, connect, challenge) is paid every request;
#   - the Caffe2 store under redis-benchmark (SET, GET, SETNX, 50 clients,
#     kept connections): the relay's forwarding cost.
# direct = the service without a secret (the old path); relay = dlrt-relay in
# front of the service started with --secret-fd (the path the tasks take now).
# Environment: CLIENTS (48), ROUNDS (100), N (redis-benchmark requests, 100000), C (50);
# RELAY_BEFORE=PATH: also measure that dlrt-relay binary (an earlier build) in the
# same run, as the row "before", so two builds compare under the same load.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
CLIENTS=${CLIENTS:-48}
ROUNDS=${ROUNDS:-100}
N=${N:-100000}
C=${C:-50}
DRIVER=$BUILD/libexec/dlrt-hvd-driver
STORE=$BUILD/libexec/dlrt-store
RELAY=$BUILD/libexec/dlrt-relay
BENCH=$BUILD/bench/bench_hvd_driver
for f in "$DRIVER" "$STORE" "$RELAY" "$BENCH"; do
	[ -x "$f" ] || { echo "relay.sh: $f is missing: run make BUILD=$BUILD first" >&2; exit 2; }
done
command -v redis-benchmark >/dev/null ||
	{ echo "relay.sh: redis-benchmark is missing: apt-get install redis-tools" >&2; exit 2; }

T=$(mktemp -d /tmp/dlrt-bench-relay.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
# The bench's own step secret; the services read it from a pipe as in a step.
HEX=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
secret_bytes() { printf "$(sed 's/../\\x&/g' <<<"$HEX")"; }

# wait_port FILE: the port a program wrote to its ready fd.
wait_port() {
	for _ in $(seq 100); do
		grep -qx '[0-9][0-9]*' "$1" 2>/dev/null && { cat "$1"; return 0; }
		sleep 0.05
	done
	echo "relay.sh: no port in $1" >&2
	return 1
}

# start NAME PROGRAM ARGS...: a service, port 0, its port later from wait_port
# (run in this shell, so cleanup knows its pid and the driver's parent is us).
start() {
	local name=$1
	shift
	"$@" --bind 127.0.0.1 --port 0 --ready-fd 9 9>"$T/$name.ready" </dev/null >/dev/null \
		2>"$T/$name.log" &
	PIDS+=("$!")
}

# relay_to PORT NAME [BINARY]: a relay in front of 127.0.0.1:PORT
relay_to() {
	"${3:-$RELAY}" --ready-fd 9 --config-fd 6 9>"$T/$2.ready" \
		6< <(echo "127.0.0.1:$1#$HEX") </dev/null >/dev/null 2>"$T/$2.log" &
	PIDS+=("$!")
}

start hvd "$DRIVER" --max-conns 4096 --parent-pid $$
start hvds "$DRIVER" --max-conns 4096 --parent-pid $$ --secret-fd 5 5< <(secret_bytes)
start store "$STORE" --parent-pid $$
start stores "$STORE" --parent-pid $$ --secret-fd 5 5< <(secret_bytes)
d_direct=$(wait_port "$T/hvd.ready") && d_auth=$(wait_port "$T/hvds.ready") &&
	s_direct=$(wait_port "$T/store.ready") && s_auth=$(wait_port "$T/stores.ready") || exit 1
relay_to "$d_auth" rhvd
relay_to "$s_auth" rstore
d_relay=$(wait_port "$T/rhvd.ready") && s_relay=$(wait_port "$T/rstore.ready") || exit 1
paths="direct relay"
if [ -n "${RELAY_BEFORE:-}" ]; then
	relay_to "$d_auth" bhvd "$RELAY_BEFORE"
	relay_to "$s_auth" bstore "$RELAY_BEFORE"
	d_before=$(wait_port "$T/bhvd.ready") && s_before=$(wait_port "$T/bstore.ready") || exit 1
	paths="direct before relay"
fi

echo "# The node relay's cost, $(date -u '+%Y-%m-%d %H:%M UTC'), 127.0.0.1"
echo
echo "## Horovod rendezvous, $CLIENTS concurrent ranks, $ROUNDS x (PUT, GET, DELETE) each, a connection per request"
echo
echo "| path | req/s | p50 ms | p99 ms | errors |"
echo "|---|---|---|---|---|"
rc=0
for p in $paths; do
	case $p in
	direct) port=$d_direct ;;
	before) port=$d_before ;;
	relay) port=$d_relay ;;
	esac
	"$BENCH" --port "$port" --clients "$CLIENTS" --rounds "$ROUNDS" --label "$p" >"$T/h.$p" || rc=1
	awk '{ printf "| %s | %s | %s | %s | %s |\n", $1, $5, $6, $7, $9 }' "$T/h.$p"
	# bench_hvd_driver: label clients requests seconds req/s p50 p99 max errors
done
for p in $paths; do
	[ "$p" = direct ] && continue
	awk -v p="$p" 'NR == FNR { d = $5; next }
		{ printf "ratio %s / direct (req/s): %.2f\n", p, (d > 0 ? $5 / d : 0) }' \
		"$T/h.direct" "$T/h.$p"
done
echo
echo "## Caffe2 store, redis-benchmark, $C clients, $N requests"
echo
if [ -n "${RELAY_BEFORE:-}" ]; then
	echo "| command | direct op/s | before op/s | relay op/s | before / direct | relay / direct |"
	echo "|---|---|---|---|---|---|"
else
	echo "| command | direct op/s | relay op/s | ratio |"
	echo "|---|---|---|---|"
fi
ops() {
	timeout 300 redis-benchmark -h 127.0.0.1 -p "$1" -c "$C" -n "$N" -q "${@:2}" 2>&1 |
		tr '\r' '\n' | grep 'requests per second' | tail -1 |
		sed 's/.*: \([0-9.]*\) requests per second.*/\1/'
}
for t in SET GET SETNX; do
	case $t in
	SET | GET) args=(-t "${t,,}") ;;
	SETNX) args=(-r 100000000 setnx 'key:__rand_int__' v) ;;
	esac
	a=$(ops "$s_direct" "${args[@]}")
	b=$(ops "$s_relay" "${args[@]}")
	[ -n "$a" ] && [ -n "$b" ] || rc=1
	if [ -n "${RELAY_BEFORE:-}" ]; then
		o=$(ops "$s_before" "${args[@]}")
		[ -n "$o" ] || rc=1
		awk -v t="$t" -v a="${a:-0}" -v o="${o:-0}" -v b="${b:-0}" 'BEGIN {
			printf "| %s | %s | %s | %s | %.2f | %.2f |\n", t, a, o, b,
				(a > 0 ? o / a : 0), (a > 0 ? b / a : 0) }'
		continue
	fi
	awk -v t="$t" -v a="${a:-0}" -v b="${b:-0}" \
		'BEGIN { printf "| %s | %s | %s | %.2f |\n", t, a, b, (a > 0 ? b / a : 0) }'
done
echo
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
