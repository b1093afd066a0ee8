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
# status is the first failure's, and the end names every part that failed. A part is one
# command and the part's name says what failed: a layout failure is Debian 12's layout rules,
# never a root's, and a root whose tests never ran because the host's build failed says so
# and counts as no failure of its own (the build's is counted).
#
# Every part runs in its own process group (set -m while it starts), so an interrupt (INT,
# TERM) or the end of this script stops all that it started, root.sh's builds and runs with
# their children included, not only the shells that started them.
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
mkdir -p build
d13_log=build/debian13.log sid_log=build/sid.log
: >"$d13_log"
: >"$sid_log"

status=0
failed=()
fail() { # fail RC WHAT
	echo "check.sh: FAILED (exit $1): $2"
	failed+=("$2 (exit $1)")
	[ "$status" -ne 0 ] || status=$1
}

# start VAR CMD...: CMD in the background in a process group of its own; its pid (and
# group) in VAR.
start() {
	local var=$1
	shift
	set -m
	"$@" </dev/null &
	printf -v "$var" '%s' "$!"
	set +m
}
fg_pid='' d13_pid='' sid_pid='' sid_root_pid=''
# stop: ends every part still running, each process group whole. A root's namespace ends
# with its runner (root.sh: --kill-child), a half-made root is redone by the next build.
stop() {
	local p
	for p in $fg_pid $d13_pid $sid_pid $sid_root_pid; do
		kill -TERM -- "-$p" 2>/dev/null
	done
}
trap stop EXIT
trap 'echo "check.sh: interrupted; stopping what it started"; stop; trap - EXIT; exit 130' INT
trap 'echo "check.sh: terminated; stopping what it started"; stop; trap - EXIT; exit 143' TERM

part() { # part NAME CMD...: in its own group, waited for (so a signal stops it at once)
	local name=$1 rc=0
	echo "check.sh: $name"
	shift
	start fg_pid "$@"
	wait "$fg_pid" || rc=$?
	fg_pid=''
	[ "$rc" -eq 0 ] || fail "$rc" "$name: $*"
	return "$rc"
}

# The roots in the background, then (once the host's build has made the models they take
# along, which would cost each root minutes of training) Debian 13's core set, then sid's.
# Each part leaves "RC WHAT" in a file when it ends (the next waits for it: siblings cannot
# wait for each other): WHAT is the step that failed, "skipped: WHY" or nothing.
models_ready=build/.check-models-ready sid_root_done=build/.check-sid-root d13_done=build/.check-d13
sid_done=build/.check-sid
rm -f "$models_ready" "$sid_root_done" "$d13_done" "$sid_done"
# wait_models: 0 when the host's build made the models, 1 when it failed (nothing to test).
wait_models() {
	while [ ! -e "$models_ready" ]; do sleep 5; done
	[ -s "$models_ready" ]
}
# root_steps DONE RELEASE...: RELEASE's root made (or brought up to date), then core_steps.
# RELEASE is empty for Debian 13, "--release sid" for sid.
root_steps() {
	local done=$1 rc=0
	shift
	# root.sh itself, not make check-debian13-core: no second make in this tree while the
	# host's builds in it (the root copies the sources and the models, not build/).
	tests/debian13/root.sh "$@" build || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "$rc its root (root.sh ${*:+$* }build)" >"$done"
		return "$rc"
	fi
	core_steps "$done" "$@"
}
# core_steps DONE RELEASE...: RELEASE's core set once the host's build made the models; "RC
# WHAT" into DONE.
core_steps() {
	local done=$1 rc=0
	shift
	if ! wait_models; then
		echo "0 skipped: the host's build failed, so there are no models to take along" >"$done"
		return 0
	fi
	tests/debian13/root.sh "$@" run tests/debian13/check.sh core || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "$rc its core set (root.sh ${*:+$* }run tests/debian13/check.sh core)" >"$done"
	else
		echo "0" >"$done"
	fi
	return "$rc"
}
sid_root() {
	local rc=0
	tests/debian13/root.sh --release sid build || rc=$?
	echo "$rc" >"$sid_root_done"
}
# sid's core set after Debian 13's (no more than two clusters on the cores at once).
sid_core() {
	while [ ! -e "$sid_root_done" ] || [ ! -e "$d13_done" ]; do sleep 5; done
	if [ "$(cat "$sid_root_done")" != 0 ]; then
		echo "$(cat "$sid_root_done") its root (root.sh --release sid build)" >"$sid_done"
		return 1
	fi
	core_steps "$sid_done" --release sid
}
start sid_root_pid eval 'sid_root >"$sid_log" 2>&1'
start d13_pid eval 'root_steps "$d13_done" >"$d13_log" 2>&1'
start sid_pid eval 'sid_core >>"$sid_log" 2>&1'

part "Debian 12: layout rules" "$MAKE" check-layout
# The models the roots take along come from this part alone: a layout failure does not
# keep Debian 13 and sid from running.
if part "Debian 12: build" "$MAKE" all models; then
	echo ok >"$models_ready"
else
	: >"$models_ready"
fi
echo "check.sh: Debian 13, then sid, run in the background meanwhile (build/debian13.log, build/sid.log)"
part "Debian 12: unit tests (plain, ASan/UBSan)" "$MAKE" unit
part "Debian 12: fuzz smoke run" "$MAKE" fuzz-smoke
part "Debian 12: every cluster test" "$MAKE" cluster-test

# show_root PID NAME LOG DONE: wait for a root's part, then the end of its log (all of it
# when it failed), and the step that failed, from DONE.
show_root() {
	local rc=0 what=''
	wait "$1" || rc=$?
	[ -s "$4" ] && read -r _ what <"$4"
	if [ "$rc" -eq 0 ]; then
		echo "---- $2, the end of $3${what:+ ($what)}"
		tail -n 60 "$3"
	else
		echo "---- $2 ($3)"
		cat "$3"
		fail "$rc" "$2: ${what:-ended before it said which step failed (its log, above)}"
	fi
}
echo "check.sh: Debian 12 done; waiting for Debian 13 and sid"
show_root "$d13_pid" "Debian 13" "$d13_log" "$d13_done"
wait "$sid_root_pid" 2>/dev/null || true
show_root "$sid_pid" "Debian unstable (sid)" "$sid_log" "$sid_done"
d13_pid='' sid_pid='' sid_root_pid=''
trap - EXIT
rm -f "$models_ready" "$sid_root_done" "$d13_done" "$sid_done"
if [ "${#failed[@]}" -gt 0 ]; then
	echo "check.sh: ${#failed[@]} part(s) failed:"
	printf '  %s\n' "${failed[@]}"
fi
exit "$status"
