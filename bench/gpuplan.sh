#!/bin/sh
# GPU/NIC plan benchmark: plan time for 8 GPUs x 128 tasks (and smaller
# steps) and plan quality against Slurm's --gpu-bind=closest on the hwloc
# fixtures. No cluster needed. Prints a markdown report (for bench/RESULTS.md).
#   BUILD=build-foo bench/gpuplan.sh [REPEATS]
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -s BUILD="$BUILD" "$BUILD/bench/bench_gpuplan" >/dev/null
echo "## GPU plan (bench/gpuplan.sh, $(date -u +%Y-%m-%d), $(nproc) CPUs)"
echo
"$BUILD/bench/bench_gpuplan" tests/fixtures/topo "${1:-2000}"
