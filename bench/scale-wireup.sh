#!/bin/bash
# scale-wireup.sh - wire-up overhead of every runtime that exchanges addresses, at 3, 16 and 32
# nodes, through each carrier of the exchange, in one run.
#
# For each node count it (re)starts the local test cluster with that many nodes
# (tests/cluster/cluster.sh, DLRT_CLUSTER_NODES), takes one allocation of all its nodes, and
# times, inside it, no-op steps `srun --mpi=pmix -N<nodes> -O -n<tasks> [--dl-runtime=X
# --dl-exchange=E] true` for X in mxnet, torch, horovod (gloo) and caffe2, E in srun and pmix,
# and tasks = the node count and 128 (48 on 3 nodes, the old table's cell): after one
# discarded warm-up of each, REPEAT back-to-back pairs of the plain step and the dlrt step. It
# prints, per cell, the plain median, the dlrt median, the median of the per-pair ratios, the
# difference of the medians, and the CPU time dlrt adds per node: the machine's busy CPU time
# (/proc/stat: every node, slurmd, slurmstepd, srun and the tasks run on this one machine)
# during the dlrt step minus during the plain one, median of the pairs, divided by the node
# count (srun's own share, e.g. its rendezvous, is counted in too). With FLOOR=1, a row
# "pmix-client" per cell gives the floor of any exchange that runs a PMIx client on every
# node: the step's first task of each node runs `dlrt-kv rank` (exec, PMIx_Init and
# PMIx_Finalize, no value sent), against the same step whose tasks run `bash -c "exit 0"`. Then, on the
# largest cluster, the services under NODES x 4 ranks: the Horovod rendezvous driver and the
# caffe2 store, with a real gloo allreduce (gloo_hvd_allreduce, gloo_redis_allreduce).
#
#   sudo DLRT_CLUSTER_ID=7 bench/scale-wireup.sh     (root: it starts the cluster)
#
# Environment:
#   DLRT_CLUSTER_ID  the cluster instance to use (and restart)   (required)
#   SIZES      node counts                                      (default: "3 16 32")
#   RUNTIMES   runtimes to time                                 (default: mxnet torch horovod caffe2)
#   EXCHANGES  carriers of the exchange (--dl-exchange)         (default: srun pmix)
#   REPEAT     timed runs per cell                              (default: 5)
#   BIG_TASKS  the large task count on 16 nodes or more         (default: 128)
#   SERVICES   1: also time the driver and the store runs       (default: 1)
#   FLOOR      1: also time one bare PMIx client per node       (default: 1)
#   KEEP       1: leave the last cluster up                     (default: 0)
#   STEP_TIMEOUT  seconds before one step counts as hung        (default: 180)
# The cluster must already have the build installed (make cluster-up once).
set -uo pipefail
# shellcheck source=bench/lib-wireup.sh
. "$(dirname "$0")/lib-wireup.sh" || exit 1

[ -n "${DLRT_CLUSTER_ID:-}" ] || { echo "scale-wireup: set DLRT_CLUSTER_ID (your own cluster)" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CLUSTER=$ROOT/tests/cluster/cluster.sh
SIZES=${SIZES:-3 16 32}
RUNTIMES=${RUNTIMES:-mxnet torch horovod caffe2}
EXCHANGES=${EXCHANGES:-srun pmix}
REPEAT=${REPEAT:-5}
BIG_TASKS=${BIG_TASKS:-128}
SERVICES=${SERVICES:-1}
FLOOR=${FLOOR:-1}
KEEP=${KEEP:-0}
STEP_TIMEOUT=${STEP_TIMEOUT:-180}
USER_NAME=${DLRT_TEST_USER:-dlrtu}

err=$(mktemp)
trap 'rm -f "$err"' EXIT

# rt_args RUNTIME: the options that select it (horovod: its gloo mode), through the
# carrier $VIA.
rt_args() {
	case $1 in
	none) ;;
	horovod) echo "--dl-runtime=horovod --dl-horovod=gloo --dl-exchange=$VIA" ;;
	*) echo "--dl-runtime=$1 --dl-exchange=$VIA" ;;
	esac
}
VIA=srun

