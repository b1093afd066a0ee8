#!/bin/bash
# mxnet-wireup.sh - wire-up overhead of srun --dl-runtime=mxnet.
#
# Times no-op steps (`true`) on 3 nodes, with and without --dl-runtime=mxnet,
# at 3, 12 and 48 tasks, REPEAT times each after one discarded warm-up run,
# and prints the median wall time of each and their ratio. The dlrt column
# pays for the role plan, the scheduler address/port choice and the PMIx
# exchange (one dlrt-kv PMIx client per node, the node's other tasks wait for
# its answer); the plain column is the same srun
# with --mpi=pmix, so the PMIx server start-up is in both. Target:
# ratio <= 1.15.
#
#   SRUN="runuser -u dlrtu -- srun" bench/mxnet-wireup.sh
#
# Environment:
#   SRUN       the srun command, with any user wrapper       (default: srun)
#   SRUN_ARGS  arguments common to both columns              (default: --mpi=pmix -N3 -O)
#   DL_ARGS    what the dlrt column adds                     (default: --dl-runtime=mxnet)
#   TASKS      task counts                                   (default: "3 12 48")
#   REPEAT     timed runs per cell                           (default: 5)
#   STEP_TIMEOUT  seconds before one step counts as hung     (default: 120)
# SLURM_CONF and the rest of the cluster environment come from the caller.
# Outside an allocation every srun also creates its job allocation (in both
# columns alike); inside one (salloc -N3 -n48 ... bench/mxnet-wireup.sh) only
# steps are timed, which shows the plugin's share more sharply. -O lets 48
# tasks run on nodes with fewer CPUs.
set -uo pipefail
# median_ms (warm-up, REPEAT runs of run_ms, median) is shared with the other wire-up benches.
# shellcheck source=bench/lib-wireup.sh
. "$(dirname "$0")/lib-wireup.sh" || exit 1

SRUN=${SRUN:-srun}
SRUN_ARGS=${SRUN_ARGS:---mpi=pmix -N3 -O}
DL_ARGS=${DL_ARGS:---dl-runtime=mxnet}
TASKS=${TASKS:-3 12 48}
REPEAT=${REPEAT:-5}
STEP_TIMEOUT=${STEP_TIMEOUT:-120}

err=$(mktemp)
trap 'rm -f "$err"' EXIT

# run_ms N EXTRA...: one step; prints its wall time in ms, fails if srun failed.
run_ms() {
	local n=$1 t0 t1
	shift
	t0=$(date +%s%N)
	# shellcheck disable=SC2086  # SRUN and SRUN_ARGS are word lists on purpose
	if ! timeout -k 5 "$STEP_TIMEOUT" $SRUN $SRUN_ARGS -n"$n" "$@" true >/dev/null 2>"$err"; then
		echo "mxnet-wireup: '$SRUN $SRUN_ARGS -n$n $* true' failed:" >&2
		sed 's/^/  /' "$err" | head -20 >&2
		return 1
	fi
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

echo "# mxnet wire-up: $SRUN $SRUN_ARGS -nN [$DL_ARGS] true, median of $REPEAT runs"
where="one allocation per step"
[ -n "${SLURM_JOB_ID:-}" ] && where="inside job $SLURM_JOB_ID"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $($SRUN --version 2>/dev/null || echo 'srun version ?'), $where"
echo "# load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %16s %16s %8s %s\n' tasks 'plain srun ms' 'dlrt mxnet ms' ratio 'within 15%'
rc=0
for n in $TASKS; do
	# shellcheck disable=SC2086  # DL_ARGS is a word list
	if ! plain=$(median_ms "$n") || ! dl=$(median_ms "$n" $DL_ARGS); then
		rc=1
		continue
	fi
	awk -v n="$n" -v p="$plain" -v d="$dl" 'BEGIN {
		r = p > 0 ? d / p : 0
		printf "%-6s %16d %16d %8.2f %s\n", n, p, d, r, r <= 1.15 ? "yes" : "NO" }'
done
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(uname -r)"
exit $rc
