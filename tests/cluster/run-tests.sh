#!/bin/bash
# run-tests.sh - run every cluster test against the running local cluster.
# Usage: tests/cluster/run-tests.sh [t/NN-name.t ...]
set -u
cd "$(dirname "$0")" || exit 1
if [ $# -eq 0 ]; then
	set -- t/*.t
fi
# Bounded: a test file that hangs is killed and counted as failed.
exec prove --timer -e 'timeout -k 10 900 bash' "$@"
