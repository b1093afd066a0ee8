#!/bin/bash
# --dl-log-dir in a shared folder (mode 1777) where another user ($STRANGER) created
# the next job's folder first (job ids are easy to guess from squeue): the job still
# runs, its logs land in a folder of the user's own with a name nobody could guess
# (DIR/<job>.<uid>.<random>), stderr says where in one line, dlrt-logs finds them,
# and the stranger's folder gets nothing. The same for a --dl-retries batch job.
. "$(dirname "$0")/../lib.sh"

shared=$WORK/scratch
mkdir "$shared" && chmod 1777 "$shared"
uid=$(id -u "$DLRT_TEST_USER")
uid2=$(id -u "$STRANGER")

# ---- 1. An srun step: DIR/<job> and DIR/<job>/0 are the stranger's, open to all ------
next=$(next_job)
as_stranger_sh "mkdir -p '$shared/$next/0' && chmod 0777 '$shared/$next' '$shared/$next/0'"
ok $? "$STRANGER pre-created $shared/$next and $shared/$next/0 (mode 0777)"
run_srun -N2 -n2 --dl-runtime=torch --dl-log-dir="$shared" bash -c 'echo "hello $RANK job=$SLURM_JOB_ID"'
is "$RC" 0 "the step runs anyway" || fail_detail "$(cat "$ERR")"
is "$(sed -n 's/^hello 0 job=//p' "$OUT")" "$next" "as the predicted job"
is "$(srun_errors | grep -c 'dlrt: ')" 1 "stderr has one dlrt line" || fail_detail "$(cat "$ERR")"
like "$(srun_errors)" "^dlrt: --dl-log-dir: $shared/$next belongs to user $STRANGER \\(uid $uid2\\), not to you: .*logs are in $shared/$next\\.$uid\\.[0-9a-f]{32}/ instead" \
	"naming the stranger's folder and where the logs are"
alt=$(srun_errors | grep -oE "$shared/$next\\.$uid\\.[0-9a-f]{32}" | head -1)
ok "$([ -n "$alt" ] && [ -d "$alt" ]; echo $?)" "that folder exists ($alt)"
is "$(stat -c '%U %a' "$alt" "$alt/0" 2>&1 | sort -u)" "$DLRT_TEST_USER 750" "it is the user's, mode 0750"
like "$(cat "$alt/0/worker-1.log" 2>&1)" "Z out hello 1 job=$next" "the task's log is there"
is "$(find "$shared/$next" -mindepth 1 -not -type d | wc -l)" 0 "the stranger's folder received nothing"
list=$(as_user dlrt-logs --dir "$shared" "$next" 2>"$WORK/logs.err")
is "$(grep -cE '^0 +worker-[01] +3 ' <<<"$list")" 2 "dlrt-logs JOB lists both tasks" ||
	fail_detail "$list $(cat "$WORK/logs.err")"
is "$(as_user dlrt-logs --dir "$shared" --merge "$next" 2>/dev/null | grep -c ' out hello ')" 2 \
	"dlrt-logs --merge JOB merges them"

# ---- 2. dlrt-logs never reads a folder of the stranger's named like a fallback --------
as_stranger_sh "mkdir -p '$shared/$next.$uid.00000000000000000000000000000000/0' &&
	echo '2026-01-01T00:00:00.000000Z out planted' >'$shared/$next.$uid.00000000000000000000000000000000/0/worker-0.log'"
is "$(as_user dlrt-logs --dir "$shared" --merge "$next" 2>/dev/null | grep -c planted)" 0 \
	"a stranger's look-alike folder is not merged"

# ---- 3. A --dl-retries batch job whose job folder the stranger took first --------------
next=$(next_job)
as_stranger_sh "mkdir -p '$shared/$next' && chmod 0777 '$shared/$next'"
ok $? "$STRANGER pre-created $shared/$next"
job=$(as_user sbatch --parsable -N1 -o "$WORK/job-%j.out" -e "$WORK/job-%j.err" --dl-retries=1 \
	--dl-log-dir="$shared" --wrap 'srun -n1 --dl-runtime=torch bash -c "echo batch step ran"')
is "$job" "$next" "the job got the predicted id"
job_ended() { [[ "$(job_field "$1" JobState)" =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT)$ ]]; }
wait_until -i 1 180 job_ended "$job"
sleep 3 # the batch step's --dl-retries decision ends within its bound
is "$(job_field "$job" JobState)" COMPLETED "the job completed" ||
	fail_detail "$(cat "$WORK/job-$job.err" "$WORK/job-$job.out" 2>&1)"
is "$(job_field "$job" Restarts)" 0 "and was not requeued"
like "$(cat "$WORK/job-$job.err" 2>&1)" "^dlrt: --dl-log-dir: $shared/$next belongs to user $STRANGER .*logs are in $shared/$next\\.$uid\\.[0-9a-f]{32}/ instead" \
	"the job's stderr says where its logs are"
alt=$(grep -ohE "$shared/$next\\.$uid\\.[0-9a-f]{32}" "$WORK/job-$job.err" | head -1)
like "$(as_user dlrt-logs --dir "$shared" "$job" 2>&1)" "^0 +worker-0 +3 " "dlrt-logs JOB lists the step"
like "$(grep -h "dlrt: --dl-retries: .*job $job" "$DLRT_CLUSTER_DIR"/log/slurmd-*.log)" \
	"$shared/$next belongs to user $STRANGER .*retry record is in $alt/dlrt-retries.log" \
	"the batch step's retry record went to the same folder (slurmd log)"
is "$(find "$shared/$next" -mindepth 1 | wc -l)" 0 "the stranger's folder received nothing"
done_testing
