#!/bin/bash
# resp_redis_cli.sh - the Caffe2 helper store (dlrt-store) against real clients.
#
#   tests/unit/resp_redis_cli.sh [PATH/TO/dlrt-store [PATH/TO/gloo_redis_allreduce]]
#
# Starts dlrt-store on 127.0.0.1 (a free port, read from --ready-fd) and checks,
# with redis-cli from Debian's redis-tools:
#   - every supported command, with --no-raw so reply TYPES are compared too;
#     when redis-server is installed, the same command list runs against a real
#     redis-server (127.0.0.1, random port, no persistence) and every reply must
#     be identical - that is what "Redis's replies and error texts" means;
#   - binary-safe values (redis-cli -x with NUL bytes and CR LF);
#   - pipelining (redis-cli --pipe, and three requests in one write);
#   - a client that stops mid-command stalls nobody and is closed after
#     --idle-timeout-ms; a huge bulk length gets Redis's error and a close;
#   - the lifetime options (--lifetime-fd EOF, --parent-pid gone);
#   - if given, 3 gloo processes rendezvousing through gloo's RedisStore.
# TAP output ("ok N - ...", then "1..N"), so prove can run it.
set -u

STORE=${1:-${DLRT_STORE:-build/libexec/dlrt-store}}
GLOO_PROG=${2:-${DLRT_GLOO_PROG:-}}
T=$(mktemp -d /tmp/dlrt-resp-test.XXXXXX)
n=0
failed=0
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
check() { # check DESC GOT WANT
	if [ "$2" == "$3" ]; then ok "$1"; else notok "$1" "got:  $(printf %q "$2")" "want: $(printf %q "$3")"; fi
}

if ! command -v redis-cli >/dev/null; then
	echo "1..0 # SKIP redis-cli not installed (apt-get install redis-tools)"
	exit 0
fi
if [ ! -x "$STORE" ]; then
	echo "Bail out! $STORE is not built: run make BUILD=... first"
	exit 1
fi

# The readiness handshake the plugin uses: --ready-fd gets "PORT\n" once the
# store listens. Wait for it, bounded (5 s).
: >"$T/ready"
"$STORE" --port 0 --ready-fd 3 --idle-timeout-ms 1000 --max-value 1048576 --verbose \
	3>"$T/ready" 2>"$T/store.log" </dev/null >/dev/null &
PIDS+=("$!")
P=
for _ in $(seq 50); do
	if grep -qx '[0-9][0-9]*' "$T/ready" 2>/dev/null; then P=$(cat "$T/ready"); break; fi
	sleep 0.1
done
if [ -z "$P" ]; then
	echo "Bail out! dlrt-store did not report a port within 5 s: $(cat "$T/store.log")"
	exit 1
fi
ok "dlrt-store is listening on 127.0.0.1:$P and reported its port on --ready-fd"

cli() { timeout 5 redis-cli --no-raw -h 127.0.0.1 -p "$P" "$@" 2>&1; }

# A real redis-server to compare with (optional).
RP=
if command -v redis-server >/dev/null; then
	for _ in 1 2 3 4 5; do
		RP=$((20000 + RANDOM % 30000))
		redis-server --bind 127.0.0.1 --port "$RP" --save '' --appendonly no \
			--daemonize no --logfile "$T/redis.log" </dev/null >/dev/null 2>&1 &
		PIDS+=("$!")
		for _ in $(seq 30); do
			timeout 1 redis-cli -p "$RP" ping 2>/dev/null | grep -q PONG && break 2
			sleep 0.1
		done
		RP=
	done
fi

# The command list (CMDS) and redis-server 7.0.15's replies (WANT).
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../fixtures/resp_cases.bash"

# Replies a real redis-server gives differently on purpose: it speaks RESP3
# (HELLO 3) where the helper store speaks only RESP2, and KEYS order is
# unspecified (sorted before comparing).
# redis-server has 16 databases where the store has one (SELECT 1).
declare -A NOT_LIVE=(['HELLO 3']=1 ['SELECT 1']=1)

