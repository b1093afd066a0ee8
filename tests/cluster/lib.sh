# lib.sh - helpers for dlrt's cluster tests (TAP output, run by `prove`).
#
# Every test talks to the real local cluster (tests/cluster/cluster.sh): real
# slurmctld/slurmd, real srun/sbatch, jobs submitted as the unprivileged test
# user. Every command that waits has a timeout, so a hang fails a test instead
# of stalling `make check`.

set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
eval "$("$HERE/cluster.sh" env)"
TESTS_BIN=$DLRT_CLUSTER_DIR/prefix/libexec/dlrt-tests
JOB_TIMEOUT=${DLRT_JOB_TIMEOUT:-120}

# A fresh working folder on the "shared filesystem", owned by the test user.
WORK=$(mktemp -d "$DLRT_CLUSTER_DIR/work/$(basename "$0" .t).XXXX")
chown "$DLRT_TEST_USER": "$WORK"
chmod 0755 "$WORK"
cd "$WORK" || exit 1

_n=0
_failed=0
# Failures and their details also go here: run-tests.sh prints the file after
# the summary, so a CI log that shows only its tail still says what went wrong.
FAILLOG=$DLRT_CLUSTER_DIR/work/failures.log
_T=$(basename "$0")

fail_detail() { # fail_detail TEXT: a line that explains the failure just reported
	echo "#   $*"
	echo "$_T:   $*" >>"$FAILLOG"
}

