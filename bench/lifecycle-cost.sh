#!/bin/bash
# lifecycle-cost.sh - what dlrt-lifecycle (--dl-signal's watcher, started on every
# node of a dlrt step by default) adds to a step's start and end.
#
#   DLRT_CLUSTER_ID=N bench/lifecycle-cost.sh     (on a running test cluster)
#
# Inside one allocation of the cluster's nodes, REPEAT back-to-back pairs of the same
# short dlrt step (`srun -N<nodes> -n<tasks> --dl-runtime=X date +%s%N`) with the default
# --dl-signal (the watcher runs) and with --dl-signal=none (it does not), the order
# flipped from one pair to the next. Prints per runtime, for the step's whole time and for
# the time until its last task started (the latest clock each task prints: the nodes share
# this machine's clock), the median of each and the median of the per-pair ratios with
# their quartiles; and the machine's busy CPU time during each step, the watcher's share
# per node (on one machine the nodes' CPU adds up: on a real cluster each node spends its
# share on its own cores). Timings, never pass/fail.
# Environment: RUNTIMES (mxnet torch), REPEAT (7), TASKS (6).
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
eval "$("$HERE/tests/cluster/cluster.sh" env)" || exit 2
RUNTIMES=${RUNTIMES:-mxnet torch}
REPEAT=${REPEAT:-7}
TASKS=${TASKS:-6}
USER_=${DLRT_TEST_USER:?}
NODES=$(sinfo -h -p debug -o %D)
job() {
	cat <<JOB
#!/bin/bash
set -o pipefail
# The machine's busy CPU time in ms (/proc/stat: every node, slurmd, slurmstepd, srun and the
# tasks run on this one machine).
busy() { awk '/^cpu / { print int((\$2 + \$3 + \$4 + \$7 + \$8 + \$9) * 1000 / '\$(getconf CLK_TCK)') }' /proc/stat; }
# Prints the step's whole time, the time until its last task started and the busy CPU time
# during it (ms).
t() {
	local s=\$(date +%s%N) c=\$(busy) last
	last=\$(srun -N$NODES -n$TASKS --dl-runtime=\$1 \$2 date +%s%N 2>/dev/null | sort -n | tail -1) || echo FAIL >&2
	echo \$(( (\$(date +%s%N) - s) / 1000000 )) \$(( (\${last:-\$s} - s) / 1000000 )) \$(( \$(busy) - c ))
}
for rt in $RUNTIMES; do
	t \$rt --dl-signal=none >/dev/null; t \$rt "" >/dev/null
	for i in \$(seq $REPEAT); do
		if [ \$((i % 2)) = 1 ]; then a=\$(t \$rt ""); b=\$(t \$rt --dl-signal=none)
		else b=\$(t \$rt --dl-signal=none); a=\$(t \$rt ""); fi
		echo "\$rt \$a \$b"   # runtime, then whole, start and CPU with the watcher, then without
	done
done
JOB
}
# /var/tmp: the nodes share it (each has its own /tmp)
out=$(mktemp /var/tmp/dlrt-bench-lc.XXXXXX) && chown "$USER_" "$out"
job | runuser -u "$USER_" -- sbatch --wait -N"$NODES" -n"$TASKS" -p debug -o "$out" -t 20 >/dev/null || { cat "$out"; exit 1; }
echo "# dlrt-lifecycle's cost per step, $(date -u '+%Y-%m-%d %H:%M UTC'), $NODES nodes, $TASKS tasks, $REPEAT pairs"
echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| runtime | measured until | watcher (ms, median) | --dl-signal=none (ms, median) | ratio (median of pairs) | ratios' quartiles | pairs |"
echo "|---|---|---|---|---|---|---|"
for rt in $RUNTIMES; do
	for col in whole start; do
		awk -v rt="$rt" -v col="$col" '$1 == rt && NF == 7 && $2 ~ /^[0-9]+$/ && $5 ~ /^[0-9]+$/ {
			if (col == "whole") { x = $2; y = $5 } else { x = $3; y = $6 }
			if (y > 0) { a[n] = x; b[n] = y; r[n] = x / y; n++ } }
		function sort(x, n,   i, j, t) { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t } }
		function med(x, n) { sort(x, n); return n % 2 ? x[int(n / 2)] : (x[n / 2 - 1] + x[n / 2]) / 2 }
		END { if (!n) exit; ma = med(a, n); mb = med(b, n); mr = med(r, n)
			what = col == "whole" ? "the step ended" : "its last task started"
			printf "| %s | %s | %d | %d | %.3f | %.3f-%.3f | %d |\n", rt, what, ma, mb, mr, r[int((n - 1) / 4)], r[int(3 * (n - 1) / 4)], n }' "$out"
	done
done
echo
echo "| runtime | busy CPU with the watcher (ms, median) | without (ms, median) | added per node (ms, median of pairs) |"
echo "|---|---|---|---|"
for rt in $RUNTIMES; do
	awk -v rt="$rt" -v nodes="$NODES" '$1 == rt && NF == 7 && $4 ~ /^[0-9]+$/ && $7 ~ /^[0-9]+$/ {
			a[n] = $4; b[n] = $7; d[n] = ($4 - $7) / nodes; n++ }
		function sort(x, n,   i, j, t) { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t } }
		function med(x, n) { sort(x, n); return n % 2 ? x[int(n / 2)] : (x[n / 2 - 1] + x[n / 2]) / 2 }
		END { if (n) printf "| %s | %d | %d | %.1f |\n", rt, med(a, n), med(b, n), med(d, n) }' "$out"
done
grep -q FAIL "$out" && echo "(some steps failed: $out)"
[ -n "${KEEP_OUT:-}" ] && echo "raw: $out" || rm -f "$out"
