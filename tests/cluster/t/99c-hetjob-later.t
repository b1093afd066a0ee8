#!/bin/bash
# A heterogeneous step (docs/hetjob.md) with what t/99-hetjob.t leaves out:
#   1. --dl-retries: a task of the SECOND component killed by a signal; its node
#      is recorded in the het job's record, excluded in every component, the
#      hetjob requeued and run again without it, and it completes. The cluster
#      has 3 nodes and the harness no per-test node count, so the components are
#      -N1 : -N1 and the third node is the spare the second attempt needs.
#   2. --dl-requeue: the warning before the time limit reaches every
#      component's tasks, each node's warning is in the het job's one record,
#      the hetjob is requeued once and its next attempt (both components) sees
#      the restart count.
#   3. Containers: the ps-lite program with every task inside Charliecloud's
#      ch-run (as t/89-containers.t), its role variables reaching each task,
#      the scheduler and server on the first component's node.
#   4. auto's carrier follows the plain step's rule (exchange.c): no PMIx
#      server, other users on some component's nodes, the process tracking;
#      Slurm before 24.11 never takes PMIx there (its srun may hang at a
#      heterogeneous step's end, SchedMD ticket 16817). Each with its reason.
#   5. --dl-signal's watchers: one node per component asks slurmctld (each
#      component is a job with its own times), the others learn them through
#      srun's rendezvous.
. "$(dirname "$0")/../lib.sh"

# Only the backfill scheduler starts a heterogeneous job, on its cycle: a bound on
# each command, not a timing check (t/99-hetjob.t says more).
[ "$JOB_TIMEOUT" -lt 300 ] && JOB_TIMEOUT=300
P=$TESTS_BIN/pslite_contract

# Slurm before 24.11: srun --mpi=pmix over a heterogeneous step may hang at its end
# (SchedMD ticket 16817): those steps run with --mpi=none (t/99-hetjob.t).
SLURM_VER=$(srun --version | sed -n 's/^slurm[^ ]* \([0-9]*\)\.\([0-9]*\).*/\1\2/p')
HET_MPI=
[ "${SLURM_VER:-0}" -lt 2411 ] && HET_MPI=--mpi=none

# A hetjob's `scontrol show job` has one line per component, the leader's first:
# job_field (lib.sh, also wait_done's) reads the leader's; comp_field JOB N FIELD
# reads component N's.
job_field() { scontrol show job -o "$1" 2>/dev/null | head -1 | grep -oE "(^| )$2=[^ ]*" | cut -d= -f2-; }
comp_field() {
	scontrol show job -o "$1" 2>/dev/null | sed -n "$(($2 + 1))p" | grep -oE "(^| )$3=[^ ]*" | cut -d= -f2-
}
submit() { as_user sbatch --parsable --open-mode=append -o "$WORK/job-%j.out" "$@" 2>"$WORK/sbatch.err"; }
# het SALLOC-ARGS SRUN-ARGS...: srun --het-group=0,1 inside salloc's hetjob allocation.
het() {
	local alloc=$1 mpi=$HET_MPI
	shift
	[[ " $* " == *" --mpi="* ]] && mpi=
	# shellcheck disable=SC2086 # the allocation's words, not globs (-w n[2-3])
	set -f
	as_user salloc $alloc srun --het-group=0,1 $mpi "$@" >"$OUT" 2>"$ERR"
	RC=$?
	set +f
}
het_errors() {
	grep -Ev '^salloc: |^srun: job [0-9]+ (queued and waiting for resources|has been allocated resources)$' "$ERR"
}

# ---- 1. --dl-retries: a node of component 1 fails ---------------------------------
sed "s/@MPI@/$HET_MPI/" >"$WORK/retry.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1 -n1
#SBATCH hetjob
#SBATCH -N1 -n1
echo "batch attempt=${SLURM_RESTART_COUNT:-0}"
srun --het-group=0,1 @MPI@ bash -c 'echo "torch rank=$RANK attempt=$DLRT_ATTEMPT node=$(hostname)"
	[ "$DLRT_ATTEMPT" = 0 ] && [ "$RANK" = 1 ] && kill -9 $$; true'
