#!/bin/sh
# GPU/NIC plan benchmark: plan time for 8 GPUs x 128 tasks (and smaller
# steps) and plan quality against Slurm's --gpu-bind=closest on the hwloc
# fixtures (Slurm's rule re-implemented, see bench_gpuplan.c). When the test
# cluster is up (bench/run-all.sh sets SRUN), also the real thing: the same
# step under Slurm's --gpu-bind=closest and under --dl-gpu-bind=closest on the
# cluster's fake GPUs, scored on the node's fixture. Prints markdown.
#   BUILD=build-foo bench/gpuplan.sh [REPEATS]
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" "$BUILD/bench/bench_gpuplan" >/dev/null
echo "## GPU plan (bench/gpuplan.sh, $(date -u +%Y-%m-%d), $(nproc) CPUs)"
echo
"$BUILD/bench/bench_gpuplan" tests/fixtures/topo "${1:-2000}"

[ -n "${SRUN:-}" ] && [ -n "${DLRT_CLUSTER_DIR:-}" ] || exit 0
fx=tests/fixtures/topo/cluster-2s4g.xml
topo=$DLRT_CLUSTER_DIR/work/bench-gpuplan.xml
cp "$fx" "$topo" && chmod 0644 "$topo"
# One line per task: local id and CUDA_VISIBLE_DEVICES; the GPU a script uses is
# entry LOCAL_RANK % count of it (the usual torch.cuda.set_device idiom).
used() {
	$SRUN -N1 -w n1 -n4 -c4 --exclusive --gpus-per-node=4 "$@" \
		bash -c 'echo "$SLURM_LOCALID $CUDA_VISIBLE_DEVICES"' 2>/dev/null | sort -n |
		awk '{n = split($2, g, ","); printf "%s ", g[($1 % n) + 1]}'
}
cvds() {
	$SRUN -N1 -w n1 -n4 -c4 --exclusive --gpus-per-node=4 "$@" \
		bash -c 'echo "$SLURM_LOCALID $CUDA_VISIBLE_DEVICES"' 2>/dev/null | sort -n |
		awk '{printf "%s%s", (NR > 1 ? " / " : ""), $2}'
}
echo
echo "### On the test cluster: n1, 4 tasks x 4 CPUs, 4 fake GPUs, real srun"
echo
echo "| binding | CUDA_VISIBLE_DEVICES of tasks 0-3 | GPU each task uses | distance | max/GPU |"
echo "|---|---|---|---|---|"
for mode in slurm dlrt; do
	if [ $mode = slurm ]; then set -- --gpu-bind=closest; else
		set -- --dl-runtime=torch --dl-topology="$topo"; fi
	c=$(cvds "$@")
	u=$(used "$@")
	# shellcheck disable=SC2086
	s=$("$BUILD/bench/bench_gpuplan" --score "$fx" 4 4 cyclic $u)
	echo "| $mode \`$*\` | $c | $u | ${s% *} | ${s#* } |"
done
rm -f "$topo"