# busy_ms: the machine's busy CPU time so far, in ms (/proc/stat, every CPU:
# user, nice, system, irq, softirq, steal).
busy_ms() {
	awk -v hz="$(getconf CLK_TCK)" '/^cpu / { print int(($2 + $3 + $4 + $7 + $8 + $9) * 1000 / hz); exit }' /proc/stat
}

# run_ms NODES TASKS RUNTIME [PROGRAM...]: one step inside the allocation: its wall
# time in ms and (after a space) the machine's busy CPU ms during it.
run_ms() {
	local nodes=$1 n=$2 rt=$3 t0 t1 c0 c1
	shift 3
	[ $# -gt 0 ] || set -- true
	c0=$(busy_ms)
	t0=$(date +%s%N)
	# shellcheck disable=SC2046  # rt_args is a word list on purpose
	if ! timeout -k 5 "$STEP_TIMEOUT" runuser -u "$USER_NAME" -- env SLURM_JOB_ID="$JOB" \
		srun --jobid="$JOB" --mpi=pmix -N"$nodes" -O -n"$n" $(rt_args "$rt") "$@" \
		>/dev/null 2>"$err"; then
		echo "scale-wireup: srun -N$nodes -n$n $(rt_args "$rt") $* failed:" >&2
		sed 's/^/  /' "$err" | head -20 >&2
		return 1
	fi
	t1=$(date +%s%N)
	c1=$(busy_ms)
	echo "$(((t1 - t0) / 1000000)) $((c1 - c0))"
}

# pairs_ms NODES TASKS RUNTIME: one discarded warm-up of each, then REPEAT pairs of a plain
# step and the same step with RUNTIME, run back to back (the order alternates, so a drift of
# the machine's load weighs on both sides alike). Prints the plain median, the dlrt median,
# the median of the per-pair ratios dlrt/plain and the median of the per-pair extra CPU ms.
# RUNTIME pmix-client: the floor (FLOOR above), both sides through bash.
pairs_ms() {
	local nodes=$1 n=$2 rt=$3 i a b ac bc pv=() dv=() rv=() cv=() plain=(true) mine=(true)
	if [ "$rt" = pmix-client ]; then
		rt=none
		plain=(bash -c 'exit 0')
		# shellcheck disable=SC2016  # expanded by the task's bash
		mine=(bash -c '[ "$SLURM_LOCALID" != 0 ] || exec "$0" rank >/dev/null' "$KV")
	fi
	run_ms "$nodes" "$n" none "${plain[@]}" >/dev/null &&
		run_ms "$nodes" "$n" "$rt" "${mine[@]}" >/dev/null || return 1
	for ((i = 0; i < REPEAT; i++)); do
		if ((i % 2)); then
			read -r b bc < <(run_ms "$nodes" "$n" "$rt" "${mine[@]}") &&
				read -r a ac < <(run_ms "$nodes" "$n" none "${plain[@]}") || return 1
		else
			read -r a ac < <(run_ms "$nodes" "$n" none "${plain[@]}") &&
				read -r b bc < <(run_ms "$nodes" "$n" "$rt" "${mine[@]}") || return 1
		fi
		pv+=("$a") dv+=("$b") cv+=("$((bc - ac))")
		rv+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", (a > 0 ? b / a : 0) }')")
	done
	echo "$(printf '%s\n' "${pv[@]}" | median) $(printf '%s\n' "${dv[@]}" | median)" \
		"$(printf '%s\n' "${rv[@]}" | median) $(printf '%s\n' "${cv[@]}" | median)"
}

