#!/bin/bash
# MPI programs keep working under dlrt: the plugin opens no PMIx session in their
# tasks, so Open MPI's own PMIx wire-up in MPI_Init succeeds.
. "$(dirname "$0")/../lib.sh"
skip_all_without_pmix

# Horovod runs MPI programs in its MPI mode (its default, gloo, hands out a driver instead);
# Caffe2's MPI rendezvous needs no helper store, so no PMIx session: --dl-store=file:.
for rt in "horovod --dl-horovod=mpi" torch mxnet "caffe2 --dl-store=file:$WORK"; do
	run_mpi_srun -N3 -n6 -c5 --mpi=pmix --dl-runtime=$rt "$TESTS_BIN/mpi_allreduce"
	is "$RC" 0 "Open MPI allreduce under srun --mpi=pmix --dl-runtime=$rt" ||
		while read -r l; do fail_detail "$l"; done < <(tail -n 12 "$ERR")
	is "$(grep -c 'sum=15 ok' "$OUT")" 6 "$rt: all six ranks computed the right sum"
done
run_batch -N3 -n6 -c5 --dl-runtime=horovod --dl-horovod=mpi <<JOB
#!/bin/bash
"$TESTS_BIN/mpi-step" --mpi=pmix "$TESTS_BIN/mpi_allreduce"
JOB
is "$RC" 0 "sbatch --dl-runtime=horovod --dl-horovod=mpi with a plain srun --mpi=pmix MPI program"
is "$(grep -c 'sum=15 ok (DLRT_ROLE=worker)' "$WORK/job.out")" 6 "every rank ran as a horovod worker"
done_testing
