#!/bin/bash
# GPU and NIC binding (--dl-gpu-bind, --dl-cpu-bind=gpu, --dl-topology) on nodes with
# fake GPUs: cluster.sh gives every node gres gpu:4 on dummy devices (GPUs 0-1
# Cores=0-7, 2-3 Cores=8-15), and each node loads a fixture topology by name
# (--dl-topology=DIR/%n.xml): n1 and n2 are tests/fixtures/topo/cluster-2s4g.xml
# (GPUs 0-1 on package 0, 2-3 on package 1, CPUs numbered alternately across the
# packages), n3 is cluster-2s4g-swapped.xml (GPUs 0-1 on package 1). The job
# script is the same plain program everywhere: it only prints what it got.
#
# Expected plans, worked out from the fixtures: with -c4 on a whole node, srun's
# default distribution (block:cyclic) puts local tasks 0,2 on package 0 and 1,3
# on package 1, so the closest balanced plan is GPUs 0,2,1,3 on n1/n2 and
# 2,0,3,1 on n3 (Slurm itself would give every task all four GPUs).
. "$(dirname "$0")/../lib.sh"

SRC=$(cd "$HERE/../.." && pwd)
T=$WORK/topo
mkdir -p "$T"
cp "$SRC/tests/fixtures/topo/cluster-2s4g.xml" "$SRC/tests/fixtures/topo/cluster-2s4g-swapped.xml" "$T/"
ln -s cluster-2s4g.xml "$T/n1.xml"
ln -s cluster-2s4g.xml "$T/n2.xml"
ln -s cluster-2s4g-swapped.xml "$T/n3.xml"
cat >"$WORK/show.sh" <<'EOF'
#!/bin/bash
# One line per task: node, local id, and what dlrt (or Slurm) set.
touch "${SHOW_MARK:-/dev/null}" 2>/dev/null
aff=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
echo "$(hostname) $SLURM_LOCALID cvd=${CUDA_VISIBLE_DEVICES-unset} order=${CUDA_DEVICE_ORDER-unset} hca=${NCCL_IB_HCA-unset} ucx=${UCX_NET_DEVICES-unset} aff=$aff rocr=${ROCR_VISIBLE_DEVICES-unset} ze=${ZE_AFFINITY_MASK-unset} gdo=${GPU_DEVICE_ORDINAL-unset}"
EOF
chmod 0755 "$WORK/show.sh"
chown -R "$DLRT_TEST_USER": "$T" "$WORK/show.sh"
TOPO=--dl-topology=$T/%n.xml