for i in "${!CMDS[@]}"; do
	eval "set -- ${CMDS[$i]}"
	got=$(cli "$@")
	if [[ ${CMDS[$i]} == KEYS* ]]; then got=$(sed 's/^[0-9]*) //' <<<"$got" | sort); fi
	check "redis-cli ${CMDS[$i]}" "$got" "${WANT[$i]}"
	if [ -n "$RP" ] && [ -z "${NOT_LIVE[${CMDS[$i]}]:-}" ]; then
		real=$(timeout 5 redis-cli --no-raw -p "$RP" "$@" 2>&1)
		if [[ ${CMDS[$i]} == KEYS* ]]; then real=$(sed 's/^[0-9]*) //' <<<"$real" | sort); fi
		check "same reply as redis-server: ${CMDS[$i]}" "$got" "$real"
	fi
done

# Commands whose replies describe the server itself (not compared live).
check "HELLO 2 answers a RESP2 map" "$(cli HELLO 2 | head -6 | tr -s '\n ' '  ')" \
	' 1) "server" 2) "redis" 3) "version" 4) "7.0.0" 5) "proto" 6) (integer) 2 '
check "CLIENT SETINFO (Redis 7.2 clients send it)" "$(cli CLIENT SETINFO lib-name hiredis)" "OK"
check "COMMAND DOCS is an empty list" "$(cli COMMAND DOCS)" "(empty array)"
check "COMMAND COUNT" "$(cli COMMAND COUNT | grep -c '(integer) [1-9]')" "1"
check "INFO names the server" "$(cli INFO | grep -c dlrt_store_version)" "1"
check "SET EX: the key has a time to live" \
	"$(cli SET k v EX 100; cli PTTL k | sed 's/^(integer) [1-9][0-9]\{4\}$/(integer) <ttl>/')" \
	"OK
(integer) <ttl>"
check "QUIT" "$(cli QUIT)" "OK"
exec 4<>/dev/tcp/127.0.0.1/"$P"
printf 'CLIENT SETNAME trainer0\r\nCLIENT GETNAME\r\nQUIT\r\n' >&4
check "CLIENT SETNAME then GETNAME on one connection" "$(timeout 3 cat <&4 | tr -d '\r' | tr '\n' ' ')" \
	'+OK $8 trainer0 +OK '
exec 4<&-

# Binary-safe values through redis-cli -x (stdin is the last argument).
printf 'a\0b\r\nc\r\n\0' >"$T/bin"
check "SET -x with NUL bytes and CR LF" "$(cli -x SET bin <"$T/bin")" "OK"
check "STRLEN of the binary value" "$(cli STRLEN bin)" "(integer) 9"
timeout 5 redis-cli --raw -p "$P" GET bin >"$T/bin.out"
printf 'a\0b\r\nc\r\n\0\n' >"$T/bin.want" # --raw adds a newline
if cmp -s "$T/bin.out" "$T/bin.want"; then ok "GET returns the binary value byte for byte"
else notok "GET returns the binary value byte for byte" "$(od -c "$T/bin.out" | head -3)"; fi
printf 'k\0\r\n' >"$T/binkey"
check "SETNX -x: a value with NUL, CR LF from stdin" "$(cli -x SETNX binval <"$T/binkey")" "(integer) 1"

# Pipelining.
printf 'SET p1 a\r\nSETNX p1 b\r\nGET p1\r\nINCRBY pc 2\r\nEXISTS p1 pc\r\n' >"$T/pipe"
check "redis-cli --pipe: 5 pipelined requests, no errors" \
	"$(timeout 10 redis-cli -p "$P" --pipe <"$T/pipe" 2>&1 | tail -1)" "errors: 0, replies: 5"
exec 5<>/dev/tcp/127.0.0.1/"$P"
printf '*1\r\n$4\r\nPING\r\nECHO x\r\n*2\r\n$3\r\nGET\r\n$2\r\np1\r\n*1\r\n$4\r\nQUIT\r\n' >&5
got=$(timeout 3 cat <&5 | od -An -c | tr -s ' \n' ' ')
exec 5<&-
check "three requests in one write, replies in order, QUIT closes" "$got" \
	' + P O N G \r \n $ 1 \r \n x \r \n $ 1 \r \n a \r \n + O K \r \n '

