#!/bin/bash
# --dl-store=file:DIR, the Kubeflow operator's NFS_PATH alternative: no helper
# store, NFS_PATH in every task, and a real gloo job (FileStore in that folder,
# prefixed by RUN_ID) rendezvouses and allreduces across 3 nodes. Bad values
# stop sbatch/srun before anything runs, with one line.
. "$(dirname "$0")/../lib.sh"

STORE=$WORK/c2store
mkdir "$STORE" && chown "$DLRT_TEST_USER": "$STORE"

run_batch -N3 -n3 -c2 --dl-runtime=caffe2 --dl-store="file:$STORE" <<JOB
#!/bin/bash
srun bash -c 'echo "env \$SHARD_ID nfs=\$NFS_PATH redis=\${REDIS_HOST:-none} run=\$RUN_ID"'
srun -l "$TESTS_BIN/gloo_redis_allreduce"
JOB
is "$RC" 0 "sbatch --dl-runtime=caffe2 --dl-store=file:DIR job succeeded"
out=$(cat "$WORK/job.out")
is "$(grep -c "^env [0-2] nfs=$STORE redis=none run=dlrt-[0-9]*-0-0\$" <<<"$out")" 3 \
	"every task got NFS_PATH=DIR and no REDIS_HOST"
is "$(grep -c 'ok: 1048576 floats summed correctly through the file store' <<<"$out")" 3 \
	"gloo FileStore rendezvous + ring allreduce on 3 nodes"
ok "$([ "$(find "$STORE" -type f | wc -l)" -ge 6 ]; echo $?)" "the rendezvous keys are files in DIR"
[ "$RC" -eq 0 ] || { diag "$(tail -20 "$WORK/job.err")"; }

# Bad values: one line, non-zero, nothing runs.
run_srun -N1 -n1 --dl-runtime=caffe2 --dl-store=file:relative/dir touch "$WORK/ran1"
ok "$([ "$RC" -ne 0 ]; echo $?)" "a relative folder is refused"
like "$(cat "$ERR")" "--dl-store=file:relative/dir: DIR must be an absolute path" "one line naming the fix"
run_srun -N1 -n1 --dl-runtime=caffe2 --dl-store="file:$WORK/nope" touch "$WORK/ran2"
ok "$([ "$RC" -ne 0 ]; echo $?)" "a missing folder is refused"
like "$(cat "$ERR")" "no such folder; create it .*mkdir -p $WORK/nope" "and the line says how to fix it"
run_srun -N1 -n1 --dl-runtime=torch --dl-store=helper touch "$WORK/ran3"
ok "$([ "$RC" -ne 0 ]; echo $?)" "--dl-store with another runtime is refused"
like "$(cat "$ERR")" "--dl-store applies to --dl-runtime=caffe2 only" "naming the runtime it is for"
run_srun -N1 -n1 --dl-runtime=caffe2 --dl-store=redis touch "$WORK/ran4"
like "$(cat "$ERR")" "--dl-store=redis: must be helper or file:DIR" "an unknown store kind is refused"
ok "$(ls "$WORK"/ran* >/dev/null 2>&1; [ $? -ne 0 ]; echo $?)" "none of the refused steps ran anything"
done_testing
