#!/bin/bash
# sbatch --dl-runtime reaches the srun steps of the script; an srun option overrides
# it; the batch step itself gets no role; --dl-dry-run runs nothing.
. "$(dirname "$0")/../lib.sh"

run_batch -N3 -n6 -c5 --dl-runtime=torch <<'JOB'
#!/bin/bash
echo "batch step: role=${DLRT_ROLE:-none} rank=${RANK:-none}"
srun bash -c 'echo "plain srun: rank=$RANK of $WORLD_SIZE role=$DLRT_ROLE on $(hostname)"'
srun --dl-runtime=horovod bash -c 'echo "override: hvd=$HOROVOD_RANK runtime=$DLRT_RUNTIME"'
JOB
is "$RC" 0 "sbatch --wait --dl-runtime=torch job succeeded"
out=$(cat "$WORK/job.out")
like "$out" "batch step: role=none rank=none" "the batch step is left alone"
is "$(grep -c '^plain srun: rank=[0-5] of 6 role=worker on n[1-3]$' <<<"$out")" 6 \
	"the sbatch option reached every task of the plain srun"
is "$(grep -c '^override: hvd=[0-5] runtime=horovod$' <<<"$out")" 6 "srun --dl-runtime overrides the sbatch value"

# Dry run: the table, and the program never runs.
run_srun -N3 -n6 -c5 --dl-runtime=mxnet --dl-servers=2 --dl-dry-run touch "$WORK/ran"
is "$RC" 0 "srun --dl-dry-run exits 0"
ok "$([ ! -e "$WORK/ran" ]; echo $?)" "the program did not run"
like "$(head -1 "$OUT")" "^dlrt dry run: job [0-9]+ step [0-9]+, runtime mxnet, 6 tasks on 3 nodes" "summary line"
like "$(sed -n 2p "$OUT")" "^roles: 1 scheduler, 2 servers, 3 workers$" "role counts"
is "$(grep -cE '^[0-5] +n[1-3] +[0-9] +(scheduler|server|worker) +[0-9]' "$OUT")" 6 "one row per task"
is "$(grep -c '      env: .*DMLC_ROLE=' "$OUT")" 6 "each row is followed by the task's environment"
like "$(grep -E '^0 ' "$OUT")" "^0 +n1 +0 +scheduler +0" "task 0 is the scheduler on n1"

# sbatch --dl-dry-run propagates as well.
run_batch -N2 -n2 --dl-runtime=horovod --dl-dry-run <<JOB
#!/bin/bash
srun touch "$WORK/ran2"
JOB
is "$RC" 0 "sbatch --dl-dry-run job"
ok "$([ ! -e "$WORK/ran2" ]; echo $?)" "the srun inside ran nothing"
like "$(cat "$WORK/job.out")" "runtime horovod, 2 tasks on 2 nodes" "and printed the table"
done_testing
