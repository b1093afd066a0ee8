#!/bin/bash
# Elastic Horovod (HOROVOD_ELASTIC=1) on a step that loses a node. Every task
# runs gloo_hvd_elastic, elastic Horovod's worker loop on libgloo (reset, GET
# /rank_and_size, the three scopes again): 6 ranks, 2 per node, train, pause at
# step 3, n3's two workers are killed, the others go on. Their next allreduce
# fails, they ask dlrt-hvd-driver for their rank, the driver holds them until
# Slurm says n3 runs no task of the step any more (slurmd's pid list), then
# publishes round 2 (n1:2,n2:2) and they finish in a world of 4 with right
# sums on the global, local and cross contexts. The same when n3 dies whole
# (slurmd, slurmstepd, workers: slurmd does not answer). With --dl-hvd-min-np
# above what is left, the survivors are told they were removed and the step
# fails.
# What cannot work is refused before anything runs, with one line.
. "$(dirname "$0")/../lib.sh"
CL=$HERE/cluster.sh

# 1. Refusals: one distinct dlrt line each, nothing ran.
refused() { # what, pattern, srun options...
	local what=$1 pat=$2
	shift 2
	rm -f "$WORK/ran"
	run_srun "$@" touch "$WORK/ran"
	ok $((RC == 0)) "$what: the step fails (rc=$RC)"
	lines=$(grep 'dlrt:' "$ERR" | sed 's/.*dlrt: //' | sort -u)
	is "$(grep -c . <<<"$lines")" 1 "$what: one distinct dlrt line" ||
		fail_detail "stderr: $(head -c 600 "$ERR")"
	like "$lines" "$pat" "$what: the line names the cause and the fix"
	ok "$([ ! -e "$WORK/ran" ]; echo $?)" "$what: the program never ran"
}
refused "MPI mode" "^HOROVOD_ELASTIC=1: elastic Horovod re-initialises through its gloo rendezvous, not MPI: use --dl-horovod=gloo" \
	-N3 -n3 --export=ALL,HOROVOD_ELASTIC=1 --dl-runtime=horovod --dl-horovod=mpi
refused "min-np above the tasks" "^HOROVOD_ELASTIC=1: the step has 3 tasks, outside --dl-hvd-min-np=4\.\.--dl-hvd-max-np=3: .* give min <= 3 <= max$" \
	-N3 -n3 --export=ALL,HOROVOD_ELASTIC=1 --dl-runtime=horovod --dl-hvd-min-np=4
refused "min-np without HOROVOD_ELASTIC" "^--dl-hvd-min-np is for elastic Horovod: export HOROVOD_ELASTIC=1" \
	-N3 -n3 --dl-runtime=horovod --dl-hvd-min-np=2

# Horovod reads the variable with strtol: 0 is not elastic.
run_srun -N3 -n6 --export=ALL,HOROVOD_ELASTIC=0 --dl-runtime=horovod "$TESTS_BIN/gloo_hvd_allreduce"
is "$RC" 0 "HOROVOD_ELASTIC=0: a real libgloo rendezvous and allreduce still run"
is "$(grep -c '^rank [0-5] of 6: allreduce ok sum=15$' "$OUT")" 6 "all 6 ranks passed" ||
	fail_detail "stderr: $(head -c 600 "$ERR")"

