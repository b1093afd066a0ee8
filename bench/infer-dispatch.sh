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
# A second table shows what fault tolerance costs: the same pool in its
# three configurations, default (journal + hot standby, measured once the
# standby holds the state), DLRT_INFER_STANDBY=0 (journal only) and
# DLRT_INFER_STANDBY=0 DLRT_INFER_JOURNAL=0 (neither), for no-op tasks of 1
# query at --prefetch 1 and 4. The three take turns, REPEAT times each, and
# the table shows each one's median, its ratio to "neither" of the same
# prefetch, and beside each rate the coordinator's system calls per task
# (perf stat -e raw_syscalls:sys_enter on its process, from the submit to
# the job's end: a count, not a time, so it holds on a loaded machine) and
# the CPU time the coordinator and the standby took per 1000 tasks. Every
# run's numbers are printed below the table too, in the order they ran (and
# on stderr as they come). LENET=1 adds lenet5 tasks of 10 queries (default
# and journal only). The syscall counts need perf (linux-perf) and root, as
# the rest of this script; without perf they are "-".
#
#   bench/infer-dispatch.sh     (from bench/run-all.sh, or with the cluster's env)
# Environment: N (pool tasks, default 60000), N_LENET (lenet5 queries, 60000),
# REPEAT (3), PREFETCHES (the depths of the second table, "1 4"), LENET (0), K_SRUN (20), K_PAR (60), K_ARRAY (30), BASELINES (1; 0 = only the
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
N_LENET=${N_LENET:-60000} BASELINES=${BASELINES:-1} REPEAT=${REPEAT:-3} LENET=${LENET:-0}
PREFETCHES=${PREFETCHES:-1 4} WORKERS=${WORKERS:-6} CPUS=${CPUS:-5} NODES=${NODES:-${DLRT_CLUSTER_NODES:-3}}
POOLDESC="$WORKERS workers on $NODES nodes"
T=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
W=$(mktemp -d "$DLRT_CLUSTER_DIR/work/bench-dispatch.XXXX")
chown "$U": "$W"
cd "$W" || exit 1
as_user() { timeout -k 5 600 runuser -u "$U" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" HOME="$W" "$@"; }
now() { date +%s.%N; }

# CPU seconds (user + system) a process has used so far; 0 if it is gone.
cpu_of() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.3f", ($12 + $13) / hz }' \
		"/proc/$1/stat" 2>/dev/null || echo 0
}

# pool_rate PREFETCH [CONFIG MODEL QUERIES BATCH] -> "RATE SYSCALLS CPU_C
# CPU_S": tasks/s (queries/s for BATCH > 1) of one job, from its first task
# out to its end as the coordinator saw it (POOL/events.tsv); the
# coordinator's system calls per task (perf stat on its process from the
# submit to the job's end; "-" without perf); the CPU milliseconds the
# coordinator and the standby used per 1000 tasks over the same time.
# CONFIG: d (default: journal + hot standby, measured once the standby holds
# the state), j (DLRT_INFER_STANDBY=0: journal only), n (neither:
# DLRT_INFER_STANDBY=0 DLRT_INFER_JOURNAL=0).
pool_rate() {
	local pf=$1 cfg=${2:-d} model=${3:-noop} q=${4:-$N} batch=${5:-1}
	local pool=$W/pool-$pf-$cfg-$model arr j t0 t1 lab=--no-labels sb=1 jn=1
	local cpid spid perfpid= sc=- c0 c1 s0=0 s1=0
	case $cfg in j) sb=0 ;; n) sb=0 jn=0 ;; esac
	local pe=(env DLRT_INFER_POOL="$pool" DLRT_INFER_STANDBY="$sb" DLRT_INFER_JOURNAL="$jn")
	[ "$model" = noop ] || lab=
	arr=$(as_user "${pe[@]}" dlrt-infer pool start --workers "$WORKERS" --prefetch "$pf" -- -c "$CPUS")
	# 65 elements starting on 2 shared cores take a while: wait long, but bounded.
	for _ in $(seq 1 $((240 + 5 * WORKERS))); do
		[ "$(as_user "${pe[@]}" dlrt-infer status 2>/dev/null | grep -cE '^[0-9]+ +n[0-9]+/')" -ge "$WORKERS" ] &&
			{ [ "$sb" = 0 ] || grep -qs "standby ready" "$pool/element-${arr}_0.log"; } && break
		sleep 0.5
	done
	cpid=$(sed -n 's/^pid=//p' "$pool/access")
	spid=$(pgrep -u "$U" -f "dlrt-infer standby --pool $pool " | head -1)
	if [ -n "$cpid" ] && command -v perf >/dev/null 2>&1; then
		perf stat -x, -e raw_syscalls:sys_enter -p "$cpid" -o "$W/perf.out" 2>/dev/null &
		perfpid=$!
		sleep 0.5 # perf attaches before the job starts
	fi
	c0=$(cpu_of "$cpid")
	[ -n "$spid" ] && s0=$(cpu_of "$spid")
	j=$(as_user "${pe[@]}" dlrt-infer submit --model "$model" --inputs $T --count "$q" \
		--batch "$batch" $lab)
	as_user "${pe[@]}" dlrt-infer wait "$j" >/dev/null
	c1=$(cpu_of "$cpid")
	[ -n "$spid" ] && s1=$(cpu_of "$spid")
	if [ -n "$perfpid" ]; then
		kill -INT "$perfpid" 2>/dev/null
		wait "$perfpid" 2>/dev/null
		sc=$(awk -F, -v n="$((q / batch))" '$3 ~ /sys_enter/ && $1 ~ /^[0-9]+$/ { printf "%.2f", $1 / n }' "$W/perf.out")
		[ -n "$sc" ] || sc=-
	fi
	t0=$(awk -v j="$j" '$2 == j && $3 == "first_task" { print $1 }' "$pool/events.tsv")
	t1=$(awk -v j="$j" '$2 == j && $3 == "done" { print $1 }' "$pool/events.tsv")
	as_user "${pe[@]}" dlrt-infer pool stop >/dev/null
	for _ in $(seq 1 60); do [ -z "$(squeue -h -j "$arr" 2>/dev/null)" ] && break; sleep 0.5; done
	awk -v n="$q" -v a="$t0" -v b="$t1" -v sc="$sc" -v c0="$c0" -v c1="$c1" -v s0="$s0" \
		-v s1="$s1" -v nt="$((q / batch))" 'BEGIN {
			printf "%.0f %s %.1f %.1f", (b > a ? n / (b - a) : 0), sc,
				(c1 - c0) * 1e6 / nt, (s1 - s0) * 1e6 / nt }'
	[ "$model" = noop ] && echo " $(ls "$pool/inputs/"*.idx)" >"$W/plain"
}