JOB
chmod 0755 "$WORK/retry.sh"
job=$(submit --dl-runtime=torch --dl-retries=1 --dl-log-dir="$WORK/logs" "$WORK/retry.sh")
ok $? "a hetjob with --dl-retries=1 submitted (job $job)" || fail_detail "$(cat "$WORK/sbatch.err")"
wait_done "$job" 240
out=$(cat "$WORK/job-$job.out")
is "$(job_field "$job" JobState)" COMPLETED "the hetjob finished by itself after one requeue" || fail_detail "$out"
is "$(job_field "$job" Restarts)" 1 "Slurm counted one restart"
bad=$(sed -n 's/^torch rank=1 attempt=0 node=//p' <<<"$out")
ok "$([ -n "$bad" ]; echo $?)" "attempt 0: the task of component 1 (rank 1, on $bad) was killed"
rlog=$(cat "$WORK/logs/$job/dlrt-retries.log" 2>/dev/null)
like "$rlog" "attempt=0 node=$bad step=0 signal=9" "the het job's record names component 1's node and the signal" ||
	fail_detail "$(ls -R "$WORK/logs" | tr '\n' ' ')"
like "$rlog" "attempt=0 failed-nodes=$bad requeued exclude=$bad next-attempt=1" "and the requeue"
is "$(comp_field "$job" 0 ExcNodeList),$(comp_field "$job" 1 ExcNodeList)" "$bad,$bad" \
	"the node is excluded in both components"
a1=$(grep -E '^torch rank=[01] attempt=1 ' <<<"$out")
is "$(wc -l <<<"$a1")" 2 "attempt 1 ran the tasks of both components with DLRT_ATTEMPT=1"
unlike "$a1" "node=$bad\$" "attempt 1 avoided $bad"

# ---- 2. --dl-requeue: warned in both components, requeued, the next attempt knows --
sed "s/@MPI@/$HET_MPI/" >"$WORK/requeue.sh" <<'JOB'
#!/bin/bash
#SBATCH -N1 -n1 -t 1
#SBATCH hetjob
#SBATCH -N1 -n1 -t 1
echo "batch attempt=$DLRT_ATTEMPT"
srun --het-group=0,1 @MPI@ bash -c 'trap "echo got USR1 $SLURM_PROCID attempt=\$DLRT_ATTEMPT; exit 0" USR1
	echo "task $SLURM_PROCID attempt=$DLRT_ATTEMPT restart=${SLURM_RESTART_COUNT:-0} node=$(hostname)"
	[ "$DLRT_ATTEMPT" = 0 ] || exit 0
	for i in $(seq 90); do sleep 1; done; echo "task $SLURM_PROCID got no warning"'
JOB
chmod 0755 "$WORK/requeue.sh"
job=$(submit --dl-runtime=torch --dl-signal=USR1@30 --dl-requeue=1 --dl-log-dir="$WORK/rlogs" "$WORK/requeue.sh")
ok $? "a hetjob with -t 1 --dl-signal=USR1@30 --dl-requeue=1 submitted (job $job)" ||
	fail_detail "$(cat "$WORK/sbatch.err")"
wait_done "$job" 300
out=$(cat "$WORK/job-$job.out")
is "$(job_field "$job" JobState)/$(job_field "$job" Restarts)" COMPLETED/1 \
	"the hetjob was requeued once and completed" || fail_detail "$(tr '\n' ';' <<<"$out")"
is "$(grep -c '^got USR1 [01] attempt=0$' <<<"$out")" 2 "attempt 0: the tasks of both components got USR1"
is "$(grep -cE '^task [01] attempt=1 restart=1 ' <<<"$out")" 2 \
	"attempt 1: the tasks of both components see DLRT_ATTEMPT=1 and SLURM_RESTART_COUNT=1"
