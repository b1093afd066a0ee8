#!/bin/bash
# hvd-driver.sh - dlrt-hvd-driver requests/s against the Python baseline.
#
#   bench/hvd-driver.sh [BUILD] [CLIENTS] [ROUNDS]     default: build 48 100
#
# Both servers listen on 127.0.0.1 and get the same load from
# bench_hvd_driver: CLIENTS concurrent clients, each ROUNDS x (PUT, GET,
# DELETE), one TCP connection per request (Horovod's client does the same).
# The baseline is Python's threading http.server with Horovod's rendezvous
# semantics (bench/hvd_baseline_server.py): Horovod's own server is built the
# same way but is not packaged in Debian; a second baseline row raises its
# listen backlog from 5 to 1024 to separate the backlog's effect from Python's
# speed. Prints a table, the ratios and the machine. No cluster needed.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${1:-${DLRT_BUILD:-build}}
CLIENTS=${2:-48}
ROUNDS=${3:-100}
DRIVER=$BUILD/libexec/dlrt-hvd-driver
BENCH=$BUILD/bench/bench_hvd_driver
for f in "$DRIVER" "$BENCH"; do
	[ -x "$f" ] || { echo "hvd-driver.sh: $f is missing: run make BUILD=$BUILD first" >&2; exit 2; }
done

tmp=$(mktemp -d)
py=""
cleanup() {
	exec 7>&- 2>/dev/null || true
	for p in $py; do kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

mkfifo "$tmp/life" "$tmp/ready"
"$DRIVER" --bind 127.0.0.1 --port 0 --lifetime-fd 8 --ready-fd 9 --max-conns 4096 \
	8<"$tmp/life" 9>"$tmp/ready" &
drv=$!
exec 7>"$tmp/life"
read -r -t 10 dport <"$tmp/ready"

# start_py NAME BACKLOG: the baseline server, its port in $tmp/NAME.port
start_py() {
	/usr/bin/python3 bench/hvd_baseline_server.py --lifetime 600 --backlog "$2" \
		>"$tmp/$1.port" 2>"$tmp/$1.err" &
	py="$py $!"
	for _ in $(seq 100); do [ -s "$tmp/$1.port" ] && break; sleep 0.05; done
	cat "$tmp/$1.port"
}
pport=$(start_py py 5)
bport=$(start_py pyb 1024)

printf '%-22s %7s %9s %8s %10s %8s %8s %8s %6s\n' server clients requests seconds 'req/s' \
	'p50 ms' 'p99 ms' 'max ms' errors
"$BENCH" --port "$dport" --clients "$CLIENTS" --rounds "$ROUNDS" --label dlrt-hvd-driver | tee "$tmp/d"
"$BENCH" --port "$pport" --clients "$CLIENTS" --rounds "$ROUNDS" --label python-http.server | tee "$tmp/p" || true
"$BENCH" --port "$bport" --clients "$CLIENTS" --rounds "$ROUNDS" --label python-backlog-1024 | tee "$tmp/b" || true
d=$(awk '{print $5}' "$tmp/d"); p=$(awk '{print $5}' "$tmp/p"); b=$(awk '{print $5}' "$tmp/b")
awk -v d="$d" -v p="$p" -v b="$b" 'BEGIN {
	printf "ratio dlrt-hvd-driver / python-http.server (Horovod-like, backlog 5): %.1fx\n", d / p
	printf "ratio dlrt-hvd-driver / python-http.server with backlog 1024:         %.1fx\n", d / b }'
n=$(grep -c '^Exception' "$tmp/py.err" || true)
[ "$n" -gt 0 ] && echo "python-http.server: $n requests failed server-side (client gone; see backlog note in docs/horovod.md)"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(uname -r), Python $(/usr/bin/python3 -c 'import platform; print(platform.python_version())')"

exec 7>&-
wait "$drv"
