#!/bin/bash
# --dl-hang-timeout: a real 4-task torch step (gloo, 2 nodes) where rank 3 stops
# taking part (it sleeps in a function of its own while the others wait for it in
# an allreduce) ends within the timeout plus a bounded margin, with each task's
# stack (rank 3's Python traceback through faulthandler, in stuck_here), one
# line that says why, and one line naming rank 3 as the task that is not where
# the others are. A step that is quiet but touches DLRT_HEARTBEAT, and one
# quiet for less than the timeout, are not ended. A batch job with
# --dl-requeue whose step hangs is requeued and its next attempt runs again
# from the checkpoint the hung one saved.
. "$(dirname "$0")/../lib.sh"

if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	echo "1..0 # SKIP needs python3-torch (tests/cluster/install-deps.sh)"
	exit 0
fi
cat >"$WORK/hang.py" <<'PY'
import time, torch, torch.distributed as dist
dist.init_process_group("gloo")
r = dist.get_rank()
def stuck_here():
    while True:
        time.sleep(1)
for i in range(1000):
    if r == 3 and i == 5:
        stuck_here()
    t = torch.ones(1)
    dist.all_reduce(t)
    print(f"rank {r} step {i} at {time.time():.0f}", flush=True)
    time.sleep(0.5)
PY

T=30
start=$SECONDS
run_srun -N2 -n4 -c2 --dl-runtime=torch --dl-hang-timeout=$T /usr/bin/python3 "$WORK/hang.py"
end=$(date +%s)
all=$(cat "$OUT" "$ERR")
ok "$([ "$RC" -ne 0 ]; echo $?)" "the hung step ended with an error (rc $RC)"
last=$(grep -oE '^rank 0 step [0-9]+ at [0-9]+' "$OUT" | tail -1 | awk '{print $NF}')
ok "$([ -n "$last" ] && [ $((end - last)) -le $((T + 90)) ]; echo $?)" \
	"it ended $((end - ${last:-0})) s after the last progress (timeout $T s, margin 90 s)" ||
	fail_detail "$(tail -5 "$OUT")"
is "$(grep -c 'dlrt: step [0-9]*\.0: no task showed progress .* ending the step' <<<"$all")" 1 \
	"one line says why the step ended" || fail_detail "$(tail -30 "$ERR")"
like "$all" 'dlrt: hang: task 3 \(worker\) on n[12], pid [0-9]+: no progress' \
	"task 3's report names its task, role and node"
like "$all" 'line [0-9]+ in stuck_here' "rank 3's Python stack shows where it is (faulthandler)" ||
	fail_detail "$(grep -A8 'hang: task 3' <<<"$all" | head -20)"
like "$all" 'all_reduce' "the others' stacks show them waiting in the allreduce"
# Ranks 0-2 wait in the allreduce (c10d::Work::wait), rank 3 sleeps.
is "$(grep -c '^dlrt: hang: tasks' <<<"$all")" 1 "one line compares where the tasks are" ||
	fail_detail "$(grep '^dlrt: hang:' <<<"$all" | grep -v 'stacks follow')"
like "$all" 'dlrt: hang: tasks 0,1,2 are in [^ ;]+; this task is elsewhere: task 3 \(worker on n[12]\) in [^ ]+' \
	"it names task 3 as the one not where the others are" ||
	fail_detail "$(grep -E '^dlrt: hang: (tasks|all|the tasks) ' <<<"$all")"
diag "$(grep -m1 '^dlrt: hang: tasks ' <<<"$all")"
diag "took $((SECONDS - start)) s"

run_srun -N2 -n2 --dl-runtime=torch --dl-hang-timeout=10 bash -c \
	'echo start; for i in 1 2 3 4 5; do sleep 4; touch "$DLRT_HEARTBEAT"; done; sleep 5; echo done'
is "$RC" 0 "a step quiet for 25 s that touches DLRT_HEARTBEAT runs to its end" ||
	fail_detail "$(cat "$ERR")"
is "$(grep -c '^done$' "$OUT")" 2 "both tasks finished"
unlike "$(cat "$ERR")" 'hang' "no hang is reported"

# ---- A hung step with --dl-requeue: the job runs again from its checkpoint ------
# Attempt 0 saves a checkpoint and hangs; the hang ends the step, the record
# says so, and the batch step's end requeues the job (as after the warning).
# wait_done (lib.sh) moves the requeued job's start to now, as the admin.
cat >"$WORK/hangjob.sh" <<'JOB'
#!/bin/bash
srun bash -c 'ck=$DLRT_CHECKPOINT_DIR/state.$SLURM_PROCID
if [ -f "$ck" ]; then echo "task $SLURM_PROCID resumed from $(cat "$ck") attempt=$DLRT_ATTEMPT"; exit 0; fi
echo step-7 >"$ck"; echo "task $SLURM_PROCID saved step-7 attempt=$DLRT_ATTEMPT; hangs"
exec sleep 100000'
JOB
chmod 0755 "$WORK/hangjob.sh"
job=$(as_user sbatch --parsable --open-mode=append -o "$WORK/hangjob-%j.out" -N1 -n1 -t 10 \
	--dl-runtime=torch --dl-hang-timeout=10 --dl-requeue=1 "$WORK/hangjob.sh")
ok $? "a job whose step hangs, with --dl-requeue=1 (job $job)"
wait_done "$job" 400
out=$(cat "$WORK/hangjob-$job.out")
rec=$(cat "$WORK"/.dlrt/jobs/"$job"/dlrt-retries.log 2>/dev/null)
is "$(job_field "$job" JobState)" COMPLETED "it completed" || fail_detail "$out"
is "$(job_field "$job" Restarts)" 1 "requeued once"
like "$out" 'no task showed progress .* ending the step' "attempt 0's step was ended as hung"
like "$rec" 'attempt=0 warning signal=none reason=hang step=0' "the record says why" ||
	fail_detail "$rec"
like "$rec" 'attempt=0 requeued reason=ended-after-warning next-attempt=1' "and that it requeued the job"
like "$out" 'task 0 resumed from step-7 attempt=1' "attempt 1 ran again from the checkpoint" ||
	fail_detail "$out"
done_testing
