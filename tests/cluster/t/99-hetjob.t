#!/bin/bash
# A step over the components of a heterogeneous job is one dlrt world
# (docs/hetjob.md): `salloc -N1 -n2 : -N2 -n4 --gres=gpu:2` then
# `srun --het-group=0,1 --dl-runtime=...`, and a `#SBATCH hetjob` script's srun
# over its components. Component 0 asks no GPU (a CPU component), component 1
# asks gpu:2 on each of its nodes. Checked: the real ps-lite contract program
# trains with its scheduler and servers on the CPU node and its workers on the
# GPU nodes, through srun's rendezvous and through Slurm's PMIx; torch DDP,
# Horovod (gloo) and TensorFlow's TF_CONFIG (chief and ps in the first component)
# over two components; each component's GPUs from its own GRES and none for the
# CPU component; mappings that cannot fit refused in one line before the step
# runs; --dl-log-dir, fail-fast naming role and component, --dl-dry-run's table
# per component; a plain step's table as before.
. "$(dirname "$0")/../lib.sh"

# Only the backfill scheduler starts a heterogeneous job, on its cycle (bf_interval, 30 s
# by default): each salloc below may wait that long before its step even starts, and on a
# loaded machine longer. A bound on each command, not a timing check.
[ "$JOB_TIMEOUT" -lt 300 ] && JOB_TIMEOUT=300
P=$TESTS_BIN/pslite_contract
SRC=$(cd "$HERE/../.." && pwd)
# Each component on its own nodes, named, so that the checks can name them.
CPU="-N1 -n2 -w n1"
GPU="-N2 -n4 --gres=gpu:2 -w n[2-3]"

# Slurm before 24.11: srun's mpi/pmix starts one abort agent per component of a
# heterogeneous step and may then wait for good at its end, in pmixp_abort_agent_stop
# (SchedMD ticket 16817, fixed in 24.11 by "mpi/pmix - Prevent mutiple abort agents"; a
# plain `srun --mpi=pmix --het-group=0,1 true` without dlrt hangs the same way). There
# the steps run with --mpi=none (this cluster's MpiDefault is pmix) and the PMIx check
# is skipped; docs/hetjob.md tells users the same.
SLURM_VER=$(srun --version | sed -n 's/^slurm[^ ]* \([0-9]*\)\.\([0-9]*\).*/\1\2/p')
HET_MPI=()
HET_PMIX_BUG=
if [ "${SLURM_VER:-0}" -lt 2411 ]; then
	HET_MPI=(--mpi=none)
	HET_PMIX_BUG="Slurm before 24.11: srun --mpi=pmix over a heterogeneous step may hang at its end (SchedMD ticket 16817)"
fi
# het SALLOC-ARGS SRUN-ARGS...: srun --het-group=0,1 inside salloc's hetjob allocation.
het() {
	local alloc=$1 mpi=("${HET_MPI[@]}")
	shift
	[[ " $* " == *" --mpi="* ]] && mpi=()
	# shellcheck disable=SC2086 # the allocation's words, not globs (-w n[2-3])
	set -f
	as_user salloc $alloc srun --het-group=0,1 "${mpi[@]}" "$@" >"$OUT" 2>"$ERR"
	RC=$?
	set +f
}
# $ERR without salloc's and srun's progress lines.
het_errors() {
	grep -Ev '^salloc: |^srun: job [0-9]+ (queued and waiting for resources|has been allocated resources)$' "$ERR"
}

# 1. The dry run: one table over both components, roles by component.
het "$CPU : $GPU" --dl-runtime=mxnet --dl-dry-run true
is "$RC" 0 "mxnet dry run over two components" || het_errors | head -3 | while read -r l; do fail_detail "$l"; done
like "$(cat "$OUT")" "job [0-9]+ step [0-9]+, runtime mxnet, 6 tasks on 3 nodes" "one world of 6 tasks on 3 nodes"
like "$(cat "$OUT")" "roles: 1 scheduler, 1 server, 4 workers" "the first component's 2 tasks are the scheduler and a server"
like "$(cat "$OUT")" "component 0: tasks 0-1 on n1\(2\), cpus/node 2: 1 scheduler, 1 server" \
	"the table per component: component 0 on n1 holds the scheduler and the server"
