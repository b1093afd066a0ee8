#!/bin/bash
# --dl-runtime=tensorflow: every task's TF_CONFIG, on 3 nodes with 2 tasks each,
# read the way MultiWorkerMirroredStrategy reads it (tf_contract.py
# re-implements TFConfigClusterResolver, ClusterSpec and multi_worker_util,
# cited there): numeric addresses, each task's own on its own node, distinct
# ports per node, type/index per task, worker 0 the chief; and each task binds
# 0.0.0.0:its port on its node before exiting, as TensorFlow's gRPC server
# does. A hand-written TF_CONFIG exported to every task fails the same check.
. "$(dirname "$0")/../lib.sh"

install -m 0755 -o "$DLRT_TEST_USER" "$HERE/contract_task.py" "$WORK/task.py"
task() { # task ARGS...: a step whose tasks write their contract lines to $OUT
	rm -rf "$WORK/c" && mkdir "$WORK/c" && chown "$DLRT_TEST_USER": "$WORK/c"
	run_srun "$@" "$WORK/task.py" tensorflow "$WORK/c"
	cat "$WORK"/c/* >"$OUT" 2>/dev/null
}
check() { # check NTASKS: the checker's verdict on $OUT in $RES, its status in $CRC
	RES=$(/usr/bin/python3 "$HERE/tf_contract.py" "$1" <"$OUT")
	CRC=$?
	while read -r l; do diag "$l"; done <<<"$RES"
}

# 1. 3 nodes x 2 tasks
task -N3 --ntasks-per-node=2 --dl-runtime=tensorflow
is "$RC" 0 "tensorflow -N3 x2: the step ran" || srun_errors | head -5 | while read -r l; do fail_detail "$l"; done
check 6
is "$CRC" 0 "TF_CONFIG as TensorFlow reads it: numeric own-node addresses, distinct ports per node, type/index, chief, every port bindable by its task"
like "$RES" "^nodes=3 " "the cluster spans the 3 nodes"

# 2. more tasks per node, cyclic: task ids are not in node order
task -N3 --ntasks-per-node=3 -m cyclic --dl-runtime=tensorflow
is "$RC" 0 "tensorflow -N3 x3 cyclic: the step ran" || srun_errors | head -5 | while read -r l; do fail_detail "$l"; done
check 9
is "$CRC" 0 "cyclic distribution: every task's entry is on its own node with its own port"

# 3. two steps at once on the same nodes: their ports differ, both bindable
rm -rf "$WORK/c1" "$WORK/c2" && mkdir "$WORK/c1" "$WORK/c2" && chown "$DLRT_TEST_USER": "$WORK/c1" "$WORK/c2"
run_batch -N3 -n12 -O --dl-runtime=tensorflow <<JOB
#!/bin/bash
for s in 1 2; do
	srun -N3 -n6 -O bash -c "$WORK/task.py tensorflow $WORK/c\$s; sleep 2" &
done
wait
JOB
is "$RC" 0 "two concurrent tensorflow steps ran"
cat "$WORK"/c1/* >"$OUT" 2>/dev/null; check 6; c1=$CRC; p1=$(sed -n 's/^nodes=//p' <<<"$RES")
cat "$WORK"/c2/* >"$OUT" 2>/dev/null; check 6; c2=$CRC; p2=$(sed -n 's/^nodes=//p' <<<"$RES")
is "$c1$c2" 00 "both concurrent steps pass the check"
ok "$([ -n "$p1" ] && [ "$p1" != "$p2" ]; echo $?)" "the concurrent steps got different ports"

# 4. the check can fail: a TF_CONFIG written by hand (what users write today),
#    exported to every task, has one index for all and names hosts
TF_CONFIG='{"cluster":{"worker":["n1:2222","n1:2223","n2:2222","n2:2223","n3:2222","n3:2223"]},"task":{"type":"worker","index":0}}' \
	task -N3 --ntasks-per-node=2
check 6
ok "$([ "$CRC" != 0 ]; echo $?)" "a hand-written TF_CONFIG fails the check"
like "$RES" "type/index worker/0, want worker/1" "it gives every task the same index"
like "$RES" "'n1' is not numeric" "it names hosts"

# 5. under --dl-runtime=tensorflow dlrt's TF_CONFIG replaces an exported one
TF_CONFIG='{"cluster":{"worker":["n1:2222"]},"task":{"type":"worker","index":0}}' \
	task -N3 --ntasks-per-node=2 --dl-runtime=tensorflow
check 6
is "$CRC" 0 "an exported TF_CONFIG is replaced by each task's own"
done_testing
