#!/bin/bash
# torchrun-wireup.sh - wire-up time of a torchrun step: one agent per node started by
# srun --dl-runtime=torchrun against a plain srun whose command line names the
# rendezvous by hand, as users write it without dlrt:
#
#   torchrun --nnodes=N --nproc_per_node=1 --rdzv_backend=c10d \
#            --rdzv_endpoint=<first node of the step>:29400 --rdzv_id=$SLURM_JOB_ID ...
#
# (the agent on the first node then hosts torch's own, open, c10d store). Both run
# bench/torch_init.py (import torch.distributed, init_process_group over the agents'
# MASTER_ADDR/PORT, one barrier) in each worker; the wall time of the whole step is
# what a job waits for: torchrun's own import, the c10d rendezvous, the worker start.
# Debian 12's torch 1.13 on Python 3.11 needs --redirects/--tee with a value other
# than 0 or 3 (docs/torchrun.md); the plain column gives the same 9:2 that dlrt sets.
#
#   SRUN="runuser -u dlrtu -- srun" bench/torchrun-wireup.sh   (bench/run-all.sh sets SRUN)
#
# Environment: SRUN, NODES (default 3), REPEAT (default 3), STEP_TIMEOUT (default 180 s).
# Prints the medians and their ratio from one run; timings are never judged.
set -uo pipefail
# shellcheck source=bench/lib-wireup.sh
. "$(dirname "$0")/lib-wireup.sh" || exit 1
cd "$(dirname "$0")/.." || exit 1

SRUN=${SRUN:-srun}
NODES=${NODES:-3}
REPEAT=${REPEAT:-3}
STEP_TIMEOUT=${STEP_TIMEOUT:-180}
base=${TMPDIR:-/tmp}
[ -n "${DLRT_CLUSTER_DIR:-}" ] && base=$DLRT_CLUSTER_DIR/work
T=$(mktemp -d "$base/dlrt-torchrun-wireup.XXXXXX")
chmod 0755 "$T"
trap 'rm -rf "$T"' EXIT
cp bench/torch_init.py "$T/"
cat >"$T/by-hand.sh" <<'SH'
#!/bin/bash
# What a job script does without dlrt: name the rendezvous on the step's first node.
host=$(scontrol show hostnames "$SLURM_STEP_NODELIST" | head -1)
exec /usr/bin/torchrun --nnodes="$SLURM_STEP_NUM_NODES" --nproc_per_node=1 \
	--rdzv_backend=c10d --rdzv_endpoint="$host:29400" --rdzv_id="$SLURM_JOB_ID.$SLURM_STEP_ID" \
	--redirects 9:2 --tee 9:2 "$(dirname "$0")/torch_init.py"
SH
chmod 0755 "$T/by-hand.sh" "$T/torch_init.py"
if [ ! -x /usr/bin/torchrun ]; then
	echo "torchrun-wireup: /usr/bin/torchrun is missing (python3-torch, tests/cluster/install-deps.sh)" >&2
	exit 1
fi

run_ms() { # run_ms ARGS...: one step; its wall time in ms, or fails saying why
	local t0 t1
	t0=$(date +%s%N)
	# shellcheck disable=SC2086  # SRUN is a word list on purpose
	if ! (cd "$T" && timeout -k 5 "$STEP_TIMEOUT" $SRUN -N"$NODES" --ntasks-per-node=1 -c2 \
		"$@" >"$T/out" 2>"$T/err"); then
		echo "torchrun-wireup: '$SRUN ... $*' failed:" >&2
		sed 's/^/  /' "$T/err" | head -20 >&2
		return 1
	fi
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

echo "# torchrun wire-up: $NODES nodes x 1 agent x 1 worker, median of $REPEAT runs, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "| step | plain torchrun, endpoint by hand ms | --dl-runtime=torchrun ms | ratio dlrt/plain |"
echo "|------|------|------|------|"
rc=0
if plain=$(median_ms ./by-hand.sh) &&
	dl=$(median_ms --dl-runtime=torchrun /usr/bin/torchrun ./torch_init.py); then
	awk -v p="$plain" -v d="$dl" 'BEGIN {
		printf "| torchrun + init_process_group + barrier | %d | %d | %.2f |\n", p, d, (p > 0 ? d / p : 0) }'
	echo "# last dlrt run: $(grep -h 'rank0' "$T/out")"
else
	rc=1
fi
echo "# machine: $(nproc) cores shared with other jobs (load $(cut -d' ' -f1-3 /proc/loadavg)), $(uname -r)"
exit $rc
