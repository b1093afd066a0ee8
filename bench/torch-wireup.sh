#!/bin/bash
# torch-wireup.sh - wire-up time of a torch step: srun --dl-runtime=torch against a
# plain srun whose job script sets the env:// variables by hand.
#
# Two rows, each the median of REPEAT runs after one discarded warm-up:
#   true        a no-op step: what the plugin itself costs (role plan, port choice,
#               PMIx exchange in every task) against the same srun without it;
#   torch init  bench/torch_init.py (import torch.distributed, init_process_group
#               with gloo over env://, one barrier) on 3 nodes x 2 tasks. The plain
#               column is what a user writes without dlrt: RANK/WORLD_SIZE/LOCAL_RANK
#               from SLURM_*, MASTER_ADDR = first host of SLURM_STEP_NODELIST
#               resolved with getent, MASTER_PORT = a fixed 29500.
#
#
# Then the store itself, at STORE_RANKS ranks on 3 nodes: dlrt's store
# (dlrt-c10d-store, every rank through its node's relay) against rank 0's own
# TCPStore as without dlrt (the same step with MASTER_PORT exported). Two numbers
# from rank 0, medians of REPEAT runs: init_process_group + barrier (s), and one
# store operation (ADD or GET, us) once every rank is up.
#
#   SRUN="runuser -u dlrtu -- srun" bench/torch-wireup.sh   (bench/run-all.sh sets SRUN)
#
# Environment: SRUN, SRUN_ARGS (default: --mpi=pmix -N3 -n6 -c2), REPEAT (default 5),
# STORE_RANKS (default "3 12 48"), STEP_TIMEOUT (default 120 s). Timings are reported,
# never judged.
set -uo pipefail
# median_ms (warm-up, REPEAT runs of run_ms, median) is shared with the other wire-up benches.
# shellcheck source=bench/lib-wireup.sh
. "$(dirname "$0")/lib-wireup.sh" || exit 1
cd "$(dirname "$0")/.." || exit 1

SRUN=${SRUN:-srun}
SRUN_ARGS=${SRUN_ARGS:---mpi=pmix -N3 -n6 -c2}
REPEAT=${REPEAT:-5}
STEP_TIMEOUT=${STEP_TIMEOUT:-120}
# The tasks run the scripts from here: it must be on a filesystem the nodes share
# (the test cluster's work folder; each of its nodes has a private /tmp).
base=${TMPDIR:-/tmp}
[ -n "${DLRT_CLUSTER_DIR:-}" ] && base=$DLRT_CLUSTER_DIR/work
T=$(mktemp -d "$base/dlrt-torch-wireup.XXXXXX")
chmod 0755 "$T"
trap 'rm -rf "$T"' EXIT
cp bench/torch_init.py "$T/"
cat >"$T/by-hand.sh" <<'SH'
#!/bin/bash
# What a job script does without dlrt (the Lightning/idr_torch way, step nodes).
export RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS LOCAL_RANK=$SLURM_LOCALID
export MASTER_ADDR=$(getent ahostsv4 "$(scontrol show hostnames "$SLURM_STEP_NODELIST" | head -1)" | awk 'NR==1{print $1}')
export MASTER_PORT=29500
exec /usr/bin/python3 "$(dirname "$0")/torch_init.py"
SH
chmod 0755 "$T/by-hand.sh" "$T/torch_init.py"

if ! /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
	echo "torch-wireup: python3-torch is missing (tests/cluster/install-deps.sh)" >&2
	exit 1
fi

# run_ms ARGS...: one step; prints its wall time in ms, fails if srun failed.
run_ms() {
	local t0 t1
	t0=$(date +%s%N)
	# shellcheck disable=SC2086  # SRUN and SRUN_ARGS are word lists on purpose
	if ! (cd "$T" && timeout -k 5 "$STEP_TIMEOUT" $SRUN $SRUN_ARGS "$@" >"$T/out" 2>"$T/err"); then
		echo "torch-wireup: '$SRUN $SRUN_ARGS $*' failed:" >&2
		sed 's/^/  /' "$T/err" | head -20 >&2
		return 1
	fi
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

echo "# torch wire-up: $SRUN $SRUN_ARGS, median of $REPEAT runs, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "| step | plain srun ms | srun --dl-runtime=torch ms | ratio dlrt/plain |"
echo "|------|---------------|----------------------------|------------------|"
rc=0
# row NAME "PLAIN ARGS" "DLRT ARGS" (word lists)
row() {
	local plain dl
	# shellcheck disable=SC2086  # word lists on purpose
	if ! plain=$(median_ms $2) || ! dl=$(median_ms $3); then
		rc=1
		return
	fi
	awk -v n="$1" -v p="$plain" -v d="$dl" 'BEGIN {
		printf "| %s | %d | %d | %.2f |\n", n, p, d, (p > 0 ? d / p : 0) }'
}
row "true" "true" "--dl-runtime=torch true"
row "torch init (6 ranks)" "./by-hand.sh" "--dl-runtime=torch /usr/bin/python3 ./torch_init.py"
echo "# last dlrt run: $(grep '^rank0' "$T/out")"

# store_row N: rank 0's init and store-op medians, dlrt's store against rank 0's own.
field_median() { # field_median NAME < lines
	grep -oE "$1=[0-9.]+" | cut -d= -f2 | sort -n | awk '{ v[NR] = $1 } END {
		if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
store_runs() { # store_runs N EXTRA...: REPEAT runs (after a warm-up), rank 0's lines
	local n=$1 i
	shift
	for ((i = 0; i <= REPEAT; i++)); do
		# shellcheck disable=SC2086  # word lists on purpose
		(cd "$T" && timeout -k 5 "$STEP_TIMEOUT" $SRUN --mpi=pmix -N3 -n"$n" "$@" \
			--dl-runtime=torch /usr/bin/python3 ./torch_init.py >"$T/out" 2>"$T/err") ||
			{ echo "torch-wireup: $n ranks $* failed: $(tail -3 "$T/err")" >&2; return 1; }
		[ "$i" -gt 0 ] && grep '^rank0' "$T/out"
	done
	return 0
}
echo
echo "| ranks | init+barrier s, rank 0's store | init+barrier s, dlrt's store | store op us, rank 0's store | store op us, dlrt's store |"
echo "|-------|------|------|------|------|"
for n in ${STORE_RANKS:-3 12 48}; do
	own=$(store_runs "$n" --export=ALL,MASTER_PORT=$((29500 + n))) || { rc=1; continue; }
	dl=$(store_runs "$n") || { rc=1; continue; }
	echo "| $n | $(field_median init_barrier_s <<<"$own") | $(field_median init_barrier_s <<<"$dl") |" \
		"$(field_median store_op_us <<<"$own") | $(field_median store_op_us <<<"$dl") |"
done
echo "# machine: $(nproc) cores shared with other jobs (load $(cut -d' ' -f1-3 /proc/loadavg)), $(uname -r)"
exit $rc
