#!/bin/bash
# infer-dispatch.sh - dispatch overhead of dlrt-infer.
#
# The same tasks (the no-op model, one query per task) run four ways on the
# local cluster, and the table shows tasks per second and the ratio to the pool:
#   - through a dlrt-infer pool of WORKERS workers (default 6), --prefetch 1 and 4
#   - an srun per task (sequential, inside one allocation)
#   - GNU parallel -jWORKERS over srun (inside one allocation of WORKERS tasks
#     on NODES nodes)
#   - a job array element per task (sbatch --array, until all are done)
# A baseline task is `dlrt-infer local --model noop` on one input (the same
# binary and input file the workers use). The baselines run far fewer tasks
# (they are slow); a rate is a rate. Timings are never pass/fail.
#
# A second table shows what the hot standby costs: the same pool in its
# default configuration (journal + hot standby, measured once the standby
# holds the state) and with DLRT_INFER_STANDBY=0 (journal only), for no-op
# tasks of 1 query (--prefetch 1 and 4) and lenet5 tasks of 10 queries.
# The two configurations take turns, REPEAT times each, and the table shows
# each one's median: on a shared machine a single pair of runs differs by
# more than the standby costs.
#
#   bench/infer-dispatch.sh     (from bench/run-all.sh, or with the cluster's env)
# Environment: N (pool tasks, default 60000), N_LENET (lenet5 queries, 60000),
# REPEAT (3), K_SRUN (20), K_PAR (60), K_ARRAY (30), BASELINES (1; 0 = only the
# pool's tables), WORKERS (6), CPUS (CPUs per pool element, sbatch -c; 5), NODES
# (the cluster's node count, for the labels and the GNU parallel allocation;
# default DLRT_CLUSTER_NODES or 3). On a bigger test cluster, e.g. 16 nodes of 16
# CPUs: DLRT_CLUSTER_NODES=16 WORKERS=64 CPUS=4 (4 workers a node;
# the coordinator, a 65th element, shares a node: the partition oversubscribes).
set -u
cd "$(dirname "$0")/.." || exit 1
eval "$(tests/cluster/cluster.sh env)"
U=${DLRT_TEST_USER:-dlrtu}
N=${N:-60000} K_SRUN=${K_SRUN:-20} K_PAR=${K_PAR:-60} K_ARRAY=${K_ARRAY:-30}
N_LENET=${N_LENET:-60000} BASELINES=${BASELINES:-1} REPEAT=${REPEAT:-3}
WORKERS=${WORKERS:-6} CPUS=${CPUS:-5} NODES=${NODES:-${DLRT_CLUSTER_NODES:-3}}
POOLDESC="$WORKERS workers on $NODES nodes"
T=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
W=$(mktemp -d "$DLRT_CLUSTER_DIR/work/bench-dispatch.XXXX")
chown "$U": "$W"
cd "$W" || exit 1
as_user() { timeout -k 5 600 runuser -u "$U" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" HOME="$W" "$@"; }
now() { date +%s.%N; }

# pool_rate PREFETCH [STANDBY MODEL QUERIES BATCH] -> tasks/s (queries/s for
# BATCH > 1) of one job, from its first task out to its end as the
# coordinator saw it (POOL/events.tsv). STANDBY 1 (the default) waits until
# the standby holds the state before submitting, so its cost is measured.
pool_rate() {
	local pf=$1 sb=${2:-1} model=${3:-noop} q=${4:-$N} batch=${5:-1}
	local pool=$W/pool-$pf-$sb-$model arr j t0 t1 lab=--no-labels
	local pe=(env DLRT_INFER_POOL="$pool" DLRT_INFER_STANDBY="$sb")
	[ "$model" = noop ] || lab=
	arr=$(as_user "${pe[@]}" dlrt-infer pool start --workers "$WORKERS" --prefetch "$pf" -- -c "$CPUS")
	# 65 elements starting on 2 shared cores take a while: wait long, but bounded.
	for _ in $(seq 1 $((240 + 5 * WORKERS))); do
		[ "$(as_user "${pe[@]}" dlrt-infer status 2>/dev/null | grep -cE '^[0-9]+ +n[0-9]+/')" -ge "$WORKERS" ] &&
			{ [ "$sb" = 0 ] || grep -qs "standby ready" "$pool/element-${arr}_0.log"; } && break
		sleep 0.5
	done
	j=$(as_user "${pe[@]}" dlrt-infer submit --model "$model" --inputs $T --count "$q" \
		--batch "$batch" $lab)
	as_user "${pe[@]}" dlrt-infer wait "$j" >/dev/null
	t0=$(awk -v j="$j" '$2 == j && $3 == "first_task" { print $1 }' "$pool/events.tsv")
	t1=$(awk -v j="$j" '$2 == j && $3 == "done" { print $1 }' "$pool/events.tsv")
	as_user "${pe[@]}" dlrt-infer pool stop >/dev/null
	for _ in $(seq 1 60); do [ -z "$(squeue -h -j "$arr" 2>/dev/null)" ] && break; sleep 0.5; done
	awk -v n="$q" -v a="$t0" -v b="$t1" 'BEGIN { if (b > a) printf "%.0f", n / (b - a); else print 0 }'
	[ "$model" = noop ] && echo " $(ls "$pool/inputs/"*.idx)" >"$W/plain"
}

# pair NAME PREFETCH [MODEL QUERIES BATCH]: both configurations in turns;
# sets NAME_s (default) and NAME_j (journal only) to their medians.
median() { tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
pair() {
	local name=$1 s= j=
	shift
	for _ in $(seq 1 "$REPEAT"); do
		s="$s $(pool_rate "$1" 1 "${@:2}")"
		j="$j $(pool_rate "$1" 0 "${@:2}")"
	done
	eval "${name}_s=$(echo $s | median) ${name}_j=$(echo $j | median)"
}
# What the hot standby costs, from this one run.
pair p1 1
pair p4 4
pair pl 1 lenet5 "$N_LENET" 10
s1=$p1_s j1=$p1_j s4=$p4_s j4=$p4_j sl=$pl_s jl=$pl_j
of() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
echo "hot standby cost: $POOLDESC, median of $REPEAT runs each (one run; $(date -u +%F))"
echo
echo "| job | default (journal + hot standby) | DLRT_INFER_STANDBY=0 (journal only) | default is |"
echo "|---|---|---|---|"
echo "| $N no-op tasks of 1 query, --prefetch 1 | $s1 tasks/s | $j1 tasks/s | $(of "$s1" "$j1") |"
echo "| $N no-op tasks of 1 query, --prefetch 4 | $s4 tasks/s | $j4 tasks/s | $(of "$s4" "$j4") |"
echo "| $N_LENET lenet5 queries in tasks of 10, --prefetch 1 | $sl queries/s | $jl queries/s | $(of "$sl" "$jl") |"
echo
if [ "$BASELINES" = 0 ]; then
	rm -rf "$W"
	exit 0
fi
p1=$s1 p4=$s4
PLAIN=$(cut -d' ' -f2 "$W/plain")
TASK="dlrt-infer local --model noop --inputs $PLAIN --count 1 --out /dev/null --first"

# An srun per task, one after the other, inside one allocation.
cat >"$W/srun.sh" <<EOF
#!/bin/bash
t0=\$(date +%s.%N)
for i in \$(seq 1 $K_SRUN); do srun -n1 -N1 $TASK \$i || exit 1; done
t1=\$(date +%s.%N)
awk -v k=$K_SRUN -v a=\$t0 -v b=\$t1 'BEGIN { printf "%.2f\n", k / (b - a) }' >"$W/srun.rate"
EOF
# GNU parallel over srun: WORKERS at a time inside an allocation of WORKERS tasks.
cat >"$W/par.sh" <<EOF
#!/bin/bash
t0=\$(date +%s.%N)
seq 1 $K_PAR | parallel -j$WORKERS srun -n1 -N1 --exact $TASK {} || exit 1
t1=\$(date +%s.%N)
awk -v k=$K_PAR -v a=\$t0 -v b=\$t1 'BEGIN { printf "%.2f\n", k / (b - a) }' >"$W/par.rate"
EOF
chmod 0755 "$W/srun.sh" "$W/par.sh"
chown "$U": "$W/srun.sh" "$W/par.sh"
as_user sbatch --wait -N1 -n1 -o "$W/srun.out" "$W/srun.sh" >/dev/null
as_user sbatch --wait -N"$NODES" -n"$WORKERS" -o "$W/par.out" "$W/par.sh" >/dev/null
# A job array element per task: from sbatch to the last element's end.
t0=$(now)
as_user sbatch --wait --array=1-"$K_ARRAY" -o /dev/null --wrap "$TASK \$SLURM_ARRAY_TASK_ID" >/dev/null
t1=$(now)
arr=$(awk -v k="$K_ARRAY" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", k / (b - a) }')
sr=$(cat "$W/srun.rate" 2>/dev/null || echo 0)
pr=$(cat "$W/par.rate" 2>/dev/null || echo 0)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.0fx", a / b; else print "-" }'; }
echo "dispatch overhead: no-op model, 1 query per task (one run; $(date -u +%F))"
echo
echo "| way | tasks | tasks/s | the pool (--prefetch 1) is |"
echo "|---|---|---|---|"
echo "| dlrt-infer pool, $POOLDESC, --prefetch 1 | $N | $p1 | - |"
echo "| dlrt-infer pool, $POOLDESC, --prefetch 4 | $N | $p4 | $(awk -v a="$p1" -v b="$p4" 'BEGIN { printf "%.2fx as fast (prefetch 4 is %.1fx faster)", a / b, b / a }') |"
echo "| an srun per task (in one allocation) | $K_SRUN | $sr | $(ratio "$p1" "$sr") faster |"
echo "| GNU parallel -j$WORKERS over srun (allocation of $WORKERS) | $K_PAR | $pr | $(ratio "$p1" "$pr") faster |"
echo "| a job array element per task | $K_ARRAY | $arr | $(ratio "$p1" "$arr") faster |"
rm -rf "$W"
