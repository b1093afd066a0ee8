#!/bin/bash
# --dl-log-dir in a folder every user can write (scratch, mode 1777): another user
# ($STRANGER) who creates the next job's folders or files first can neither read the
# job's output nor plant a line in its retry record, nor stop the job: it runs, its
# logs go to a folder of its own (DIR/<job>.<uid>.<random>; t/87 covers finding them)
# and one line on stderr names the stranger's path, its owner and where the logs are.
# A normal run there still works, and everything it creates is the user's and closed
# to others.
. "$(dirname "$0")/../lib.sh"

shared=$WORK/scratch
mkdir "$shared" && chmod 1777 "$shared" # owned by root, like a site's scratch space
uid2=$(id -u "$STRANGER")
uid=$(id -u "$DLRT_TEST_USER")

# ---- 1. The stranger pre-creates DIR/<next job>/0/worker-0.log, open to all ----------
next=$(next_job)
as_stranger_sh "mkdir -p '$shared/$next/0' && chmod 0777 '$shared/$next' '$shared/$next/0' &&
	: >'$shared/$next/0/worker-0.log' && chmod 0666 '$shared/$next/0/worker-0.log'"
ok $? "$STRANGER prepared $shared/$next/0/worker-0.log"
run_srun -N1 -n1 --dl-runtime=torch --dl-log-dir="$shared" bash -c 'echo "secret $SLURM_JOB_ID"'
is "$RC" 0 "the step runs anyway" || fail_detail "$(cat "$ERR")"
is "$(srun_errors | grep -c 'dlrt: ')" 1 "with one line" || fail_detail "$(cat "$ERR")"
like "$(srun_errors)" "dlrt: --dl-log-dir: $shared/$next belongs to user $STRANGER \\(uid $uid2\\), not to you: .*logs are in $shared/$next\\.$uid\\.[0-9a-f]{32}/ instead" \
	"naming the folder, its owner and where the logs are"
is "$(stat -c %s "$shared/$next/0/worker-0.log")" 0 "the stranger's file stays empty"
like "$(cat "$shared/$next.$uid".*/0/worker-0.log 2>&1)" "Z out secret $next" "the output is in the job's own folder"

# ---- 2. A symbolic link as the job's folder, to a folder of the stranger's ------------
next=$(next_job)
as_stranger_sh "mkdir -p $shared/trap-$next/0 && chmod -R 0777 $shared/trap-$next &&
	ln -s $shared/trap-$next '$shared/$next'"
ok $? "$STRANGER made $shared/$next a link to a folder of theirs"
run_srun -N1 -n1 --dl-runtime=torch --dl-log-dir="$shared" bash -c 'echo "secret $SLURM_JOB_ID"'
is "$RC" 0 "the step runs anyway" || fail_detail "$(cat "$ERR")"
like "$(srun_errors)" "dlrt: --dl-log-dir: $shared/$next is a symbolic link owned by user $STRANGER .*logs are in $shared/$next\\.$uid\\." \
	"with one line saying it is a link, whose, and where the logs are"
is "$(find "$shared/trap-$next" -type f | wc -l)" 0 "nothing was written through the link"
rm -rf "$shared/trap-$next"

# ---- 3. A forged line in a pre-created retry record does not requeue a job -----------
next=$(next_job)
as_stranger_sh "mkdir -p '$shared/$next' && chmod 0777 '$shared/$next' &&
	printf '2026-01-01T00:00:00.000000Z attempt=0 node=n1 step=0 signal=9\n2026-01-01T00:00:00.000000Z attempt=0 node=n2 step=0 signal=9\n' >'$shared/$next/dlrt-retries.log' &&
	chmod 0666 '$shared/$next/dlrt-retries.log'"
ok $? "$STRANGER planted a forged record in $shared/$next/dlrt-retries.log"
job=$(as_user sbatch --parsable -N1 -o "$WORK/job-%j.out" --dl-retries=2 --dl-log-dir="$shared" \
	--wrap 'echo "batch ran attempt=${SLURM_RESTART_COUNT:-0}"')
is "$job" "$next" "the job got the predicted id"
job_ended() { [[ "$(job_field "$1" JobState)" =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT)$ ]]; }
wait_until -i 1 180 job_ended "$job"
# A requeue decided by the batch step shows within its bounded decision (60 s).
sleep 3
is "$(job_field "$job" JobState)" COMPLETED "the job completed"
is "$(job_field "$job" Restarts)" 0 "and was not requeued by the forged line"
is "$(job_field "$job" ExcNodeList)" "(null)" "no node was excluded"
like "$(grep -h 'dlrt: --dl-retries' "$DLRT_CLUSTER_DIR"/log/slurmd-*.log)" \
	"dlrt: --dl-retries: $shared/$next belongs to user $STRANGER \\(uid $uid2\\), not to you.*job $job's retry record is in $shared/$next\\.$uid\\." \
	"the batch step used a record of its own, with one line in the slurmd log"
is "$(wc -l <"$shared/$next/dlrt-retries.log")" 2 "the stranger's record got nothing from the job"

# ---- 4. A normal run into the shared folder -------------------------------------------
run_srun -N2 -n2 --dl-runtime=torch --dl-log-dir="$shared" bash -c 'echo "hello $RANK job=$SLURM_JOB_ID"'
is "$RC" 0 "a step into the 1777 folder runs" || fail_detail "$(cat "$ERR")"
job=$(sed -n 's/^hello 0 job=//p' "$OUT")
is "$(stat -c '%U %a' "$shared/$job" "$shared/$job/0" | sort -u)" "$DLRT_TEST_USER 750" \
	"its folders are the user's, mode 0750"
is "$(stat -c '%U %a' "$shared/$job"/0/*.log | sort -u)" "$DLRT_TEST_USER 640" \
	"its files are the user's, mode 0640"
like "$(cat "$shared/$job/0/worker-1.log")" "Z out hello 1 job=$job" "the log has the output"
ok "$(as_stranger cat "$shared/$job/0/worker-0.log" >/dev/null 2>&1; [ $? -ne 0 ]; echo $?)" \
	"$STRANGER cannot read it"
done_testing
