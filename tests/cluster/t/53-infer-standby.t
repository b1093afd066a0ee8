#!/bin/bash
# dlrt-infer's hot standby: a worker runs the standby (on another node than
# the coordinator when it can); kill -9 of the coordinator mid-job makes the
# standby take over (epoch +1, access record rewritten), workers and clients
# (`wait` already waiting) reconnect on their own, answers not yet
# acknowledged are re-sent, and a new standby is chosen, which takes over in
# turn when the second coordinator is killed. A coordinator that is only
# stopped (SIGSTOP) is replaced too, and when it continues it is fenced out by
# the epoch: it stops without acknowledging anything. After all that: every
# query answered exactly once, answers equal to a failure-free run, the pool
# serving and stopping cleanly. The timeline files survive every takeover:
# appended to, on the pool's clock (the t column never goes backwards), each
# takeover marked in events.tsv. Takeover times are printed, never asserted.
. "$(dirname "$0")/../lib.sh"
. "$HERE/infer_pool.sh"

N1=12000 N2=24000 N3=8000
ref 1 deepcnn 0 $N1 &
ref 2 lenet5 20000 $N2
ref 3 deepcnn 40000 $N3
wait
ok "$([ -s "$WORK/ref1.sorted" ] && [ -s "$WORK/ref2.sorted" ] && [ -s "$WORK/ref3.sorted" ]; echo $?)" \
	"single-process references for the three jobs"