# ok, is and like return 1 when the check failed, so a caller can add details:
#   is "$x" 1 "one line" || fail_detail "stderr: ..."
ok() { # ok STATUS DESCRIPTION (STATUS 0 = pass, as a shell status)
	_n=$((_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $_n - $2"
	else
		_failed=$((_failed + 1))
		echo "not ok $_n - $2"
		echo "$_T: not ok $_n - $2" >>"$FAILLOG"
		return 1
	fi
}

is() { # is GOT WANT DESCRIPTION
	if [ "$1" == "$2" ]; then ok 0 "$3"; else
		ok 1 "$3"
		fail_detail "got:  '$1'"
		fail_detail "want: '$2'"
		return 1
	fi
}

like() { # like TEXT REGEX DESCRIPTION
	if echo "$1" | grep -Eq -- "$2"; then ok 0 "$3"; else
		ok 1 "$3"
		fail_detail "'$(echo "$1" | head -20)'"
		fail_detail "does not match /$2/"
		return 1
	fi
}

unlike() {
	if echo "$1" | grep -Eq -- "$2"; then
		ok 1 "$3"
		fail_detail "'$(echo "$1" | head -20)' matches /$2/"
	else ok 0 "$3"; fi
}

diag() { echo "# $*"; }

# Slurm's PMIx plugin (srun --mpi=pmix), which the Open MPI steps and Slurm's PMIx carrier
# need. The test cluster's MpiDefault is pmix where Slurm has the plugin and none where it
# has not (Debian unstable's slurm-wlm 26.05.5: docs/ADMIN.md#releases-tested); there those
# checks are skipped, each saying why on the test's output and on prove's.
NO_PMIX=
grep -qx 'MpiDefault=pmix' "$SLURM_CONF" ||
	NO_PMIX="this Slurm has no mpi/pmix plugin: srun --mpi=pmix fails without dlrt (Debian unstable's slurm-wlm 26.05.5 dropped it)"
# wait_until [-i EVERY] SECONDS CMD...: run CMD every EVERY seconds (0.2) until it succeeds
# (0) or SECONDS have passed (1, and a line on stderr naming CMD, so a check that fails
# after it shows what was waited for): the one bounded poll loop of the tests. A
# condition with shell syntax goes through eval, in the test's own shell (so what it
# sets stays set): wait_until 60 eval '[ "$(workers_up)" -ge 5 ]'. EVERY below 0.2 for a
# moment a test must catch (a job part way through), above it to ask slurmctld less.
wait_until() {
	local _wu_every=0.2 _wu_end
	if [ "$1" = -i ]; then
		_wu_every=$2
		shift 2
	fi
	_wu_end=$((${EPOCHREALTIME/./} + $1 * 1000000))
	shift
	until "$@"; do
		if [ "${EPOCHREALTIME/./}" -ge "$_wu_end" ]; then
			echo "# wait_until: still not true after the limit: $*" >&2
			return 1
		fi
		sleep "$_wu_every"
	done
}
# pid_gone PID: the process has ended (for wait_until).
pid_gone() { ! kill -0 "$1" 2>/dev/null; }
# Job scripts and step commands run without lib.sh: they source WAIT_UNTIL, wait_until and
# pid_gone written into the test's folder, which every node sees (`. "$WAIT_UNTIL"` in a
# script written here, `. ./wait_until.sh` in a step that runs in that folder).
WAIT_UNTIL=$WORK/wait_until.sh
declare -f wait_until pid_gone >"$WAIT_UNTIL"

# A test file that timed out was killed before it could cancel its jobs; they
# would take this test's nodes. Tests run one at a time, so nothing of the test
# user's may still be queued or running here (bounded wait).
if [ -n "$(squeue -h -u "$DLRT_TEST_USER" 2>/dev/null)" ]; then
	scancel -u "$DLRT_TEST_USER" 2>/dev/null
	wait_until -i 0.5 30 eval '[ -z "$(squeue -h -u "$DLRT_TEST_USER" 2>/dev/null)" ]'
fi

# node_back WHAT: n1 is back (not drained, not completing) and nothing of the test
# user's is left, checked as one test line (bounded wait). Another cluster user's job
# may keep n1 mixed.
n1_back() {
	local state
	state=$(sinfo -h -p debug -n n1 -o %T 2>/dev/null)
	[[ $state =~ ^(idle|mixed|allocated)$ ]] && [ -z "$(squeue -h -u "$DLRT_TEST_USER" 2>/dev/null)" ]
}
node_back() {
	wait_until 60 n1_back
	like "$(sinfo -h -p debug -n n1 -o %T 2>/dev/null)" "^(idle|mixed|allocated)$" \
		"$1: n1 is back (not drained), no job left completing" ||
		fail_detail "squeue: $(squeue -h -o '%i %u %T' 2>&1 | tr '\n' ' ')"
}

skip() { # skip WHY: one check that cannot run on this cluster
	_n=$((_n + 1))
	echo "ok $_n # skip $*"
	echo "$_T: skipped: $*" >&2
}
skip_all_without_pmix() { # the whole file needs Slurm's PMIx
	[ -z "$NO_PMIX" ] && return 0
	echo "$_T: skipped: $NO_PMIX" >&2
	echo "1..0 # SKIP $NO_PMIX"
	exit 0
}

done_testing() {
	echo "1..$_n"
	[ $_failed -eq 0 ] && rm -rf "$WORK"
	exit $((_failed > 0))
}

# Run a command as the test user with the cluster's environment, bounded in time.
as_user() {
	timeout -k 5 "$JOB_TIMEOUT" runuser -u "$DLRT_TEST_USER" -- \
		env SLURM_CONF="$SLURM_CONF" PATH="$PATH" HOME="$WORK" "$@"
}

# The second unprivileged user, for hostile-user tests: a process of someone else
# who can run things on the same nodes as the test user's jobs.
STRANGER=$DLRT_STRANGER_USER
as_stranger() {
	timeout -k 5 "$JOB_TIMEOUT" runuser -u "$STRANGER" -- \
		env SLURM_CONF="$SLURM_CONF" PATH="$PATH" HOME=/tmp "$@"
}

# as_stranger_sh CMD: a shell command as the other user (umask 0: what they
# create is open to all, as an attacker would leave it).
as_stranger_sh() { as_stranger bash -c "umask 0; $1"; }

# job_field JOB KEY: one field of scontrol show job.
job_field() { scontrol show job -o "$1" 2>/dev/null | grep -oE "(^| )$2=[^ ]*" | cut -d= -f2-; }

# wait_done JOB SECONDS: wait (bounded) until JOB has ended. A requeued job may
# start only ~2 minutes later (Slurm's own delay): its start is moved to now, as
# the admin, 2 s after it was first seen pending for it (a start in the same
# second as the end of the run before is refused: "Job credential revoked").
# WAIT_DONE_HELD says whether it was ever seen so (1) or not (0).
wait_done() {
	local deadline=$((SECONDS + $2)) st seen=-1
	WAIT_DONE_HELD=0
	while [ $SECONDS -lt $deadline ]; do
		st=$(job_field "$1" JobState)
		[[ "$st" =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL)$ ]] && return 0
		if [ "$st" = PENDING ] && [ "$(job_field "$1" Reason)" = BeginTime ]; then
			[ $seen -lt 0 ] && seen=$SECONDS
			WAIT_DONE_HELD=1
			[ $((SECONDS - seen)) -ge 2 ] && scontrol update JobId="$1" StartTime=now 2>/dev/null
		else
			seen=-1
		fi
		sleep 1
	done
	diag "job $1 still $(job_field "$1" JobState) after $2 s"
	return 1
}

# next_job: the id the next submission gets, as another user could guess it (a
# held job takes one id; tests run one at a time, so nothing else takes the next).
next_job() {
	local held
	held=$(as_user sbatch --parsable --hold -o /dev/null --wrap true) || return 1
	scancel "$held"
	echo $((held + 1))
}

# on_node NODE USER CMD...: CMD as USER inside a node of the cluster (its network,
# hostname and /tmp), as a login shell on that node would run it; bounded in time.
on_node() {
	local node=$1 user=$2
	shift 2
	timeout -k 5 "$JOB_TIMEOUT" "$HERE/cluster.sh" exec "$node" \
		runuser -u "$user" -- env PATH="$PATH" HOME=/tmp "$@"
}

# caffe2_store_job SCRIPT [SRUN_OPTION...]: in the background, a one-node caffe2
# step on n1 (srun also gets the options) whose task 0 writes the
# REDIS_HOST/REDIS_PORT it got to $WORK/addr and runs
# python3 SCRIPT (a file in $WORK) as the job's own client; the batch job's
# subshell is STORE_JOB, its output $WORK/job.out and $WORK/s1.out. Then
# store_find sets STORE_PID (the step's dlrt-store, found by its listening
# socket on n1: REDIS_PORT is the node relay's) and STORE_PORT, or leaves them
# empty after a bounded wait.
caffe2_store_job() {
	cat >"$WORK/task.sh" <<SH
#!/bin/bash
if [ "\$SLURM_PROCID" = 0 ]; then
	echo "\$REDIS_HOST \$REDIS_PORT" >addr.tmp && mv addr.tmp addr
	timeout 200 /usr/bin/python3 ./$1 2>&1
fi
SH
	chmod 0755 "$WORK/task.sh"
	( run_batch -N1 -n2 -w n1 <<JOB
#!/bin/bash
srun -N1 -n2 -w n1 --dl-runtime=caffe2 ${*:2} ./task.sh >s1.out 2>s1.err
echo "step rc \$?"
JOB
	exit "$RC" ) &
	STORE_JOB=$!
}
store_find() {
	local host
	STORE_PID= STORE_PORT=
	wait_until -i 0.1 120 test -s "$WORK/addr"
	read -r host STORE_PORT <"$WORK/addr" 2>/dev/null || return 0
	STORE_PID=$("$HERE/cluster.sh" exec n1 ss -Hltnp 2>/dev/null |
		sed -n 's/.*"dlrt-store",pid=\([0-9]*\).*/\1/p' | head -1)
}

# srun as the test user; stdout to $OUT, stderr to $ERR, status in $RC.
OUT=$WORK/out ERR=$WORK/err RC=0
run_srun() {
	as_user srun "$@" >"$OUT" 2>"$ERR"
	RC=$?
}

# run_srun for an Open MPI program: once more if Open MPI itself crashed in
# MPI_Init (progs/mpi-step says why). Batch scripts call "$TESTS_BIN/mpi-step"
# instead of srun for the same reason.
run_mpi_srun() {
	as_user "$TESTS_BIN/mpi-step" "$@" >"$OUT" 2>"$ERR"
	RC=$?
}

# $ERR without srun's allocation progress lines ("job N queued and waiting for
# resources", "job N has been allocated resources"), which srun prints when the
# nodes are still being released by the previous test's job: not the program's.
srun_errors() {
	grep -Ev '^srun: job [0-9]+ (queued and waiting for resources|has been allocated resources)$' "$ERR"
}

# Submit a batch script (from stdin) and wait for it; output in $WORK/job.out.
# Extra arguments go to sbatch. Sets RC to sbatch --wait's status.
run_batch() {
	cat >"$WORK/job.sh"
	chmod 0755 "$WORK/job.sh"
	as_user sbatch --wait -o "$WORK/job.out" -e "$WORK/job.err" "$@" "$WORK/job.sh" \
		>"$WORK/sbatch.out" 2>"$WORK/sbatch.err"
	RC=$?
}

# as_stranger_on NODE CMD...: CMD as the other user inside a node (its network,
# hostname and /tmp): a stranger logged in on a node the test user's job uses.
as_stranger_on() {
	local node=$1
	shift
	on_node "$node" "$STRANGER" "$@"
}

# pmix_coords NODE JOBID STEPID: print "NSPACE URI", what a client of step
# JOBID.STEPID's PMIx server on NODE needs, once that server listens (bounded
# wait; prints nothing and returns 1 otherwise). Everything in it is what any
# user of the node sees: the namespace is slurm.pmix.JOBID.STEPID, the
# server's URI is its namespace, rank 0 and its TCP port on 127.0.0.1, a
# listener of root's in /proc/net/tcp. ss -p (root's view) only picks, among
# several steps' servers, the one whose slurmstepd is "[JOBID.STEPID]" (its
# command line, world-readable); a stranger would try each port.
pmix_coords() {
	local node=$1 ns="slurm.pmix.$2.$3" pid port
	for _ in $(seq 300); do
		while read -r port pid; do
			if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
				grep -qF "slurmstepd: [$2.$3]"; then
				echo "$ns $ns.0;tcp4://127.0.0.1:$port"
				return 0
			fi
		done < <("$HERE/cluster.sh" exec "$node" ss -Hltnp 2>/dev/null |
			sed -n 's/.* 127\.0\.0\.1:\([0-9]*\) .*"slurmstepd",pid=\([0-9]*\).*/\1 \2/p')
		sleep 0.2
	done
	return 1
}

# pmix_stranger NODE ARGS...: tests/progs/pmix/pmix-stranger as the other user
# on NODE, its PMIx credential stating the test user's uid and gid
# (stated_id.so), as any user of the node can. ARGS are pmix-stranger's:
# [-t SECONDS] [-a RANK] NSPACE URI get RANK [KEY...] | hold RANK SECONDS |
# put KEY VALUE. PMIX_STATE_OWN=1 states the stranger's own ids instead.
pmix_stranger() {
	local node=$1 uid gid
	shift
	uid=$(id -u "$DLRT_TEST_USER") gid=$(id -g "$DLRT_TEST_USER")
	if [ "${PMIX_STATE_OWN:-0}" = 1 ]; then
		as_stranger_on "$node" "$TESTS_BIN/pmix-stranger" "$@"
	else
		as_stranger_on "$node" env LD_PRELOAD="$TESTS_BIN/stated_id.so" \
			STATED_UID="$uid" STATED_GID="$gid" "$TESTS_BIN/pmix-stranger" "$@"
	fi
}