like "$(cat "$OUT")" "component 1: tasks 2-5 on n2\([0-9]\) n3\([0-9]\), cpus/node [0-9,()x]*: 4 workers" \
	"component 1 on n2 and n3 holds the 4 workers"
is "$(grep -cE '^[2-5] +n[23] +[0-9] +worker ' "$OUT")" 4 "tasks 2-5 are workers on the GPU component's nodes"
# (--mpi=none before 24.11, a shared partition's nodes from 24.11 on: t/99c checks each reason)
like "$(cat "$ERR")" "address exchange through srun's rendezvous: auto, and (the step has no PMIx server|other users may be on the job's nodes)" \
	"the dry run says why auto took srun's rendezvous"

# 2. The ps-lite contract program: servers on the CPU node, workers on the GPU nodes.
het "-N1 -n3 -w n1 : $GPU" --dl-runtime=mxnet "$P" --timeout-s 20 --rounds 3
is "$RC" 0 "ps-lite over two components trained" || het_errors | head -5 | while read -r l; do fail_detail "$l"; done
is "$(grep -c '3 rounds ok, sum=10$' "$OUT")" 4 "all 4 workers pulled correct sums"
is "$(grep -oE '^pslite_contract: worker [0-9]+ of 4 on n[0-9]' "$OUT" | awk '{print $NF}' | sort -u | paste -sd,)" \
	"n2,n3" "the workers ran on the GPU component's nodes only"
is "$(grep -oE '^pslite_contract: server [0-9]+ of 2 on n[0-9]' "$OUT" | awk '{print $NF}' | sort -u)" \
	"n1" "both servers ran on the CPU component's node"
like "$(cat "$OUT")" "scheduler on n1 .*6 nodes registered \(2 servers, 4 workers\), all finalized" \
	"the scheduler on n1 saw all six register and finalize"

if [ -n "$NO_PMIX$HET_PMIX_BUG" ]; then
	skip "ps-lite over two components through Slurm's PMIx: ${NO_PMIX:-$HET_PMIX_BUG}"
else
	het "-N1 -n3 -w n1 : $GPU" --mpi=pmix --dl-exchange=pmix --dl-verbose --dl-runtime=mxnet "$P" \
		--timeout-s 20 --rounds 3
	is "$RC/$(grep -c '3 rounds ok, sum=10$' "$OUT")" "0/4" \
		"--dl-exchange=pmix: Slurm's PMIx spans the components, ps-lite trained" ||
		het_errors | head -5 | while read -r l; do fail_detail "$l"; done
	like "$(cat "$ERR")" "address exchange through Slurm's PMIx: [0-9.]+ ms" \
		"the tasks exchanged through Slurm's PMIx"
fi

# 3. Each component's GPUs from its own GRES; none for the CPU component.
T=$WORK/topo
mkdir -p "$T"
cp "$SRC/tests/fixtures/topo/cluster-2s4g.xml" "$T/"
for n in n1 n2 n3; do ln -s cluster-2s4g.xml "$T/$n.xml"; done
het "$CPU : -N2 -n4 --ntasks-per-node=2 --gres=gpu:2 -w n[2-3]" --dl-runtime=horovod --dl-topology="$T/%n.xml" \
	bash -c 'echo "T=$SLURM_PROCID $(hostname) cvd=${CUDA_VISIBLE_DEVICES-unset} hvd=$HOROVOD_RANK/$HOROVOD_SIZE"'
is "$RC" 0 "horovod with a GPU plan over two components" || het_errors | head -3 | while read -r l; do fail_detail "$l"; done
is "$(grep -cE '^T=[01] n1 cvd=unset hvd=[01]/6$' "$OUT")" 2 "the CPU component's tasks get no GPU variables"
is "$(grep -E '^T=[2-5] n[23] cvd=[0-9]+ ' "$OUT" | awk '{print $2, $3}' | sort | uniq -c | awk '{print $1}' | sort -u)" 1 \
	"each GPU-component task has one GPU of its node's two, its own"

