#!/bin/bash
# Every runtime that exchanges addresses, one step across all 16 nodes: the exchange's
# acknowledgement tree (spank/exchange.c, tree_links) has inner nodes only from 4 nodes on,
# which the 3-node cluster of `make check` never builds. Run by `make check-scale` on a
# 16-node cluster; on a smaller one it says so and checks nothing.
. "$(dirname "$0")/../lib.sh"

PRINT='echo HOST=$(hostname) $(env | grep -E "^(SLURM_PROCID|SLURM_LOCALID|SLURM_NODEID|SLURMD_NODENAME|SLURM_JOB_ID|DLRT_|DMLC_|HOROVOD_|RANK|WORLD_SIZE|LOCAL_|GROUP_|ROLE_|MASTER_|TORCHELASTIC_|PET_|SLURM_STEP_ID|SHARD_ID|NUM_SHARDS|RUN_ID|CAFFE2_CONFIG)" | tr "\n" " ")'
NODES=$(sinfo -h -p debug -o %D | awk '{ s += $1 } END { print s + 0 }')
if [ "$NODES" -lt 16 ]; then
	ok 0 "the cluster has $NODES nodes: the 16-node steps run in make check-scale"
	done_testing
	exit 0
fi

for rt in mxnet torch horovod caffe2; do
	run_srun --mpi=pmix -N16 -n32 -O --dl-runtime="$rt" bash -c "$PRINT"
	is "$RC" 0 "$rt across 16 nodes, 32 tasks: step ran"
	[ "$RC" = 0 ] || srun_errors
	problems=$(/usr/bin/python3 "$HERE/check_roles.py" "$rt" <"$OUT")
	ok $? "$rt across 16 nodes: roles and variables match Slurm's placement"
	[ -n "$problems" ] && echo "$problems" | sed 's/^/#   /'
	is "$(grep -c '^HOST=' "$OUT")" 32 "$rt across 16 nodes: every task started"
done
done_testing
