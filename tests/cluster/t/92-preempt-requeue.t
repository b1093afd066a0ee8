#!/bin/bash
# Preemption: the torch DDP job of t/91 (examples/torch_ddp_requeue.py) in the
# partition low (PreemptMode=REQUEUE, GraceTime=45 in the test cluster) is
# preempted by a job of the partition urgent. Slurm sends SIGTERM at the start of
# the grace time; this job ignores it (--only-usr1, and the script traps it), so
# that what makes it save is --dl-signal's warning (reason=preemption in the job's
# record), sent within seconds. It checkpoints, is requeued exactly once (by dlrt
# or by Slurm, never both), resumes after the urgent job and ends with exactly the
# parameters of an uninterrupted run.
. "$(dirname "$0")/../lib.sh"

if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	echo "1..0 # SKIP needs python3-torch (tests/cluster/install-deps.sh)"
	exit 0
fi
cp "$HERE/../../examples/torch_ddp_requeue.py" "$WORK/train.py"

submit() { as_user sbatch --parsable --open-mode=append -o "$WORK/job-%j.out" "$@" 2>"$WORK/sbatch.err"; }

cat >"$WORK/train.sh" <<'JOB'
#!/bin/bash
trap '' TERM
echo "batch attempt=$DLRT_ATTEMPT ckpt=$DLRT_CHECKPOINT_DIR"
srun bash -c 'exec /usr/bin/python3 train.py "$@"' task "$@"
JOB
chmod 0755 "$WORK/train.sh"

# 300 steps of 0.4 s (2 minutes) outlast the preemption, which Slurm 24.11 may
# start only at its next scheduling pass, tens of seconds after the urgent job's
# submission (at 100 steps the training once ended first, and one node's task was
# never warned).
ref=$(submit -N2 -n2 -c2 --dl-runtime=torch "$WORK/train.sh" --steps 300)
ok $? "the uninterrupted run (job $ref)"
wait_done "$ref" 300
want=$(grep -oE 'params_sha256=[0-9a-f]{64}' "$WORK/job-$ref.out")
like "$want" '^params_sha256=' "it printed its parameters' hash" || fail_detail "$(cat "$WORK/job-$ref.out")"

job=$(submit -p low --exclusive -N2 -n2 -c2 -t 10 --dl-runtime=torch --dl-requeue=2 "$WORK/train.sh" \
	--steps 300 --sleep 0.4 --only-usr1)
ok $? "the training job in the preemptable partition (job $job)"
wait_until -i 0.5 120 grep -sq '^step 10 ' "$WORK/job-$job.out"
like "$(cat "$WORK/job-$job.out")" '^step 10 ' "it trains"
urgent=$(as_user sbatch --parsable -p urgent --exclusive -N3 -o /dev/null --wrap 'sleep 2' 2>"$WORK/sbatch.err")
ok $? "a job of the urgent partition needs all three nodes (job $urgent)"
wait_done "$urgent" 300
is "$(job_field "$urgent" JobState)" COMPLETED "the urgent job ran (it preempted the training job)"
wait_done "$job" 420
out=$(cat "$WORK/job-$job.out")
rec=$(cat "$WORK/.dlrt/jobs/$job/dlrt-retries.log" 2>/dev/null)
is "$(job_field "$job" JobState)" COMPLETED "the preempted job completed" || fail_detail "$out"
is "$(job_field "$job" Restarts)" 1 "it was requeued exactly once" || fail_detail "$rec"
like "$rec" 'attempt=0 warning signal=USR1 reason=preemption .*node=n[1-3] step=0 processes=1' \
	"its tasks got --dl-signal's warning when Slurm started to preempt it" || fail_detail "$rec"
is "$(grep -oE 'attempt=0 warning .*node=n[1-3] step=0' <<<"$rec" | grep -oE 'node=n[1-3]' | sort -u | wc -l)" 2 \
	"on both nodes"
like "$out" 'checkpointed at step [0-9]+ attempt=0' "attempt 0 checkpointed" || fail_detail "$out"
like "$out" 'resumed from step [0-9]+ attempt=1' "attempt 1 resumed from the checkpoint"
is "$(grep -oE 'params_sha256=[0-9a-f]{64}' <<<"$out" | tail -1)" "$want" \
	"it ends with exactly the uninterrupted run's parameters"
done_testing
