#!/bin/bash
# run-one.sh TEST - one cluster test for prove (run-tests.sh), bounded, on a cluster whose
# Slurm daemons are alive.
#
# Slurm's own daemons can crash under load (seen once: slurmd 22.05.8 aborted with "free():
# invalid size" in an RPC thread while two steps relayed PMIx messages). A dead slurmd fails
# the test it died in and every test after it, so:
#   - before the test, a dead daemon is reported and the cluster restarted (cluster.sh up);
#   - a test that fails while a daemon died during it runs once more on the restarted cluster,
#     and says so: its first run's output stays in the log as comments, with the dead
#     daemon's last log lines. A test that fails with every daemon alive is not run again.
# Tests that stop a node on purpose (cluster.sh stop-node) start it again before they end.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TEST=$1
LIMIT=${DLRT_TEST_LIMIT_S:-1200}
eval "$("$HERE/cluster.sh" env)"

# restart WHY: the whole cluster up again (idempotent: only if a daemon is dead).
restart() {
	echo "# run-one: $1: restarting the cluster's daemons" >&2
	"$HERE/cluster.sh" up >/dev/null 2>&1 || echo "# run-one: the cluster did not come back" >&2
}

# last_logs DEAD...: the last lines each dead daemon logged, as TAP comments.
last_logs() {
	local d
	for d in "$@"; do
		echo "# --- the last lines of $d's log:"
		tail -n 8 "$DLRT_CLUSTER_DIR/log/$d.log" 2>/dev/null | sed 's/^/#   /'
	done
	ls "$DLRT_CLUSTER_DIR"/log/core* >/dev/null 2>&1 &&
		echo "# --- a core file is in $DLRT_CLUSTER_DIR/log"
}

if dead=$("$HERE/cluster.sh" alive); then :; else
	restart "dead before $TEST: $dead"
fi
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
timeout -k 10 "$LIMIT" bash "$TEST" >"$out" 2>"$err"
rc=$?
if [ $rc -ne 0 ] && ! dead=$("$HERE/cluster.sh" alive); then
	{
		echo "# run-one: $TEST failed (exit $rc) while Slurm daemons died: $dead"
		last_logs $dead
		echo "# --- the first run's output:"
		sed 's/^/#   /' "$out" "$err"
	} >&2
	restart "after $TEST"
	echo "# run-one: $TEST again, once, on the restarted cluster" >&2
	timeout -k 10 "$LIMIT" bash "$TEST" >"$out" 2>"$err"
	rc=$?
fi
cat "$err" >&2
cat "$out"
exit $rc
