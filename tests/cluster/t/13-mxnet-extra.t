#!/bin/bash
# --dl-mxnet-sched=extra: dlrt starts ps-lite's scheduler as one more process
# next to task 0, running the step's own command with DMLC_ROLE=scheduler, so -n
# counts servers and workers only (dmlc's launcher's layout). A real
# ps-lite-contract job trains across 3 nodes in several server/worker mixes and
# uneven layouts, under sbatch, and twice at once in one job; the scheduler's
# output is seen, it outlives every server and worker, and the step ends with it.
. "$(dirname "$0")/../lib.sh"

P=$TESTS_BIN/pslite_contract

mix() { # mix DESC SERVERS WORKERS SRUN-ARGS...
	local desc=$1 s=$2 w=$3 sum
	shift 3
	sum=$((w * (w + 1) / 2))
	run_srun "$@" --dl-runtime=mxnet --dl-mxnet-sched=extra "$P" --timeout-s 20 --rounds 3
	is "$RC" 0 "$desc: the job ran"
	is "$(grep -c "3 rounds ok, sum=$sum\$" "$OUT")" "$w" "$desc: all $w workers pulled correct sums"
	is "$(grep -c '^pslite_contract: server ' "$OUT")" "$s" "$desc: $s servers, all of them tasks"
	like "$(cat "$OUT")" "scheduler on n1 .*: $((s + w)) nodes registered \($s servers?, $w workers?\), all finalized" \
		"$desc: the extra scheduler on task 0's node saw every task register and finalize"
	unlike "$(cat "$OUT")" '127\.0\.0\.1' "$desc: no loopback address anywhere"
}

mix "-n3: 1 server, 2 workers" 1 2 -N3 -n3 --dl-servers=1
mix "-n6, default servers (one per node)" 3 3 -N3 -n6
mix "uneven 3+2+2, 2 servers" 2 5 -N3 -n7 --dl-servers=2
mix "cyclic, 3 servers" 3 5 -N3 -n8 -m cyclic --dl-servers=3

# The roles the tasks and the scheduler see; the table says where the scheduler is.
run_srun -N3 -n4 --dl-runtime=mxnet --dl-mxnet-sched=extra --dl-servers=1 --dl-dry-run true
like "$(cat "$OUT")" 'roles: 1 scheduler \(extra process on n1, next to task 0\), 1 server, 3 workers' \
	"--dl-dry-run names the extra scheduler"
run_srun -N3 -n4 --dl-runtime=mxnet --dl-mxnet-sched=extra --dl-servers=1 bash -c \
	'echo "R=$DMLC_ROLE D=$DLRT_ROLE T=${SLURM_PROCID} S=$DMLC_NUM_SERVER W=$DMLC_NUM_WORKER U=$DMLC_PS_ROOT_URI:$DMLC_PS_ROOT_PORT X=${PMIX_RANK:-none}"; sleep 1'
is "$(grep -c '^R=scheduler D=scheduler ' "$OUT")" 1 "exactly one scheduler, with DMLC_ROLE=scheduler"
is "$(grep -c '^R=scheduler .* X=none$' "$OUT")" 1 "the scheduler has no PMIx identity of its own"
is "$(grep -c '^R=\(server\|worker\) ' "$OUT")" 4 "the 4 tasks are servers and workers"
is "$(grep -o ' S=1 W=3 U=[0-9.]*:[0-9]* ' "$OUT" | sort -u | wc -l)" 1 "all 5 processes agree on counts and the root address"
run_srun -N3 -n1 --dl-runtime=mxnet --dl-mxnet-sched=extra true
ok "$([ "$RC" -ne 0 ] && echo 0 || echo 1)" "-n1 with extra scheduler and 1 server per node: refused"
like "$(cat "$ERR")" 'dlrt: .*--dl-mxnet-sched=extra needs at least' "the refusal names the rule"
run_srun -N1 -n2 --dl-runtime=mxnet --dl-mxnet-sched=bogus true
like "$(cat "$ERR")" 'dl-mxnet-sched=bogus: must be task .* or extra' "a bad value is refused with the choices"
# The extra scheduler learns the root's address through the exchange: a
# program that skips it is refused before launch (mxnet's step check).
run_srun -N2 -n3 --export=ALL,DLRT_EXCHANGE=none --dl-runtime=mxnet --dl-mxnet-sched=extra \
	touch "$WORK/ran.noexchange"
ok "$([ "$RC" -ne 0 ] && echo 0 || echo 1)" "extra scheduler with DLRT_EXCHANGE=none: refused (rc=$RC)"
like "$(cat "$ERR")" 'dlrt: --dl-mxnet-sched=extra needs the address exchange, .*: use --dl-mxnet-sched=task, or set DLRT_EXCHANGE=yes' \
	"the refusal names the cause and the fix"
ok "$([ ! -e "$WORK/ran.noexchange" ]; echo $?)" "the program never ran"

run_batch -N3 -n4 --dl-runtime=mxnet --dl-mxnet-sched=extra <<JOB
#!/bin/bash
srun "$P" --timeout-s 20 --rounds 3
JOB
is "$RC" 0 "sbatch --dl-runtime=mxnet --dl-mxnet-sched=extra: a plain srun trained"
is "$(grep -c 'rounds ok' "$WORK/job.out")" 1 "sbatch: -n4 with 3 servers leaves 1 worker"
like "$(cat "$WORK/job.out")" 'scheduler on n1 .*4 nodes registered' "sbatch: the extra scheduler ran"

run_batch -N3 -n8 -O --dl-runtime=mxnet --dl-mxnet-sched=extra --dl-servers=2 <<JOB
#!/bin/bash
srun -N3 -n4 -O "$P" --timeout-s 30 --rounds 20 --round-delay-ms 20 >a.out 2>&1 &
srun -N3 -n4 -O "$P" --timeout-s 30 --rounds 20 --round-delay-ms 20 >b.out 2>&1 &
wait
cat a.out b.out
JOB
is "$RC" 0 "two concurrent mxnet steps with extra schedulers in one job both trained"
is "$(grep -c '20 rounds ok' "$WORK/job.out")" 4 "concurrent steps: all 4 workers finished"
ports=$(grep -o 'scheduler on n[0-9]* ([0-9.]*:[0-9]*)' "$WORK/job.out" | sort -u | wc -l)
is "$ports" 2 "concurrent steps: two extra schedulers on different ports"
done_testing
