#!/bin/bash
# dlrt-infer with no human after a double failure: kill -9 of the
# coordinator and its standby together mid-job makes a surviving worker take
# over from the journal (epoch-fenced claim, claims/epoch-2), with no command
# typed; the other workers reconnect, a new standby is chosen, the job ends
# with every answer exactly once. Then the same with the coordinator only
# stopped (SIGSTOP) and its standby killed: a worker takes over again, and the
# old coordinator, continued, is fenced out by the higher claim (it exits
# without acknowledging anything) while the answers stay exactly once.
# Times back to service are printed, never asserted.
. "$(dirname "$0")/../lib.sh"
. "$HERE/infer_pool.sh"

N1=10000 N2=6000
ref 1 deepcnn 0 $N1 &
ref 2 lenet5 20000 $N2
wait
ok "$([ -s "$WORK/ref1.sorted" ] && [ -s "$WORK/ref2.sorted" ]; echo $?)" \
	"single-process references for the two jobs"

wait_log() { # wait_log FILE REGEX [TRIES of 0.1 s]
	wait_until -i 0.1 $(((${3:-100} + 9) / 10)) grep -sEq -- "$2" "$1"
}
epoch_is() { [ "$(field epoch)" = "$1" ] && infer status >/dev/null 2>&1; }
wait_epoch() { # wait_epoch E: until a coordinator of epoch E answers (generous: loaded machine)
	wait_until 120 epoch_is "$1"
}
standby_pid() { pgrep -u "$DLRT_TEST_USER" -f "dlrt-infer standby --pool $POOL" | head -1; }
coord_log() { grep -l "took over from the journal (coordinator and standby both lost): epoch $1 " "$POOL"/element-*.log 2>/dev/null | head -1; }
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

# 5 elements, 2 per node: the coordinator and element 1 on n1.
ARRAY=$(infer pool start --workers 4 -- -c 8)
like "$ARRAY" '^[0-9]+$' "a pool of 4 workers (array $ARRAY)"
wait_until -i 0.5 120 eval '[ "$(workers_up)" -ge 4 ]'
is "$(workers_up)" 4 "4 workers joined"
C0=$POOL/element-${ARRAY}_0.log
wait_log "$C0" "standby ready" 200
ok $? "a standby attached and holds the state"

J1=$(infer submit --model deepcnn --inputs $IN --count $N1 --batch 10)
is "$J1" 1 "job 1 submitted"
infer wait 1 >"$WORK/w1" 2>&1 &
W1=$!
wait_until -i 0.05 60 eval 'd=$(done_of 1); [ "${d:-0}" -ge $((N1 / 5)) ]'
ok "$([ "${d:-0}" -ge $((N1 / 5)) ] && [ "$d" -lt $N1 ]; echo $?)" "job 1 under way ($d/$N1)"

# 1. kill -9 the coordinator and its standby together.
pid=$(field pid) sb=$(standby_pid)
ok "$([ -n "$pid" ] && [ -n "$sb" ]; echo $?)" "coordinator ($pid) and standby ($sb) found"
t_kill=$(now)
# Both stopped first: the standby must not start taking over in between.
kill -STOP "$pid" "$sb"
kill -9 "$pid" "$sb"
wait_epoch 2
ok $? "a worker took over with no command typed: epoch 2 serves the pool"
t_up=$(now)
diag "coordinator and standby killed; epoch 2 answered after $(sub "$t_up" "$t_kill") s"
K1=$(coord_log 2)
ok "$([ -n "$K1" ]; echo $?)" "the new coordinator is a worker's element (${K1##*/})"
like "$(cat "$K1")" "both lost for [0-9.]+ s: this worker takes over as the coordinator \(the pool has one worker fewer\)" \
	"its log says why and that the pool has one worker fewer"
like "$(cat "$K1")" "journal: [0-9]+ records replayed" "it replayed the journal"
ok "$([ -e "$POOL/claims/epoch-2" ] && [ "$(stat -c %a "$POOL/claims")" = 700 ]; echo $?)" \
	"epoch 2 is claimed in the private claims folder"
is "$(grep -l "took over from the journal ([a-z ]*): epoch 2 " "$POOL"/element-*.log | wc -l)" 1 \
	"exactly one worker serves epoch 2"
wait_log "$K1" "standby ready" 300
ok $? "a new standby was chosen and holds the state"
like "$(infer status 2>&1 | head -1)" "epoch 2" "status shows the new coordinator's epoch"
wait $W1
is $? 0 "wait 1, started before the double failure, reports job 1 done"
like "$(cat "$WORK/w1")" "job 1 done: $N1/$N1 queries" "wait 1 prints the job's end"
exactly_once 1 $N1 1

# 2. Stop the coordinator (SIGSTOP) and kill its standby: a worker takes
# over; the stopped one, continued, is fenced out.
J2=$(infer submit --model lenet5 --inputs $IN --first 20000 --count $N2 --batch 20)
is "$J2" 2 "job 2 submitted"
wait_until -i 0.05 60 eval 'd=$(done_of 2); [ "${d:-0}" -ge $((N2 / 5)) ]'
pid2=$(field pid) sb2=$(standby_pid)
ok "$([ -n "$pid2" ] && [ -n "$sb2" ]; echo $?)" "coordinator ($pid2) and standby ($sb2) found"
kill -STOP "$pid2"
kill -9 "$sb2"
wait_epoch 3
ok $? "a worker took over from the stopped coordinator: epoch 3"
K2=$(coord_log 3)
ok "$([ -n "$K2" ] && [ "$K2" != "$K1" ]; echo $?)" "another element serves epoch 3 (${K2##*/})"
kill -CONT "$pid2"
wait_log "$K1" "fenced out: the coordinator of epoch 3 took over" 300
ok $? "the old coordinator, continued, sees the higher epoch and stops"
wait_until 10 pid_gone "$pid2"
ok "$(kill -0 "$pid2" 2>/dev/null; [ $? -ne 0 ]; echo $?)" "and its process is gone"
is "$(field epoch)" 3 "the access record still names epoch 3"
infer wait 2 >"$WORK/w2"
is $? 0 "job 2 completed"
exactly_once 2 $N2 2

J3=$(infer submit --model lenet5 --inputs $IN --count 500 --batch 50 --wait)
is "$?" 0 "a new job completes after both takeovers (job $J3)"
infer pool stop >/dev/null
ok $? "pool stop"
wait_until -i 0.5 120 eval '[ -z "$(squeue -h -j "$ARRAY" 2>/dev/null)" ]'
is "$(squeue -h -j "$ARRAY" 2>/dev/null | wc -l)" 0 "every element of the pool ended"
is "$(pgrep -u "$DLRT_TEST_USER" -fc "dlrt-infer standby --pool $POOL")" 0 "no standby is left"
done_testing
