#!/bin/bash
# run-all.sh - run every benchmark (bench/*.sh) against the running local cluster.
#
#   make bench                    (brings the cluster up first, then runs this)
#   bench/run-all.sh [NAME ...]   only the named ones, e.g. bench/run-all.sh gpuplan
#
# Convention: each bench/<name>.sh runs from the top of the tree with no arguments,
# reads the cluster from the environment set here (SLURM_CONF, SRUN as the test
# user), prints a markdown table (ours vs the baseline a user would use, as a ratio
# from one run) and exits non-zero only if it could not measure. Output is kept in
# $BUILD/bench/<name>.txt; copy the tables into bench/RESULTS.md with the machine.
# Timings are never pass/fail.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
eval "$(tests/cluster/cluster.sh env)"
export BUILD SRUN=${SRUN:-"runuser -u $DLRT_TEST_USER -- srun"}
mkdir -p "$BUILD/bench"

if [ $# -eq 0 ]; then
	# lib-*.sh are sourced by benchmarks, not benchmarks themselves.
	set -- $(ls bench/*.sh | sed 's|bench/||; s|\.sh$||' | grep -vx -e run-all -e 'lib-.*')
fi
failed=0
for name in "$@"; do
	[ -x "bench/$name.sh" ] || [ -f "bench/$name.sh" ] || { echo "run-all: no bench/$name.sh" >&2; failed=1; continue; }
	echo "== bench/$name.sh ($(date -u +%H:%M:%S))"
	# Bounded, like every wait in dlrt: a benchmark that hangs is reported, not waited for.
	if timeout -k 10 1800 bash "bench/$name.sh" 2>&1 | tee "$BUILD/bench/$name.txt"; then :; else
		echo "run-all: bench/$name.sh failed (output in $BUILD/bench/$name.txt)" >&2
		failed=1
	fi
done
echo "== machine: $(nproc) cores, $(free -g | awk '/^Mem:/{print $2}') GiB, $(uname -sr); load now: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $failed