# median: of the numbers on stdin, one per line (the mean of the middle two for an even count).
median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# cluster_at NODES: the cluster restarted with that many nodes, and one allocation of all.
cluster_at() {
	[ -n "${JOB:-}" ] && scancel "$JOB" 2>/dev/null
	JOB=
	DLRT_CLUSTER_NODES=$1 "$CLUSTER" down >/dev/null 2>&1
	DLRT_CLUSTER_NODES=$1 "$CLUSTER" up >/dev/null 2>"$err" || {
		echo "scale-wireup: the $1-node cluster did not come up:" >&2
		tail -5 "$err" >&2
		return 1
	}
	eval "$(DLRT_CLUSTER_NODES=$1 "$CLUSTER" env)"
	# An allocation that only sleeps; every step runs inside it (no allocation per step).
	JOB=$(runuser -u "$USER_NAME" -- sbatch --parsable --chdir=/tmp -o /dev/null -N"$1" -n"$1" -O --wrap 'sleep 3600') ||
		return 1
	for _ in $(seq 120); do
		[ "$(squeue -h -j "$JOB" -o %T 2>/dev/null)" = RUNNING ] && return 0
		sleep 0.5
	done
	echo "scale-wireup: allocation $JOB did not start" >&2
	return 1
}

# row NODES TASKS RUNTIME: one line of the table, through the carrier $VIA.
row() {
	local plain dl ratio='' cpu
	read -r plain dl ratio cpu < <(pairs_ms "$@")
	[ -n "$ratio" ] || return 1
	awk -v N="$1" -v n="$2" -v rt="$3" -v via="$VIA" -v p="$plain" -v d="$dl" \
	    -v r="$ratio" -v c="$cpu" 'BEGIN {
		printf "| %-5s | %-5s | %-8s | %-4s | %9d | %8d | %5.2f | %8d | %11.1f |\n",
		       N, n, rt, via, p, d, r, d - p, c / N }'
}

echo "# scale wire-up: srun --mpi=pmix -N<nodes> -O -n<tasks> [--dl-runtime=X --dl-exchange=E] true inside one allocation;"
echo "# $REPEAT back-to-back pairs (plain, dlrt) per cell: medians of each side, ratio = median of the pair ratios,"
echo "# CPU ms/node = median of the pairs' extra busy CPU time of the machine, divided by the node count"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(sinfo --version 2>/dev/null), $(git -C "$ROOT" log -1 --format='%h %s' 2>/dev/null | cut -c1-60)"
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(uname -r); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| %-5s | %-5s | %-8s | %-4s | %9s | %8s | %5s | %8s | %11s |\n' nodes tasks runtime via \
	'plain ms' 'dlrt ms' ratio 'extra ms' 'CPU ms/node'
echo "|---|---|---|---|---|---|---|---|---|"
rc=0
last=
for nodes in $SIZES; do
	cluster_at "$nodes" || { rc=1; continue; }
	last=$nodes
	big=$BIG_TASKS
	[ "$nodes" -lt 16 ] && big=$((16 * nodes))
	KV=$("$CLUSTER" prefix)/bin/dlrt-kv
	for n in "$nodes" "$big"; do
		[ "$FLOOR" = 1 ] && { VIA=-; row "$nodes" "$n" pmix-client || rc=1; }
		for VIA in $EXCHANGES; do
			for rt in $RUNTIMES; do
				row "$nodes" "$n" "$rt" || rc=1
			done
		done
	done
done
if [ "$SERVICES" = 1 ] && [ -n "$last" ]; then
	PROGS=$("$CLUSTER" prefix)/libexec/dlrt-tests
	n=$((4 * last))
	echo
	echo "# services under $last nodes x 4 ranks: one real gloo allreduce step, median of $REPEAT"
	printf '| %-28s | %5s | %8s |\n' step ranks 'ms'
	echo "|---|---|---|"
	for what in "horovod driver|horovod|$PROGS/gloo_hvd_allreduce" \
		    "caffe2 store|caffe2|$PROGS/gloo_redis_allreduce"; do
		IFS='|' read -r label rt prog <<<"$what"
		if ms=$(median_ms "$last" "$n" "$rt" "$prog"); then
			printf '| %-28s | %5s | %8d |\n' "$label ($rt)" "$n" "$ms"
		else
			rc=1
		fi
	done
fi
[ -n "${JOB:-}" ] && scancel "$JOB" 2>/dev/null
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$KEEP" = 1 ] || [ -z "$last" ] || DLRT_CLUSTER_NODES=$last "$CLUSTER" down >/dev/null 2>&1
exit $rc
