#!/bin/bash
# Site settings of GPU binding in plugstack.conf: topology_xml= (with %n, one file
# per node) and gpu_bind= (the default a job's --dl-gpu-bind overrides). The test
# edits the cluster's dlrt.conf for its own steps and always puts it back.
. "$(dirname "$0")/../lib.sh"

SRC=$(cd "$HERE/../.." && pwd)
CONF=$DLRT_CLUSTER_DIR/etc/plugstack.conf.d/dlrt.conf
T=$WORK/topo
mkdir -p "$T"
cp "$SRC/tests/fixtures/topo/cluster-2s4g.xml" "$SRC/tests/fixtures/topo/cluster-2s4g-swapped.xml" "$T/"
ln -s cluster-2s4g.xml "$T/n1.xml"
ln -s cluster-2s4g-swapped.xml "$T/n2.xml"
chown -R "$DLRT_TEST_USER": "$T"
# Kept in memory: done_testing removes $WORK before the EXIT trap runs.
SAVED=$(cat "$CONF")
trap 'printf "%s\n" "$SAVED" >"$CONF"' EXIT
trap 'exit 1' TERM INT
site() { # the installed line plus these keys; srun and slurmstepd read it at every step
	printf "%s\n" "$SAVED" | grep -v '^#' | sed "/dlrt.so/ s|\$| $*|" >"$CONF"
}
cvd() { sed -n 's/^\(n[0-9]*\) \([0-9]*\) cvd=\([^ ]*\)$/\1 \2 \3/p' "$OUT" | sort | tr '\n' ' '; }
show='echo "$(hostname) $SLURM_LOCALID cvd=${CUDA_VISIBLE_DEVICES-unset}"'

site "topology_xml=$T/%n.xml"
run_srun -w n1,n2 -N2 --ntasks-per-node=2 -c8 --exclusive --gpus-per-node=2 --dl-runtime=torch bash -c "$show"
is "$RC" 0 "topology_xml=DIR/%n.xml: srun succeeds"
# -c8 cyclic: task 0 on package 0, task 1 on package 1. Slurm gives the step
# GPUs 0,1: on n1 both sit on package 0, on n2 both on package 1; dlrt still
# gives one each, and on n2 the first task's GPU is the one nearer the tie order.
is "$(cvd)" "n1 0 0 n1 1 1 n2 0 0 n2 1 1 " "two GPUs of one package: one per task, in task order"
run_srun -w n1,n2 -N2 --ntasks-per-node=4 -c4 --exclusive --gpus-per-node=4 --dl-runtime=torch bash -c "$show"
is "$(cvd)" "n1 0 0 n1 1 2 n1 2 1 n1 3 3 n2 0 2 n2 1 0 n2 2 3 n2 3 1 " \
	"topology_xml: each node plans on its own file"

site "topology_xml=$T/%n.xml gpu_bind=none"
run_srun -N1 -w n1 -n2 --gpus-per-node=2 --dl-runtime=torch bash -c "$show"
is "$(cvd)" "n1 0 0,1 n1 1 0,1 " "gpu_bind=none: the site default leaves Slurm's list"
run_srun -N1 -w n1 -n2 -c8 --exclusive --gpus-per-node=4 --dl-runtime=torch --dl-gpu-bind=closest bash -c "$show"
is "$(cvd)" "n1 0 0,1 n1 1 2,3 " "--dl-gpu-bind=closest overrides the site default"

site "gpu_bind=bogus"
run_srun -N1 -n1 --dl-runtime=torch true
ok $((RC == 0)) "a bad gpu_bind= stops dlrt jobs (rc=$RC)"
like "$(cat "$ERR")" "plugstack.conf: gpu_bind: --dl-gpu-bind=bogus is unknown" "the error names the key"

done_testing
