#!/bin/bash
# dlrt-infer's group commit: nobody hears of a change before the hot standby
# holds it, and the coordinator never waits for the standby meanwhile. With
# the standby stopped (SIGSTOP; the takeover bound raised to 60 s so it is
# not let go): a `submit` is recorded (the coordinator logs the job, workers
# get its tasks and answer them) but its client gets no reply; each worker
# stops getting tasks once 1024 of its answers wait for their ACK. Once the
# standby continues: the reply comes (job 1), the job ends, every query is
# answered exactly once, and the standby was never let go.
. "$(dirname "$0")/../lib.sh"
. "$HERE/infer_pool.sh"

N=6000
ARRAY=$(as_user env DLRT_INFER_POOL="$POOL" DLRT_INFER_TAKEOVER_MS=60000 \
	dlrt-infer pool start --workers 3 -- -c 5)
like "$ARRAY" '^[0-9]+$' "a pool of 3 workers (array $ARRAY)"
wait_until -i 0.5 240 eval '[ "$(workers_up)" -ge 3 ]'
is "$(workers_up)" 3 "3 workers joined"
C0=$POOL/element-${ARRAY}_0.log
wait_until 20 grep -sq "standby ready" "$C0"
like "$(cat "$C0")" "standby ready" "a standby attached and holds the state"
SBPID=""
wait_until 10 eval 'SBPID=$(pgrep -u "$DLRT_TEST_USER" -f "dlrt-infer standby --pool $POOL " | head -1); [ -n "$SBPID" ]'
like "$SBPID" '^[0-9]+$' "the standby process (pid $SBPID)"

kill -STOP "$SBPID"
infer submit --model noop --inputs "$IN" --count $N --batch 1 --no-labels \
	>"$WORK/sub.out" 2>"$WORK/sub.err" &
SUB=$!
# The coordinator records the job and its first answers with the standby stopped.
first_result() { awk -F'\t' '$2 == 1 && $3 == "first_result"' "$EV" 2>/dev/null | grep -q .; }
wait_until 60 first_result
ok "$(awk -F'\t' '$2 == 1 && $3 == "first_result"' "$EV" | grep -q .; echo $?)" \
	"with the standby stopped, the coordinator still serves: job 1 got its first answer" ||
	fail_detail "coordinator log: $(tail -3 "$C0" | tr '\n' ' ')"
like "$(cat "$C0")" "job 1 \(job1\): model noop" "and logged the job"
ok "$(kill -0 "$SUB" 2>/dev/null; echo $?)" \
	"but the client of submit has no reply yet: the standby does not hold the job" ||
	fail_detail "submit returned: $(cat "$WORK/sub.out" "$WORK/sub.err")"
# The workers stop once 1024 answers each wait for their ACK (MAX_HELD_ACKS):
# the job stalls short of its end (3 workers x 1024, plus what each has in
# flight, < N).
sleep 1
ok "$(grep -q "job 1 done" "$C0"; [ $? -ne 0 ]; echo $?)" "job 1 does not end while the standby is stopped"
ROWS=$(($(wc -l <"$POOL/job-1.csv") - 1))
ok "$([ "$ROWS" -gt 0 ] && [ "$ROWS" -le $((3 * 1024 + 3 * 8)) ]; echo $?)" \
	"the workers stalled at the bound: $ROWS answers stored, at most 3 x 1024 + in flight"

kill -CONT "$SBPID"
wait "$SUB"
is "$? $(cat "$WORK/sub.out")" "0 1" "once the standby continues, submit gets its reply (job 1)"
infer wait 1 >"$WORK/wait.out" 2>&1
ok $? "job 1 completed" || fail_detail "$(cat "$WORK/wait.out")"
is "$(($(wc -l <"$POOL/job-1.csv") - 1))" $N "job 1: $N result rows"
is "$(tail -n +2 "$POOL/job-1.csv" | cut -d, -f2 | sort -u | wc -l)" $N "job 1: every input exactly once"
unlike "$(cat "$C0")" "standby lost" "the standby was never let go"

# An answer is recorded by the batch after it came (up to a millisecond
# later); until then its task is neither dispatched again nor answered a
# second time. infer_resend_race joins as a worker and, on its first task T,
# re-sends answers to T+1..T+8 (as a worker does after a failover) with its
# answer to T: the coordinator takes them and dispatches this worker's next
# task in the same turn, which must not be one of them (a second answer in
# time was a second row, and the job failed: "an answer could not be
# recorded"). 20 tasks of 200 queries keep the three real workers busy.
as_user env DLRT_INFER_POOL="$POOL" "$TESTS_BIN/infer_resend_race" "$POOL" 8 \
	>"$WORK/race.out" 2>&1 &
RACE=$!
wait_until 20 eval 'infer status 2>/dev/null | grep -q " resend-race"'
J=$(infer submit --model deepcnn --inputs "$IN" --count 4000 --batch 200)
wait "$RACE"
is "$?" 0 "a task whose re-sent answer was taken is not dispatched before the answer is recorded" ||
	fail_detail "$(cat "$WORK/race.out")"
like "$(cat "$WORK/race.out")" "8 answers re-sent" "the racing worker re-sent 8 answers"
diag "$(tail -1 "$WORK/race.out")"
infer wait "$J" >"$WORK/wait2.out" 2>&1
ok $? "job $J completed, the re-sent answers recorded once" || fail_detail "$(cat "$WORK/wait2.out")"
is "$(tail -n +2 "$POOL/job-$J.csv" | cut -d, -f2 | sort -u | wc -l) $(($(wc -l <"$POOL/job-$J.csv") - 1))" \
	"4000 4000" "job $J: 4000 rows, every input exactly once"

infer pool stop >/dev/null
ok $? "pool stop"
wait_until -i 0.5 60 eval '[ -z "$(squeue -h -j "$ARRAY" 2>/dev/null)" ]'
is "$(squeue -h -j "$ARRAY" 2>/dev/null | wc -l)" 0 "every array element ended"
scancel "$ARRAY" 2>/dev/null
kill -CONT "$SBPID" 2>/dev/null
done_testing