# 2. Lose n3 mid-training. $1: a name, $2: kill (n3's workers are killed) or
# crash (n3's slurmd stops, its slurmstepd and workers are killed: a node that
# died), then extra srun options. Sets RC, OUT, ERR.
drill() {
	local flag="$WORK/flag$1" how=$2 p host r
	rm -rf "$flag"
	mkdir -m 0777 "$flag"
	shift 2
	as_user srun -N3 -n6 --ntasks-per-node=2 --no-kill --export=ALL,HOROVOD_ELASTIC=1 --dl-runtime=horovod "$@" \
		"$TESTS_BIN/gloo_hvd_elastic" --steps 6 --pause-at 3 --flag "$flag" >"$OUT" 2>"$ERR" &
	srun_pid=$!
	# bounded by the job's own timeout too
	wait_until 240 eval '[ "$(find "$flag" -name "ready.*" | wc -l)" -eq 6 ] || pid_gone "$srun_pid"'
	is "$(find "$flag" -name 'ready.*' | wc -l)" 6 "every worker reached step 3" ||
		fail_detail "$(tail -20 "$ERR")"
	killed=()
	for r in "$flag"/ready.*; do
		read -r p host <"$r"
		[ "$host" = n3 ] && killed+=("$p")
	done
	is "${#killed[@]}" 2 "n3 runs 2 workers (pids ${killed[*]})"
	if [ "$how" = crash ] && [ "${#killed[@]}" -gt 0 ]; then
		stepd=$(ps -o ppid= -p "${killed[0]}" | tr -d ' ')
		is "$(ps -o comm= -p "$stepd")" slurmstepd "their parent $stepd is n3's slurmstepd"
		"$CL" stop-node n3
		ok $? "stopped slurmd on n3"
		kill -KILL "$stepd"
	fi
	[ "${#killed[@]}" -gt 0 ] && as_user kill -KILL "${killed[@]}"
	for p in "${killed[@]}"; do
		wait_until 30 pid_gone "$p"
	done
	touch "$flag/go"
	wait "$srun_pid"
	RC=$?
}

drill 1 kill --dl-verbose
errs=$(srun_errors)
like "$errs" "n3: tasks? [4-5](-5)?: Killed" "srun reports the lost workers on n3 (exit $RC)"
unlike "$errs" "n[12]: tasks? [0-3]" "no worker on n1 or n2 failed" || fail_detail "$errs"
is "$(grep -c '^rank [0-3] of 4: elastic ok steps=6 rounds=2$' "$OUT")" 4 \
	"the 4 workers of n1 and n2 re-rendezvoused in round 2 and finished 6 steps in a world of 4" ||
	fail_detail "out: $(head -c 600 "$OUT") err: $(grep -v 'dlrt-hvd-driver: [0-9]' "$ERR" | head -c 1500)"
is "$(grep -c 'round 1 failed at step 3 ' "$ERR")" 4 "each survivor failed once, at step 3, and reset"

# 3. Below --dl-hvd-min-np: the survivors are told they were removed.
drill 2 kill --dl-hvd-min-np=5
ok $((RC == 0)) "min-np 5, 4 left: the step fails (rc=$RC)"
is "$(grep -c 'elastic ok' "$OUT")" 0 "nobody trained on"
is "$(grep -Ec 'n[12]\[[01]\] has been removed from elastic job' "$ERR")" 4 \
	"the 4 survivors were told, as Horovod tells them, that they were removed" ||
	fail_detail "$(tail -c 1500 "$ERR")"

# 4. n3 dies (slurmd, slurmstepd and workers gone): slurmd does not answer the
# driver, which counts that as the node lost; srun --no-kill goes on.
drill 3 crash
errs=$(srun_errors)
like "$errs" "Node failure on n3" "srun saw n3 fail and, with --no-kill, kept the step (exit $RC)"
is "$(grep -c '^rank [0-3] of 4: elastic ok steps=6 rounds=2$' "$OUT")" 4 \
	"the 4 workers of n1 and n2 finished in round 2, in a world of 4" ||
	fail_detail "out: $(head -c 600 "$OUT") err: $(tail -c 1500 "$ERR")"
"$CL" start-node n3
n3_back() { [[ "$(sinfo -h -p debug -n n3 -o %t)" =~ ^(idle|mix|alloc)$ ]]; }
wait_until -i 1 240 n3_back
like "$(sinfo -h -p debug -n n3 -o %t)" '^(idle|mix|alloc)$' "n3 is back in service"

# the steps' jobs may still be completing
wait_until 20 eval '[ "$(squeue -h -u "$DLRT_TEST_USER" | wc -l)" -eq 0 ]'
left=$(pgrep -u "$DLRT_TEST_USER" -f "dlrt-hvd-driver --bind" | wc -l)
is "$left" 0 "no driver left running"
done_testing
