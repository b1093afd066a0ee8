#!/bin/bash
# preflight-cost.sh - what --dl-preflight=quick adds to a step's start: the helper
# step of dlrt-preflight on every node of the allocation (docs/preflight.md).
#
#   DLRT_CLUSTER_ID=N bench/preflight-cost.sh     (on a running test cluster; its node
#   count is the cluster's: DLRT_CLUSTER_NODES=32 make cluster-up for 32)
#
# Inside one allocation of all the cluster's nodes, REPEAT back-to-back pairs of the same
# no-op torch step on every node (`srun -N<nodes> -n<nodes> --dl-runtime=torch true`)
# with --dl-preflight=quick and with --dl-preflight=off, the order flipped from one pair
# to the next. Prints the median of each, the median of the per-pair differences (the
# check's cost) and of the ratios. Timings, never pass/fail.
# Environment: REPEAT (5), MODE (quick).
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
eval "$("$HERE/tests/cluster/cluster.sh" env)" || exit 2
REPEAT=${REPEAT:-5}
MODE=${MODE:-quick}
USER_=${DLRT_TEST_USER:?}
NODES=$(sinfo -h -p debug -o %D)
job() {
	cat <<JOB
#!/bin/bash
t() { local s=\$(date +%s%N); srun -N$NODES -n$NODES --dl-runtime=torch --dl-preflight=\$1 true >/dev/null 2>\$HOME/pf-err.\$\$ || echo FAIL; grep 'dl-preflight' \$HOME/pf-err.\$\$ | sed 's/^/# /' >&2; rm -f \$HOME/pf-err.\$\$; echo \$(( (\$(date +%s%N) - s) / 1000000 )); }
t off >/dev/null; t $MODE >/dev/null
for i in \$(seq $REPEAT); do
	if [ \$((i % 2)) = 1 ]; then a=\$(t $MODE); b=\$(t off)
	else b=\$(t off); a=\$(t $MODE); fi
	echo "pf \$a \$b"
done
JOB
}
out=$(mktemp /var/tmp/dlrt-bench-pf.XXXXXX) && chown "$USER_" "$out"
job | runuser -u "$USER_" -- env HOME=/var/tmp sbatch --wait -N"$NODES" -n"$NODES" -p debug -o "$out" -t 20 >/dev/null || { cat "$out"; exit 1; }
echo "# --dl-preflight=$MODE's cost per step, $(date -u '+%Y-%m-%d %H:%M UTC'), $NODES nodes, $REPEAT pairs"
echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| nodes | --dl-preflight=$MODE (ms, median) | off (ms, median) | cost (ms, median of pairs) | ratio (median of pairs) |"
echo "|---|---|---|---|---|"
awk -v nodes="$NODES" '$1 == "pf" && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ { a[n] = $2; b[n] = $3; d[n] = $2 - $3; r[n] = $2 / $3; n++ }
	function med(x, n,   i, j, t) { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
		return n % 2 ? x[int(n / 2)] : (x[n / 2 - 1] + x[n / 2]) / 2 }
	END { if (n) printf "| %d | %d | %d | %d | %.2f |\n", nodes, med(a, n), med(b, n), med(d, n), med(r, n) }' "$out"
grep -q FAIL "$out" && echo "(some steps failed: $out)"
if grep -q '^# ' "$out"; then
	grep '^# ' "$out" | sort | uniq -c | sed 's/^/named: /'
	echo "(a step that named a node ran on the others: its time counts as any other)"
fi
[ -n "${KEEP_OUT:-}" ] && echo "raw: $out" || rm -f "$out"
