#!/bin/bash
# requeue-cost.sh - what a requeued attempt costs: the time from dlrt's requeue of a
# --dl-requeue job at its time limit (the job's record) to the start of its next attempt,
# with Slurm's default requeue and, on Slurm 25.11 and later, with the expedited one
# (--requeue=expedite; the cluster must allow it: SlurmctldParameters=enable_expedited_requeue,
# as the test cluster does there). The job ignores the warning, so dlrt's watcher requeues it
# itself, a third of the warning's lead before the limit; the next attempt is cancelled as
# soon as it started. Nothing here moves a job's start (the cluster tests' wait_done does).
# Reports; never passes or fails on a number.
set -u
cd "$(dirname "$0")/.." || exit 1
eval "$(tests/cluster/cluster.sh env)"
U=$DLRT_TEST_USER
# On the cluster's shared folder: each node has its own /tmp.
W=$(mktemp -d "$DLRT_CLUSTER_DIR/work/requeue-cost.XXXXXX") || exit 1
chown "$U": "$W"
trap 'rm -rf "$W"' EXIT
cat >"$W/job.sh" <<'JOB'
#!/bin/bash
echo "attempt=$DLRT_ATTEMPT start=$(date +%s)"
srun bash -c 'trap "" USR1; while :; do sleep 1; done'
JOB
chmod 0755 "$W/job.sh"
v=$(srun --version | sed -n 's/^slurm[^ ]* \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')

# measure [SBATCH_OPTION...]: prints the seconds from the requeue to the next start.
measure() {
	local job deadline at0 at1
	# The job's record goes to $HOME/.dlrt/jobs/JOB/.
	job=$(cd "$W" && runuser -u "$U" -- env HOME="$W" sbatch --parsable --open-mode=append \
		-o "$W/job-%j.out" -N1 -n1 -t 1 "$@" \
		--dl-runtime=torch --dl-signal=USR1@30 --dl-requeue=1 "$W/job.sh") || return 1
	deadline=$((SECONDS + 420))
	while [ $SECONDS -lt $deadline ] && ! grep -q '^attempt=1 ' "$W/job-$job.out" 2>/dev/null; do
		sleep 1
	done
	scancel "$job"
	at0=$(sed -n 's/^\([^ ]*\) attempt=0 requeued .*/\1/p' "$W/.dlrt/jobs/$job/dlrt-retries.log" 2>/dev/null | head -1)
	at1=$(sed -n 's/^attempt=1 start=\([0-9]*\).*/\1/p' "$W/job-$job.out" | head -1)
	[ -n "$at0" ] && [ -n "$at1" ] || { echo "requeue-cost: job $job: no requeue or no second attempt within 420 s" >&2; return 1; }
	echo $((at1 - $(date -d "$at0" +%s)))
}

echo "| Slurm ${v/ /.} | from dlrt's requeue to the next attempt's start |"
echo "|---|---|"
plain=$(measure) || exit 1
echo "| default requeue | $plain s |"
if [ "${v% *}" -gt 25 ] || { [ "${v% *}" -eq 25 ] && [ "${v#* }" -ge 11 ]; }; then
	fast=$(measure --requeue=expedite) || exit 1
	echo "| --requeue=expedite | $fast s |"
fi