# field NAME: "node local value" lines, sorted, from $OUT
field() { sed -n "s/^\(n[0-9]*\) \([0-9]*\) .*$1=\([^ ]*\).*/\1 \2 \3/p" "$OUT" | sort; }
# expect NODE:v0,v1,... -> the "node local value" lines
expect() {
	local spec n vals i
	for spec in "$@"; do
		n=${spec%%:*} vals=${spec#*:} i=0
		for v in ${vals//,/ }; do echo "$n $i $v"; i=$((i + 1)); done
	done
}

# 1. closest on 3 nodes, the third with another topology
run_srun -N3 --ntasks-per-node=4 -c4 --exclusive --gpus-per-node=4 --dl-runtime=torch "$TOPO" "$WORK/show.sh"
is "$RC" 0 "closest: srun succeeds"
is "$(field cvd)" "$(expect n1:0,2,1,3 n2:0,2,1,3 n3:2,0,3,1)" \
	"closest: every task's CUDA_VISIBLE_DEVICES is the GPU of its package (n3 swapped)"
is "$(field order | awk '{print $3}' | sort -u)" "PCI_BUS_ID" "closest: CUDA_DEVICE_ORDER=PCI_BUS_ID"
is "$(field hca)" "$(expect n1:=mlx5_0:1,=mlx5_1:1,=mlx5_0:1,=mlx5_1:1 n2:=mlx5_0:1,=mlx5_1:1,=mlx5_0:1,=mlx5_1:1 \
	n3:=mlx5_0:1,=mlx5_1:1,=mlx5_0:1,=mlx5_1:1)" "closest: NCCL_IB_HCA is the HCA of the task's package"
is "$(field ucx | grep '^n1')" "$(expect n1:mlx5_0:1,mlx5_1:1,mlx5_0:1,mlx5_1:1)" "closest: UCX_NET_DEVICES too"
# Slurm gives ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK and GPU_DEVICE_ORDINAL the
# step's list too (gres.conf default): each must follow the task's GPUs, or
# ROCm/oneAPI/OpenCL programs would see every GPU of the step.
for v in rocr ze gdo; do
	is "$(field $v)" "$(field cvd)" "closest: $v equals the task's CUDA_VISIBLE_DEVICES"
done

# 2. the distribution decides where tasks run, hence their GPUs
run_srun -N1 -w n1 -n4 -c4 --exclusive --gpus-per-node=4 -m block:block --dl-runtime=torch "$TOPO" "$WORK/show.sh"
is "$(field cvd)" "$(expect n1:0,1,2,3)" "block:block: tasks 0-1 on package 0 get GPUs 0-1"

# 2b. an explicit srun --cpu-bind list decides instead (odd CPUs = package 1, even =
# package 0 in the fixture); task/none does not apply it, but task/affinity would
run_srun -N1 -w n1 -n4 --gpus-per-node=4 --cpu-bind=mask_cpu:0xAAAA,0x5555 --dl-runtime=torch "$TOPO" "$WORK/show.sh"
is "$(field cvd)" "$(expect n1:2,0,3,1)" "--cpu-bind=mask_cpu: tasks 0,2 on package 1 get GPUs 2,3"

# 3. more GPUs than tasks: two each, from the task's package
run_srun -w n1,n2 -N2 --ntasks-per-node=2 -c8 --exclusive --gpus-per-node=4 --dl-runtime=torch "$TOPO" "$WORK/show.sh"
is "$(field cvd)" "$(expect n1:0+1,2+3 n2:0+1,2+3 | tr + ,)" "2 tasks x 4 GPUs: both GPUs of the package"

# 4. a step whose GPUs are not 0..n-1: another job holds GPU 0 of n1
as_user sbatch -w n1 -n1 --gpus=1 -o /dev/null --wrap "sleep 120" >"$WORK/hold.out" 2>&1
hold=$(sed -n 's/^Submitted batch job //p' "$WORK/hold.out")
# (Bounded, but generous: on a loaded machine the holder can take seconds to start.)
wait_until 60 eval '[ "$(squeue -h -j "$hold" -o %t 2>/dev/null)" = R ]'
is "$(squeue -h -j "$hold" -o %t 2>/dev/null)" R "a job holding GPU 0 of n1 runs"
run_srun -N1 -w n1 -n3 -c2 --gpus-per-node=3 --dl-runtime=torch "$TOPO" \
	bash -c 'echo "$(hostname) $SLURM_LOCALID cvd=$CUDA_VISIBLE_DEVICES step=$SLURM_STEP_GPUS"'
is "$(field step | awk '{print $3}' | sort -u)" "1,2,3" "the step got GPUs 1-3 (node-wide numbering)"
is "$(field cvd)" "$(expect n1:1,2,3)" "node-wide indices: task 0 (package 0) keeps GPU 1, the others 2 and 3"
scancel "$hold" 2>/dev/null

# 5. --dl-cpu-bind=gpu: package 0 is CPU 0 of this machine, package 1 CPU 1 (see the fixture)
run_srun -N3 --ntasks-per-node=4 -c4 --exclusive --gpus-per-node=4 --dl-runtime=torch "$TOPO" \
	--dl-cpu-bind=gpu "$WORK/show.sh"
is "$RC" 0 "--dl-cpu-bind=gpu: srun succeeds"
is "$(field aff)" "$(expect n1:0,1,0,1 n2:0,1,0,1 n3:0,1,0,1)" \
	"--dl-cpu-bind=gpu: each task runs on the CPUs of its GPU's package"
is "$(field cvd | grep '^n3')" "$(expect n3:2,0,3,1)" "--dl-cpu-bind=gpu keeps the closest GPUs"
run_srun -N1 -w n1 -n2 -c4 --exclusive --gpus-per-node=4 --dl-runtime=torch "$TOPO" "$WORK/show.sh"
is "$(field aff)" "$(expect n1:0-1,0-1)" "without it, the affinity stays Slurm's"

# 6. map: and none
run_srun -w n1,n2 -N2 --ntasks-per-node=4 -c4 --exclusive --gpus-per-node=4 --dl-runtime=torch "$TOPO" \
	--dl-gpu-bind=map:3,2,1,0 "$WORK/show.sh"
is "$(field cvd)" "$(expect n1:3,2,1,0 n2:3,2,1,0)" "map:3,2,1,0 gives local task i GPU 3-i"
run_srun -N1 -w n2 -n2 --gpus-per-node=4 --dl-runtime=torch "$TOPO" --dl-gpu-bind=map:0+1,2*1 "$WORK/show.sh"
is "$(field cvd)" "$(expect n2:0+1,2 | tr + ,)" "map:0+1,2*1: several GPUs for one task"
run_srun -N1 -w n1 -n2 --gpus-per-node=4 --dl-runtime=torch "$TOPO" --dl-gpu-bind=none "$WORK/show.sh"
is "$(field cvd)" "$(expect n1:0+1+2+3,0+1+2+3 | tr + ,)" "none: Slurm's CUDA_VISIBLE_DEVICES stays"
is "$(field order | awk '{print $3}' | sort -u)" "unset" "none: dlrt sets nothing"
is "$(field rocr | awk '{print $3}' | sort -u)" "0,1,2,3" "none: Slurm's ROCR_VISIBLE_DEVICES stays"

# 7. a step without GPUs is left alone
run_srun -N1 -w n1 -n2 --dl-runtime=torch "$TOPO" "$WORK/show.sh"
is "$RC" 0 "no GPUs requested: srun succeeds"
is "$(field cvd | awk '{print $3}' | sort -u)" "unset" "no GPUs requested: no CUDA_VISIBLE_DEVICES"

# 7b. the default on a node whose hwloc sees no GPU (this machine): Slurm's list stays,
# --dl-verbose says why; asking for it explicitly fails with the fix instead
run_srun -N1 -w n2 -n2 --gpus-per-node=2 --dl-runtime=torch --dl-verbose "$WORK/show.sh"
is "$RC" 0 "default binding without a usable topology: the step still runs"
is "$(field cvd)" "$(expect n2:0+1,0+1 | tr + ,)" "and keeps Slurm's CUDA_VISIBLE_DEVICES"
is "$(grep -c 'GPU binding skipped' "$ERR")" 1 "--dl-verbose tells why, once per node"
like "$(cat "$ERR")" "n2: GPU binding skipped, Slurm's CUDA_VISIBLE_DEVICES stays: .*hwloc found no NVIDIA GPU" \
	"the reason names the cause"
run_srun -N1 -w n2 -n2 --gpus-per-node=2 --dl-runtime=torch --dl-dry-run true
like "$(cat "$OUT")" "^n2: GPU binding skipped, Slurm's CUDA_VISIBLE_DEVICES stays: " "the dry run says so too"
run_srun -N1 -w n2 -n2 --gpus-per-node=2 --dl-runtime=torch --dl-verbose "$TOPO" "$WORK/show.sh"
like "$(cat "$ERR")" "dlrt: task 1 on n2: CPUs [0-9,]+, CUDA_VISIBLE_DEVICES=[0-3]" "--dl-verbose shows each task's GPU"

# 8. the dry run shows every node's plan
run_srun -N3 --ntasks-per-node=4 -c4 --exclusive --gpus-per-node=4 --dl-runtime=torch "$TOPO" --dl-dry-run "$WORK/show.sh"
is "$RC" 0 "dry run succeeds"
is "$(grep -c 'GPU plan (topology' "$OUT")" 3 "dry run: one GPU plan per node"
like "$(grep '^n3: 1 ' "$OUT")" '^n3: 1 +9 +1,3,5,7 +0 +0 +4/4 +mlx5_1:1' \
	"dry run: n3 task 1 (rank 9) on package 1 gets GPU 0 and mlx5_1"
ok "$(grep -q ' 0 cvd=' "$OUT"; echo $((1 - $?)))" "dry run: the program never ran"

# 8b. a batch job: the options given to sbatch reach the plain srun of an unchanged script
run_batch -N3 --ntasks-per-node=4 -c4 --exclusive --gpus-per-node=4 --dl-runtime=torch "$TOPO" <<JOB
#!/bin/bash
srun "$WORK/show.sh"
JOB
is "$RC" 0 "sbatch job with fake GPUs succeeds"
cp "$WORK/job.out" "$OUT"
is "$(field cvd)" "$(expect n1:0,2,1,3 n2:0,2,1,3 n3:2,0,3,1)" \
	"sbatch: every task of the script's srun gets its closest GPU, no script change"

# 9. bad values stop srun before anything runs; one line each
one_line_error() { # DESC REGEX [node]: a node-side error adds srun's "Exited" line
	ok $((RC == 0)) "$1: exits non-zero (rc=$RC)"
	if [ "${3:-}" = node ]; then
		is "$(srun_errors | grep -c dlrt)" 1 "$1: exactly one dlrt line on stderr"
		is "$(srun_errors | grep -vc -e dlrt -e 'Exited with exit code 1$')" 0 \
			"$1: and only srun's exit line besides" || fail_detail "stderr: $(head -c 600 "$ERR")"
	else
		is "$(srun_errors | grep -c .)" 1 "$1: exactly one line on stderr" ||
			fail_detail "stderr: $(head -c 600 "$ERR")"
	fi
	like "$(cat "$ERR")" "$2" "$1: the line names the problem"
	ok "$([ ! -e "$WORK/ran" ]; echo $?)" "$1: the program never ran"
	rm -f "$WORK/ran"
}
mark() { as_user env SHOW_MARK="$WORK/ran" srun "$@" "$WORK/show.sh" >"$OUT" 2>"$ERR"; RC=$?; }
mark -N1 -n2 --gpus-per-node=2 --dl-runtime=torch --dl-gpu-bind=closer
one_line_error "--dl-gpu-bind=closer" "^srun: error: dlrt: --dl-gpu-bind=closer is unknown: use closest, none or map:LIST$"
mark -N1 -n2 --gpus-per-node=2 --dl-runtime=torch --dl-gpu-bind=map:0,x
one_line_error "--dl-gpu-bind=map:0,x" "dlrt: --dl-gpu-bind=map:0,x is malformed at offset 2"
mark -N1 -n2 --gpus-per-node=2 --dl-runtime=torch --dl-cpu-bind=cores
one_line_error "--dl-cpu-bind=cores" "dlrt: --dl-cpu-bind=cores is unknown: use gpu"
mark -N1 -n2 --gpus-per-node=2 --dl-runtime=torch --dl-cpu-bind=gpu --dl-gpu-bind=none
one_line_error "--dl-cpu-bind=gpu with --dl-gpu-bind=none" "drop one of the two options"
# Found on the node (the step's GPUs are known there): still one line, nothing runs.
mark -N1 -w n1 -n2 --gpus-per-node=2 --dl-runtime=torch "$TOPO" --dl-gpu-bind=map:3
one_line_error "map naming a GPU the step lacks" "dlrt: --dl-gpu-bind=map gives task 0 GPU 3, which the step does not have \(SLURM_STEP_GPUS=0,1\)" node
mark -N1 -w n1 -n2 --gpus-per-node=2 --dl-runtime=torch --dl-topology=/nonexistent/%n.xml
one_line_error "missing topology file" "cannot open topology file /nonexistent/n1.xml as the job.s user \(No such file or directory\)" node
echo '<topology><object type=' >"$WORK/garbage.xml"
mark -N1 -w n1 -n2 --gpus-per-node=2 --dl-runtime=torch --dl-topology="$WORK/garbage.xml"
one_line_error "a topology file that is not hwloc XML" "cannot use topology file $WORK/garbage.xml \(it must be hwloc XML" node
mark -N1 -w n1 -n2 --gpus-per-node=2 --dl-runtime=torch --dl-gpu-bind=closest
one_line_error "explicit closest where hwloc sees no GPU" "hwloc found no NVIDIA GPU on this node: give the node's topology with --dl-topology=FILE" node
mark -N1 -w n1 -n2 --dl-runtime=torch "$TOPO" --dl-cpu-bind=gpu
one_line_error "--dl-cpu-bind=gpu without GPUs" "needs GPUs but the step has none" node
is "$(squeue -h -u "$DLRT_TEST_USER" | wc -l)" 0 "no allocation left behind"

done_testing
