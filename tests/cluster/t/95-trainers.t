#!/bin/bash
# DeepSpeed, Hugging Face Accelerate and Lightning under --dl-runtime=torch (and
# torchrun), without their own launchers. None of them is packaged in Debian:
# trainer_contract.py re-implements, step by step, how each finds its world on
# Slurm (deepspeed.init_distributed, accelerate's PartialState, Lightning's
# cluster-environment choice and SLURMEnvironment, sources cited there), then
# joins it with torch.distributed (gloo) as that trainer calls it and checks the
# world is the step's: every task once, at Slurm's rank, on dlrt's store through
# its node's relay. Without dlrt the same program fails, so the test can fail.
# Then each trainer's launcher as the step's command is refused in one line.
. "$(dirname "$0")/../lib.sh"

install -m 0755 -o "$DLRT_TEST_USER" "$HERE/trainer_contract.py" "$WORK/tc.py"
PY=/usr/bin/python3
contract() { # contract SRUN-ARGS... -- TRAINER-ARGS...: the step's CONTRACT lines in $LINES
	local a=()
	while [ "$1" != "--" ]; do a+=("$1"); shift; done
	shift
	run_srun "${a[@]}" "$PY" "$WORK/tc.py" "$@"
	LINES=$(grep '^CONTRACT' "$OUT" | sort -t= -k4n)
}
# world_ok WHAT N PATH: N lines, ranks 0..N-1 once each, all on the path, the
# allreduce right, every rank on its node's relay (127.0.0.1, one port per node)
world_ok() {
	local n=$2 sum=$(($2 * ($2 - 1) / 2))
	is "$(grep -c . <<<"$LINES")" "$n" "$1: every task joined the world" ||
		{ srun_errors | head -3; head -3 "$OUT"; } | while read -r l; do fail_detail "$l"; done
	is "$(grep -o ' rank=[0-9]*' <<<"$LINES" | sort -u | wc -l)" "$n" "$1: ranks 0..$((n - 1)), each once"
	is "$(grep -c " path=$3 .* sum=$sum " <<<"$LINES")" "$n" "$1: $3 on every task, allreduce sums to $sum"
	is "$(grep -c ' master=127\.0\.0\.1:[0-9]* ' <<<"$LINES")" "$n" \
		"$1: every rank rendezvoused through its node's relay (dlrt's store, not the trainer's default)"
	is "$(grep -o ' master=[^ ]*' <<<"$LINES" | sort -u | wc -l)" 3 "$1: one relay per node"
}

# ---- DeepSpeed: deepspeed.init_distributed() ----------------------------------
contract -N3 --ntasks-per-node=2 --dl-runtime=torch -- deepspeed
world_ok "deepspeed, 3 nodes x 2" 6 env
# Without dlrt, RANK etc. are missing: DeepSpeed would go to mpi_discovery (mpi4py).
contract -N3 --ntasks-per-node=2 -- deepspeed
like "$(grep -m1 PROBLEM "$OUT")" "mpi_discovery" "deepspeed without dlrt: init_distributed would need MPI discovery"

# GPUs (fake ones, fixture topologies as in t/40): DeepSpeed selects cuda:LOCAL_RANK,
# so with dlrt's plan (each of 4 tasks its nearest GPU, seen as cuda:0) local ranks
# 1-3 would ask for a GPU they do not see; --dl-gpu-bind=none is the documented fix.
SRC=$(cd "$HERE/../.." && pwd)
T=$WORK/topo
mkdir -p "$T"
cp "$SRC/tests/fixtures/topo/cluster-2s4g.xml" "$T/"
for n in n1 n2 n3; do ln -s cluster-2s4g.xml "$T/$n.xml"; done
chown -R "$DLRT_TEST_USER": "$T"
GPUSTEP=(-N3 --ntasks-per-node=4 -c4 --exclusive --gpus-per-node=4 --kill-on-bad-exit=1
	--dl-runtime=torch "--dl-topology=$T/%n.xml")
contract "${GPUSTEP[@]}" -- deepspeed
like "$(grep -m1 PROBLEM "$OUT")" "set_device\(LOCAL_RANK=[1-3]\) but CUDA_VISIBLE_DEVICES names 1 GPU" \
	"deepspeed with dlrt's GPU plan (one GPU per task): a local rank > 0 sees no cuda:LOCAL_RANK" ||
	fail_detail "$(srun_errors | head -3)"
contract "${GPUSTEP[@]}" --dl-gpu-bind=none -- deepspeed
world_ok "deepspeed with --dl-gpu-bind=none (the node's 4 GPUs in every task)" 12 env

# ---- Accelerate: PartialState / Accelerator -----------------------------------
# A torch built with MPI (Debian unstable's 2.14) makes Accelerate take the mpi
# backend on CPUs, whose world is MPI's launch, not dlrt's: docs/trainers.md says to
# ask for gloo, and so do these steps there.
gloo=()
if "$PY" -c 'import sys, torch.distributed as d; sys.exit(not d.is_mpi_available())' 2>/dev/null; then
	contract -N3 --ntasks-per-node=1 --dl-runtime=torch -- accelerate --cpu
	like "$(grep -m1 PROBLEM "$OUT")" "mpi backend .*InitProcessGroupKwargs\(backend=\"gloo\"\)" \
		"accelerate on a torch built with MPI: the mpi backend, and what to pass instead"
	gloo=(--backend gloo)
