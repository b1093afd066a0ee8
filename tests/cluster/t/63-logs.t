#!/bin/bash
# --dl-log-dir: every task's stdout and stderr land in DIR/<job>/<step>/<role>-<index>.log,
# stamped line by line, created as the user (never root); the output still reaches srun
# and the task's exit status is kept; dlrt-logs lists and merges them.
. "$(dirname "$0")/../lib.sh"

# Task 5 fails, which ends an mxnet step (fail-fast, t/14): it waits, bounded, until the
# other five logs record their task's end, so that every line below is written.
run_srun -N3 -n6 -c2 --dl-runtime=mxnet --dl-servers=2 --dl-log-dir=logs bash -c \
	'echo "hello from $DLRT_ROLE $DLRT_ROLE_INDEX job=$SLURM_JOB_ID"; echo "oops $DLRT_RANK" >&2
	 printf "no newline $DLRT_RANK"; [ "$DLRT_RANK" = 5 ] || exit 0
	 ended() { [ "$(cat logs/$SLURM_JOB_ID/$SLURM_STEP_ID/*.log | grep -c "dlrt end task")" -ge 5 ]; }
	 . ./wait_until.sh; wait_until 40 ended; exit 3'
is "$RC" 3 "srun still reports the task's exit status (3)"
is "$(grep -o 'hello from ' "$OUT" | wc -l)" 6 "the output still reaches srun"
is "$(grep -c '^oops ' "$ERR")" 6 "and the errors too"
job=$(sed -n 's/^hello from .* job=//p' "$OUT" | head -1)
d=$WORK/logs/$job/0
names=$(cd "$d" 2>/dev/null && ls | tr '\n' ' ')
is "$names" "scheduler-0.log server-0.log server-1.log worker-0.log worker-1.log worker-2.log " \
	"one file per task, named by role and index (relative DIR = the job's working directory)"
is "$(find "$WORK/logs" ! -user "$DLRT_TEST_USER" | wc -l)" 0 "every folder and file belongs to the user"
is "$(find "$WORK/logs" -perm /o+rwx | wc -l)" 0 "nothing is open to other users"
w=$(cat "$d/worker-2.log")
like "$w" "^[0-9-]{10}T[0-9:.]{15}Z dlrt start task 5 \(worker-2\) on n[1-3], job $job step 0 attempt 0" \
	"dlrt's start line (node, job, step, attempt)"
like "$w" "Z out hello from worker 2 job=$job" "stdout line, stamped"
like "$w" "Z err oops 5" "stderr line, stamped"
like "$w" "Z out no newline 5" "an unfinished last line is kept"
like "$w" "Z dlrt end task 5: exit 3$" "how the task ended"
like "$(cat "$d/scheduler-0.log")" "Z dlrt end task 0: exit 0$" "task 0 ended with 0"

list=$(as_user dlrt-logs --dir "$WORK/logs" "$job")
is "$(grep -cE '^0 +(scheduler|server|worker)-[0-9] +5 ' <<<"$list")" 6 "dlrt-logs lists 6 tasks of 5 lines"
like "$list" "worker-2 .* exit 3" "with how each ended"
merged=$(as_user env DLRT_LOG_DIR="$WORK/logs" dlrt-logs --merge "$job")
is "$(wc -l <<<"$merged")" 30 "--merge prints every line of every task"
is "$(awk '{print $1}' <<<"$merged" | sort -c 2>&1 && echo sorted)" sorted "in time order"
like "$merged" "Z 0 server-1 err oops [0-9]" "each line has time, step, role-index and stream"
as_user dlrt-logs --dir "$WORK/logs" 999999 >/dev/null 2>"$WORK/e1"
is "$?" 1 "an unknown job is an error"
like "$(cat "$WORK/e1")" "^dlrt-logs: cannot open .*999999" "with one line"

# Two steps of a batch job, the option given to sbatch.
run_batch -N2 -n2 --dl-runtime=torch --dl-log-dir="$WORK/blogs" <<'JOB'
#!/bin/bash
srun bash -c 'echo "first $RANK"'
srun bash -c 'echo "second $RANK"; sleep 0.2; echo "second-late $RANK" >&2'
JOB
is "$RC" 0 "sbatch --dl-log-dir job"
bjob=$(ls "$WORK/blogs" | head -1)
is "$(cd "$WORK/blogs/$bjob" && ls -d */ | tr '\n' ' ')" "0/ 1/ " "one folder per step"
is "$(as_user dlrt-logs --dir "$WORK/blogs" --step 1 --merge "$bjob" | grep -c ' out second ')" 2 \
	"--step selects one step"
like "$(cat "$WORK/job.out")" "first 0" "the batch output file still gets the output"

# An MPI program (PMIx wire-up in MPI_Init) runs behind the relay as usual.
# (A second step, 1, only if Open MPI crashed in MPI_Init: see progs/mpi-step.)
if [ -n "$NO_PMIX" ]; then
	skip "an Open MPI step behind the relay: $NO_PMIX"
else
	run_mpi_srun -N2 -n4 --mpi=pmix --dl-runtime=horovod --dl-horovod=mpi --dl-log-dir="$WORK/mpilogs" \
		"$TESTS_BIN/mpi_allreduce"
	is "$RC" 0 "Open MPI allreduce with --dl-log-dir"
	is "$(cat "$WORK"/mpilogs/*/*/worker-*.log | grep -c 'out rank [0-3] of 4 .* allreduce sum=6 ok')" 4 \
		"every rank's result is in its log"
fi

# A cancelled step ends at once; each log says how its task ended.
as_user srun -N2 -n2 --dl-runtime=torch --dl-log-dir="$WORK/cancel" --job-name=dlrt-cancel-test \
	bash -c 'echo started; sleep 300' >"$WORK/cancel.out" 2>&1 &
spid=$!
wait_until -i 0.5 60 eval '[ "$(grep -c started "$WORK/cancel.out" 2>/dev/null)" = 2 ]'
scancel --name=dlrt-cancel-test
wait $spid # bounded by as_user's timeout: a relay that outlived its task would hang here
src=$?
ok "$([ $src -ne 0 ] && [ $src -ne 124 ] && [ $src -ne 137 ]; echo $?)" \
	"scancel ends a step behind the relay (srun status $src, not a timeout)"
is "$(cat "$WORK"/cancel/*/0/worker-*.log | grep -cE 'dlrt end task [01]: (killed by signal (15|9)|exit 143)')" 2 \
	"both logs record the end of their task"

# Never created as root: a folder the user cannot write fails the step with one line.
run_srun -N1 -n1 --dl-runtime=torch --dl-log-dir=/root/dlrt-logs-test true
is "$RC" 1 "an unwritable --dl-log-dir fails the step"
like "$(cat "$ERR")" "dlrt: --dl-log-dir: cannot create /root/dlrt-logs-test .*Permission denied" \
	"with one line naming the folder"
ok "$([ ! -e /root/dlrt-logs-test ]; echo $?)" "and nothing was created there"

# Without the option, no files; a bad value stops srun before anything runs.
run_srun -N1 -n1 --dl-runtime=torch --dl-log-dir= true
is "$RC" 1 "--dl-log-dir= (empty) is refused"
like "$(cat "$ERR")" "^srun: error: dlrt: --dl-log-dir=: give a folder path" "with one line"
done_testing
