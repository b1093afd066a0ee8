#!/bin/bash
# Every runtime that exchanges addresses, through each carrier (--dl-exchange):
# Slurm's PMIx and srun's rendezvous, each step checked with the runtime's real
# program or its contract checker, and --dl-verbose naming the carrier it used.
# Then the choice itself: auto takes PMIx only in a --mpi=pmix step on nodes the
# job holds exclusively AND where ProctrackType=proctrack/cgroup ends every earlier
# job's processes; the test cluster runs proctrack/linuxproc, where a process a
# stranger's job left behind (setsid) stays on the node (t/98-pmix-leftover.t), so
# auto takes srun's rendezvous there even with --exclusive, as on shared nodes and
# with --mpi=none; --dl-exchange=pmix still uses PMIx there, with one warning line
# naming why; pmix without a PMIx server fails with one line;
# the dry run names the carrier; a PMIx step with --dl-signal=none leaves nothing
# of dlrt's running on srun's host, and one with the default --dl-signal keeps
# srun's rendezvous for its watchers, which share the job's times there.
. "$(dirname "$0")/../lib.sh"

install -m 0755 -o "$DLRT_TEST_USER" "$HERE/contract_task.py" "$WORK/task.py"
cp "$HERE/../progs/torchrun/train_elastic.py" "$WORK/train.py"
chmod 0644 "$WORK/train.py"
has_torch=$(/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null && echo 1)

