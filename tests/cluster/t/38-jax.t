#!/bin/bash
# --dl-runtime=jax: what jax.distributed.initialize() with no arguments would
# use in every task, on 3 nodes with 2 tasks each. JAX is not installed here:
# jax_contract.py re-implements its lookup (cited there) and runs it on each
# task's real environment; process 0 binds the coordinator address on its own
# node before exiting. With a GPU fixture the local device ids follow the
# task's CUDA_VISIBLE_DEVICES. Without dlrt the same check fails (JAX would
# take SlurmCluster's unchecked node name and job-id port), so it can fail.
. "$(dirname "$0")/../lib.sh"

SRC=$(cd "$HERE/../.." && pwd)
install -m 0755 -o "$DLRT_TEST_USER" "$HERE/contract_task.py" "$WORK/task.py"
# task ARGS...: a step whose tasks write their contract lines to $OUT
task() {
	rm -rf "$WORK/c" && mkdir "$WORK/c" && chown "$DLRT_TEST_USER": "$WORK/c"
	run_srun "$@" "$WORK/task.py" jax "$WORK/c"
	cat "$WORK"/c/* >"$OUT" 2>/dev/null
}
check() { # check NTASKS: the checker's verdict on $OUT in $RES, its status in $CRC
	RES=$(/usr/bin/python3 "$HERE/jax_contract.py" "$1" <"$OUT")
	CRC=$?
	while read -r l; do diag "$l"; done <<<"$RES"
}

# 1. the contract on 3 nodes x 2 tasks
task -N3 --ntasks-per-node=2 --dl-runtime=jax
is "$RC" 0 "jax -N3 x2: the step ran" || srun_errors | head -5 | while read -r l; do fail_detail "$l"; done
check 6
is "$CRC" 0 "jax: coordinator (numeric, process 0's node, bindable there), process count and ids as initialize() reads them"
like "$RES" "host0=n1" "jax: process 0 runs on the step's first node"

# 2. without dlrt the checker fails: it can tell
task -N3 --ntasks-per-node=2
is "$RC" 0 "plain srun ran"
check 6
isnt_ok=$([ "$CRC" != 0 ]; echo $?)
ok "$isnt_ok" "without dlrt the check fails"
like "$RES" "SlurmCluster's unchecked n1:[0-9]+" "without dlrt JAX would take SlurmCluster's node name and job-id port"

# 3. a user's own coordinator wins
JAX_COORDINATOR_ADDRESS=10.9.9.9:1234 task -N1 -n2 --dl-runtime=jax
is "$(grep -c '"JAX_COORDINATOR_ADDRESS": "10.9.9.9:1234"' "$OUT")" 2 "a user's JAX_COORDINATOR_ADDRESS wins"

# 4. local devices from the GPU plan (fake GPUs, fixture topologies as in t/40)
T=$WORK/topo
mkdir -p "$T"
cp "$SRC/tests/fixtures/topo/cluster-2s4g.xml" "$SRC/tests/fixtures/topo/cluster-2s4g-swapped.xml" "$T/"
ln -s cluster-2s4g.xml "$T/n1.xml"
ln -s cluster-2s4g.xml "$T/n2.xml"
ln -s cluster-2s4g-swapped.xml "$T/n3.xml"
chown -R "$DLRT_TEST_USER": "$T"
task -N3 --ntasks-per-node=2 -c4 --exclusive --gpus-per-node=4 --dl-runtime=jax \
	--dl-topology="$T/%n.xml"
is "$RC" 0 "jax with the GPU plan: the step ran" || srun_errors | head -5 | while read -r l; do fail_detail "$l"; done
check 6
is "$CRC" 0 "jax with GPUs: local_device_ids are 0..n-1 of each task's CUDA_VISIBLE_DEVICES"
is "$(grep -c '"JAX_LOCAL_DEVICE_IDS"' "$OUT")" 6 "every task got JAX_LOCAL_DEVICE_IDS"
like "$RES" "devices=0(,1)* host0" "every task's devices start at 0 ($(sed -n 's/.*devices=//p' <<<"$RES"))"
done_testing
