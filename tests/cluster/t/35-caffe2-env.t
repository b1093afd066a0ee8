#!/bin/bash
# The variables the Kubeflow Caffe2 operator injects, under --dl-runtime=caffe2:
# NUM_SHARDS, SHARD_ID, CAFFE2_CONFIG (checked by parsing the JSON), RUN_ID
# unique per step; a user's own RUN_ID/REDIS_HOST/REDIS_PORT win, an exported
# SHARD_ID does not (it would be the same in every task). Two tasks per node named in
# sbatch: with only -n6 -c2, Slurm 24.11's steps put four of the tasks on the first node
# (22.05's, two on each).
. "$(dirname "$0")/../lib.sh"

cat >"$WORK/show.sh" <<'SH'
#!/bin/bash
printf 'T %s|%s|%s|%s|%s|%s|%s\n' "$SLURM_PROCID" "$NUM_SHARDS" "$SHARD_ID" "$RUN_ID" \
	"${REDIS_HOST:-none}" "${REDIS_PORT:-none}" "$CAFFE2_CONFIG"
SH
chmod 0755 "$WORK/show.sh"

run_batch -N3 --ntasks-per-node=2 -c2 --dl-runtime=caffe2 <<JOB
#!/bin/bash
srun "$WORK/show.sh" | sed 's/^/s1 /'
srun "$WORK/show.sh" | sed 's/^/s2 /'
export RUN_ID=my-run REDIS_HOST=10.1.2.3 REDIS_PORT=7777 SHARD_ID=99
srun "$WORK/show.sh" | sed 's/^/s3 /'
JOB
is "$RC" 0 "sbatch --dl-runtime=caffe2 job with three steps"
out=$(cat "$WORK/job.out")
cat >"$WORK/check.py" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    step, _, rest = line.rstrip("\n").partition(" T ")
    f = rest.split("|", 6)
    rows.setdefault(step, {})[int(f[0])] = f
bad = []
for step, r in rows.items():
    if sorted(r) != list(range(6)):
        bad.append(f"{step}: tasks {sorted(r)}")
        continue
    for t, f in r.items():
        cfg = json.loads(f[6])
        want = {"type": "master" if t == 0 else "worker", "index": 0 if t == 0 else t - 1}
        if f[1] != "6" or f[2] != str(t) or cfg["task"] != want:
            bad.append(f"{step} task {t}: NUM_SHARDS={f[1]} SHARD_ID={f[2]} task={cfg['task']}")
        if cfg["cluster"] != {"master": ["n1"], "worker": ["n1", "n2", "n2", "n3", "n3"]}:
            bad.append(f"{step} task {t}: cluster={cfg['cluster']}")
    print(step, "run_ids=" + ",".join(sorted({f[3] for f in r.values()})),
          "redis=" + ",".join(sorted({f[4] + ":" + f[5] for f in r.values()})))
print("BAD" if bad else "GOOD", *bad, sep="\n")
PY
res=$(python3 "$WORK/check.py" "$WORK/job.out")
while read -r l; do diag "$l"; done <<<"$res"
like "$res" "GOOD" "NUM_SHARDS, SHARD_ID and CAFFE2_CONFIG (master/worker, index, cluster) in all steps, an exported SHARD_ID=99 overridden"
r1=$(sed -n 's/^s1 run_ids=\([^ ]*\).*/\1/p' <<<"$res") r2=$(sed -n 's/^s2 run_ids=\([^ ]*\).*/\1/p' <<<"$res")
like "$r1" "^dlrt-[0-9]+-0-0$" "step 0: one RUN_ID for all its tasks, from job, step and attempt"
like "$r2" "^dlrt-[0-9]+-1-0$" "step 1: one RUN_ID too"
ok "$([ "$r1" != "$r2" ]; echo $?)" "RUN_ID differs between the steps ($r1, $r2)"
like "$res" "s3 run_ids=my-run redis=10.1.2.3:7777" "a user's RUN_ID, REDIS_HOST and REDIS_PORT win"
done_testing
