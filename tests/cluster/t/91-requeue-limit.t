#!/bin/bash
# --dl-signal and --dl-requeue at the time limit. A real torch DDP job on 2 nodes
# (examples/torch_ddp_requeue.py: saves on SIGUSR1, loads when present) with a
# one-minute limit gets the warning, checkpoints, is requeued under the same id and
# resumes to exactly the parameters of an uninterrupted run; every attempt sees the
# same DLRT_CHECKPOINT_DIR (the user's, 0700) and its own DLRT_ATTEMPT. The
# uninterrupted run itself, with --dl-requeue, finishes in time and is never
# requeued. A job whose program ignores the warning is requeued by dlrt before the
# limit kills it (a TIMEOUT job is never requeued), and --dl-requeue=1 bounds it:
# the second attempt runs into its limit and ends TIMEOUT. On Slurm 25.11 and later that
# job asks for the expedited requeue (--requeue=expedite, which the test cluster allows):
# it is requeued the same way, dlrt's bound holds, and its next attempt is never held
# pending for Slurm's requeue delay (Reason=BeginTime), which every other requeue is.
. "$(dirname "$0")/../lib.sh"

if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	echo "1..0 # SKIP needs python3-torch (tests/cluster/install-deps.sh)"
	exit 0
fi
cp "$HERE/../../examples/torch_ddp_requeue.py" "$WORK/train.py"

submit() { as_user sbatch --parsable --open-mode=append -o "$WORK/job-%j.out" "$@" 2>"$WORK/sbatch.err"; }
record() { cat "$WORK"/.dlrt/jobs/"$1"/dlrt-retries.log 2>/dev/null; }

cat >"$WORK/train.sh" <<'JOB'
#!/bin/bash
echo "batch attempt=$DLRT_ATTEMPT restart=${SLURM_RESTART_COUNT:-0} ckpt=$DLRT_CHECKPOINT_DIR"
srun --kill-on-bad-exit=1 bash -c 'echo "task $SLURM_PROCID attempt=$DLRT_ATTEMPT ckpt=$DLRT_CHECKPOINT_DIR"; exec /usr/bin/python3 train.py "$@"' task "$@"
JOB
chmod 0755 "$WORK/train.sh"

# ---- 1. The uninterrupted run: finishes within its limit, never requeued --------
ref=$(submit -N2 -n2 -c2 -t 10 --dl-runtime=torch --dl-requeue=3 "$WORK/train.sh" --steps 100)
ok $? "the uninterrupted run submitted (job $ref)"
wait_done "$ref" 300
is "$(job_field "$ref" JobState)" COMPLETED "it completed"
is "$(job_field "$ref" Restarts)" 0 "a job that finishes within its limit is not requeued"
want=$(grep -oE 'params_sha256=[0-9a-f]{64}' "$WORK/job-$ref.out")
like "$want" '^params_sha256=' "it printed its parameters' hash" || fail_detail "$(cat "$WORK/job-$ref.out")"
unlike "$(record "$ref")" 'warning|requeued' "its record has no warning and no requeue"

# ---- 2. The same, with a one-minute limit: warned, checkpointed, requeued --------
# 100 steps of 0.4 s do not fit in the 30 s before the warning (USR1@30). Two
# attempts do on a quiet machine; on a loaded one torch's start takes much of each
# attempt's 30 s, so the bound leaves room for six.
job=$(submit -N2 -n2 -c2 -t 1 --dl-runtime=torch --dl-signal=USR1@30 --dl-requeue=5 \
	"$WORK/train.sh" --steps 100 --sleep 0.4)
