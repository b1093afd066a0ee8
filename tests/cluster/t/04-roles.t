#!/bin/bash
# The role model on real steps: every runtime, uneven layouts, block and cyclic,
# checked against Slurm's own view of each task (check_roles.py recomputes the
# expected values independently).
. "$(dirname "$0")/../lib.sh"

PRINT='echo HOST=$(hostname) $(env | grep -E "^(SLURM_PROCID|SLURM_LOCALID|SLURM_NODEID|SLURMD_NODENAME|SLURM_JOB_ID|DLRT_|DMLC_|HOROVOD_|RANK|WORLD_SIZE|LOCAL_|GROUP_|ROLE_|MASTER_|TORCHELASTIC_|TORCH_DISABLE_SHARE_RDZV_TCP_STORE|PET_|SLURM_STEP_ID|SHARD_ID|NUM_SHARDS|RUN_ID|CAFFE2_CONFIG)" | tr "\n" " ")'

check() { # DESC RUNTIME SERVERS SRUN-ARGS...
	local desc=$1 rt=$2 servers=$3
	shift 3
	run_srun "$@" --dl-runtime="$rt" bash -c "$PRINT"
	is "$RC" 0 "$desc: step ran"
	local problems
	problems=$(/usr/bin/python3 "$HERE/check_roles.py" "$rt" $servers <"$OUT")
	ok $? "$desc: roles and variables match Slurm's placement"
	[ -n "$problems" ] && echo "$problems" | sed 's/^/#   /'
}

tpn() { as_user srun "$@" printenv SLURM_STEP_TASKS_PER_NODE | sort -u; }
diag "layouts: '-N3 -n6' = $(tpn -N3 -n6), '-N3 -n6 -c5' = $(tpn -N3 -n6 -c5)"

for rt in mxnet horovod caffe2 torch; do
	check "$rt, 4,1,1 block" $rt "" -N3 -n6
	check "$rt, 3,2,1 block" $rt "" -N3 -n6 -c5
	check "$rt, 3,2,1 cyclic" $rt "" -N3 -n6 -c5 -m cyclic
done
check "mxnet, 2 servers" mxnet 2 -N3 -n6 -c5 --dl-servers=2
check "mxnet, more servers than nodes" mxnet 4 -N3 -n6 -c5 --dl-servers=4
check "mxnet, one node" mxnet "" -N1 -n4
check "torch, one task" torch "" -N1 -n1
check "torchrun, one agent per node" torchrun "" -N3 --ntasks-per-node=1
check "horovod, plane=2" horovod "" -N3 -n6 -c5 -m plane=2
done_testing
