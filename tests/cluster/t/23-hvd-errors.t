#!/bin/bash
# Horovod mode errors: one line naming the cause and the fix, non-zero exit, before
# (or instead of) running the program; nothing left behind.
. "$(dirname "$0")/../lib.sh"

one_line_error() { # DESC REGEX: checks $RC and $ERR
	ok $((RC == 0)) "$1: exits non-zero (rc=$RC)"
	is "$(srun_errors | grep -c .)" 1 "$1: exactly one line on stderr" ||
		fail_detail "stderr: $(head -c 600 "$ERR")"
	like "$(cat "$ERR")" "$2" "$1: the line names the problem"
}

run_srun --dl-runtime=horovod --dl-horovod=nccl touch "$WORK/ran"
one_line_error "--dl-horovod=nccl" "--dl-horovod=nccl: must be gloo .* or mpi"
ok "$([ ! -e "$WORK/ran" ]; echo $?)" "the program never ran"

before=$(squeue -h | wc -l)
as_user sbatch --dl-runtime=horovod --dl-horovod= --wrap true >"$OUT" 2>"$ERR"; RC=$?
one_line_error "sbatch --dl-horovod=" "--dl-horovod=: must be gloo"
is "$(squeue -h | wc -l)" "$before" "sbatch submitted nothing"

# Gloo mode hands out the driver's address through srun's rendezvous, which
# needs no PMIx: a step without it gets the driver's address all the same.
run_srun -N2 -n2 --mpi=none --dl-runtime=horovod --dl-horovod=gloo bash -c 'echo "A=$HOROVOD_GLOO_RENDEZVOUS_ADDR"'
is "$RC" 0 "gloo mode with --mpi=none runs"
is "$(grep -c '^A=127.0.0.1$' "$OUT")" 2 "both ranks got their node relay's address"
# an earlier test's job may still be completing
wait_until 20 eval '[ "$(squeue -h -u "$DLRT_TEST_USER" | wc -l)" -eq 0 ]'
is "$(squeue -h -u "$DLRT_TEST_USER" | wc -l)" 0 "srun left no allocation behind"
left=$(pgrep -u "$DLRT_TEST_USER" -f "dlrt-hvd-driver --bind $(echo "$DLRT_CLUSTER_ID" | sed 's/^/10.77./')\\." | wc -l)
is "$left" 0 "no driver left running"
done_testing