like "$out" "batch attempt=1" "and so does the batch script"
rec=$(cat "$WORK/rlogs/$job/dlrt-retries.log" 2>/dev/null)
n1=$(sed -n 's/^task 1 attempt=0 restart=0 node=//p' <<<"$out")
like "$rec" "attempt=0 warning signal=USR1 reason=time-limit left=[0-9]+s node=$n1 step=0" \
	"the het job's record has the warning of component 1's node ($n1)" || fail_detail "$rec"
like "$rec" "attempt=0 requeued reason=ended-after-warning next-attempt=1" "and the requeue"
is "$(find "$WORK/rlogs" -mindepth 1 -maxdepth 1 | wc -l)" 1 "one record folder, the het job's" ||
	fail_detail "$(ls "$WORK/rlogs" | tr '\n' ' ')"

# ---- 3. Every task of both components inside a container (Charliecloud) -----------
if command -v ch-run >/dev/null; then
	. "$HERE/images.sh"
	cat >"$WORK/in.sh" <<'SH'
#!/bin/sh
# in.sh PROG ARGS...: says where this task runs and what role it got, then becomes PROG.
if [ -e /.dlrt-test-image ]; then w=inside; else w=OUTSIDE; fi
echo "T=$SLURM_PROCID $w $(hostname) role=${DMLC_ROLE:-none} root=${DMLC_PS_ROOT_URI:-none} workers=${DMLC_NUM_WORKER:-none}"
exec "$@"
SH
	chmod 0755 "$WORK/in.sh"
	het "-N1 -n2 -w n1 : -N2 --ntasks-per-node=2 -w n[2-3]" --dl-runtime=mxnet "${CH_RUN[@]}" "$IMAGE" -- \
		"$WORK/in.sh" "$P" --timeout-s 30 --rounds 3
	is "$RC/$(grep -c '3 rounds ok, sum=10$' "$OUT")" 0/4 "ch-run: ps-lite over two components trained" ||
		het_errors | head -5 | while read -r l; do fail_detail "$l"; done
	is "$(grep -E '^T=[0-5] ' "$OUT" | sort -n -k1.3 | awk '{print $1, $2, $3, $4, $6}' | paste -sd,)" \
		"T=0 inside n1 role=scheduler workers=4,T=1 inside n1 role=server workers=4,T=2 inside n2 role=worker workers=4,T=3 inside n2 role=worker workers=4,T=4 inside n3 role=worker workers=4,T=5 inside n3 role=worker workers=4" \
		"ch-run: all 6 tasks inside the image, the scheduler and server on the first component's node" ||
		fail_detail "$(tr '\n' ';' <"$OUT")"
	is "$(grep -oE 'root=[^ ]+' "$OUT" | sort -u | wc -l)" 1 "ch-run: one scheduler address for both components"
else
	skip "a heterogeneous step in containers: ch-run missing (tests/cluster/install-deps.sh)"
fi

# ---- 4. auto: the plain step's rule, over every component --------------------------
het "-N1 -n2 -w n1 : -N2 -n4 -w n[2-3]" --mpi=none --dl-runtime=mxnet --dl-dry-run true
is "$RC" 0 "auto in a --mpi=none heterogeneous step: the dry run" || het_errors | head -3 | while read -r l; do fail_detail "$l"; done
like "$(cat "$ERR")" "address exchange through srun's rendezvous: auto, and the step has no PMIx server" \
	"--mpi=none: srun's rendezvous, and the dry run says why"
if [ -n "$NO_PMIX" ]; then
	skip "auto in a --mpi=pmix heterogeneous step: $NO_PMIX"
