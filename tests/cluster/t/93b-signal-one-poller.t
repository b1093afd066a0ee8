#!/bin/bash
# --dl-signal asks slurmctld for the job's times from one node per step, whatever the
# step's size: the job-info RPCs slurmctld counts (sdiag, REQUEST_JOB_INFO_SINGLE)
# during a 3-node step are those of the same step on one node, give or take one,
# where every node used to ask on its own (3 times as many). The other nodes learn the
# times through srun's rendezvous and still warn their own tasks: a 3-node step whose
# warning is due within seconds has every task warned, on every node; so has a step
# whose exchange Slurm's PMIx carries (srun keeps its rendezvous for the watchers).
. "$(dirname "$0")/../lib.sh"

# slurmctld's count of job-info RPCs so far (slurm_load_job, scontrol show job).
job_info() {
	local n
	n=$(sdiag 2>/dev/null | sed -n 's/.*REQUEST_JOB_INFO_SINGLE.*count:\([0-9]*\).*/\1/p')
	echo "${n:-0}"
}

# rpcs NODES: the job-info RPCs during one 22 s step on NODES nodes, whose warning
# (100 s before a 2-minute limit) is not due while it runs.
rpcs() {
	local before after
	before=$(job_info)
	run_srun -N"$1" -n"$1" -t 2 --dl-runtime=torch --dl-exchange=srun --dl-signal=USR1@10 \
		bash -c 'sleep 22'
	after=$(job_info)
	[ "$RC" = 0 ] || { echo "step failed: $(srun_errors | head -3)"; return 1; }
	echo $((after - before))
}

one=$(rpcs 1)
ok $? "a 1-node step ran ($one job-info RPCs)" || fail_detail "$one"
three=$(rpcs 3)
ok $? "a 3-node step ran ($three job-info RPCs)" || fail_detail "$three"
ok "$([ "$three" -le $((one + 1)) ]; echo $?)" \
	"a 3-node step costs slurmctld no more job-info RPCs than a 1-node step ($three, $one)" ||
	fail_detail "every node asks slurmctld itself: each node's dlrt-lifecycle should learn the times through srun's rendezvous"

cat >"$WORK/task.sh" <<'SH'
#!/bin/bash
trap 'echo "WARNED task=$SLURM_PROCID node=$(hostname)"; exit 0' USR1
for _ in $(seq 40); do sleep 1; done
echo "NOT-WARNED task=$SLURM_PROCID"
SH
chmod 0755 "$WORK/task.sh"
warned_everywhere() { # WHAT: every task of the last step warned, on all 3 nodes
	local w
	w=$(grep -oE 'WARNED task=[0-9]+ node=n[1-3]' "$OUT" | sort -u)
	is "$RC" 0 "$1: the step ran" || fail_detail "$(srun_errors | head -5)"
	is "$(wc -l <<<"$w")" 6 "$1: all 6 tasks got SIGUSR1" || fail_detail "$(cat "$OUT")"
	is "$(grep -oE 'node=n[1-3]' <<<"$w" | sort -u | wc -l)" 3 "$1: on all 3 nodes"
}
# USR1@55 in a 1-minute limit: due within seconds of the start.
run_srun -N3 -n6 -t 1 --dl-runtime=torch --dl-exchange=srun --dl-signal=USR1@55 "$WORK/task.sh"
warned_everywhere "srun's exchange"
if [ -n "$NO_PMIX" ]; then
	skip "$NO_PMIX"
	skip "$NO_PMIX"
	skip "$NO_PMIX"
else
	run_srun --mpi=pmix -N3 -n6 -t 1 --dl-runtime=torch --dl-exchange=pmix --dl-signal=USR1@55 \
		"$WORK/task.sh"
	warned_everywhere "Slurm's PMIx exchange"
fi
done_testing
