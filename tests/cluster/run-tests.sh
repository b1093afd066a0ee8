#!/bin/bash
# run-tests.sh - run every cluster test against the running local cluster.
# Usage: tests/cluster/run-tests.sh [t/NN-name.t ...]
set -u
cd "$(dirname "$0")" || exit 1
if [ $# -eq 0 ]; then
	set -- t/*.t
fi
eval "$(./cluster.sh env)"
FAILLOG=$DLRT_CLUSTER_DIR/work/failures.log
mkdir -p "$DLRT_CLUSTER_DIR/work"
: >"$FAILLOG"
# Bounded: a test file that hangs is killed and counted as failed (20 min: t/67 builds
# both packages, the .deb with its unit tests). run-one.sh also restarts Slurm daemons that
# died (Slurm's own crashes) and then runs the test they died in once more.
prove --timer -e ./run-one.sh "$@"
rc=$?
# prove hides a failing test's details; show them last, where a truncated log
# still has them.
if [ -s "$FAILLOG" ]; then
	echo "---- details of the failed tests ($FAILLOG)"
	tail -n 60 "$FAILLOG"
fi
exit $rc
