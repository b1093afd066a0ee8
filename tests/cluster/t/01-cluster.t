#!/bin/bash
# The local cluster itself: three nodes, each with its own address, hostname and /tmp,
# and PMIx working across them.
. "$(dirname "$0")/../lib.sh"

nodes=$(sinfo -h -N -p debug -o '%N %t' | sort)
is "$(echo "$nodes" | wc -l)" 3 "three slurmd nodes"
like "$nodes" "n1 idle" "n1 idle"

run_srun -N3 -n3 -l bash -c 'echo "$(hostname) $(ip -4 -o addr show eth0 | awk "{print \$4}")"'
is "$RC" 0 "srun on three nodes"
is "$(sort "$OUT" | awk '{print $2, $3}' | tr '\n' ' ')" \
	"n1 10.77.$DLRT_CLUSTER_ID.11/24 n2 10.77.$DLRT_CLUSTER_ID.12/24 n3 10.77.$DLRT_CLUSTER_ID.13/24 " "each node has its own hostname and address"

run_srun -N2 -n2 -l bash -c 'touch /tmp/dlrt-probe-$SLURM_JOB_ID-$SLURM_NODEID; ls /tmp | grep -c dlrt-probe-$SLURM_JOB_ID'
is "$(awk '{print $2}' "$OUT" | sort -u)" 1 "every node has a private /tmp"

if [ -n "$NO_PMIX" ]; then
	skip "Open MPI across three nodes: $NO_PMIX"
else
	run_mpi_srun -N3 -n6 --mpi=pmix "$TESTS_BIN/mpi_allreduce"
	is "$RC" 0 "Open MPI allreduce across three nodes with srun --mpi=pmix"
	is "$(grep -c 'sum=15 ok' "$OUT")" 6 "all six ranks agree"
fi
done_testing
