#!/bin/bash
# lifecycle-cost.sh - what dlrt-lifecycle (--dl-signal's watcher, started on every
# node of a dlrt step by default) adds to a step's start and end.
#
#   DLRT_CLUSTER_ID=N bench/lifecycle-cost.sh     (on a running test cluster)
#
# Inside one allocation of the cluster's nodes, REPEAT back-to-back pairs of the same
# no-op dlrt step (`srun -N<nodes> -n<tasks> --dl-runtime=X true`) with the default
# --dl-signal (the watcher runs) and with --dl-signal=none (it does not), the order
# flipped from one pair to the next. Prints per runtime the median of each and the
# median of the per-pair ratios. Timings, never pass/fail.
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
t() { local s=\$(date +%s%N); srun -N$NODES -n$TASKS --dl-runtime=\$1 \$2 true >/dev/null 2>&1 || echo FAIL; echo \$(( (\$(date +%s%N) - s) / 1000000 )); }
for rt in $RUNTIMES; do
	t \$rt --dl-signal=none >/dev/null; t \$rt "" >/dev/null
	for i in \$(seq $REPEAT); do
		if [ \$((i % 2)) = 1 ]; then a=\$(t \$rt ""); b=\$(t \$rt --dl-signal=none)
		else b=\$(t \$rt --dl-signal=none); a=\$(t \$rt ""); fi
		echo "\$rt \$a \$b"
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
echo "| runtime | watcher (ms, median) | --dl-signal=none (ms, median) | ratio (median of pairs) |"
echo "|---|---|---|---|"
for rt in $RUNTIMES; do
	awk -v rt="$rt" '$1 == rt && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ { a[n] = $2; b[n] = $3; r[n] = $2 / $3; n++ }
		function med(x, n,   i, j, t) { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
			return n % 2 ? x[int(n / 2)] : (x[n / 2 - 1] + x[n / 2]) / 2 }
		END { if (n) printf "| %s | %d | %d | %.2f |\n", rt, med(a, n), med(b, n), med(r, n) }' "$out"
done
grep -q FAIL "$out" && echo "(some steps failed: $out)"
[ -n "${KEEP_OUT:-}" ] && echo "raw: $out" || rm -f "$out"
