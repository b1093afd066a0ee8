#!/bin/bash
# SlurmdParameters=contain_spank (Slurm 24.05+) with job_container/tmpfs: slurmstepd runs the
# SPANK user_init, task_post_fork and task_exit inside the job's namespace, each in a child
# process of its own that ends when the callback returns (clone with CLONE_VM: slurmstepd's
# memory, a copy of its descriptors). What dlrt starts in user_init must still live as long as
# the step, and what slurmstepd and the tasks use later must be slurmstepd's own (spank/
# service.c, docs/ADMIN.md "SlurmdParameters=contain_spank"): the runtime's service and the
# node relays (torch's store, caffe2's), the --dl-signal watcher (an srun step's and the batch
# step's), the fail-fast pipe, and nothing of dlrt's is left after the steps. The cluster is
# brought up with DLRT_CLUSTER_CONTAIN=1 for this test and back without it at its end. A
# step's service still outlives task 0's node (task 0 ends first, the other node's client
# comes later).
. "$(dirname "$0")/../lib.sh"

v=$(slurmd -V | sed -n 's/^slurm[^ ]* \([0-9]*\)\.\([0-9]*\).*/\1\2/p')
if [ "${v:-0}" -lt 2405 ]; then
	echo "1..0 # SKIP contain_spank is Slurm 24.05 or later; this is $(slurmd -V)"
	exit 0
fi
trap '"$HERE/cluster.sh" up >/dev/null 2>&1' EXIT
DLRT_CLUSTER_CONTAIN=1 "$HERE/cluster.sh" up >/dev/null 2>&1
like "$(grep -E '^(SlurmdParameters|JobContainerType)=' "$SLURM_CONF" | tr '\n' ' ')" \
	'contain_spank.*job_container/tmpfs' "the cluster runs with contain_spank and job_container/tmpfs"

# Each job once the last one's nodes are idle again. Now and then Slurm 24.11 fails to make a
# job's namespace on this cluster before the job starts (srun: "Nodes ... are still not
# ready"; a batch step: "container_p_join: open failed for .../.ns"), also for a plain srun
# without any dlrt option: such a job, which never ran, is run again (at most three times in
# all), and says so.
idle() {
	wait_until -i 0.5 120 eval '[ "$(sinfo -h -o %t | sort -u)" = idle ]'
}
NO_NS='are still not ready|container_p_join: open failed'
step() {
	for _ in 1 2 3; do
		idle
		run_srun "$@"
		grep -Eq "$NO_NS" "$ERR" || return 0
		diag "Slurm did not make the job's namespace ($(grep -Em1 "$NO_NS" "$ERR")): again"
	done
}
batch() {
	for _ in 1 2 3; do
		idle
		as_user sbatch --wait -N1 -o "$WORK/batch.out" "$@" >/dev/null 2>&1
		grep -Eq "$NO_NS" "$WORK/batch.out" || return 0
		diag "Slurm did not make the job's namespace ($(grep -Em1 "$NO_NS" "$WORK/batch.out")): again"
	done
}

cat >"$WORK/allreduce.py" <<'PY'
import subprocess, torch, torch.distributed as d
d.init_process_group("gloo")
t = torch.ones(1)
d.all_reduce(t)
print("rank", d.get_rank(), "sum", int(t.item()))
PY
step -N2 -n2 --dl-runtime=torch python3 "$WORK/allreduce.py"
is "$(sort "$OUT" | tr '\n' ' ')" "rank 0 sum 2 rank 1 sum 2 " \
	"torch: the step's store (a service and a relay per node, started in user_init) serves both ranks" ||
	fail_detail "stderr: $(head -5 "$ERR")"

cat >"$WORK/store.py" <<'PY'
import os, redis
r = redis.Redis(host=os.environ["REDIS_HOST"], port=int(os.environ["REDIS_PORT"]))
r.set("k" + os.environ["SLURM_PROCID"], "v")
print("store ok", r.get("k" + os.environ["SLURM_PROCID"]) == b"v")
PY
step -N2 -n2 --dl-runtime=caffe2 python3 "$WORK/store.py"
is "$(sort -u "$OUT")" "store ok True" "caffe2: the helper store answers both tasks through their relays" ||
	fail_detail "stderr: $(head -5 "$ERR")"

# The step's service outlives task 0's node here too: task_exit runs in a child of
# slurmstepd, which holds only copies of the pipes, so it stops the node's relay and lets the
# service linger by signal (spank/stepd.c, stop_services).
cat >"$WORK/late.sh" <<'SH'
#!/bin/bash
[ "$SLURM_PROCID" = 0 ] && exit 0
sleep 2
echo "late incr=$(timeout 30 redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" INCRBY ctr 1 2>&1)"
SH
chmod 0755 "$WORK/late.sh"
step -N2 -n2 --dl-runtime=caffe2 "$WORK/late.sh"
is "$(cat "$OUT")" "late incr=1" \
	"caffe2: task 0 ended first, and the other node's INCRBY two seconds later is answered" ||
	fail_detail "stderr: $(head -5 "$ERR")"

watcher='sleep 2; pgrep -u "$(id -u)" -f dlrt-lifecycle >/dev/null && echo WATCHER-ALIVE || echo WATCHER-GONE'
step -N1 -n1 --dl-runtime=torch bash -c "$watcher"
is "$(cat "$OUT")" "WATCHER-ALIVE" "the step's --dl-signal watcher lives through the step" ||
	fail_detail "stderr: $(head -5 "$ERR")"
batch --dl-runtime=torch --dl-requeue=1 --wrap "$watcher"
is "$(cat "$WORK/batch.out")" "WATCHER-ALIVE" "the batch step's watcher (--dl-requeue) lives through the job"

# task_exit, in a child of slurmstepd: the first failing role ends the step, with one line.
step -N1 -n3 --dl-runtime=mxnet bash -c '[ "$SLURM_PROCID" = 2 ] && exit 3; sleep 100'
is "$(srun_errors | grep -c 'dlrt: .*exited with status 3: ending the step')" 1 \
	"fail-fast: a role that exits 3 ends the step with one dlrt line" ||
	fail_detail "stderr: $(head -5 "$ERR")"

idle
left=$(pgrep -u "$DLRT_TEST_USER" -l -f "^$DLRT_CLUSTER_DIR/prefix/libexec/dlrt/dlrt-(relay|c10d-store|store|lifecycle)" | tr '\n' ' ')
is "$left" "" "nothing of dlrt's is left running after the steps"
done_testing
