#!/bin/bash
# --exclusive does not keep another user's processes off a node. With
# ProctrackType=proctrack/linuxproc (this cluster's, and any site's without
# proctrack/cgroup) a process a job started with setsid is no longer in its
# job's process tree and stays on the node after the job ends. Such a process of
# the stranger's waits there for the victim's next step and connects to its PMIx
# server as rank 0 first (refused under munge, which still keeps the real task 0
# out: PMIx admits one connection per rank). So `auto` takes Slurm's PMIx only
# where the job holds its nodes alone AND the controller's ProctrackType is
# proctrack/cgroup; here the victim's --exclusive step with the default exchange
# goes through srun's rendezvous and runs, and --dl-verbose says why.
# Before, auto took PMIx for every exclusive --mpi=pmix step (3 of 3 such steps
# failed after the exchange timeout when the stranger won the race to rank 0).
. "$(dirname "$0")/../lib.sh"
skip_all_without_pmix # the leftover attacks Slurm's PMIx server; without it there is none

is "$(scontrol show config | sed -n 's/^ProctrackType *= *//p')" proctrack/linuxproc \
	"the cluster tracks processes with proctrack/linuxproc"

# The stranger's leftover: for up to 100 s, every PMIx listener of root's on
# 127.0.0.1 is tried as rank 0 of each running step of the victim's jobs, with
# the stranger's own credential (PMIX_STATE_OWN), as fast as it can.
mark="dlrt-leftover-$$"
cat >"$WORK/leftover.sh" <<SH
#!/bin/bash
# $mark
end=\$((SECONDS + 100))
while [ \$SECONDS -lt \$end ]; do
	for job in \$(squeue -h -u $DLRT_TEST_USER -t R -o %i); do
		while read -r _ local _ st _; do
			[[ \$st == 0A && \$local == 0100007F:* ]] || continue
			port=\$((16#\${local#*:}))
			for step in 0 1; do
				ns=slurm.pmix.\$job.\$step
				$TESTS_BIN/pmix-stranger -t 1 -a 0 \$ns "\$ns.0;tcp4://127.0.0.1:\$port" get 0 k >/dev/null 2>&1
			done
		done </proc/net/tcp
	done
	sleep 0.05
done
SH
chmod 0755 "$WORK/leftover.sh"
as_stranger sbatch --wait -p whole -N1 -w n1 -o /dev/null -e /dev/null \
	--wrap "setsid -f $WORK/leftover.sh </dev/null >/dev/null 2>&1; sleep 1" >/dev/null 2>&1
is "$?" 0 "the stranger's 1-second job on n1 ended"
left=$(pgrep -u "$STRANGER" -f "$WORK/leftover.sh" | head -1)
ok "$([ -n "$left" ]; echo $?)" "its setsid process is still there after the job (proctrack/linuxproc)"

run_srun -p whole -N1 -w n1 -n2 --exclusive --mpi=pmix --dl-runtime=torch --dl-verbose /usr/bin/python3 -c '
import torch, torch.distributed as d
d.init_process_group("gloo")
t = torch.ones(1) * (d.get_rank() + 1)
d.all_reduce(t)
print("sum", int(t.item()))'
is "$RC:$(grep -c '^sum 3$' "$OUT")" 0:2 "the victim's --exclusive step with the default exchange runs" ||
	fail_detail "$(srun_errors | tail -3 | tr '\n' '|')"
like "$(grep -o "address exchange through [^:]*" "$ERR" | sort -u)" "^address exchange through srun's rendezvous$" \
	"... its exchange went through srun's rendezvous"
like "$(srun_errors | grep 'dlrt: address exchange through')" \
	"auto, and the job holds its nodes alone, but with ProctrackType=proctrack/linuxproc" \
	"--dl-verbose names the reason: the process tracking"
run_srun -p whole -N1 -w n1 -n1 --exclusive --mpi=pmix --dl-runtime=torch --dl-dry-run true
like "$(srun_errors | grep 'dlrt: address exchange through')" "srun's rendezvous: auto, .*ProctrackType=proctrack/linuxproc" \
	"the dry run says which and why"
ok "$(pgrep -u "$STRANGER" -f "$WORK/leftover.sh" >/dev/null; echo $?)" \
	"the stranger's process was there all along"
[ -n "$left" ] && kill "$left" 2>/dev/null
done_testing