fi
contract -N3 --ntasks-per-node=2 --dl-runtime=torch -- accelerate --cpu "${gloo[@]}"
world_ok "accelerate (cpu=True), 3 nodes x 2" 6 MULTI_CPU
ACCELERATE_USE_CPU=1 contract -N3 --ntasks-per-node=1 --dl-runtime=torch -- accelerate "${gloo[@]}"
is "$(grep -c ' path=MULTI_CPU .* sum=3 ' <<<"$LINES")" 3 "accelerate with ACCELERATE_USE_CPU=1 exported: MULTI_CPU on 3 ranks"
# On nodes without GPUs and without the CPU switch Accelerate trains every task
# alone: what docs/trainers.md and the launcher line say to add.
contract -N3 --ntasks-per-node=1 --dl-runtime=torch -- accelerate
like "$(grep -m1 PROBLEM "$OUT")" "DistributedType.NO.*ACCELERATE_USE_CPU=1" \
	"accelerate without cpu=True on CPU nodes: one process each (the documented case)"

# ---- Lightning: Trainer/Fabric(devices=, num_nodes=) --------------------------
contract -N3 --ntasks-per-node=2 --dl-runtime=torch -- lightning --devices 2 --num-nodes 3
world_ok "lightning devices=2 num_nodes=3" 6 SLURMEnvironment
# -n6 without --ntasks-per-node (-c8: two tasks on each 16-CPU node): Slurm sets no
# SLURM_NTASKS_PER_NODE and Lightning would refuse the step; dlrt fills it in when
# every node has as many tasks.
contract -N3 -n6 -c8 --dl-runtime=torch -- lightning --devices 2 --num-nodes 3
world_ok "lightning, srun -N3 -n6 -c8" 6 SLURMEnvironment
contract -N3 -n6 -c8 -- lightning --devices 2 --num-nodes 3
like "$(grep -m1 TRAINER-ERROR "$OUT")" "ntasks=6.*not supported" \
	"lightning, plain srun -N3 -n6 -c8: SLURMEnvironment refuses it (what dlrt filled in)"
# Lightning's own check of devices against the step still speaks.
contract -N3 --ntasks-per-node=2 --dl-runtime=torch -- lightning --devices 4 --num-nodes 3
like "$(grep -m1 TRAINER-ERROR "$OUT")" "devices=4.*--ntasks-per-node=2.*Set .devices=2." \
	"lightning devices=4 on 2 tasks per node: Lightning's own line"
# Under torchrun the workers are torchelastic's: TorchElasticEnvironment wins.
if [ -x /usr/bin/torchrun ]; then
	run_srun -N3 --ntasks-per-node=1 -c2 --dl-runtime=torchrun --dl-nproc-per-node=2 \
		/usr/bin/torchrun "$WORK/tc.py" lightning --devices 2 --num-nodes 3
	# (Two workers share the agent's stdout: a line may follow another's banner.)
	is "$(grep -o 'path=TorchElasticEnvironment rank=[0-9]* world=6 [^C]* sum=15 ' "$OUT" |
		sort -u | wc -l)" 6 \
		"lightning under --dl-runtime=torchrun: TorchElasticEnvironment, 6 workers" ||
		{ srun_errors | tail -3; tail -3 "$OUT"; } | while read -r l; do fail_detail "$l"; done
fi

# ---- the trainers' own launchers are refused before they run -----------------
for l in deepspeed accelerate fabric; do
	printf '#!/bin/sh\necho "the %s launcher ran"\n' "$l" >"$WORK/$l"
	chmod 0755 "$WORK/$l"
done
chown "$DLRT_TEST_USER" "$WORK"/{deepspeed,accelerate,fabric}
run_srun -N2 -n2 --dl-runtime=torch "$WORK/deepspeed" --num_gpus 1 train.py
isnt=$([ "$RC" != 0 ]; echo $?)
ok "$isnt" "srun deepspeed under --dl-runtime=torch fails"
like "$(srun_errors)" "dlrt: deepspeed is DeepSpeed's launcher.*srun python3 train.py" \
	"deepspeed: one line naming the conflict and the fix"
is "$(grep -c 'launcher ran' "$OUT")" 0 "deepspeed: the launcher did not run"
run_srun -N1 -n1 --dl-runtime=torchrun "$WORK/accelerate" launch --multi_gpu train.py
like "$(srun_errors)" "dlrt: accelerate launch would start a torchrun of its own" "accelerate launch: refused in one line"
run_srun -N1 -n1 --dl-runtime=torch "$WORK/fabric" run --devices 2 train.py
like "$(srun_errors)" "dlrt: fabric run would start a torchrun of its own" "fabric run: refused in one line"
DLRT_LAUNCHER_CHECK=no run_srun -N1 -n1 --dl-runtime=torch "$WORK/deepspeed" train.py
is "$RC/$(cat "$OUT")" "0/the deepspeed launcher ran" "DLRT_LAUNCHER_CHECK=no lets a launcher run"
run_srun -N1 -n1 "$WORK/deepspeed" train.py
is "$RC/$(cat "$OUT")" "0/the deepspeed launcher ran" "without --dl-runtime nothing is checked"
done_testing