wait_log() { # wait_log FILE REGEX [TRIES of 0.1 s]
	wait_until -i 0.1 $(((${3:-100} + 9) / 10)) grep -sEq -- "$2" "$1"
}
epoch_is() { [ "$(field epoch)" = "$1" ] && infer status >/dev/null 2>&1; }
wait_epoch() { # wait_epoch E: until a coordinator of epoch E answers
	wait_until 40 epoch_is "$1"
}
now() { date +%s.%N; }
wall_in() { grep -o "$2 at wall [0-9.]*\|since wall [0-9.]*" "$1" | head -1 | grep -o '[0-9.]*$'; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

# 5 elements, 2 per node (-c 8 of 16 CPUs): the coordinator and element 1 on n1.
ARRAY=$(infer pool start --workers 4 -- -c 8)
like "$ARRAY" '^[0-9]+$' "a pool of 4 workers (array $ARRAY)"
wait_until -i 0.5 120 eval '[ "$(workers_up)" -ge 4 ]'
is "$(workers_up)" 4 "4 workers joined"
C0=$POOL/element-${ARRAY}_0.log
wait_log "$C0" "standby ready" 100
ok $? "a standby attached and holds the state"
SB=$(grep -o 'asked worker [0-9]* ([^)]*)' "$C0" | tail -1)
like "$SB" "asked worker [0-9]+ \(n[23]/" "the standby runs on another node than the coordinator ($SB)"

J1=$(infer submit --model deepcnn --inputs $IN --count $N1 --batch 10)
J2=$(infer submit --model lenet5 --inputs $IN --first 20000 --count $N2 --batch 20)
is "$J1 $J2" "1 2" "two jobs submitted"
infer wait 1 >"$WORK/w1" 2>&1 &
W1=$!
infer wait 2 >"$WORK/w2" 2>&1 &
W2=$!
wait_until -i 0.05 30 eval 'd=$(done_of 1); [ "${d:-0}" -ge $((N1 / 5)) ]'
ok "$([ "${d:-0}" -ge $((N1 / 5)) ] && [ "$d" -lt $N1 ]; echo $?)" "job 1 under way ($d/$N1)"

# 1. kill -9 the coordinator mid-job.
timeline_snapshot
pid=$(field pid) host=$(field host)
t_kill=$(now)
kill -9 "$pid"
wait_epoch 2
ok $? "the standby took over: epoch 2 serves the pool"
t_up=$(now)
new=$(field host)
diag "coordinator pid $pid on $host killed; epoch 2 on $new answered after $(sub "$t_up" "$t_kill") s"
S1=$(grep -l "taking over" "$POOL"/element-*.log | head -1)
like "$(cat "$S1")" "gone \(.*\): taking over with [0-9]+ changes" "the standby says why it took over"
like "$(cat "$S1")" "resumed 2 jobs" "and resumed both jobs"
tw=$(wall_in "$S1" "taking over with [0-9]* changes")
diag "detection: $(sub "$tw" "$t_kill") s after the kill"
wait_until 20 eval '[ "$(workers_up)" -ge 3 ]'
ok "$([ "$(workers_up)" -ge 3 ]; echo $?)" "the workers reconnected on their own ($(workers_up))"
wait_log "$S1" "standby ready" 100
ok $? "a new standby was chosen and holds the state"
timeline_kept takeover takeover:2
infer pool restart >"$WORK/restart.out" 2>&1
like "$(cat "$WORK/restart.out")" "still runs: nothing to restart" "pool restart refuses while a coordinator runs"

# 2. kill -9 the second coordinator: the new standby takes over.
wait_until -i 0.05 30 eval 'd=$(done_of 1); [ "${d:-0}" -ge $((N1 / 2)) ]'
pid2=$(field pid)
kill -9 "$pid2"
wait_epoch 3
ok $? "the second standby took over too: epoch 3"
S2=$(grep -l "taking over with" "$POOL"/element-*.log | grep -v "$S1" | head -1)
ok "$([ -n "$S2" ]; echo $?)" "from another element (${S2##*/})"
wait $W1
is $? 0 "wait 1, started before both failovers, reports job 1 done" ||
	fail_detail "the coordinators' last words: $(grep -h "refused\|could not\|job 1 failed\|fenced" \
		"$POOL"/element-*.log | tail -5)"
wait $W2
is $? 0 "wait 2 too"
like "$(cat "$WORK/w1")" "job 1 done: $N1/$N1 queries" "wait 1 prints the job's end"
exactly_once 1 $N1 1
exactly_once 2 $N2 2
resent=$(cat "$POOL"/element-*.log | grep -c "re-sent task")
diag "answers re-sent by workers and recorded by a new coordinator: $resent"

# 3. A stopped coordinator is replaced, and fenced out when it continues.
wait_log "$S2" "standby ready" 100
J3=$(infer submit --model deepcnn --inputs $IN --first 40000 --count $N3 --batch 10)
is "$J3" 3 "job 3 submitted"
wait_until -i 0.05 30 eval 'd=$(done_of 3); [ "${d:-0}" -ge $((N3 / 4)) ]'
pid3=$(field pid)
kill -STOP "$pid3"
wait_epoch 4
ok $? "a stopped coordinator is replaced too: epoch 4"
kill -CONT "$pid3"
wait_log "$S2" "fenced out: the coordinator of epoch 4 took over" 50
ok $? "the old coordinator, continued, sees the newer epoch and stops"
wait_until 5 pid_gone "$pid3"
ok "$(kill -0 "$pid3" 2>/dev/null; [ $? -ne 0 ]; echo $?)" "and its process is gone"
infer wait 3 >"$WORK/w3"
is $? 0 "job 3 completed"
exactly_once 3 $N3 3

# Serving, then stopping: every element ends (standbys included).
J4=$(infer submit --model lenet5 --inputs $IN --count 1000 --batch 50 --wait)
is "$?" 0 "a new job completes after three failovers (job $J4)"
infer pool stop >/dev/null
ok $? "pool stop"
wait_until -i 0.5 60 eval '[ -z "$(squeue -h -j "$ARRAY" 2>/dev/null)" ]'
is "$(squeue -h -j "$ARRAY" 2>/dev/null | wc -l)" 0 "every element of the pool ended"
is "$(pgrep -u "$DLRT_TEST_USER" -fc "dlrt-infer standby --pool $POOL")" 0 "no standby is left"

# The timeline files over the whole run: one header, every row kept, the
# pool's time never going backwards across the four coordinators.
timeline_end_checks takeover 3
infer plot 1 2 --out "$WORK/failover.png" >/dev/null 2>&1
ok "$([ -s "$WORK/failover.png" ]; echo $?)" "plot draws the jobs across the takeovers"
done_testing
