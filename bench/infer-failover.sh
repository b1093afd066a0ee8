#!/bin/bash
# infer-failover.sh - dlrt-infer's coordinator failover and the cost of the
# hot standby and the journal (benchmark part 7).
#
# 1. Coordinator failure, RUNS times (default 5) each way in one pool of 4
#    workers on 3 nodes running a deepcnn job: kill -9 of the coordinator, and
#    SIGSTOP (silent, as a lost node: detected after DLRT_INFER_TAKEOVER_MS);
#    from the failure:
#      detection  - the standby decides to take over (its log, wall clock)
#      serving    - the new coordinator serves under the next epoch
#      re-dispatch- the first answer to a task it dispatched is recorded
#    Each run kills the coordinator the previous run made (the standby it
#    chose takes over). Mean and standard deviation; IDunno needed
#    12.89 s (sd 3.82) to be back to normal; HyperQueue needs a manual restart
#    from its journal and its workers restarted.
#    Then the double failure, DRUNS times (default 2) in a fresh pool of 4
#    workers: kill -9 of the coordinator and its standby together; a worker
#    takes over from the journal after its bound (3 x DLRT_INFER_TAKEOVER_MS
#    + 250 ms per element index), from the failure:
#      serving    - the worker's coordinator serves under the next epoch
#      first      - the first answer to a task it dispatched is recorded
#      normal     - the job's rate (timeline.tsv) is back to 90% of its rate
#                   in the 3 s before the failure, scaled by the workers left
#                   (the new coordinator was one)
# 2. Dispatch rate of N no-op tasks (one query each, --prefetch 1, 4 workers),
#    then of N/10 lenet5 tasks of 10 queries (real work), with neither journal
#    nor standby, the journal only, and both: the cost of replication (one
#    round trip to the standby per change) and journaling (one write per
#    change, fdatasync every 100 ms).
# Timings are never pass/fail.
#
#   bench/infer-failover.sh     (from bench/run-all.sh, or with the cluster's env)
# Environment: RUNS (5), DRUNS (2), N (20000), RATES (1; 0 skips part 2).
set -u
cd "$(dirname "$0")/.." || exit 1
eval "$(tests/cluster/cluster.sh env)"
U=${DLRT_TEST_USER:-dlrtu}
RUNS=${RUNS:-5} DRUNS=${DRUNS:-2} N=${N:-20000} RATES=${RATES:-1}
T=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
W=$(mktemp -d "$DLRT_CLUSTER_DIR/work/bench-failover.XXXX")
chown "$U": "$W"
cd "$W" || exit 1
as_user() { timeout -k 5 600 runuser -u "$U" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" HOME="$W" "$@"; }
now() { date +%s.%N; }
stats() { # mean and sd of the numbers on stdin
	awk '{ s += $1; q += $1 * $1; n++ } END { m = s / n; v = n > 1 ? (q - n * m * m) / (n - 1) : 0;
		printf "%.3f (sd %.3f)", m, sqrt(v > 0 ? v : 0) }'
}

start_pool() { # start_pool DIR [ENV...]: 4 workers on 3 nodes; prints the array id
	local pool=$1
	shift
	as_user env DLRT_INFER_POOL="$pool" "$@" dlrt-infer pool start --workers 4 -- -c 8
	for _ in $(seq 1 240); do
		[ "$(as_user env DLRT_INFER_POOL="$pool" dlrt-infer status 2>/dev/null | grep -cE '^[0-9]+ +n[1-3]/')" -ge 4 ] && break
		sleep 0.5
	done
}
stop_pool() { # stop_pool DIR ARRAY
	as_user env DLRT_INFER_POOL="$1" dlrt-infer pool stop >/dev/null
	for _ in $(seq 1 60); do [ -z "$(squeue -h -j "$2" 2>/dev/null)" ] && break; sleep 0.5; done
}

