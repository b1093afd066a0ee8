#!/bin/bash
# pslite_local.sh - the ps-lite contract test program on loopback, no cluster.
#
# Starts a scheduler, servers and workers of testprogs/pslite_contract on
# 127.0.0.1 with the DMLC_* variables set by hand (what srun --dl-runtime=mxnet
# gives each task on a cluster), then the failure cases the cluster tests rely
# on: a busy root port, a missing worker, a killed scheduler, a crashed worker.
# Prints TAP.
#
#   tests/unit/pslite_local.sh [BUILD]        default: build (or $DLRT_BUILD)
# shellcheck disable=SC2154  # RC_<name>/PID_<name> are set through eval
set -uo pipefail

BUILD=${1:-${DLRT_BUILD:-build}}
PROG=$BUILD/testprogs/pslite_contract
[ -x "$PROG" ] || { echo "pslite_local: $PROG is missing: run make BUILD=$BUILD first" >&2; exit 2; }
PROG=$(cd "$(dirname "$PROG")" && pwd)/$(basename "$PROG")

tmp=$(mktemp -d)
PIDS=()
cleanup() {
	# Only the processes this script started, by pid.
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

n=0 failed=0
ok() { # ok STATUS DESCRIPTION; returns STATUS != 0, for a diagnostic after it
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; return 0; fi
	echo "not ok $n - $2"
	failed=$((failed + 1))
	return 1
}
diag_files() { for f in "$@"; do [ -s "$f" ] && sed "s|^|#   $(basename "$f"): |" "$f"; done; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# A port below the ephemeral range (32768-60999 on Linux), so the nodes'
# OS-chosen ports and outgoing connections cannot take it meanwhile.
free_port() {
	python3 -c 'import random, socket
for _ in range(200):
    p = random.randint(20000, 32000)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(p)
    break'
}

# start NAME ROLE [ARGS...]: run one process with the job's env; its pid in $LAST.
# ROLE "-" leaves DMLC_ROLE unset (MXNet treats that as a worker).
start() {
	local name=$1 role=$2
	shift 2
	if [ "$role" = - ]; then
		env -u DMLC_ROLE DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT="$ROOT_PORT" \
		    DMLC_NUM_SERVER="$NS" DMLC_NUM_WORKER="$NW" DMLC_NODE_HOST=127.0.0.1 \
		    "$PROG" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	else
		env DMLC_ROLE="$role" DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT="$ROOT_PORT" \
		    DMLC_NUM_SERVER="$NS" DMLC_NUM_WORKER="$NW" DMLC_NODE_HOST=127.0.0.1 \
		    "$PROG" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	fi
	LAST=$!
	PIDS+=("$LAST")
	eval "PID_$name=$LAST"
}

# wait_bounded SECONDS NAME...: waits for the named processes; RC_<name> gets
# each exit status (999 if it had to be killed). Returns 1 on a kill. Its
# stderr is dropped: bash reports "Killed" there for --crash and kill -9.
wait_bounded() { _wait_bounded "$@" 2>/dev/null; }
_wait_bounded() {
	local secs=$1 end name pid hung=0
	shift
	end=$(($(now_ms) + secs * 1000))
	for name in "$@"; do
		pid=$(eval echo "\$PID_$name")
		while kill -0 "$pid" 2>/dev/null && [ "$(now_ms)" -lt "$end" ]; do sleep 0.05; done
		if kill -0 "$pid" 2>/dev/null; then
			{ kill -9 "$pid"; wait "$pid"; } 2>/dev/null
			eval "RC_$name=999"
			hung=1
		else
			wait "$pid" 2>/dev/null
			eval "RC_$name=$?"
		fi
	done
	return $hung
}

# attempt FUNC: runs one case; again once if its root port was taken meanwhile
# by some other program on this machine (other tests pick random ports too).
attempt() {
	"$1"
	if grep -q "Address already in use" "$tmp/s.err" 2>/dev/null; then
		echo "# root port $ROOT_PORT was taken by another process: running the case again"
		"$1"
	fi
}

# ---- 1. a whole job: 1 scheduler, 2 servers, 3 workers (one without DMLC_ROLE)
case1() {
	NS=2 NW=3 ROOT_PORT=$(free_port)
	start s scheduler --rounds 5
	start v0 server --rounds 5
	start v1 server --rounds 5
	start w0 worker --rounds 5
	start w1 worker --rounds 5
	start w2 - --rounds 5
	wait_bounded 30 s v0 v1 w0 w1 w2
	HUNG=$?
}
attempt case1
ok $HUNG "job finishes within 30 s"
all=0
for x in s v0 v1 w0 w1 w2; do [ "$(eval echo "\$RC_$x")" = 0 ] || all=1; done
ok $all "every process exits 0" || diag_files "$tmp"/*.err
ok "$(grep -c '5 rounds ok, sum=6$' "$tmp"/w*.out | awk -F: '{s+=$2} END {print (s==3)?0:1}')" \
	"three workers checked 5 rounds of sums (sum=6)"
ranks=$(sed -n 's/^pslite_contract: worker \([0-9]*\) of 3 on .*/\1/p' "$tmp"/w*.out | sort | tr '\n' ' ')
[ "$ranks" = "0 1 2 " ]
ok $? "the scheduler gave worker ranks 0 1 2 (got '$ranks')"
grep -q '^pslite_contract: worker .* rounds ok' "$tmp/w2.out"
ok $? "a task without DMLC_ROLE acts as a worker"
grep -hq 'keys \[0, 500)' "$tmp"/v*.out && grep -hq 'keys \[500, 1000)' "$tmp"/v*.out
ok $? "servers hold contiguous key ranges [0, 500) and [500, 1000)"
grep -q "scheduler on .*: 5 nodes registered (2 servers, 3 workers), all finalized" "$tmp/s.out"
ok $? "scheduler reports 5 nodes registered and all finalized"

# ---- 2. late scheduler, uneven ranges: nodes keep reconnecting (ZMQ semantics)
case2() {
	NS=3 NW=2 ROOT_PORT=$(free_port)
	for i in 0 1 2; do start v$i server --vector-len 7 --rounds 3; done
	for i in 0 1; do start w$i worker --vector-len 7 --rounds 3; done
	sleep 1
	start s scheduler --vector-len 7 --rounds 3
	wait_bounded 30 s v0 v1 v2 w0 w1
	HUNG=$?
}
attempt case2
all=$HUNG
for x in s v0 v1 v2 w0 w1; do [ "$(eval echo "\$RC_$x")" = 0 ] || all=1; done
ok $all "scheduler started 1 s late: the job still finishes (3 servers, 7 keys)" ||
	diag_files "$tmp"/*.err

# ---- 3. busy root port: the scheduler aborts at once (ps-lite: no retry)
NS=1 NW=1 ROOT_PORT=$(free_port)
python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1",int(sys.argv[1]))); s.listen(); open(sys.argv[2], "w").close(); time.sleep(30)' \
	"$ROOT_PORT" "$tmp/held" &
holder=$!
PIDS+=("$holder")
for _ in $(seq 100); do [ -e "$tmp/held" ] && break; sleep 0.05; done
t0=$(now_ms)
start s scheduler --timeout-s 10
wait_bounded 5 s
el=$(($(now_ms) - t0))
# "At once" against its 10 s timeout; the bound is loose because start-up alone
# can take seconds under ASan on a loaded machine.
[ "$RC_s" != 0 ] && [ "$RC_s" != 999 ] && [ $el -lt 5000 ]
ok $? "busy DMLC_PS_ROOT_PORT: scheduler exits non-zero at once, not after its 10 s timeout (rc $RC_s, $el ms)"
grep -q "Address already in use.*does not retry" "$tmp/s.err"
ok $? "busy port message names the bind failure"
{ kill -9 $holder; wait $holder; } 2>/dev/null

# ---- 4. DMLC_NUM_WORKER says 3, only 2 workers start: bounded, named count
case4() {
	NS=2 NW=3 ROOT_PORT=$(free_port)
	t0=$(now_ms)
	start s scheduler --timeout-s 3
	start v0 server --timeout-s 3
	start v1 server --timeout-s 3
	start w0 worker --timeout-s 3
	start w1 worker --timeout-s 3
	wait_bounded 15 s v0 v1 w0 w1
	HUNG=$?
	el=$(($(now_ms) - t0))
}
attempt case4
ok $HUNG "missing worker: nothing hangs"
[ "$RC_s" = 2 ]
ok $? "missing worker: scheduler exits 2 (timeout), got $RC_s"
grep -q "2 of 3 workers registered (0 servers and 1 worker missing)" "$tmp/s.err"
ok $? "missing worker: the scheduler's message names the missing count" ||
	diag_files "$tmp/s.err"
all=0
for x in v0 v1 w0 w1; do r=$(eval echo "\$RC_$x"); { [ "$r" != 0 ] && [ "$r" != 999 ]; } || all=1; done
ok $all "missing worker: every server and worker exits non-zero"
[ $el -lt 12000 ]
ok $? "missing worker: all done after the 3 s timeout plus start-up slack, < 12 s ($el ms)"
grep -q "scheduler at 127.0.0.1:$ROOT_PORT went away before sending the node table" "$tmp/w0.err"
ok $? "missing worker: workers say the scheduler went away"

# ---- 5. the scheduler is killed mid-run: everyone else fails fast
case5() {
	local args=(--rounds 100000 --round-delay-ms 20 --timeout-s 30)
	NS=2 NW=3 ROOT_PORT=$(free_port)
	start s scheduler "${args[@]}"
	start v0 server "${args[@]}"
	start v1 server "${args[@]}"
	start w0 worker "${args[@]}"
	start w1 worker "${args[@]}"
	start w2 worker "${args[@]}"
	sleep 1.5
	{ kill -9 "$PID_s"; wait "$PID_s"; } 2>/dev/null
	t0=$(now_ms)
	wait_bounded 10 v0 v1 w0 w1 w2
	HUNG=$?
	el=$(($(now_ms) - t0))
}
attempt case5
ok $HUNG "killed scheduler: nothing hangs"
all=0
for x in v0 v1 w0 w1 w2; do r=$(eval echo "\$RC_$x"); { [ "$r" != 0 ] && [ "$r" != 999 ]; } || all=1; done
ok $all "killed scheduler: every server and worker exits non-zero"
[ $el -lt 10000 ]
ok $? "killed scheduler: all exited well before their 30 s timeout, < 10 s ($el ms)"
grep -q "scheduler at 127.0.0.1:$ROOT_PORT went away" "$tmp/w1.err" && \
	grep -q "scheduler at 127.0.0.1:$ROOT_PORT went away" "$tmp/v0.err"
ok $? "killed scheduler: 'scheduler at IP:PORT went away'" ||
	diag_files "$tmp"/w1.err "$tmp"/v0.err

# ---- 6. --crash worker:1 (fault injection the cluster tests can use)
case6() {
	local args=(--rounds 100000 --round-delay-ms 20 --timeout-s 30 --crash worker:1
		    --crash-after-ms 300)
	NS=1 NW=2 ROOT_PORT=$(free_port)
	start s scheduler "${args[@]}"
	start v0 server "${args[@]}"
	start w0 worker "${args[@]}"
	start w1 worker "${args[@]}"
	wait_bounded 10 s v0 w0 w1
	HUNG=$?
}
attempt case6
all=$HUNG
for x in s v0 w0 w1; do r=$(eval echo "\$RC_$x"); { [ "$r" != 0 ] && [ "$r" != 999 ]; } || all=1; done
ok $all "crashed worker: the scheduler and every other node exit non-zero"
# Whoever notices first (the server or the scheduler) names the dead worker.
# (grep reads the files itself: `cat | grep -q` under pipefail fails when grep
# stops at the first match while cat is still writing, and cat dies of SIGPIPE.)
grep -q "worker 1 (id 11) at 127.0.0.1:[0-9]* went away" "$tmp/s.err" "$tmp/v0.err"
ok $? "crashed worker: the dead worker is named" || diag_files "$tmp"/*.err

# ---- 7. contract violations are refused
NS=1 NW=1 ROOT_PORT=$(free_port)
DMLC_PS_ROOT_URI=localhost DMLC_ROLE=scheduler DMLC_PS_ROOT_PORT="$ROOT_PORT" DMLC_NUM_SERVER=1 \
	DMLC_NUM_WORKER=1 timeout 5 "$PROG" 2>"$tmp/host.err"
rc=$?
[ $rc = 64 ] && grep -q "not a numeric IPv4" "$tmp/host.err"
ok $? "scheduler refuses a host name in DMLC_PS_ROOT_URI (rc $rc)"
env -u DMLC_NUM_WORKER DMLC_ROLE=worker DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT="$ROOT_PORT" \
	DMLC_NUM_SERVER=1 timeout 5 "$PROG" 2>"$tmp/nw.err"
rc=$?
[ $rc = 64 ] && grep -q "DMLC_NUM_WORKER is not set" "$tmp/nw.err"
ok $? "a missing DMLC_NUM_WORKER is an error (rc $rc)"
case7() {
	NS=1 NW=1 ROOT_PORT=$(free_port)
	start s scheduler --timeout-s 5 --vector-len 100
	start v0 server --timeout-s 5 --vector-len 100
	start w0 worker --timeout-s 5 --vector-len 99
	wait_bounded 15 s v0 w0
}
attempt case7
[ "$RC_v0" = 1 ] && grep -q "use the same --vector-len" "$tmp/v0.err"
ok $? "a server detects a worker with a different --vector-len (rc $RC_v0)"

echo "1..$n"
exit $((failed > 0))
