#!/bin/bash
# list-cost.sh - what the intrusive list (common/dlist.h) costs its two hot
# users, in instructions per request counted by callgrind, for two builds.
#
#   BEFORE=DIR bench/list-cost.sh     (DIR: an earlier build folder; the
#                                      current one is $BUILD, default build)
#
#   ttl    dlrt-store, redis-benchmark's SET key EX 100 on 1000 keys: every
#          request unlinks the key from the list of keys with a time to live
#          and appends it again;
#   auth   dlrt-hvd-driver started with a secret behind a dlrt-relay (the
#          path a Horovod rank takes), one connection per request: each is
#          appended to and unlinked from the list of unproven connections.
# Instructions, not seconds: the count repeats run to run whatever else the
# machine does, so one run per build is a fair pair even on a loaded machine.
set -u
BUILD=${BUILD:-build}
BEFORE=${BEFORE:?set BEFORE to an earlier build folder}
N=${N:-20000}
for f in valgrind redis-benchmark; do
	command -v $f >/dev/null || { echo "list-cost.sh: $f is missing" >&2; exit 2; }
done
T=$(mktemp -d /tmp/dlrt-bench-list.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
HEX=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
secret_bytes() { printf "$(sed 's/../\\x&/g' <<<"$HEX")"; }

wait_port() {
	for _ in $(seq 600); do
		grep -qx '[0-9][0-9]*' "$1" 2>/dev/null && { cat "$1"; return 0; }
		sleep 0.1
	done
	echo "list-cost.sh: no port in $1" >&2
	return 1
}

# instructions NAME: the callgrind total of $T/NAME.cg once its process ended
instructions() {
	for _ in $(seq 300); do
		grep -q '^summary:' "$T/$1.cg" 2>/dev/null && break
		sleep 0.1
	done
	awk '/^summary:/ { print $2 }' "$T/$1.cg"
}

# measure DIR: prints "ttl_per_request auth_per_request"
measure() {
	local dir=$1 p pid ttl auth relay_pid
	valgrind -q --tool=callgrind --callgrind-out-file="$T/ttl.cg" \
		"$dir/libexec/dlrt-store" --bind 127.0.0.1 --port 0 --ready-fd 9 \
		9>"$T/ttl.ready" </dev/null >/dev/null 2>"$T/ttl.log" &
	pid=$!
	p=$(wait_port "$T/ttl.ready") || return 1
	redis-benchmark -p "$p" -n "$N" -c 4 -r 1000 -q SET 'k:__rand_int__' v EX 100 >/dev/null
	kill -TERM "$pid"; wait "$pid" 2>/dev/null
	ttl=$(instructions ttl)

	valgrind -q --tool=callgrind --callgrind-out-file="$T/auth.cg" \
		"$dir/libexec/dlrt-hvd-driver" --bind 127.0.0.1 --port 0 --ready-fd 9 \
		--max-conns 4096 --secret-fd 5 5< <(secret_bytes) 9>"$T/auth.ready" \
		</dev/null >/dev/null 2>"$T/auth.log" &
	pid=$!
	p=$(wait_port "$T/auth.ready") || return 1
	"$BUILD/libexec/dlrt-relay" --ready-fd 9 --config-fd 6 9>"$T/relay.ready" \
		6< <(echo "127.0.0.1:$p#$HEX") </dev/null >/dev/null 2>"$T/relay.log" &
	relay_pid=$!
	p=$(wait_port "$T/relay.ready") || return 1
	"$BUILD/bench/bench_hvd_driver" --port "$p" --clients 4 --rounds $((N / 12)) \
		--label auth >"$T/auth.out"
	kill -TERM "$relay_pid" "$pid"; wait "$pid" "$relay_pid" 2>/dev/null
	auth=$(instructions auth)
	# bench_hvd_driver: label clients requests ...
	echo "$((ttl / N)) $((auth / $(awk '{ print $3 }' "$T/auth.out")))"
}

b=$(measure "$BEFORE") && a=$(measure "$BUILD") || exit 1
echo "# Instructions per request (callgrind), $(date -u '+%Y-%m-%d %H:%M UTC'), $N requests"
echo
echo "| path | before | after | ratio after / before |"
echo "|---|---|---|---|"
set -- $b $a
awk -v b="$1" -v a="$3" 'BEGIN { printf "| ttl (SET EX on dlrt-store) | %d | %d | %.3f |\n", b, a, a / b }'
awk -v b="$2" -v a="$4" 'BEGIN { printf "| auth (hvd driver behind the relay) | %d | %d | %.3f |\n", b, a, a / b }'