# ---- 1. coordinator failover ------------------------------------------------------
P=$W/pool
ARR=$(start_pool "$P")
field() { sed -n "s/^$1=//p" "$P/access"; }
after() { # after LOG MARK REGEX: lines matching REGEX after the line containing MARK
	awk -v m="$2" -v r="$3" 'index($0, m) { on = 1 } on && $0 ~ r' "$1"
}
wait_ready() { # until the serving coordinator has a standby holding the state
	local e log
	e=$(field epoch)
	for _ in $(seq 1 200); do
		log=$(grep -l "epoch $e, prefetch" "$P"/element-*.log | head -1)
		[ -n "$log" ] && [ -n "$(after "$log" "epoch $e, prefetch" "standby ready")" ] && return 0
		sleep 0.05
	done
	return 1
}
J=$(as_user env DLRT_INFER_POOL="$P" dlrt-infer submit --model deepcnn --inputs $T --batch 10 --no-labels)
: >"$W/runs-kill"
: >"$W/runs-stop"
failover() { # failover MODE RUN: kill (-9) or stop (SIGSTOP: silent, as a lost node)
	local e pid t0 log det srv ans
	wait_ready || { echo "run $2: no standby became ready" >&2; return 1; }
	sleep 0.5
	e=$(field epoch)
	pid=$(field pid)
	t0=$(now)
	if [ "$1" = kill ]; then kill -9 "$pid"; else kill -STOP "$pid"; fi
	for _ in $(seq 1 400); do
		log=$(grep -l "epoch $((e + 1)) serves since wall" "$P"/element-*.log 2>/dev/null | head -1)
		[ -n "$log" ] && [ -n "$(after "$log" "epoch $((e + 1)) serves" "first answer to a task")" ] && break
		sleep 0.02
	done
	[ "$1" = stop ] && kill -9 "$pid" # it would be fenced out when continued (t/53); here it goes
	det=$(grep -o "taking over with [0-9]* changes at wall [0-9.]*" "$log" | tail -1 | grep -o '[0-9.]*$')
	srv=$(grep -o "epoch $((e + 1)) serves since wall [0-9.]*" "$log" | grep -o '[0-9.]*$')
	ans=$(after "$log" "epoch $((e + 1)) serves" "first answer to a task" | grep -o 'wall [0-9.]*' | head -1 | grep -o '[0-9.]*$')
	awk -v t0="$t0" -v a="$det" -v b="$srv" -v c="$ans" \
		'BEGIN { printf "%.4f %.4f %.4f\n", a - t0, b - t0, c - t0 }' | tee -a "$W/runs-$1" |
		sed "s/^/# $1 run $2 (epoch $e -> $((e + 1))): detection, serving, re-dispatch (s): /" >&2
}
for r in $(seq 1 "$RUNS"); do failover kill "$r"; done
for r in $(seq 1 "$RUNS"); do failover stop "$r"; done
as_user env DLRT_INFER_POOL="$P" dlrt-infer cancel "$J" >/dev/null 2>&1
stop_pool "$P" "$ARR"

