#!/bin/bash
# A Caffe2-style gloo job with only --dl-runtime=caffe2 added to a plain sbatch
# script: a C++ program linking Debian's libgloo rendezvouses through
# gloo::rendezvous::RedisStore (under a PrefixStore of RUN_ID, as Caffe2 does) on
# the helper store dlrt started, runs a ring allreduce across 3 nodes and checks
# the sums, a write-once SETNX and Caffe2's INCRBY add. Two steps: one task per
# node, then two.
. "$(dirname "$0")/../lib.sh"

run_batch -N3 -n6 -c2 --dl-runtime=caffe2 <<JOB
#!/bin/bash
srun -n3 --ntasks-per-node=1 "$TESTS_BIN/gloo_redis_allreduce"
echo "step0 rc=\$?"
srun "$TESTS_BIN/gloo_redis_allreduce"
echo "step1 rc=\$?"
JOB
is "$RC" 0 "sbatch --dl-runtime=caffe2 gloo job succeeded"
out=$(cat "$WORK/job.out")
[ -s "$WORK/job.err" ] && diag "$(head -5 "$WORK/job.err")"
like "$out" "step0 rc=0" "3 tasks on 3 nodes"
like "$out" "step1 rc=0" "6 tasks on 3 nodes"
is "$(grep -c '^gloo_redis_allreduce: rank [0-2]/3 ok: 1048576 floats summed correctly through the redis store' <<<"$out")" 3 \
	"3 ranks: RedisStore rendezvous, ring allreduce, write-once SETNX and INCRBY"
is "$(grep -c '^gloo_redis_allreduce: rank [0-5]/6 ok: 1048576 floats summed correctly through the redis store' <<<"$out")" 6 \
	"6 ranks, two per node, the same"
done_testing