# A client that stops mid-command: others are served at once, it is closed
# after --idle-timeout-ms (1000 here).
exec 6<>/dev/tcp/127.0.0.1/"$P"
printf '*3\r\n$5\r\nSETNX\r\n$4\r\nhalf' >&6
t0=$(date +%s%N)
got=$(timeout 2 redis-cli -p "$P" PING 2>&1)
t1=$(date +%s%N)
check "another client is served while one is stalled mid-command" "$got" "PONG"
if [ $(((t1 - t0) / 1000000)) -lt 500 ]; then ok "...within $(((t1 - t0) / 1000000)) ms"
else notok "the stalled client delayed another by $(((t1 - t0) / 1000000)) ms"; fi
sleep 1.5
if timeout 3 cat <&6 >/dev/null; then ok "the stalled client was closed after --idle-timeout-ms"
else notok "the stalled client is still connected after 1.5 s (idle timeout 1 s)"; fi
exec 6<&-
check "the stalled SETNX had no effect" "$(cli EXISTS half)" "(integer) 0"

# An idle client between commands is NOT closed (trainers keep a connection).
exec 7<>/dev/tcp/127.0.0.1/"$P"
sleep 1.5
printf 'PING\r\n' >&7
got=$(timeout 2 head -c 7 <&7 | tr -d '\r\n')
exec 7<&-
check "a client idle between requests keeps its connection" "$got" "+PONG"

# A huge bulk length: Redis's error, then the connection is closed.
exec 8<>/dev/tcp/127.0.0.1/"$P"
printf '*2\r\n$3\r\nGET\r\n$999999999999\r\n' >&8
got=$(timeout 3 cat <&8)
rc=$?
exec 8<&-
check "a huge bulk length gets Redis's protocol error" "$got" $'-ERR Protocol error: invalid bulk length\r'
check "...and the connection is closed (no stall)" "$rc" "0"
head -c 1100000 /dev/zero >"$T/toobig"
got=$(timeout 5 redis-cli -p "$P" -x SET toobig <"$T/toobig" 2>&1 | head -1)
check "a value over --max-value (1 MiB) is refused" "$got" "ERR Protocol error: invalid bulk length"
check "the server is still answering" "$(cli PING)" "PONG"

# redis-cli's interactive start (COMMAND DOCS for hints) needs a tty; redis-benchmark
# is exercised by bench/bench_resp_store.sh. Check the verbose log saw commands.
check "--verbose logs each command with its latency" \
	"$(grep -c 'SETNX run1/1 (+1 args) [0-9.]* us' "$T/store.log")" "1"

# Exit when the step ends: EOF on --lifetime-fd, or --parent-pid gone.
mkfifo "$T/life"
sleep 30 >"$T/life" </dev/null 2>/dev/null &
wp=$!
PIDS+=("$wp")
"$STORE" --port 0 --lifetime-fd 0 <"$T/life" >/dev/null 2>&1 &
lp=$!
PIDS+=("$lp")
sleep 0.3
kill "$wp" # the writer ends: the store sees EOF
for _ in $(seq 30); do kill -0 "$lp" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$lp" 2>/dev/null; then notok "dlrt-store exits at EOF on --lifetime-fd"
else ok "dlrt-store exits at EOF on --lifetime-fd"; fi

# Every background process gets its own stdio: one holding the script's
# stdout would keep prove (or a pipe) waiting after the script ends.
sleep 30 </dev/null >/dev/null 2>&1 &
pp=$!
PIDS+=("$pp")
"$STORE" --port 0 --parent-pid "$pp" </dev/null >/dev/null 2>&1 &
sp=$!
PIDS+=("$sp")
sleep 0.3
kill "$pp"
for _ in $(seq 30); do kill -0 "$sp" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$sp" 2>/dev/null; then notok "dlrt-store exits when --parent-pid is gone"
else ok "dlrt-store exits when --parent-pid is gone"; fi

"$STORE" --port 99999 2>"$T/err"
check "a bad option value exits 2" "$?" "2"
check "...with one line naming the fix" "$(wc -l <"$T/err")" "1"

