#!/bin/bash
# A PMIx session ends with PMIx_Finalize even after one of its requests was
# lost between nodes. Slurm's PMIx plugin takes a client that disconnects
# without it for a crashed task and kills the whole step ("_errhandler: ...
# status = -61"); dlrt-kv used to skip Finalize after a timed-out request, so
# steps whose exchange had succeeded were killed at 32 nodes x 4 tasks. Here
# the lost requests are a linger toward a node that left the step (task 0
# exits at once, its node's slurmstepd with it); the other task then runs on
# for 40 s, past the end of Slurm's retries of those requests, which is when
# the kill came (before the fix: killed in 3 of 3 runs this long, 6 to 33 s in).
. "$(dirname "$0")/../lib.sh"
skip_all_without_pmix

run_srun -N2 -n2 --mpi=pmix bash -c 'if [ "$SLURM_PROCID" = 0 ]; then exit 0; fi
	dlrt-kv --timeout 10 linger 0 never 8; echo "linger rc=$?"; sleep 40; echo still here'
is "$RC" 0 "the step ends well: Slurm did not kill it" ||
	fail_detail "$(srun_errors)"
is "$(grep -c '^linger rc=0$' "$OUT")" 1 "the linger toward the node that left ends without an error"
is "$(grep -c '^still here$' "$OUT")" 1 "and the task runs on to its end"
unlike "$(cat "$ERR")" "Error handler invoked" "no PMIx error event for the session that finalized"
done_testing
