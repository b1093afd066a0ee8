#!/bin/bash
# dlrt-kv from job scripts (the same PMIx bridge the plugin uses), and the rule
# for MPI programs started through a script: DLRT_EXCHANGE=none leaves the
# wire-up to MPI.
. "$(dirname "$0")/../lib.sh"
skip_all_without_pmix

run_batch -N3 -n3 <<'JOB'
#!/bin/bash
srun --mpi=pmix bash -c 'dlrt-kv put host "$(hostname)" fence getall host' | sort -u
srun --mpi=pmix bash -c 'dlrt-kv put me "x$SLURM_PROCID" await 2 me' | sort -u | sed 's/^/AWAIT /'
JOB
is "$RC" 0 "a job script ran dlrt-kv in two steps"
is "$(grep -E '^[0-2] n[1-3]$' "$WORK/job.out" | sort -u | tr '\n' ' ')" "0 n1 1 n2 2 n3 " \
	"fence + getall: every task read every task's host"
is "$(grep '^AWAIT' "$WORK/job.out")" "AWAIT x2" "await without a fence: every task read task 2's value"

# awaitlist (the plugin's root waits for these ranks only) and linger (bounded, never an
# error); the fence keeps every node in the step until all have read
run_srun -N3 -n3 --mpi=pmix bash -c 'dlrt-kv --timeout 10 put v "y$SLURM_PROCID" awaitlist v 2,0 linger 1 never 2 fence; echo "rc=$?"'
is "$RC" 0 "awaitlist + linger: the step ran"
is "$(grep -c '^2 y2$' "$OUT"):$(grep -c '^0 y0$' "$OUT")" "3:3" "awaitlist: every task read ranks 2 and 0, as 'RANK VALUE'"
is "$(grep -c '^rc=0$' "$OUT")" 3 "linger on a key nobody publishes ends without an error"
run_srun -N1 -n1 --mpi=pmix dlrt-kv awaitlist v 0,x
# (srun's own "Exited with exit code" line may come before or after the task's.)
like "$RC:$(grep -v '^srun: ' "$ERR")" "^[1-9]:dlrt-kv: awaitlist: 'x' is not a rank" \
	"awaitlist: a bad rank list is one clear error"

# Every wait is bounded: a fence that task 1 never reaches ends at --timeout
# with one line naming the task that did not arrive.
run_srun -N2 -n2 --mpi=pmix bash -c 'if [ "$SLURM_PROCID" = 1 ]; then sleep 12; exit 0; fi
	dlrt-kv --timeout 3 fence; echo "rc=$?"'
is "$(cat "$OUT")" "rc=1" "a fence one task never reaches ends (unbounded, the step would outlive the test's limit)"
like "$(cat "$ERR")" "dlrt-kv: PMIx fence timed out after 3 s; ranks that did not arrive: 1 " \
	"the line says how long it waited and which task never came"

run_batch -N3 -n6 --dl-runtime=mxnet <<'JOB'
#!/bin/bash
srun bash -c 'dlrt-kv put r "$DMLC_ROLE" fence getall r' | sort -u
JOB
is "$RC" 0 "dlrt-kv inside a --dl-runtime=mxnet job (after the plugin's own exchange)"
is "$(grep -c -E '^[0-5] (scheduler|server|worker)$' "$WORK/job.out")" 6 "every task read every role"

run_mpi_srun -N3 -n6 -c5 --export=ALL,DLRT_EXCHANGE=none --dl-runtime=torch bash -c "exec $TESTS_BIN/mpi_allreduce"
is "$RC" 0 "an MPI program behind a script runs under torch with DLRT_EXCHANGE=none" ||
	fail_detail "$(tail -20 "$ERR")"
is "$(grep -c 'sum=15 ok' "$OUT")" 6 "DLRT_EXCHANGE=none: all six ranks computed the right sum"
run_srun -N1 -n2 --export=ALL,DLRT_EXCHANGE=none --dl-runtime=torch printenv MASTER_ADDR
is "$(cat "$OUT")" "" "DLRT_EXCHANGE=none: no MASTER_ADDR is invented"
done_testing