# The double failure: coordinator and standby killed together.
P=$W/pool-double
ARR=$(start_pool "$P")
: >"$W/runs-double"
double() { # double RUN
	local e pid sb t0 log srv ans w clk pre nrm
	wait_ready || { echo "double run $1: no standby became ready" >&2; return 1; }
	# A job of its own per run: a whole deepcnn job lasts some 10 s.
	J=$(as_user env DLRT_INFER_POOL="$P" dlrt-infer submit --model deepcnn --inputs $T --batch 10 --no-labels)
	sleep 3
	e=$(field epoch)
	pid=$(field pid)
	sb=$(pgrep -u "$U" -f "dlrt-infer standby --pool $P" | head -1)
	w=$(as_user env DLRT_INFER_POOL="$P" dlrt-infer status 2>/dev/null | grep -cE '^[0-9]+ +n[1-3]/')
	t0=$(now)
	# Both stopped first: the standby must not start taking over in between.
	kill -STOP "$pid" "$sb"
	kill -9 "$pid" "$sb"
	for _ in $(seq 1 1500); do
		log=$(grep -l "epoch $((e + 1)) serves since wall" "$P"/element-*.log 2>/dev/null | head -1)
		[ -n "$log" ] && [ -n "$(after "$log" "epoch $((e + 1)) serves" "first answer to a task")" ] && break
		sleep 0.02
	done
	sleep 8 # the rate settles (its window is 0.5 s)
	srv=$(grep -o "epoch $((e + 1)) serves since wall [0-9.]*" "$log" | grep -o '[0-9.]*$')
	ans=$(after "$log" "epoch $((e + 1)) serves" "first answer to a task" | grep -o 'wall [0-9.]*' | head -1 | grep -o '[0-9.]*$')
	clk=$(awk -F'\t' 'index($3, "clock:") == 1 { sub("clock:", "", $3); print $3; exit }' "$P/events.tsv")
	# The wall time of the first timeline row after the takeover at 90% of
	# the rate before, with one worker fewer.
	nrm=$(awk -F'\t' -v j="$J" -v c="$clk" -v t0="$t0" -v s="$srv" -v w="$w" '
		$2 != j { next }
		{ t = c + $1 }
		t < t0 && t >= t0 - 3 { sum += $3; n++ }
		t > s && n && $3 >= 0.9 * (sum / n) * (w - 1) / w { printf "%.6f\n", t; exit }' "$P/timeline.tsv")
	awk -v t0="$t0" -v a="$srv" -v b="$ans" -v c="${nrm:-0}" \
		'BEGIN { printf "%.4f %.4f %.4f\n", a - t0, b - t0, (c > 0 ? c - t0 : -1) }' | tee -a "$W/runs-double" |
		sed "s/^/# double run $1 (epoch $e -> $((e + 1)), $w workers before): serving, first answer, back to normal (s): /" >&2
}
for r in $(seq 1 "$DRUNS"); do
	double "$r"
	as_user env DLRT_INFER_POOL="$P" dlrt-infer cancel "$J" >/dev/null 2>&1
done
stop_pool "$P" "$ARR"

row() { # row FILE: the three columns' statistics
	for k in 1 2 3; do printf ' %s |' "$(cut -d' ' -f$k "$1" | stats)"; done
}
echo "### Coordinator failure mid-job: from the failure to ... ($RUNS runs each, mean and sd, seconds)"
echo
echo "| failure | detection (the standby decides) | the new coordinator serves | re-dispatch: first new answer recorded |"
echo "|---|---|---|---|"
echo "| kill -9 of the coordinator |$(row "$W/runs-kill")"
echo "| SIGSTOP of the coordinator (silent, as a lost node; bound 1 s) |$(row "$W/runs-stop")"
echo "| IDunno, back to normal after a coordinator failure | 4 (worst case) | - | 12.89 (sd 3.82) |"
echo
echo "### Coordinator and standby killed together (kill -9 of both, mid-job; a worker takes over from the journal; $DRUNS runs, mean and sd, seconds)"
echo
echo "| failure | the worker's coordinator serves | first new answer recorded | back to normal (90% of the rate before, one worker fewer) |"
echo "|---|---|---|---|"
echo "| kill -9 of coordinator and standby (worker bound 3 s + 250 ms per element index) |$(row "$W/runs-double")"
echo "| for comparison: kill -9 of the coordinator only (the standby takes over; above) | $(cut -d' ' -f2 "$W/runs-kill" | stats) | $(cut -d' ' -f3 "$W/runs-kill" | stats) | - |"
echo
re=$(cut -d' ' -f3 "$W/runs-stop" | stats | cut -d' ' -f1)
awk -v r="$re" 'BEGIN { if (r > 0) printf "\nratio (seed / ours, silent coordinator, back to normal): %.1fx\n\n", 12.89 / r }'

# ---- 2. the cost of the standby and the journal on dispatch -------------------------
rate() { # rate NAME ENV...: tasks/s of N tasks of $MODEL, $B queries each
	local pool=$W/pool-$1 arr j t0 t1
	shift
	arr=$(start_pool "$pool" "$@")
	[ $# -eq 0 ] && for _ in $(seq 1 100); do
		grep -q "standby ready" "$pool/element-${arr}_0.log" 2>/dev/null && break
		sleep 0.1
	done
	j=$(as_user env DLRT_INFER_POOL="$pool" dlrt-infer submit --model "$MODEL" --inputs $T \
		--count $((N * B)) --batch "$B" --no-labels)
	as_user env DLRT_INFER_POOL="$pool" dlrt-infer wait "$j" >/dev/null
	t0=$(awk -v j="$j" '$2 == j && $3 == "first_task" { print $1 }' "$pool/events.tsv")
	t1=$(awk -v j="$j" '$2 == j && $3 == "done" { print $1 }' "$pool/events.tsv")
	stop_pool "$pool" "$arr"
	awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }'
}
table() { # table TITLE: the three configurations of the current MODEL, B, N
	local r0 r1 r2
	r0=$(rate none DLRT_INFER_STANDBY=0 DLRT_INFER_JOURNAL=0)
	r1=$(rate journal DLRT_INFER_STANDBY=0)
	r2=$(rate both)
	echo "### Dispatch: $1, 4 workers, --prefetch 1 (tasks/s)"
	echo
	echo "| configuration | tasks/s | ratio to neither |"
	echo "|---|---|---|"
	awk -v a="$r0" -v b="$r1" -v c="$r2" 'BEGIN {
		printf "| neither journal nor standby | %d | 1.00 |\n", a
		printf "| journal (write per change, fdatasync every 100 ms) | %d | %.2f |\n", b, b / a
		printf "| journal + hot standby (SEQACK before every acknowledgement) | %d | %.2f |\n", c, c / a }'
	echo
}
[ "$RATES" = 0 ] && exit 0
MODEL=noop B=1
table "$N no-op tasks of one query"
MODEL=lenet5 B=10 N=$((N / 10))
table "$N lenet5 tasks of 10 queries"