# 4. torch DDP across two components.
if /usr/bin/python3 -c 'import torch' 2>/dev/null && [ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
	cp "$SRC/examples/torch_fashion_mnist.py" "$WORK/train.py"
	# A bound for 6 ranks training on a loaded 2-core machine, not a timing check.
	JOB_TIMEOUT=400 het "-N1 -n2 -c2 -w n1 : -N2 -n4 -c2 -w n[2-3]" --dl-runtime=torch /usr/bin/python3 train.py --steps 10
	is "$RC" 0 "torch DDP over two components trained" || het_errors | tail -5 | while read -r l; do fail_detail "$l"; done
	is "$(grep -oE 'rank=[0-5] world=6' "$OUT" | sort -u | wc -l)" 6 "ranks 0-5 of one world of 6"
	is "$(grep -oE 'params_sha256=[0-9a-f]{64}' "$OUT" | sort -u | wc -l)" 1 \
		"the parameters are bit-identical on all ranks of both components"
else
	skip "torch DDP over two components: needs python3-torch and dataset-fashion-mnist"
fi

# 5. Horovod (gloo) over two components: one rendezvous, one allreduce.
het "$CPU : $GPU" --dl-runtime=horovod "$TESTS_BIN/gloo_hvd_allreduce"
is "$RC" 0 "horovod gloo over two components" || het_errors | head -3 | while read -r l; do fail_detail "$l"; done
is "$(grep -c '^rank [0-5] of 6: allreduce ok sum=15$' "$OUT")" 6 "all 6 ranks passed the rendezvous and the allreduce"

# 6. TensorFlow: the chief and the ps tasks in the first component, workers in the other.
het "-N1 -n3 -w n1 : -N2 -n4 -w n[2-3]" --dl-runtime=tensorflow bash -c 'echo "T=$SLURM_PROCID $(hostname) $TF_CONFIG"'
is "$RC" 0 "tensorflow over two components" || het_errors | head -3 | while read -r l; do fail_detail "$l"; done
tf=$(sort -n -k1.3 "$OUT" | /usr/bin/python3 -c '
import json, sys
rows = [l.split(" ", 2) for l in sys.stdin.read().splitlines() if l.startswith("T=")]
out = []
for t, host, conf in rows:
    c = json.loads(conf)
    cl = c["cluster"]
    out.append("%s:%s%d@%s" % (t[2:], c["task"]["type"], c["task"]["index"], host))
    assert len(cl["chief"]) == 1 and len(cl["ps"]) == 2 and len(cl["worker"]) == 4, cl
    me = cl[c["task"]["type"]][c["task"]["index"]]
    assert me.startswith("10."), me
print(" ".join(out))')
is "$tf" "0:chief0@n1 1:ps0@n1 2:ps1@n1 3:worker0@n2 4:worker1@n2 5:worker2@n2 6:worker3@n3" \
	"TF_CONFIG: chief and 2 ps on the first component's node, 4 workers on the other's"

# 6b. JAX, Caffe2 and torchrun: their contract's variables over both components.
het "$CPU : $GPU" --dl-runtime=jax bash -c 'echo "T=$SLURM_PROCID $JAX_PROCESS_ID/$JAX_NUM_PROCESSES $JAX_COORDINATOR_ADDRESS"'
is "$RC/$(grep -cE '^T=([0-5]) \1/6 10\.[0-9.]+:[0-9]+$' "$OUT")/$(awk '{print $3}' "$OUT" | sort -u | wc -l)" "0/6/1" \
	"jax: process ids 0-5 of 6, one coordinator for both components"
het "$CPU : $GPU" --dl-runtime=caffe2 bash -c 'echo "T=$SLURM_PROCID $SHARD_ID/$NUM_SHARDS $DLRT_ROLE"'
is "$RC/$(grep -cE '^T=([0-5]) \1/6 (master|worker)$' "$OUT")/$(grep -c ' master$' "$OUT")" "0/6/1" \
	"caffe2: shards 0-5 of 6, task 0 (the first component's) the master"
het "-N1 -n1 -w n1 : -N2 --ntasks-per-node=1 -w n[2-3]" --dl-runtime=torchrun bash -c 'echo "T=$SLURM_PROCID $PET_NNODES $PET_RDZV_ID"'
is "$RC/$(grep -cE '^T=[0-2] 3 dlrt-[0-9.]+$' "$OUT")/$(awk '{print $3}' "$OUT" | sort -u | wc -l)" "0/3/1" \
	"torchrun: one agent per node of both components, 3 nodes, one rendezvous"

# 7. Mappings that cannot fit: one line each, before anything runs.
het "-N1 -n1 -w n1 : $GPU" --dl-runtime=mxnet true
is "$RC,$(het_errors | wc -l)" "1,1" "mxnet with a one-task first component: refused in one line"
like "$(het_errors)" "first component, which has 1 task: give it at least 2 .* or --dl-het-roles=flat" \
	"the line says what fits"
het "$CPU : $GPU" --dl-runtime=mxnet --dl-servers=3 true
is "$RC,$(het_errors | wc -l)" "1,1" "--dl-servers=3 with a 2-task first component: refused in one line"
like "$(het_errors)" "dl-servers=3 does not fit .* give the first component 4 tasks" "the line says what fits"
het "-N1 -n1 -w n1 : $GPU" --dl-runtime=tensorflow true
is "$RC,$(het_errors | wc -l)" "1,1" "tensorflow with a one-task first component: refused in one line"
het "-N1 -n1 -w n1 : $GPU" --dl-runtime=mxnet --dl-het-roles=flat --dl-dry-run true
is "$RC" 0 "--dl-het-roles=flat: the same components fit as one plain step"
like "$(cat "$OUT")" "roles as one plain step \(--dl-het-roles=flat\)" "the dry run names the mapping"

# 8. --dl-log-dir: one folder for the whole step, a log per task of both components.
het "$CPU : $GPU" --dl-runtime=mxnet --dl-log-dir="$WORK/logs" "$P" --timeout-s 20 --rounds 2
is "$RC" 0 "ps-lite with --dl-log-dir over two components" || het_errors | head -3 | while read -r l; do fail_detail "$l"; done
is "$(find "$WORK/logs" -name '*.log' | wc -l)" 6 "six task logs"
is "$(find "$WORK/logs" -mindepth 1 -maxdepth 1 -type d | wc -l)" 1 "all in one job folder (the het job's)"

# 9. Fail-fast: a worker of the GPU component dies; the line names its role and
# component, and the whole step (both components) ends instead of hanging.
het "$CPU : $GPU" --dl-runtime=mxnet "$P" --timeout-s 60 --rounds 100000 --round-delay-ms 20 \
	--crash worker:1 --crash-after-ms 1000
ok "$([ "$RC" -ne 0 ] && echo 0 || echo 1)" "a worker killed mid-run: the step fails instead of hanging"
like "$(cat "$ERR")" "mxnet worker [0-9]+ \(task [0-9]+ on n[23], component 1\) (exited|was killed)" \
	"the fail-fast line names the role and the component"

# 9b. --dl-signal: every task of both components gets the warning before the limit.
# shellcheck disable=SC2016 # the task's shell expands these
set -f
as_user salloc -t 2 $CPU : $GPU srun --het-group=0,1 "${HET_MPI[@]}" --dl-runtime=torch --dl-signal=USR1@105 \
	bash -c 'trap "echo got USR1 \$SLURM_PROCID; exit 0" USR1; for i in $(seq 60); do sleep 1; done; echo none' \
	>"$OUT" 2>"$ERR"
set +f
is "$(grep -c '^got USR1 [0-5]$' "$OUT")" 6 "--dl-signal: all 6 tasks of both components got USR1 before the limit"

# 9c. --dl-hang-timeout: the positions of both components' tasks are compared as one
# step's, and every component's tasks end.
set -f
as_user salloc -t 3 $CPU : $GPU srun --het-group=0,1 "${HET_MPI[@]}" --dl-runtime=torch --dl-hang-timeout=10 \
	sleep 100 >"$OUT" 2>"$ERR"
set +f
is "$(grep -cE '^dlrt: hang: task [0-5] \(worker\) on n[1-3], pid' "$ERR")" 6 \
	"--dl-hang-timeout: each of the 6 tasks of both components printed its stacks"
like "$(cat "$ERR")" "dlrt: hang: all 6 tasks are in clock_nanosleep" \
	"--dl-hang-timeout: one comparison over both components' positions"

# 10. A #SBATCH hetjob script's srun over its components.
run_batch --dl-runtime=mxnet <<JOB
#!/bin/bash
#SBATCH -N1 -n2
#SBATCH hetjob
#SBATCH -N2 -n4 --gres=gpu:2
srun --het-group=0,1 ${HET_MPI[*]} "$P" --timeout-s 20 --rounds 3
JOB
is "$RC" 0 "a hetjob batch script's srun --het-group=0,1 trained" || fail_detail "$(tail -3 "$WORK/job.err")"
is "$(grep -c '3 rounds ok, sum=10$' "$WORK/job.out")" 4 "its 4 workers pulled correct sums"

# 10b. srun making the heterogeneous allocation itself gives the tasks no allocation of
# each component to rebuild the step from: refused in one line that says where it runs.
# HET_MPI as everywhere here: before 24.11 srun's own mpi/pmix may hang at the end of
# any heterogeneous step, this refused one too (SchedMD ticket 16817, seen here).
set -f
as_user srun -N1 -n2 -w n1 "${HET_MPI[@]}" --dl-runtime=mxnet --dl-dry-run : -N2 -n4 -w n[2-3] true \
	>"$OUT" 2>"$ERR"
RC=$?
set +f
is "$RC,$(het_errors | wc -l)" "1,1" "srun -n2 : -n4 making its own hetjob allocation: refused in one line"
like "$(het_errors)" "step over several components runs only inside a heterogeneous job's allocation: .* srun --het-group=0,1 there" \
	"the line says where such a step runs"

# 11. A plain step is as before: no component table, roles spread as always.
run_srun -N3 -n6 --dl-runtime=mxnet --dl-dry-run true
is "$RC" 0 "a plain step's dry run"
unlike "$(cat "$OUT")" "heterogeneous" "no component table for a plain step"
like "$(cat "$OUT")" "roles: 1 scheduler, 3 servers, 2 workers" "a plain step's roles are spread as before"

# 12. The components' node lists come from the job's environment, which its user controls:
# a plain step with a forged pair of them, one naming n3 twice (fuzz_slurmenv found that
# this overran a buffer in slurmstepd), is refused on every node in one line, and the
# nodes stay up for the next job.
set -f
as_user env SLURM_HET_SIZE=2 SLURM_JOB_NODELIST_HET_GROUP_0=n1 SLURM_JOB_NODELIST_HET_GROUP_1=n[2-3,3] \
	srun -N3 -n3 --mpi=none --dl-runtime=mxnet true >"$OUT" 2>"$ERR"
RC=$?
set +f
if grep -q -- '--het-group expected to be used within an HetJob allocation' "$ERR"; then
	# Slurm 26.05's srun itself refuses a SLURM_HET_SIZE outside a hetjob.
	is "$RC,$(wc -l <"$ERR")" "1,1" "a forged component list: this srun refuses SLURM_HET_SIZE outside a hetjob itself"
else
	is "$RC,$(grep -c 'dlrt: node n3 is listed twice in SLURM_JOB_NODELIST_HET_GROUP_1: start the step with srun inside the job' "$ERR")" "1,3" \
		"a forged component list naming a node twice: refused on each of the 3 nodes" ||
		fail_detail "$(head -3 "$ERR")"
fi
run_srun -N3 -n3 --dl-runtime=mxnet --dl-dry-run true
is "$RC" 0 "the next step runs on the same nodes"

done_testing
