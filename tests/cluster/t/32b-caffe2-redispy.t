#!/bin/bash
# redis-py (Debian's python3-redis) against the job's helper store through the
# node relay, from the tasks of a caffe2 step on three nodes: WATCH/MULTI/EXEC
# optimistic locking racing across nodes (no increment lost), the default
# pipeline() and pipeline(transaction=False) with errors inside, a transaction
# with an unknown command aborted whole, and keys with short times to live
# (progs/redis_tx.py). The reply-for-reply comparison with redis-server is the
# unit test test_resp_redis_cli (tests/unit/resp_redis_compare.py).
. "$(dirname "$0")/../lib.sh"

/usr/bin/python3 -c 'import redis' 2>/dev/null ||
	{ echo "1..0 # SKIP python3-redis missing (tests/cluster/install-deps.sh)"; exit 0; }

run_srun -N3 -n6 --dl-runtime=caffe2 /usr/bin/python3 "$TESTS_BIN/redis_tx.py"
is "$RC" 0 "the caffe2 step with redis-py in every task succeeded"
srun_errors | head -5 | sed 's/^/# /'
grep 'retries' "$OUT" | sort | sed 's/^/# /'
grep 'not ok' "$OUT" | head -10 | sed 's/^/# /'
is "$(grep -c ': ok - ' "$OUT")" 42 "all 7 checks passed in each of the 6 tasks"
is "$(grep -c ': not ok - ' "$OUT")" 0 "no check failed"
is "$(grep -c 'ok - 600 WATCH/MULTI/EXEC increments from 6 tasks on several nodes: none lost' "$OUT")" 6 \
	"600 increments raced from 3 nodes, none lost (every task saw 600)"
done_testing