# carrier VIA: the carrier every --dl-verbose line of the step names ("" if none,
# "mixed" if they differ)
carrier() {
	local c
	c=$(grep -o 'address exchange through [^:]*:' "$ERR" | sort -u)
	case "$c" in
	"address exchange through Slurm's PMIx:") echo pmix ;;
	"address exchange through srun's rendezvous:") echo srun ;;
	"") echo "" ;;
	*) echo mixed ;;
	esac
}
# contract RUNTIME NTASKS CHECKER ARGS...: a step of the contract task, checked
contract() {
	local rt=$1 n=$2 checker=$3
	shift 3
	rm -rf "$WORK/c" && mkdir "$WORK/c" && chown "$DLRT_TEST_USER": "$WORK/c"
	run_srun "$@" --dl-runtime="$rt" --dl-verbose "$WORK/task.py" "$rt" "$WORK/c"
	cat "$WORK"/c/* >"$OUT" 2>/dev/null
	RES=$(/usr/bin/python3 "$HERE/$checker" "$n" <"$OUT")
	CRC=$?
}

vias="pmix srun"
if [ -n "$NO_PMIX" ]; then
	skip "every runtime through Slurm's PMIx: $NO_PMIX"
	vias=srun
fi
for via in $vias; do
	run_srun -N3 -n6 --dl-runtime=mxnet --dl-servers=2 --dl-exchange=$via --dl-verbose \
		"$TESTS_BIN/pslite_contract" --timeout-s 20
	is "$RC:$(grep -c 'rounds ok' "$OUT")" 0:3 "$via: mxnet ps-lite job, 3 workers checked every value" ||
		fail_detail "$(srun_errors | tail -3 | tr '\n' '|')"
	is "$(carrier)" "$via" "$via: mxnet's tasks name the carrier they used"

	if [ -n "$has_torch" ]; then
		run_srun -N3 -n3 --dl-runtime=torch --dl-exchange=$via --dl-verbose /usr/bin/python3 -c '
import torch, torch.distributed as d
d.init_process_group("gloo")
t = torch.ones(1) * (d.get_rank() + 1)
d.all_reduce(t)
print("sum", int(t.item()))'
		is "$RC:$(grep -c '^sum 6$' "$OUT")" 0:3 "$via: torch all_reduce across 3 nodes" ||
			fail_detail "$(srun_errors | tail -3 | tr '\n' '|')"
		is "$(carrier)" "$via" "$via: torch's tasks name the carrier"

		run_srun -N3 --ntasks-per-node=1 --dl-runtime=torchrun --dl-exchange=$via --dl-verbose \
			/usr/bin/torchrun "$WORK/train.py" --steps 10
		is "$RC:$(grep -c '^RESULT .* world=3 ' "$OUT")" 0:3 "$via: torchrun, 3 agents, one group" ||
			fail_detail "$(srun_errors | tail -3 | tr '\n' '|')"
		is "$(carrier)" "$via" "$via: torchrun's agents name the carrier"
	else
		ok 1 "python3-torch is installed on the nodes (tests/cluster/install-deps.sh)"
	fi

	contract jax 6 jax_contract.py -N3 --ntasks-per-node=2 --dl-exchange=$via
	is "$RC:$CRC" 0:0 "$via: jax's contract on 3 nodes x 2" || fail_detail "$(tr '\n' '|' <<<"$RES")"
	is "$(carrier)" "$via" "$via: jax's tasks name the carrier"

	contract tensorflow 5 tf_contract.py -N3 -n5 --dl-exchange=$via
	is "$RC:$CRC" 0:0 "$via: tensorflow's TF_CONFIG on 3 nodes, 5 tasks (a port per task)" ||
		fail_detail "$(tr '\n' '|' <<<"$RES")"
	is "$(carrier)" "$via" "$via: tensorflow's tasks name the carrier"

	run_srun -N3 -n6 --dl-runtime=horovod --dl-exchange=$via --dl-verbose "$TESTS_BIN/gloo_hvd_allreduce"
	is "$RC:$(grep -c 'allreduce ok sum=15$' "$OUT")" 0:6 "$via: horovod gloo, 6 ranks through the driver" ||
		fail_detail "$(srun_errors | tail -3 | tr '\n' '|')"
	is "$(carrier)" "$via" "$via: horovod's tasks name the carrier"

	# Task 0's node hosts the store, which ends with that node's part of the
	# step: task 0 leaves only once every task said it is done.
	cat >"$WORK/c2.sh" <<'SH'
#!/bin/bash
r() { redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" "$@"; }
. ./wait_until.sh
r set "k$SLURM_PROCID" v >/dev/null
wait_until 40 eval 'n=$(r keys "k*" | grep -c .); [ "$n" -ge 3 ]'
echo "keys $n"
r set "done$SLURM_PROCID" 1 >/dev/null
if [ "$SLURM_PROCID" = 0 ]; then
	wait_until 40 eval '[ "$(r keys "done*" | grep -c .)" -ge 3 ]'
fi
SH
	chmod 0755 "$WORK/c2.sh"
	run_srun -N3 -n3 --dl-runtime=caffe2 --dl-exchange=$via --dl-verbose "$WORK/c2.sh"
	is "$RC:$(grep -c '^keys 3$' "$OUT")" 0:3 "$via: caffe2, 3 nodes meet in the helper store" ||
		fail_detail "$(srun_errors | tail -3 | tr '\n' '|')"
	is "$(carrier)" "$via" "$via: caffe2's tasks name the carrier"
done

# The choice. Slurm's PMIx admits anyone on a node who states the job owner's uid, so
# auto takes it only where no other user can be: a job holding its nodes exclusively
# on a cluster whose process tracking ends every job's processes (proctrack/cgroup).
# This cluster's proctrack/linuxproc does not: srun's rendezvous, with --exclusive too.
if [ -n "$NO_PMIX" ]; then
	skip "auto and --dl-exchange=pmix in --mpi=pmix steps: $NO_PMIX"
else
	run_srun -N2 -n2 --mpi=pmix --dl-runtime=torch --dl-verbose true
	is "$(carrier)" srun "auto with --mpi=pmix on nodes other users may share: srun's rendezvous"
	like "$(grep 'address exchange through' "$ERR" | grep -v task | head -1)" \
		"address exchange through srun's rendezvous: auto, and other users may be on the job's nodes" \
		"--dl-verbose: srun says which carrier and why"
	run_srun -p whole -N2 -n2 --exclusive --mpi=pmix --dl-runtime=torch --dl-verbose true
	is "$(carrier)" srun "auto with --exclusive under proctrack/linuxproc: srun's rendezvous"
	like "$(grep 'address exchange through' "$ERR" | grep -v task | head -1)" \
		"address exchange through srun's rendezvous: auto, and the job holds its nodes alone, but with ProctrackType=proctrack/linuxproc .*only proctrack/cgroup" \
		"--dl-verbose: srun names the process tracking as the reason"
	run_srun -p whole -N2 -n2 --exclusive=user --mpi=pmix --dl-runtime=torch --dl-verbose true
	is "$(carrier)" srun "auto with --exclusive=user under proctrack/linuxproc: srun's rendezvous"
	run_srun -p whole -N2 -n2 --exclusive --mpi=pmix --dl-runtime=torch --dl-exchange=pmix --dl-verbose true
	is "$RC:$(carrier)" 0:pmix "--dl-exchange=pmix with --exclusive: Slurm's PMIx carries it"
	like "$(srun_errors | grep 'warning: --dl-exchange=pmix')" \
		"warning: --dl-exchange=pmix, though the job holds its nodes alone, but with ProctrackType=proctrack/linuxproc" \
		"... with one warning naming the process tracking"
	unlike "$(srun_errors | grep 'warning: --dl-exchange=pmix')" "use --exclusive" \
		"... which does not advise --exclusive to a job that has it"
	run_srun -p whole -N2 -n2 --mpi=pmix --dl-runtime=torch --dl-verbose true
	is "$(carrier)" srun "auto on a partition that lets jobs share nodes, without --exclusive: srun's rendezvous"
	run_srun -N2 -n2 --mpi=pmix --dl-runtime=torch --dl-exchange=pmix true
	is "$RC" 0 "--dl-exchange=pmix on shared nodes: the step runs"
	is "$(srun_errors | grep -c 'warning: --dl-exchange=pmix, though other users may be on the job.s nodes')" 1 \
		"--dl-exchange=pmix on shared nodes: one warning line naming the risk"
fi
run_srun -N2 -n2 --mpi=none --dl-runtime=torch --dl-verbose true
is "$(carrier)" srun "auto with --mpi=none: srun's rendezvous"
run_srun -N2 -n2 --mpi=none --dl-runtime=torch --dl-exchange=pmix true
isnt_zero=$([ "$RC" -ne 0 ] && echo failed)
is "$isnt_zero" failed "--dl-exchange=pmix without a PMIx server: the step fails"
like "$(srun_errors | grep dlrt | sort -u | head -1)" "no PMIx server.*--mpi=pmix.*--dl-exchange=srun" \
	"one line naming both fixes"
run_srun -N1 -n1 --dl-runtime=torch --dl-exchange=zk true
like "$(srun_errors)" "^srun: error: dlrt: --dl-exchange=zk is unknown: use pmix" "a bad value: one line"
if [ -n "$NO_PMIX" ]; then
	skip "the dry run of a PMIx step: $NO_PMIX"
else
	run_srun -N2 -n2 --dl-runtime=torch --dl-exchange=pmix --dl-dry-run true
	like "$(grep '^address exchange:' "$OUT")" "^address exchange: Slurm's PMIx \(--dl-exchange=pmix\)$" \
		"the dry run names the carrier"
fi

# A PMIx step with --dl-signal=none starts nothing on srun's host; with the
# default --dl-signal srun keeps its rendezvous for the step's watchers (one
# node asks slurmctld for the job's times and shares them there). The same step
# through srun's rendezvous has it as srun's child (dlrt-c10d-store), and so has
# auto with --mpi=none. Counted while the step runs: its tasks write a file,
# then wait for the test to be done counting.
vias="pmix pmix_watch srun auto auto_none"
[ -z "$NO_PMIX" ] || vias="srun auto_none"
for via in $vias; do
	mark="$WORK/running.$via"
	opt="--dl-exchange=$via"
	[ "$via" = pmix ] && opt="--dl-signal=none --dl-exchange=pmix"
	[ "$via" = pmix_watch ] && opt="--dl-exchange=pmix"
	[ "$via" = auto ] && opt="-p whole --exclusive --mpi=pmix --dl-exchange=auto"
	[ "$via" = auto_none ] && opt="--mpi=none --dl-exchange=auto"
	as_user srun -N2 -n3 --dl-runtime=mxnet --dl-servers=1 $opt bash -c \
		"touch $mark.\$SLURM_PROCID; . '$WAIT_UNTIL'; wait_until 30 test -e $mark.done" \
		>/dev/null 2>&1 &
	bg=$!
	wait_until 30 test -e "$mark.0"
	spids=$(pgrep -d, -f "^srun .*--dl-exchange=${via%%_*} bash -c touch $mark")
	eval "stores_$via=$(pgrep -c -P "${spids:-1}" -f dlrt-c10d-store)"
	touch "$mark.done"
	wait $bg
done
if [ -n "$NO_PMIX" ]; then
	skip "no rendezvous on srun's host for a PMIx step: $NO_PMIX"
	skip "srun's rendezvous for a PMIx step's watchers: $NO_PMIX"
else
	is "$stores_pmix" 0 "--dl-exchange=pmix --dl-signal=none: srun started no rendezvous"
	is "$stores_pmix_watch" 1 "--dl-exchange=pmix with the default --dl-signal: srun's rendezvous ran for the watchers"
	is "$stores_auto" 1 "auto in an exclusive --mpi=pmix step under proctrack/linuxproc: srun's rendezvous ran"
fi
is "$stores_srun" 1 "--dl-exchange=srun: srun's rendezvous ran as srun's child for the step"
is "$stores_auto_none" 1 "auto with --mpi=none: srun's rendezvous ran for the step"

done_testing
