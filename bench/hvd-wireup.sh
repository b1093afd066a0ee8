#!/bin/bash
# hvd-wireup.sh - time from srun to every rank past the global rendezvous.
#
# dlrt column: srun --dl-runtime=horovod --dl-horovod=gloo gloo_hvd_allreduce: the
# plugin starts dlrt-hvd-driver on the first node, the tasks get its address through
# the address exchange, and each rank does Horovod's global rendezvous (PUT rank_<r>, PUT
# <r>, poll the peers, full-mesh connect, barrier, DELETE) against it.
# Baseline column: plain srun --mpi=pmix mpi_allreduce, i.e. MPI_Init + MPI_Barrier,
# what Horovod's MPI mode (or any MPI job) pays for its wire-up under Slurm.
# Each rank prints the wall clock when it is past its global rendezvous; the cell is
# the latest rank's time minus the time just before srun (one kernel, one clock).
# Median of REPEAT runs after one discarded warm-up; prints a markdown table.
#
#   SRUN="runuser -u dlrtu -- srun" bench/hvd-wireup.sh     (bench/run-all.sh sets SRUN)
#
# Environment:
#   SRUN       the srun command, with any user wrapper   (default: srun)
#   SRUN_ARGS  arguments common to both columns          (default: -N3 -O --mpi=pmix)
#   TASKS      task counts                               (default: "3 12 48")
#   REPEAT     timed runs per cell                       (default: 3)
#   PROGS      folder of gloo_hvd_allreduce and mpi_allreduce
#              (default: the cluster's libexec/dlrt-tests)
#   STEP_TIMEOUT  seconds before one step counts as hung (default: 180)
set -uo pipefail
# median_ms (warm-up, REPEAT runs of run_ms, median) is shared with the other wire-up benches.
# shellcheck source=bench/lib-wireup.sh
. "$(dirname "$0")/lib-wireup.sh" || exit 1

SRUN=${SRUN:-srun}
SRUN_ARGS=${SRUN_ARGS:--N3 -O --mpi=pmix}
TASKS=${TASKS:-3 12 48}
REPEAT=${REPEAT:-3}
STEP_TIMEOUT=${STEP_TIMEOUT:-180}
PROGS=${PROGS:-${DLRT_CLUSTER_DIR:-/var/tmp/dlrt-cluster}/prefix/libexec/dlrt-tests}

out=$(mktemp)
trap 'rm -f "$out"' EXIT

# run_ms N PROGRAM EXTRA...: one step; prints ms from srun to the last rank past global.
run_ms() {
	local n=$1 prog=$2 t0 last got
	shift 2
	t0=$(date +%s%N)
	# shellcheck disable=SC2086  # SRUN and SRUN_ARGS are word lists on purpose
	if ! timeout -k 5 "$STEP_TIMEOUT" $SRUN $SRUN_ARGS -n"$n" "$@" "$PROGS/$prog" --times \
		>"$out" 2>&1; then
		echo "hvd-wireup: '$SRUN $SRUN_ARGS -n$n $* $prog' failed:" >&2
		sed 's/^/  /' "$out" | head -20 >&2
		return 1
	fi
	got=$(grep -c 'past global at' "$out")
	if [ "$got" -ne "$n" ]; then
		echo "hvd-wireup: only $got of $n ranks of $prog reported" >&2
		return 1
	fi
	last=$(sed -n 's/.*past global at \([0-9]*\).*/\1/p' "$out" | sort -n | tail -1)
	echo $(((last - t0) / 1000000))
}

echo "# Horovod wire-up: ms from srun to the last rank past the global rendezvous, median of $REPEAT"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $($SRUN --version 2>/dev/null || echo 'srun ?'), $SRUN_ARGS, one allocation per step"
echo
echo "| ranks | srun --mpi=pmix, MPI_Init+Barrier (ms) | srun --dl-runtime=horovod, gloo (ms) | ratio |"
echo "|---|---|---|---|"
rc=0
for n in $TASKS; do
	if ! plain=$(median_ms "$n" mpi_allreduce) ||
	   ! dl=$(median_ms "$n" gloo_hvd_allreduce --dl-runtime=horovod --dl-horovod=gloo); then
		rc=1
		continue
	fi
	awk -v n="$n" -v p="$plain" -v d="$dl" 'BEGIN {
		r = p > 0 ? d / p : 0
		printf "| %d | %d | %d | %.2f |\n", n, p, d, r }'
done
echo
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores shared by all ranks of all nodes, load $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
