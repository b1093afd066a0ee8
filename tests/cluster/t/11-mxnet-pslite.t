#!/bin/bash
# --dl-runtime=mxnet trains a real ps-lite-contract job across 3 nodes (the C
# program tests/progs/mxnet/pslite_contract follows ps-lite's start-up contract: the
# scheduler binds DMLC_PS_ROOT_URI:PORT, servers and workers bind
# DMLC_NODE_HOST, register, get the table, push/pull and check every value):
# several server/worker mixes, uneven layouts, sbatch, two concurrent steps in
# one job, and a dying role ends the step with a message naming it.
. "$(dirname "$0")/../lib.sh"

P=$TESTS_BIN/pslite_contract

mix() { # mix DESC WORKERS SRUN-ARGS...
	local desc=$1 w=$2 sum
	shift 2
	sum=$((w * (w + 1) / 2))
	run_srun "$@" --dl-runtime=mxnet "$P" --timeout-s 20 --rounds 3
	is "$RC" 0 "$desc: the job ran"
	is "$(grep -c "3 rounds ok, sum=$sum\$" "$OUT")" "$w" "$desc: all $w workers pulled correct sums"
	like "$(cat "$OUT")" "scheduler on n1 .*all finalized" "$desc: the scheduler outlived everyone"
	unlike "$(cat "$OUT")" '127\.0\.0\.1' "$desc: no loopback address anywhere"
}

mix "1 server, 2 workers" 2 -N3 -n4 --dl-servers=1
mix "default servers (one per node), 5 workers" 5 -N3 -n9
mix "uneven 3+2+2, 2 servers" 4 -N3 -n7 --dl-servers=2
mix "cyclic, 3 servers" 4 -N3 -n8 -m cyclic --dl-servers=3

run_batch -N3 -n6 --dl-runtime=mxnet <<JOB
#!/bin/bash
srun "$P" --timeout-s 20 --rounds 3
JOB
is "$RC" 0 "sbatch --dl-runtime=mxnet: the job script's plain srun trained"
is "$(grep -c 'rounds ok' "$WORK/job.out")" 2 "sbatch: both workers finished"

run_batch -N3 -n12 -O --dl-runtime=mxnet --dl-servers=2 <<JOB
#!/bin/bash
srun -N3 -n6 -O "$P" --timeout-s 30 --rounds 20 --round-delay-ms 20 >a.out 2>&1 &
srun -N3 -n6 -O "$P" --timeout-s 30 --rounds 20 --round-delay-ms 20 >b.out 2>&1 &
wait
cat a.out b.out
JOB
is "$RC" 0 "two concurrent mxnet steps in one job both trained"
is "$(grep -c '20 rounds ok' "$WORK/job.out")" 6 "concurrent steps: all 6 workers finished"
ports=$(grep -o 'scheduler on n[0-9]* ([0-9.]*:[0-9]*)' "$WORK/job.out" | sort -u | wc -l)
is "$ports" 2 "concurrent steps: two schedulers on different addresses"

for role in scheduler server:0 worker:1; do
	run_srun -N3 -n6 --dl-runtime=mxnet --dl-servers=2 "$P" --timeout-s 20 --rounds 100000 \
		--round-delay-ms 20 --crash "$role" --crash-after-ms 1000
	ok "$([ "$RC" -ne 0 ] && echo 0 || echo 1)" "$role killed mid-run: the step fails instead of hanging"
	like "$(cat "$ERR")" "(${role%%:*} [0-9 ]*\(id [0-9]+\) at|${role%%:*} at) [0-9.]+:[0-9]+ went away" \
		"$role killed: the others name the role that went away"
done
done_testing