elif [ "${SLURM_VER:-0}" -lt 2411 ]; then
	# The line comes before the step starts; its end may hang (the ticket): a short bound.
	JOB_TIMEOUT=90 het "-p whole --exclusive -N1 -n2 -w n1 : -p whole --exclusive -N2 -n4 -w n[2-3]" \
		--mpi=pmix --dl-runtime=mxnet --dl-dry-run true
	like "$(cat "$ERR")" "address exchange through srun's rendezvous: auto, and a heterogeneous step on Slurm before 24.11.* 16817" \
		"Slurm before 24.11, --mpi=pmix, nodes held alone: srun's rendezvous, naming the ticket"
	# A srun that hung there outlives salloc's bound (its rendezvous with it): end it,
	# so nothing of this test is left on the cluster.
	pkill -KILL -u "$DLRT_TEST_USER" -f "^srun --het-group=0,1 --mpi=pmix" 2>/dev/null
else
	# This cluster's proctrack/linuxproc: never PMIx under auto, but the reason
	# shows which part of the rule said no.
	x="-p whole --exclusive -N1 -n2 -w n1"
	# No --mpi: this cluster's MpiDefault=pmix, which 24.11's srun has not exported yet
	# when the carrier is chosen (hetstep.h).
	het "$x : -N2 -n4 -w n[2-3]" --dl-runtime=mxnet --dl-dry-run true
	like "$(cat "$ERR")" "address exchange through srun's rendezvous: auto, and other users may be on the job's nodes" \
		"MpiDefault=pmix, component 1 on shared nodes: srun's rendezvous, and why" ||
		het_errors | head -3 | while read -r l; do fail_detail "$l"; done
	het "$x : -N2 -n4 -w n[2-3]" --mpi pmix --dl-runtime=mxnet --dl-dry-run true
	like "$(cat "$ERR")" "address exchange through srun's rendezvous: auto, and other users may be on the job's nodes" \
		"--mpi pmix, component 0 held alone, component 1 on shared nodes: srun's rendezvous, and why" ||
		het_errors | head -3 | while read -r l; do fail_detail "$l"; done
	het "$x : -p whole --exclusive -N2 -n4 -w n[2-3]" --mpi=pmix --dl-runtime=mxnet --dl-dry-run true
	like "$(cat "$ERR")" "address exchange through srun's rendezvous: auto, and the job holds its nodes alone, but with ProctrackType=proctrack/linuxproc" \
		"both components held alone: the process tracking decides, as in a plain step" ||
		het_errors | head -3 | while read -r l; do fail_detail "$l"; done
fi

# ---- 5. one poller per component --------------------------------------------------
# A 3-node heterogeneous step (-N1 : -N2): each node's dlrt-lifecycle learns the times
# at srun's rendezvous (--times), and one per component, its first node, asks
# slurmctld and shares them (--times-publish); each component is a job with its own
# times. Before, no node of a heterogeneous step had --times: each of them asked
# slurmctld itself (t/93b counts the RPCs of a plain step).
het "-t 2 -N1 -n1 : -t 2 -N2 -n2" --dl-runtime=torch --dl-signal=USR1@10 bash -c 'sleep 15' &
hp=$!
watchers() { pgrep -a -f "libexec/dlrt/dlrt-lifecycle --job" | grep -- "--step"; }
# The bound covers the backfill's start of the hetjob under load, not only the step.
wait_until 240 eval '[ "$(watchers | wc -l)" -ge 3 ]'
w=$(watchers)
wait "$hp"
is "$(grep -c -- '--times ' <<<"$w")" 3 "every node's watcher learns the times at srun's rendezvous" ||
	fail_detail "$w"
is "$(grep -c -- '--times-publish' <<<"$w")" 2 "one per component asks slurmctld and shares them" ||
	fail_detail "$w"
is "$(grep -- '--times-publish' <<<"$w" | grep -oE -- '--job [0-9]+' | sort -u | wc -l)" 2 \
	"one for each component's job"

done_testing
