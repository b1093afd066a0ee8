#!/bin/bash
# --dl-retries=N: a task killed by a signal, and a node whose slurmd stops mid-job,
# get the node recorded and excluded and the job requeued; the next attempt runs on
# the remaining nodes by itself, and the attempt number reaches the tasks
# (DLRT_ATTEMPT, DMLC_NUM_ATTEMPT) with RUN_ID unique per attempt.
. "$(dirname "$0")/../lib.sh"
CL=$HERE/cluster.sh

# wait_state JOB REGEX SECONDS: until the job's state matches.
state_is() { [[ "$(job_field "$1" JobState)" =~ $2 ]]; }
wait_state() {
	wait_until -i 1 "$3" state_is "$1" "$2" && return 0
	diag "job $1 still $(job_field "$1" JobState) after $3 s (wanted $2)"
	return 1
}
# Append: each attempt of a requeued job writes the same output file. (wait_done,
# lib.sh, moves a requeued job's start to now, as the admin.)
submit() { as_user sbatch --parsable --open-mode=append -o "$WORK/job-%j.out" "$@" 2>"$WORK/sbatch.err"; }

# ---- 1. A task killed by a signal (SIGKILL, as the OOM killer does) ----------------
cat >"$WORK/sig.sh" <<'JOB'
#!/bin/bash
echo "batch attempt=${SLURM_RESTART_COUNT:-0} nodes=$SLURM_JOB_NODELIST"
srun -N2 -n2 bash -c 'echo "caffe2 rank=$DLRT_RANK attempt=$DLRT_ATTEMPT node=$(hostname) run=$RUN_ID"
	[ "$DLRT_ATTEMPT" = 0 ] && [ "$DLRT_NODE_RANK" = 1 ] && kill -9 $$; true'
srun -n3 --dl-runtime=mxnet --dl-servers=1 bash -c \
	'echo "mxnet rank=$DLRT_RANK dmlc_attempt=$DMLC_NUM_ATTEMPT node=$(hostname)"'
JOB
chmod 0755 "$WORK/sig.sh"
job=$(submit -N2 -n3 --dl-runtime=caffe2 --dl-retries=1 --dl-log-dir="$WORK/logs" "$WORK/sig.sh")
ok $? "sbatch --dl-retries=1 (job $job)"
wait_done "$job" 120
out=$(cat "$WORK/job-$job.out")
is "$(job_field "$job" JobState)" COMPLETED "the job finished by itself after one requeue"
is "$(job_field "$job" Restarts)" 1 "Slurm counted one restart"
bad=$(grep -E '^caffe2 rank=1 attempt=0 ' <<<"$out" | sed 's/.*node=\([^ ]*\).*/\1/')
ok "$([ -n "$bad" ]; echo $?)" "attempt 0: the task on the second node ($bad) was killed"
is "$(job_field "$job" ExcNodeList)" "$bad" "that node is now excluded"
a1=$(grep -E '^caffe2 rank=[01] attempt=1 ' <<<"$out")
is "$(wc -l <<<"$a1")" 2 "attempt 1 ran both caffe2 tasks with DLRT_ATTEMPT=1"
unlike "$a1" "node=$bad " "attempt 1 avoided $bad"
is "$(grep -c "run=dlrt-$job-0-1\$" <<<"$a1")" 2 "RUN_ID of attempt 1 is dlrt-$job-0-1"
like "$out" "caffe2 rank=0 attempt=0 .* run=dlrt-$job-0-0" "RUN_ID of attempt 0 was dlrt-$job-0-0"
is "$(grep -c '^mxnet rank=[0-2] dmlc_attempt=1 ' <<<"$out")" 3 "DMLC_NUM_ATTEMPT=1 in every mxnet task"
rlog=$(cat "$WORK/logs/$job/dlrt-retries.log" 2>/dev/null)
like "$rlog" "attempt=0 node=$bad step=0 signal=9" "the retry log records the node and the signal"
like "$rlog" "attempt=0 failed-nodes=$bad requeued exclude=$bad next-attempt=1" "and the requeue"
like "$(as_user dlrt-logs --dir "$WORK/logs" --merge "$job")" \
	"Z 0 worker-0 dlrt end task 1: killed by signal 9" "dlrt-logs shows how the task ended"
is "$(stat -c %U "$WORK/logs/$job/dlrt-retries.log")" "$DLRT_TEST_USER" "the retry log is the user's"

# ---- 2. Retries used up: no second requeue --------------------------------------
cat >"$WORK/always.sh" <<'JOB'
#!/bin/bash
srun bash -c '[ "$DLRT_NODE_RANK" = 1 ] && kill -9 $$; true'
JOB
chmod 0755 "$WORK/always.sh"
job2=$(submit -N2 -n2 --dl-runtime=torch --dl-retries=1 --dl-log-dir="$WORK/logs" "$WORK/always.sh")
wait_done "$job2" 120
is "$(job_field "$job2" Restarts)" 1 "a job that fails every time is requeued exactly --dl-retries times"
like "$(cat "$WORK/logs/$job2/dlrt-retries.log")" "attempt=1 failed-nodes=[^ ]+ no retry left \(--dl-retries=1\)" \
	"and the retry log says why it stopped"

# ---- 3. A node's slurmd stops mid-job --------------------------------------------
cat >"$WORK/node.sh" <<'JOB'
#!/bin/bash
echo "batch attempt=${SLURM_RESTART_COUNT:-0} nodes=$SLURM_JOB_NODELIST"
if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then secs=120; else secs=0; fi
srun bash -c "echo torch rank=\$RANK attempt=\$DLRT_ATTEMPT node=\$(hostname); sleep $secs"
JOB
chmod 0755 "$WORK/node.sh"
job3=$(submit -N2 -n2 --dl-runtime=torch --dl-retries=2 "$WORK/node.sh")
wait_state "$job3" '^RUNNING$' 30
wait_until -i 0.5 15 grep -sq 'torch rank=1' "$WORK/job-$job3.out"
victim=$(sed -n 's/^torch rank=1 attempt=0 node=//p' "$WORK/job-$job3.out")
ok "$([ -n "$victim" ]; echo $?)" "attempt 0 runs; its second node is $victim"
"$CL" stop-node "$victim"
ok $? "stopped slurmd on $victim"
wait_done "$job3" 150
"$CL" start-node "$victim"
out3=$(cat "$WORK/job-$job3.out")
is "$(job_field "$job3" JobState)" COMPLETED "the job finished on the remaining nodes by itself"
is "$(job_field "$job3" ExcNodeList)" "$victim" "the failed node is excluded"
a1=$(grep '^torch rank=[01] attempt=1 ' <<<"$out3")
is "$(wc -l <<<"$a1")" 2 "attempt 1 ran both tasks with DLRT_ATTEMPT=1"
unlike "$a1" "node=$victim\$" "and avoided $victim"
uhome=$WORK # the job's HOME (as_user's): slurmstepd looks up no passwd entry
like "$(cat "$uhome/.dlrt/jobs/$job3/dlrt-retries.log" 2>/dev/null)" \
	"attempt=0 failed-nodes=$victim requeued exclude=$victim next-attempt=1" \
	"without --dl-log-dir the retry log is in ~/.dlrt/jobs/JOB"

# The cluster gets its node back for the tests that follow.
node_serves() { [[ "$(sinfo -h -p debug -n "$1" -o %t)" =~ ^(idle|mix|alloc)$ ]]; }
wait_until -i 1 120 node_serves "$victim"
like "$(sinfo -h -p debug -n "$victim" -o %t)" '^(idle|mix|alloc)$' "$victim is back in service"
done_testing
