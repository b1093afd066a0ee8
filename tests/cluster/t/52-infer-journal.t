#!/bin/bash
# dlrt-infer's journal: both coordinators lost (kill -9) mid-job, then
# `dlrt-infer pool restart`; then the same with the journal cut in the middle
# of its last record; then lost again and the coordinator's element requeued. After each: every query answered exactly once, answers
# equal to a failure-free (single-process) run, no answer the journal held was
# computed again, the torn tail reported and cut, and the pool serving again.
# The timeline files survive each restart: appended to, on the pool's clock.
. "$(dirname "$0")/../lib.sh"
. "$HERE/infer_pool.sh"

N1=10000 N2=20000 N3=8000
ref 1 deepcnn 0 $N1
ref 2 lenet5 10000 $N2
ref 3 deepcnn 30000 $N3
ok "$([ -s "$WORK/ref1.sorted" ] && [ -s "$WORK/ref3.sorted" ]; echo $?)" \
	"single-process references for the three jobs"

epoch() { field epoch; }
# Kills the coordinator and its standby with SIGKILL (stopped first, so the
# standby cannot take over in between).
kill_coordinators() {
	local pid host pids
	pid=$(sed -n 's/^pid=//p' "$POOL/access")
	host=$(sed -n 's/^host=//p' "$POOL/access")
	pids=$pid
	for p in $(pgrep -u "$DLRT_TEST_USER" -f 'dlrt-infer standby'); do
		[ "$(tr '\0' '\n' </proc/"$p"/environ 2>/dev/null | sed -n 's/^DLRT_INFER_POOL=//p')" = "$POOL" ] &&
			pids="$pids $p"
	done
	# shellcheck disable=SC2086
	kill -STOP $pids 2>/dev/null
	# shellcheck disable=SC2086
	kill -9 $pids 2>/dev/null
	diag "killed the coordinator (pid $pid on $host) and its standby (pids: $pids)"
}
# element_log_like REGEX DESCRIPTION: `like` on element 0's log, once it shows
# REGEX (at most 10 s). The element runs `srun dlrt-infer pool run`, so its
# lines reach the file through srun's I/O relay, which can lag behind the
# access record the coordinator writes itself (seen in CI: the epoch served,
# the log three lines behind).
element_log_like() {
	local f="$POOL/element-${R}_0.log"
	wait_until 10 grep -sEq -- "$1" "$f"
	like "$(cat "$f")" "$1" "$2"
}
epoch_above() { [ "$(epoch)" -gt "$1" ] 2>/dev/null && infer status >/dev/null 2>&1; }
wait_epoch_above() { # wait_epoch_above E: until a coordinator of a later epoch answers
	wait_until -i 0.25 120 epoch_above "$1"
}

# The restart by hand is what this tests: no worker takes over by itself
# (that is t/83-infer-double-failure.t).
ARRAY=$(as_user env DLRT_INFER_POOL="$POOL" DLRT_INFER_WORKER_TAKEOVER_MS=0 \
	dlrt-infer pool start --workers 3 -- -c 2)
like "$ARRAY" '^[0-9]+$' "a pool of 3 workers (array $ARRAY)"
wait_until -i 0.5 120 eval '[ "$(workers_up)" -ge 3 ]'
is "$(workers_up)" 3 "3 workers joined"
J1=$(infer submit --model deepcnn --inputs $IN --count $N1 --batch 10)
J2=$(infer submit --model lenet5 --inputs $IN --first 10000 --count $N2 --batch 20)
is "$J1 $J2" "1 2" "two jobs submitted"
d1=0
wait_until -i 0.05 60 eval 'd1=$(done_of 1); [ "${d1:=0}" -ge $((N1 / 5)) ]'
ok "$([ "$d1" -ge $((N1 / 5)) ] && [ "$d1" -lt "$N1" ]; echo $?)" "job 1 is under way ($d1/$N1)"
d2=$(done_of 2)
E=$(epoch)

# 1. Both coordinators lost mid-job.
kill_coordinators
timeline_snapshot
sleep 1
ok "$([ -s "$POOL/journal" ]; echo $?)" "the journal survives its coordinator"
is "$(stat -c %a "$POOL/journal")" 600 "the journal is private (0600)"
R=$(infer pool restart -- -c 2)
like "$R" '^[0-9]+$' "pool restart submitted a new coordinator (job $R)"
wait_epoch_above "$E"
ok $? "a coordinator of a later epoch serves the pool ($E -> $(epoch))"
element_log_like "journal: [0-9]+ records replayed" \
	"the new coordinator replayed the journal"
element_log_like "resumed 2 jobs" "and resumed both jobs"
timeline_kept restart "restart:$(epoch)"
resumed() { sed -n "s/.*job $1 resumes with \([0-9]*\) of.*/\1/p" "$POOL"/element-"${R}"_0.log; }
a1=$(resumed 1) a2=$(resumed 2)
ok "$([ "${a1:-0}" -ge "$d1" ] && [ "${a2:-0}" -ge "$d2" ]; echo $?)" \
	"the jobs resume from $a1 and $a2 recorded answers (>= $d1 and $d2 seen before the kill)"