ok $? "sbatch -t 1 --dl-signal=USR1@30 --dl-requeue=5 (job $job)"
wait_done "$job" 720
out=$(cat "$WORK/job-$job.out")
is "$(job_field "$job" JobState)" COMPLETED "the requeued job completed" || fail_detail "$out"
restarts=$(job_field "$job" Restarts)
ok "$([ "${restarts:-0}" -ge 1 ] && [ "$restarts" -le 5 ]; echo $?)" "requeued 1 to 5 times (Restarts=$restarts)"
like "$out" 'checkpointed at step [0-9]+ attempt=0' "attempt 0 checkpointed on the warning" || fail_detail "$out"
like "$out" 'resumed from step [0-9]+ attempt=1' "attempt 1 resumed from the checkpoint"
got=$(grep -oE 'params_sha256=[0-9a-f]{64}' <<<"$out" | tail -1)
is "$got" "$want" "the resumed run ends with exactly the uninterrupted run's parameters"
is "$(grep -oE 'ckpt=[^ ]*' <<<"$out" | sort -u)" "ckpt=$WORK/.dlrt/checkpoints/$job" \
	"batch script and tasks of every attempt see the same DLRT_CHECKPOINT_DIR"
is "$(stat -c '%U %a' "$WORK/.dlrt/checkpoints/$job")" "$DLRT_TEST_USER 700" "the folder is the user's, 0700"
like "$(grep -E '^task 1 ' <<<"$out" | tr '\n' ' ')" 'task 1 attempt=0 .*task 1 attempt=1 ' \
	"each attempt's tasks get their DLRT_ATTEMPT"
rec=$(record "$job")
like "$rec" 'attempt=0 warning signal=USR1 reason=time-limit left=[0-9]+s node=n[1-3] step=0 processes=1' \
	"the record says when each node warned its task" || fail_detail "$rec"
like "$rec" 'attempt=0 requeued reason=ended-after-warning next-attempt=1' "and that the job was requeued"
# The last attempt completed the job: never requeued. (Whether it also finished
# before the warning depends on the machine's load: on a busy one the last of the
# three requeues may be warned too, and then ends "no requeue left".)
[ "${restarts:-0}" -ge 1 ] && unlike "$rec" "attempt=$restarts requeued" \
	"the last attempt completed the job: no requeue after it"
listing=$(as_user dlrt-logs --dir "$WORK/.dlrt/jobs" "$job" 2>&1)
like "$listing" 'requeued' "dlrt-logs shows the requeue" || fail_detail "$listing"

# ---- 3. A program that ignores the warning: requeued before the limit, N bounds it
cat >"$WORK/stubborn.sh" <<'JOB'
#!/bin/bash
echo "batch attempt=$DLRT_ATTEMPT"
srun bash -c 'trap "echo task $SLURM_PROCID ignores USR1 attempt=$DLRT_ATTEMPT" USR1; while :; do sleep 1; done'
JOB
chmod 0755 "$WORK/stubborn.sh"
v=$(srun --version | sed -n 's/^slurm[^ ]* \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
expedite=()
[ "${v% *}" -gt 25 ] || { [ "${v% *}" -eq 25 ] && [ "${v#* }" -ge 11 ]; } && expedite=(--requeue=expedite)
job=$(submit -N1 -n1 -t 1 "${expedite[@]}" --dl-runtime=torch --dl-signal=USR1@30 --dl-requeue=1 "$WORK/stubborn.sh")
ok $? "a job that ignores the warning (job $job${expedite:+, ${expedite[*]}})" || fail_detail "$(cat "$WORK/sbatch.err")"
wait_done "$job" 420
out=$(cat "$WORK/job-$job.out")
rec=$(record "$job")
is "$(job_field "$job" Restarts)" 1 "requeued once (--dl-requeue=1)" || fail_detail "$rec"
is "$(job_field "$job" JobState)" TIMEOUT "the second attempt ran into its limit"
like "$(tr '\n' ' ' <<<"$out")" 'ignores USR1 attempt=0.*ignores USR1 attempt=1' "both attempts got the warning"
like "$rec" 'attempt=0 requeued reason=time-limit left=[0-9]+s next-attempt=1' \
	"dlrt requeued attempt 0 before its limit" || fail_detail "$rec"
like "$rec" 'attempt=1 still running [0-9]+ s before its time limit: no requeue left \(--dl-requeue=1\)' \
	"and said that attempt 1 had no requeue left"
if [ ${#expedite[@]} -gt 0 ]; then
	is "$(job_field "$job" ExpeditedRequeue)" Yes "Slurm ${v/ /.}: the job asked for the expedited requeue"
	is "$WAIT_DONE_HELD" 0 "its next attempt was never held for Slurm's requeue delay (Reason=BeginTime)"
fi
done_testing
