#!/bin/bash
# infer-dispatch.sh - dispatch overhead of dlrt-infer (benchmark a).
#
# The same tasks (the no-op model, one query per task) run four ways on the
# local cluster, and the table shows tasks per second and the ratio to the pool:
#   - through a dlrt-infer pool of 6 workers (3 nodes), --prefetch 1 and 4
#   - an srun per task (sequential, inside one allocation)
#   - GNU parallel -j6 over srun (inside one allocation of 6 tasks)
#   - a job array element per task (sbatch --array, until all are done)
# A baseline task is `dlrt-infer local --model noop` on one input (the same
# binary and input file the workers use). The baselines run far fewer tasks
# (they are slow); a rate is a rate. Timings are never pass/fail.
#
#   bench/infer-dispatch.sh     (from bench/run-all.sh, or with the cluster's env)
# Environment: N (pool tasks, default 60000), K_SRUN (20), K_PAR (60), K_ARRAY (30).
set -u
cd "$(dirname "$0")/.." || exit 1
eval "$(tests/cluster/cluster.sh env)"
U=${DLRT_TEST_USER:-dlrtu}
N=${N:-60000} K_SRUN=${K_SRUN:-20} K_PAR=${K_PAR:-60} K_ARRAY=${K_ARRAY:-30}
T=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
W=$(mktemp -d "$DLRT_CLUSTER_DIR/work/bench-dispatch.XXXX")
chown "$U": "$W"
cd "$W" || exit 1
as_user() { timeout -k 5 600 runuser -u "$U" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" HOME="$W" "$@"; }
now() { date +%s.%N; }

pool_rate() { # pool_rate PREFETCH -> tasks/s of N no-op tasks of 1 query
	local pool=$W/pool-$1 arr j t0 t1
	arr=$(as_user env DLRT_INFER_POOL="$pool" dlrt-infer pool start --workers 6 --prefetch "$1" -- -c 5)
	for _ in $(seq 1 240); do
		[ "$(as_user env DLRT_INFER_POOL="$pool" dlrt-infer status 2>/dev/null | grep -cE '^[0-9]+ +n[1-3]/')" -ge 6 ] && break
		sleep 0.5
	done
	j=$(as_user env DLRT_INFER_POOL="$pool" dlrt-infer submit --model noop --inputs $T --count "$N" \
		--batch 1 --no-labels)
	as_user env DLRT_INFER_POOL="$pool" dlrt-infer wait "$j" >/dev/null
	# From the first task out to the job's end, as the coordinator saw it.
	t0=$(awk -v j="$j" '$2 == j && $3 == "first_task" { print $1 }' "$pool/events.tsv")
	t1=$(awk -v j="$j" '$2 == j && $3 == "done" { print $1 }' "$pool/events.tsv")
	as_user env DLRT_INFER_POOL="$pool" dlrt-infer pool stop >/dev/null
	for _ in $(seq 1 60); do [ -z "$(squeue -h -j "$arr" 2>/dev/null)" ] && break; sleep 0.5; done
	awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }'
	echo " $(ls "$pool/inputs/"*.idx)" >"$W/plain"
}

p1=$(pool_rate 1)
p4=$(pool_rate 4)
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
# GNU parallel over srun: 6 at a time inside an allocation of 6 tasks.
cat >"$W/par.sh" <<EOF
#!/bin/bash
t0=\$(date +%s.%N)
seq 1 $K_PAR | parallel -j6 srun -n1 -N1 --exact $TASK {} || exit 1
t1=\$(date +%s.%N)
awk -v k=$K_PAR -v a=\$t0 -v b=\$t1 'BEGIN { printf "%.2f\n", k / (b - a) }' >"$W/par.rate"
EOF
chmod 0755 "$W/srun.sh" "$W/par.sh"
chown "$U": "$W/srun.sh" "$W/par.sh"
as_user sbatch --wait -N1 -n1 -o "$W/srun.out" "$W/srun.sh" >/dev/null
as_user sbatch --wait -N3 -n6 -o "$W/par.out" "$W/par.sh" >/dev/null
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
echo "| dlrt-infer pool, 6 workers on 3 nodes, --prefetch 1 | $N | $p1 | - |"
echo "| dlrt-infer pool, 6 workers on 3 nodes, --prefetch 4 | $N | $p4 | $(awk -v a="$p1" -v b="$p4" 'BEGIN { printf "%.2fx as fast (prefetch 4 is %.1fx faster)", a / b, b / a }') |"
echo "| an srun per task (in one allocation) | $K_SRUN | $sr | $(ratio "$p1" "$sr") faster |"
echo "| GNU parallel -j6 over srun (allocation of 6) | $K_PAR | $pr | $(ratio "$p1" "$pr") faster |"
echo "| a job array element per task | $K_ARRAY | $arr | $(ratio "$p1" "$arr") faster |"
rm -rf "$W"
