#!/bin/bash
# Horovod MPI mode: an Open MPI allreduce under `sbatch --dl-runtime=horovod
# --dl-horovod=mpi` + `srun --mpi=pmix`. dlrt opens no PMIx session in the task
# (Open MPI's MPI_Init would fail after one, see docs/ARCHITECTURE.md), starts no
# driver and sets no gloo variable; the slot variables are the ones MPI derives.
. "$(dirname "$0")/../lib.sh"
skip_all_without_pmix

run_batch -N3 -n7 --dl-runtime=horovod --dl-horovod=mpi --dl-verbose <<JOB
#!/bin/bash
"$TESTS_BIN/mpi-step" --mpi=pmix "$TESTS_BIN/mpi_allreduce"
echo "mpi rc=\$?"
srun bash -c 'echo "vars rank=\$HOROVOD_RANK size=\$HOROVOD_SIZE ctl=\${HOROVOD_CONTROLLER:-none} addr=\${HOROVOD_GLOO_RENDEZVOUS_ADDR:-none}"'
JOB
is "$RC" 0 "sbatch --dl-runtime=horovod --dl-horovod=mpi succeeded"
out=$(cat "$WORK/job.out")
like "$out" "mpi rc=0" "the MPI step exited 0"
is "$(grep -c 'sum=21 ok (DLRT_ROLE=worker)' <<<"$out")" 7 "all 7 ranks of MPI_Allreduce got the right sum"
is "$(grep -c '^vars rank=[0-6] size=7 ctl=none addr=none$' <<<"$out")" 7 \
	"slot variables set, no HOROVOD_CONTROLLER and no rendezvous address in MPI mode"
unlike "$(cat "$WORK/job.err")" "rendezvous driver" "no driver was started (--dl-verbose would log it)"
like "$(cat "$WORK/job.err")" "horovod worker" "--dl-verbose logged the roles"

# srun alone, no batch script.
run_mpi_srun -N2 -n2 --mpi=pmix --dl-runtime=horovod --dl-horovod=mpi "$TESTS_BIN/mpi_allreduce"
is "$RC" 0 "srun --dl-horovod=mpi (no sbatch) also works"
done_testing