# The configurations take turns within each prefetch depth, REPEAT times:
# a change of load on a shared machine hits all three alike. Each run's
# numbers go to stderr as they come (the lead's record of the run), and
# R_<pf>_<cfg> collects "rate sc cpu_c cpu_s" lines for the medians.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
col() { awk -v k="$1" '{ print $k }'; }
declare -A R
for pf in $PREFETCHES; do
	for i in $(seq 1 "$REPEAT"); do
		for cfg in d j n; do
			r=$(pool_rate "$pf" "$cfg")
			R[$pf$cfg]="${R[$pf$cfg]:-}$r"$'\n'
			RUNS="${RUNS:-}| $i | $pf | $cfg | ${r// / | } |"$'\n'
			echo "run $i, --prefetch $pf, $cfg: $r (tasks/s, syscalls/task, coordinator and standby CPU ms per 1000 tasks)" >&2
		done
	done
done
med() { printf '%s' "${R[$1]:-}" | grep . | col "$2" | median; }
of() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
cell() { echo "$(med "$1" 1) tasks/s, $(med "$1" 2) syscalls/task, CPU ms/1000 tasks: coordinator $(med "$1" 3), standby $(med "$1" 4) | $(of "$(med "$1" 1)" "$(med "${1%?}n" 1)")"; }
echo "fault tolerance cost: $POOLDESC, $N no-op tasks of 1 query, median of $REPEAT alternating runs each (one run; $(date -u "+%F %H:%M") UTC; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| configuration | --prefetch 1 | of neither | --prefetch 4 | of neither |"
echo "|---|---|---|---|---|"
echo "| default (journal + hot standby) | $(cell 1d) | $(cell 4d) |"
echo "| journal only (DLRT_INFER_STANDBY=0) | $(cell 1j) | $(cell 4j) |"
echo "| neither (DLRT_INFER_STANDBY=0 DLRT_INFER_JOURNAL=0) | $(cell 1n) | $(cell 4n) |"
echo
echo "every run, in the order they ran (d = default, j = journal only, n = neither):"
echo
echo "| run | --prefetch | configuration | tasks/s | syscalls/task | coordinator CPU ms/1000 tasks | standby CPU ms/1000 tasks |"
echo "|---|---|---|---|---|---|---|"
printf '%s' "$RUNS"
echo
if [ "$LENET" = 1 ]; then
	for _ in $(seq 1 "$REPEAT"); do
		R[ld]="${R[ld]:-}$(pool_rate 1 d lenet5 "$N_LENET" 10)"$'\n'
		R[lj]="${R[lj]:-}$(pool_rate 1 j lenet5 "$N_LENET" 10)"$'\n'
	done
	echo "| $N_LENET lenet5 queries in tasks of 10, --prefetch 1 | default: $(med ld 1) queries/s | journal only: $(med lj 1) queries/s | default is $(of "$(med ld 1)" "$(med lj 1)") |"
	echo
fi
s1=$(med 1d 1) s4=$(med 4d 1)
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