# The real gloo client (Debian libgloo, built with Redis support).
if [ -n "$GLOO_PROG" ] && [ -x "$GLOO_PROG" ]; then
	RID="t$$-$RANDOM"
	for r in 0 1 2; do
		REDIS_HOST=127.0.0.1 REDIS_PORT=$P NUM_SHARDS=3 SHARD_ID=$r RUN_ID="$RID" \
			GLOO_IFACE=lo GLOO_ALLREDUCE_COUNT=65536 timeout 60 "$GLOO_PROG" \
			>"$T/gloo.$r" 2>&1 &
		GP[$r]=$!
	done
	grc=0
	for r in 0 1 2; do wait "${GP[$r]}" || grc=1; done
	if [ $grc = 0 ] && [ "$(cat "$T"/gloo.? | grep -c 'summed correctly')" = 3 ]; then
		ok "gloo RedisStore rendezvous + ring allreduce, 3 processes"
	else
		notok "gloo RedisStore rendezvous + ring allreduce, 3 processes" "$(cat "$T"/gloo.?)"
	fi
	check "gloo + Caffe2-style add sent only SETNX, GET, EXISTS and INCRBY" \
		"$(grep -o 'conn [0-9]*: [A-Z]* '"$RID" "$T/store.log" | awk '{print $3}' | sort -u | tr '\n' ' ')" \
		"EXISTS GET INCRBY SETNX "
fi

# Transactions and expiry, as redis-cli sends them one after the other on one
# connection (stdin not a terminal), against redis-server: same output.
TX_TRANSCRIPTS=(
	'EXEC|DISCARD|MULTI|MULTI|SET a 1|INCR a|GET a|EXEC|GET a'
	'SET s text|MULTI|SET x 1|INCR s|SET y 2|EXEC|MGET x y s'
	'MULTI|SET c 1|NOSUCH x|SET d|EXEC|EXISTS c d'
	'SET w 1|WATCH w|SET w 2|MULTI|SET w 3|EXEC|GET w|UNWATCH'
	'MULTI|SET e v EX 100|PTTL e|PERSIST e|TTL e|EXPIRE e 0|EXISTS e|EXEC'
	'SET k v PX 100000|PTTL k|SET k v EX 0|SET k v NX XX|SET k v EX 5 PX 5|EXPIRE k 5 NX XX|EXPIRE k 10 GT|PTTL k|EXPIRE k x|PERSIST k|TTL k|TTL nokey'
)
# A positive PTTL depends on the instant it is read (both are >= 1000 here),
# also inside an EXEC reply ("3) (integer) 99999" once a millisecond passed).
for tr in "${TX_TRANSCRIPTS[@]}"; do
	[ -n "$RP" ] || break
	cli FLUSHALL >/dev/null
	timeout 5 redis-cli -p "$RP" FLUSHALL >/dev/null 2>&1
	got=$(tr '|' '\n' <<<"$tr" | timeout 5 redis-cli --no-raw -h 127.0.0.1 -p "$P" 2>&1 | sed 's/(integer) [1-9][0-9][0-9][0-9]*$/(integer) <ttl>/')
	real=$(tr '|' '\n' <<<"$tr" | timeout 5 redis-cli --no-raw -p "$RP" 2>&1 | sed 's/(integer) [1-9][0-9][0-9][0-9]*$/(integer) <ttl>/')
	check "redis-cli transcript, same output as redis-server: ${tr//|/; }" "$got" "$real"
done
[ -n "$RP" ] || ok "# SKIP transactions and expiry against redis-server: redis-server not installed"

# Reply for reply and state for state against redis-server, with raw RESP and
# with redis-py's pipelines (transaction on and off), WATCH conflicts and
# short expiry times (resp_redis_compare.py).
if [ -n "$RP" ] && /usr/bin/python3 -c 'import redis' 2>/dev/null; then
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "${line#ok - }" ;;
		"not ok - "*) notok "${line#not ok - }" ;;
		"#"*) echo "$line" ;;
		*) notok "resp_redis_compare.py: $line" ;;
		esac
	done < <(timeout 120 /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/resp_redis_compare.py" "$P" "$RP" 2>&1)
else
	ok "# SKIP redis-py comparison: needs redis-server and python3-redis"
fi

echo "1..$n"
[ $failed = 0 ]
