#!/bin/bash
# check.sh - what `make check` runs after `make deps`: on the host (Debian 12, Slurm 22.05)
# the layout rules, the build, the unit tests, the fuzz smoke run and every cluster test; on
# Debian 13 (Slurm 24.11) the core set of cluster tests with the unit tests of the package
# build (what make check-debian13-core runs), in the root that tests/debian13/root.sh makes.
#
# Debian 13 runs beside Debian 12 rather than after it, so that both fit in CI's time on two
# cores: its root is made (or brought up to date) in the background from the start (from
# nothing, about 11 minutes of downloads and unpacking), and its cluster tests run while the
# host's do, each on its own cluster (the root's has its own network and PID namespaces).
# The tests hold no timing in pass/fail, so the shared cores slow them and fail none. Debian
# 13's output goes to build/debian13.log and is shown when Debian 12's suite has ended.
#
# Every part runs even when an earlier one failed, so one run tells everything; the exit
# status is the first failure's.
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
mkdir -p build
d13_log=build/debian13.log
: >"$d13_log"

status=0
fail() { # fail RC WHAT
	echo "check.sh: FAILED (exit $1): $2"
	[ "$status" -ne 0 ] || status=$1
}
part() { # part NAME CMD...
	local rc=0
	echo "check.sh: $1"
	shift
	"$@" || rc=$?
	[ "$rc" -eq 0 ] || fail "$rc" "$*"
}

# Debian 13 in the background: the root, then (once the host's build has made the models it
# takes along, which would cost the root minutes of training) the core set.
models_ready=build/.check-models-ready
rm -f "$models_ready"
(
	tests/debian13/root.sh build || exit
	while [ ! -e "$models_ready" ]; do sleep 5; done
	[ -s "$models_ready" ] || exit 1 # the host's build failed: nothing to test
	# root.sh itself, not make check-debian13-core: no second make in this tree while the
	# host's builds in it (the root copies the sources and the models, not build/).
	tests/debian13/root.sh run tests/debian13/check.sh core
) >"$d13_log" 2>&1 &
d13_pid=$!
# Ended with this script (a signal, an interrupted make): the root's namespace ends with its
# runner (root.sh: --kill-child), a half-made root is redone by the next build.
trap 'kill "$d13_pid" 2>/dev/null' EXIT

part "Debian 12: layout rules" "$MAKE" check-layout
part "Debian 12: build" "$MAKE" all models
[ "$status" -eq 0 ] && echo ok >"$models_ready" || : >"$models_ready"
echo "check.sh: Debian 13 runs in the background meanwhile (build/debian13.log)"
part "Debian 12: unit tests (plain, ASan/UBSan)" "$MAKE" unit
part "Debian 12: fuzz smoke run" "$MAKE" fuzz-smoke
part "Debian 12: every cluster test" "$MAKE" cluster-test

echo "check.sh: Debian 12 done; waiting for Debian 13"
rc=0
wait "$d13_pid" || rc=$?
trap - EXIT
if [ "$rc" -eq 0 ]; then
	echo "---- Debian 13, the end of build/debian13.log"
	tail -n 60 "$d13_log"
else
	echo "---- Debian 13 (build/debian13.log)"
	cat "$d13_log"
	fail "$rc" "Debian 13: root.sh build, then root.sh run tests/debian13/check.sh core"
fi
rm -f "$models_ready"
exit "$status"