wait_until -i 0.25 60 eval '[ "$(workers_up)" -ge 3 ]'
is "$(workers_up)" 3 "the 3 workers reconnected on their own"
infer wait 1 >"$WORK/w1"
is $? 0 "job 1 completed after the restart"
infer wait 2 >"$WORK/w2"
is $? 0 "job 2 completed after the restart"
exactly_once 1 $N1 1
exactly_once 2 $N2 2
# Answers the journal held are never computed again: the workers of the new
# coordinator answered at most the tasks left plus those in flight at the kill.
s=$(infer status | awk '/^WKR/ { w = 1; next } w { s += $5 } END { print s + 0 }')
left=$(((N1 - a1) / 10 + (N2 - a2) / 20))
ok "$([ "$s" -le "$left" ]; echo $?)" "the new coordinator's workers ran $s tasks (<= $left left)"

# 2. Lost again, with the journal torn in the middle of its last record.
J3=$(infer submit --model deepcnn --inputs $IN --first 30000 --count $N3 --batch 10)
is "$J3" 3 "job 3 submitted"
wait_until -i 0.05 60 eval 'd3=$(done_of 3); [ "${d3:=0}" -ge $((N3 / 4)) ]'
E=$(epoch)
kill_coordinators
sleep 0.5
size=$(stat -c %s "$POOL/journal")
truncate -s $((size - 5)) "$POOL/journal"
diag "journal cut from $size to $((size - 5)) bytes"
R=$(infer pool restart -- -c 2)
wait_epoch_above "$E"
ok $? "restarted again ($E -> $(epoch))"
element_log_like "journal: cut a torn or corrupt tail at byte [0-9]+ .*torn" \
	"the torn record was detected, reported and cut"
cut_at=$(grep -o 'tail at byte [0-9]*' "$POOL"/element-"${R}"_0.log | grep -o '[0-9]*$')
ok "$([ "$cut_at" -lt $((size - 5)) ]; echo $?)" "it was cut at the last whole record (byte $cut_at)"
infer wait 3 >"$WORK/w3"
is $? 0 "job 3 completed"
exactly_once 3 $N3 3
exactly_once 1 $N1 1
infer status >"$WORK/st"
like "$(grep -E '^2 ' "$WORK/st")" " done +$N2/$N2" "job 2 is still done with $N2 answers"

# 3. Lost again mid-job; this time Slurm requeues the coordinator's element
# (scontrol requeue; its start is moved to a second from now, skipping Slurm's
# requeue delay).
J4=$(infer submit --model deepcnn --inputs $IN --first 30000 --count $N3 --batch 10)
is "$J4" 4 "job 4 submitted"
wait_until -i 0.05 60 eval 'd4=$(done_of 4); [ "${d4:-0}" -ge $((N3 / 4)) ]'
ok "$([ "${d4:-0}" -ge $((N3 / 4)) ] && [ "$d4" -lt $N3 ]; echo $?)" "job 4 under way ($d4/$N3)"
E=$(epoch)
kill_coordinators
# Slurm revokes the ended run's credential at the second it ends: a run
# started within that second is refused ("Job credential revoked").
sleep 2
scontrol requeue "${R}_0" 2>"$WORK/rq.err"
ok $? "scontrol requeue ${R}_0 (the coordinator's element) $(cat "$WORK/rq.err")"
wait_until -i 0.25 20 eval 'squeue -h -j "${R}_0" -t PD 2>/dev/null | grep -q .'
scontrol update JobId="${R}_0" StartTime=now+1
wait_epoch_above "$E"
ok $? "the requeued element 0 serves the pool ($E -> $(epoch))"
element_log_like "journal: [0-9]+ records replayed" \
	"it replayed the journal"
element_log_like "job 4 resumes with [0-9]+ of $N3" "and resumed job 4"
infer wait 4 >"$WORK/w4"
is $? 0 "job 4 completed"
exactly_once 4 $N3 3

# 4. Serving again: a new job runs and the pool stops cleanly.
J5=$(infer submit --model lenet5 --inputs $IN --count 500 --batch 50)
infer wait "$J5" >"$WORK/w5"
is $? 0 "a new job completes on the restarted pool"
infer pool stop >/dev/null
ok $? "pool stop"
wait_until -i 0.5 60 eval '[ -z "$(squeue -h -j "$ARRAY,$R" 2>/dev/null)" ]'
is "$(squeue -h -j "$ARRAY,$R" 2>/dev/null | wc -l)" 0 "every element of the pool ended"

# The timeline files over the whole run: one header, the pool's time never
# going backwards across the four coordinators, job 1's submission kept.
timeline_end_checks restart 3
done_testing
