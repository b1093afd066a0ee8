#!/bin/bash
# tfjax-wireup.sh - wire-up time of --dl-runtime=jax and --dl-runtime=tensorflow
# steps against a plain srun whose tasks set the same variables by hand.
#
# Each row is the median of REPEAT runs after one discarded warm-up, on a no-op
# step (JAX and TensorFlow are not installed here: this is the plugin's own
# cost). The plain column is what a job script does without dlrt:
#   jax         JAX_COORDINATOR_ADDRESS = first host of SLURM_STEP_NODELIST,
#               resolved with getent, and a fixed port;
#   tensorflow  TF_CONFIG from the step's host list (scontrol show hostnames),
#               fixed ports 2222+local id, index SLURM_PROCID.
# The dlrt column checks the ports free on their nodes and exchanges them over
# PMIx (one port per task for tensorflow).
#
#   SRUN="runuser -u dlrtu -- srun" bench/tfjax-wireup.sh   (bench/run-all.sh sets SRUN)
#
# Environment: SRUN, SRUN_ARGS (default: --mpi=pmix -N3 -n6 -c2), REPEAT (default 5),
# STEP_TIMEOUT (default 120 s). Timings are reported, never judged.
set -uo pipefail
# shellcheck source=bench/lib-wireup.sh
. "$(dirname "$0")/lib-wireup.sh" || exit 1
cd "$(dirname "$0")/.." || exit 1

SRUN=${SRUN:-srun}
SRUN_ARGS=${SRUN_ARGS:---mpi=pmix -N3 -n6 -c2}
REPEAT=${REPEAT:-5}
STEP_TIMEOUT=${STEP_TIMEOUT:-120}
base=${TMPDIR:-/tmp}
[ -n "${DLRT_CLUSTER_DIR:-}" ] && base=$DLRT_CLUSTER_DIR/work
T=$(mktemp -d "$base/dlrt-tfjax-wireup.XXXXXX")
chmod 0755 "$T"
trap 'rm -rf "$T"' EXIT
cat >"$T/jax-by-hand.sh" <<'SH'
#!/bin/bash
first=$(scontrol show hostnames "$SLURM_STEP_NODELIST" | head -1)
export JAX_COORDINATOR_ADDRESS=$(getent ahostsv4 "$first" | awk 'NR==1{print $1}'):61234
exec true
SH
cat >"$T/tf-by-hand.sh" <<'SH'
#!/bin/bash
# One worker per task, in task order (block), ports 2222 + local id.
counts=()
for c in ${SLURM_STEP_TASKS_PER_NODE//,/ }; do
	if [[ $c =~ ^([0-9]+)\(x([0-9]+)\)$ ]]; then
		for ((r = 0; r < BASH_REMATCH[2]; r++)); do counts+=("${BASH_REMATCH[1]}"); done
	else
		counts+=("$c")
	fi
done
w=
i=0
for h in $(scontrol show hostnames "$SLURM_STEP_NODELIST"); do
	for ((l = 0; l < ${counts[$i]:-1}; l++)); do w="$w${w:+,}\"$h:$((2222 + l))\""; done
	i=$((i + 1))
done
export TF_CONFIG="{\"cluster\":{\"worker\":[$w]},\"task\":{\"type\":\"worker\",\"index\":$SLURM_PROCID}}"
[ -n "${SHOW:-}" ] && echo "$TF_CONFIG"
exec true
SH
chmod 0755 "$T/jax-by-hand.sh" "$T/tf-by-hand.sh"

run_ms() {
	local t0 t1
	t0=$(date +%s%N)
	# shellcheck disable=SC2086  # SRUN and SRUN_ARGS are word lists on purpose
	if ! (cd "$T" && timeout -k 5 "$STEP_TIMEOUT" $SRUN $SRUN_ARGS "$@" >"$T/out" 2>"$T/err"); then
		echo "tfjax-wireup: '$SRUN $SRUN_ARGS $*' failed:" >&2
		sed 's/^/  /' "$T/err" | head -20 >&2
		return 1
	fi
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

echo "# jax/tensorflow wire-up: $SRUN $SRUN_ARGS, median of $REPEAT runs, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "| step | plain srun, variables by hand ms | srun --dl-runtime ms | ratio dlrt/plain |"
echo "|------|------|------|------|"
rc=0
row() { # row NAME "PLAIN ARGS" "DLRT ARGS" (word lists)
	local plain dl
	# shellcheck disable=SC2086  # word lists on purpose
	if ! plain=$(median_ms $2) || ! dl=$(median_ms $3); then
		rc=1
		return
	fi
	awk -v n="$1" -v p="$plain" -v d="$dl" 'BEGIN {
		printf "| %s | %d | %d | %.2f |\n", n, p, d, (p > 0 ? d / p : 0) }'
}
row "jax (true)" "./jax-by-hand.sh" "--dl-runtime=jax true"
row "tensorflow (true)" "./tf-by-hand.sh" "--dl-runtime=tensorflow true"
echo "# machine: $(nproc) cores shared with other jobs (load $(cut -d' ' -f1-3 /proc/loadavg)), $(uname -r)"
exit $rc
