#!/bin/bash
# infer-fairness.sh - IDunno's table (benchmark b): how fast a second
# job starts and how fast the two jobs' query rates come within 10%.
#
# One dlrt-infer pool of WORKERS workers (default 6 on 3 nodes). For each batch size (2 4 6 8 10)
# and RUNS runs: job 1 (lenet5, the 60,000 training images) runs alone until it
# has answered 6,000 queries; then job 2 (deepcnn, 8x the cost per query; the
# 10,000 test images) is submitted with the same batch size. From the
# coordinator's events and timeline (POOL/events.tsv, POOL/timeline.tsv):
#   start     job 2 submitted -> its first task sent to a worker
#   answer    job 2 submitted -> its first answer back
#   converge  job 2 submitted -> the first moment from which both jobs' rates
#             (over the 0.5 s window) stay within 10% of each other for 0.5 s
#   gap       the median rate gap from then until job 2 runs out of tasks
# Mean and standard deviation over the runs. IDunno reports 6-23 s
# to converge. Timings are never pass/fail.
#
# Environment: BATCHES (default "2 4 6 8 10"), RUNS (5), KEEP (a folder to keep the pool in),
# WORKERS (6), CPUS (CPUs per pool element, sbatch -c; 5), NODES (for the title; default
# DLRT_CLUSTER_NODES or 3). 16 nodes of 16 CPUs: DLRT_CLUSTER_NODES=16 WORKERS=64 CPUS=4.
set -u
cd "$(dirname "$0")/.." || exit 1
eval "$(tests/cluster/cluster.sh env)"
U=${DLRT_TEST_USER:-dlrtu}
BATCHES=${BATCHES:-2 4 6 8 10} RUNS=${RUNS:-5}
WORKERS=${WORKERS:-6} CPUS=${CPUS:-5} NODES=${NODES:-${DLRT_CLUSTER_NODES:-3}}
export WORKERS NODES
D=/usr/share/datasets/fashion-mnist
W=$(mktemp -d "$DLRT_CLUSTER_DIR/work/bench-fair.XXXX")
chown "$U": "$W"
cd "$W" || exit 1
POOL=$W/pool
infer() { timeout -k 5 300 runuser -u "$U" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" HOME="$W" \
	DLRT_INFER_POOL="$POOL" dlrt-infer "$@"; }

arr=$(infer pool start --workers "$WORKERS" -- -c "$CPUS")
for _ in $(seq 1 $((240 + 5 * WORKERS))); do
	[ "$(infer status 2>/dev/null | grep -cE '^[0-9]+ +n[0-9]+/')" -ge "$WORKERS" ] && break
	sleep 0.5
done
: >"$W/runs"
for b in $BATCHES; do
	for r in $(seq 1 "$RUNS"); do
		j1=$(infer submit --model lenet5 --inputs $D/train-images-idx3-ubyte.gz --batch "$b" --no-labels)
		for _ in $(seq 1 600); do
			d=$(infer status | awk -v j="$j1" '$1 == j && $3 == "lenet5" { split($5, a, "/"); print a[1] }')
			[ "${d:-0}" -ge 6000 ] && break
			sleep 0.02
		done
		j2=$(infer submit --model deepcnn --inputs $D/t10k-images-idx3-ubyte.gz --batch "$b" --no-labels)
		infer wait "$j2" >/dev/null
		infer wait "$j1" >/dev/null
		echo "$b $r $j1 $j2" >>"$W/runs"
	done
done
infer pool stop >/dev/null
for _ in $(seq 1 60); do [ -z "$(squeue -h -j "$arr" 2>/dev/null)" ] && break; sleep 0.5; done

python3 - "$W/runs" "$POOL/events.tsv" "$POOL/timeline.tsv" <<'PY'
import os, statistics as st, sys
runs = [l.split() for l in open(sys.argv[1])]
ev = {}
for l in open(sys.argv[2]).readlines()[1:]:
    t, j, e = l.split()
    ev[(int(j), e)] = float(t)
tl = {}
for l in open(sys.argv[3]).readlines()[1:]:
    f = l.split()
    tl.setdefault(int(f[1]), []).append((float(f[0]), float(f[2])))
def rate_at(j, t):
    # the sample of job j at time t (samples of both jobs share tick times)
    for s in tl.get(j, []):
        if abs(s[0] - t) < 1e-6:
            return s[1]
    return None
rows = {}
for b, r, j1, j2 in runs:
    b, j1, j2 = int(b), int(j1), int(j2)
    sub = ev[(j2, 'submitted')]
    start = ev[(j2, 'first_task')] - sub
    ans = ev[(j2, 'first_result')] - sub
    end = ev.get((j2, 'done'), sub) - 0.6
    pts = []
    for t, r2 in tl.get(j2, []):
        if t < sub or t > end:
            continue
        r1 = rate_at(j1, t)
        if r1 is None or max(r1, r2) <= 0:
            continue
        pts.append((t, abs(r1 - r2) / max(r1, r2)))
    conv = None
    for i, (t, g) in enumerate(pts):
        if g > 0.10:
            continue
        later = [x for x in pts[i:] if x[0] <= t + 0.5]
        if later and later[-1][0] >= t + 0.45 and all(x[1] <= 0.10 for x in later):
            conv = t
            break
    gaps = [g for t, g in pts if conv is not None and t >= conv]
    rows.setdefault(b, []).append((start, ans, None if conv is None else conv - sub,
                                  st.median(gaps) if gaps else None))
def ms(v, scale=1.0, fmt='%.2f'):
    v = [x * scale for x in v if x is not None]
    if not v:
        return 'n/a'
    sd = st.stdev(v) if len(v) > 1 else 0.0
    return (fmt + ' ± ' + fmt) % (st.mean(v), sd)
print('fairness: %s workers on %s nodes, job 1 lenet5 (60000 queries), job 2 deepcnn (10000) '
      'submitted after 6000 of job 1; mean ± sd over runs' % (os.environ['WORKERS'], os.environ['NODES']))
print()
print('| batch | runs | job 2 start (ms) | job 2 first answer (ms) | converge within 10% (s) '
      '| converged runs | median gap after |')
print('|---|---|---|---|---|---|---|')
for b in sorted(rows):
    v = rows[b]
    print('| %d | %d | %s | %s | %s | %d/%d | %s |' % (
        b, len(v), ms([x[0] for x in v], 1000, '%.1f'), ms([x[1] for x in v], 1000, '%.1f'),
        ms([x[2] for x in v]), sum(x[2] is not None for x in v), len(v),
        ms([x[3] for x in v], 100, '%.1f') + ' %'))
PY
[ -n "${KEEP:-}" ] && cp -r "$W" "$KEEP"
rm -rf "$W"
