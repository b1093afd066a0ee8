#!/bin/bash
# demo.sh - what `make demo` runs once the local 3-node cluster is up, as the
# cluster's unprivileged user, with the job scripts of examples/ as a user would:
#
#   1. roles.sbatch: the plan dlrt makes for a step (which task gets which role);
#   2. train.sbatch: LeNet-5 trained on Fashion-MNIST across the 3 nodes with
#      PyTorch DDP under --dl-runtime=torch; per epoch the loss, test accuracy,
#      time and nodes; the model saved as model.dlrtw;
#   3. infer.sh: a dlrt-infer pool (a job array over the nodes) answers the
#      10,000 test images with that model and prints accuracy and query rate.
#
# EPOCHS=N changes the training's length (default 2).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
eval "$("$top/tests/cluster/cluster.sh" env)"
work=$(mktemp -d "$DLRT_CLUSTER_DIR/work/demo.XXXX")
cp "$top"/examples/{roles.sbatch,train.sbatch,fashion_mnist_train.py,infer.sh} "$work/"
chown -R "$DLRT_TEST_USER": "$work"
chmod 0755 "$work"
cd "$work"
# The cluster's user, with the cluster's Slurm and dlrt first in PATH.
as_user=(runuser -u "$DLRT_TEST_USER" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" HOME="$work"
	EPOCHS="${EPOCHS:-2}")
show_failed() { # show_failed WHAT FILE
	echo "demo: $1 failed; its output ($work/$2):" >&2
	cat "$2" >&2 || true
	exit 1
}
t_start=$SECONDS

echo "== 1/3 sbatch roles.sbatch: the roles dlrt gives a step's tasks (user $DLRT_TEST_USER)"
timeout 120 "${as_user[@]}" sbatch --wait -o roles.out roles.sbatch >/dev/null || show_failed "the roles job" roles.out
grep -v '^ ' roles.out | head -20
echo

echo "== 2/3 sbatch train.sbatch: LeNet-5 on Fashion-MNIST, DDP across 3 nodes (--dl-runtime=torch)"
t0=$SECONDS
: >train.out
chown "$DLRT_TEST_USER": train.out
# Follow the job's output while it runs: the progress lines show up as printed.
timeout 1200 "${as_user[@]}" sbatch --wait -o train.out train.sbatch >/dev/null &
job_pid=$!
tail -n +1 -f --pid=$job_pid train.out
wait $job_pid || show_failed "the training job" train.out
[ -s model.dlrtw ] || show_failed "the training job (no model.dlrtw written)" train.out
t_train=$((SECONDS - t0))
acc=$(sed -n 's/^saved model.dlrtw: LeNet-5, test accuracy \([0-9.]*%\).*/\1/p' train.out)
echo

echo "== 3/3 infer.sh model.dlrtw: batch inference of the 10,000 test images on a dlrt-infer pool"
t0=$SECONDS
timeout 600 "${as_user[@]}" ./infer.sh model.dlrtw >infer.out 2>&1 || show_failed "the batch inference" infer.out
cat infer.out
t_infer=$((SECONDS - t0))
line=$(grep '^job [0-9]* done:' infer.out)

cat <<EOF

== Done in $((SECONDS - t_start)) s: training ${t_train} s (test accuracy ${acc:-?}), batch inference ${t_infer} s
   ${line#job * done: }
   Everything is in $work (train.out, model.dlrtw, infer.out, pool/job-1.csv).

== Try next, as user $DLRT_TEST_USER (runuser -u $DLRT_TEST_USER -- bash), after
   eval "\$($top/tests/cluster/cluster.sh env)"; cd $work
   srun -N3 -n6 --dl-runtime=torch --dl-dry-run true   # what each task gets, without running
   EPOCHS=3 sbatch train.sbatch                        # train longer (or --ntasks-per-node=2: 6 ranks)
   ./infer.sh lenet5                                   # a built-in model, for comparison, once
                                                       # they are trained: make cluster-up, as
                                                       # root in $top (about 5 minutes)
   dlrt-infer status --watch                           # a pool's progress (docs/inference.md)
   DeepSpeed, Accelerate and Lightning under dlrt: docs/trainers.md
EOF
