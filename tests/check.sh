#!/bin/bash
# check.sh - what `make check` runs after `make deps`: on the host (Debian 12, Slurm 22.05)
# the layout rules, the build, the unit tests, the fuzz smoke run and every cluster test; on
# Debian 13 (Slurm 24.11) and on Debian unstable (sid: Slurm 26.05) each release's core set of
# cluster tests with the unit tests of the package build (what make check-debian13-core and
# make check-sid-core run), in the roots that tests/debian13/root.sh makes.
#
# The two roots run beside Debian 12 rather than after it, so that all three fit in CI's time
# on two cores: both roots are made (or brought up to date) in the background from the start
# (from nothing, about 11 minutes of downloads and unpacking each, at once), then Debian 13's
# core set runs while the host's tests do, each on its own cluster (a root's has its own
# network and PID namespaces), and sid's smaller core set after Debian 13's, so that no more
# than two clusters share the cores. The tests hold no timing in pass/fail, so the shared
# cores slow them and fail none. The roots' output goes to build/debian13.log and
# build/sid.log and is shown when Debian 12's suite has ended.
#
# Every part runs even when an earlier one failed, so one run tells everything; the exit
# status is the first failure's.
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
mkdir -p build
d13_log=build/debian13.log sid_log=build/sid.log
: >"$d13_log"
: >"$sid_log"

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

# The roots in the background, then (once the host's build has made the models they take
# along, which would cost each root minutes of training) Debian 13's core set, then sid's.
# Each part leaves its exit status in a file when it ends (the next waits for it: siblings
# cannot wait for each other); a part killed with this script leaves none, and the EXIT trap
# kills them all.
models_ready=build/.check-models-ready sid_root_done=build/.check-sid-root d13_done=build/.check-d13
rm -f "$models_ready" "$sid_root_done" "$d13_done"
wait_models() {
	while [ ! -e "$models_ready" ]; do sleep 5; done
	[ -s "$models_ready" ] # empty: the host's build failed, nothing to test
}
(
	rc=0
	tests/debian13/root.sh --release sid build || rc=$?
	echo "$rc" >"$sid_root_done"
) >"$sid_log" 2>&1 &
sid_root_pid=$!
(
	rc=0
	# root.sh itself, not make check-debian13-core: no second make in this tree while the
	# host's builds in it (the root copies the sources and the models, not build/).
	{ tests/debian13/root.sh build && wait_models &&
		tests/debian13/root.sh run tests/debian13/check.sh core; } || rc=$?
	echo "$rc" >"$d13_done"
	exit "$rc"
) >"$d13_log" 2>&1 &
d13_pid=$!
(
	while [ ! -e "$sid_root_done" ] || [ ! -e "$d13_done" ]; do sleep 5; done
	[ "$(cat "$sid_root_done")" = 0 ] || exit 1 # its log says why
	wait_models && tests/debian13/root.sh --release sid run tests/debian13/check.sh core
) >>"$sid_log" 2>&1 &
sid_pid=$!
# Ended with this script (a signal, an interrupted make): a root's namespace ends with its
# runner (root.sh: --kill-child), a half-made root is redone by the next build.
trap 'kill "$d13_pid" "$sid_pid" "$sid_root_pid" 2>/dev/null' EXIT

part "Debian 12: layout rules" "$MAKE" check-layout
part "Debian 12: build" "$MAKE" all models
[ "$status" -eq 0 ] && echo ok >"$models_ready" || : >"$models_ready"
echo "check.sh: Debian 13, then sid, run in the background meanwhile (build/debian13.log, build/sid.log)"
part "Debian 12: unit tests (plain, ASan/UBSan)" "$MAKE" unit
part "Debian 12: fuzz smoke run" "$MAKE" fuzz-smoke
part "Debian 12: every cluster test" "$MAKE" cluster-test

# show_root PID NAME LOG WHAT: wait for a root's part, then the end of its log (all of it
# when it failed).
show_root() {
	local rc=0
	wait "$1" || rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "---- $2, the end of $3"
		tail -n 60 "$3"
	else
		echo "---- $2 ($3)"
		cat "$3"
		fail "$rc" "$2: $4"
	fi
}
echo "check.sh: Debian 12 done; waiting for Debian 13 and sid"
show_root "$d13_pid" "Debian 13" "$d13_log" "root.sh build, then root.sh run tests/debian13/check.sh core"
wait "$sid_root_pid" 2>/dev/null || true
show_root "$sid_pid" "Debian unstable (sid)" "$sid_log" \
	"root.sh --release sid build, then root.sh --release sid run tests/debian13/check.sh core"
trap - EXIT
rm -f "$models_ready" "$sid_root_done" "$d13_done"
exit "$status"
