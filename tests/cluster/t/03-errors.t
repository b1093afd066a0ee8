#!/bin/bash
# Invalid values stop sbatch/salloc/srun before anything runs, with one line that
# names the problem and the valid choices.
. "$(dirname "$0")/../lib.sh"

one_line_error() { # DESC REGEX: checks $RC and $ERR
	ok $((RC == 0)) "$1: exits non-zero (rc=$RC)"
	is "$(wc -l <"$ERR")" 1 "$1: exactly one line on stderr"
	like "$(cat "$ERR")" "$2" "$1: the line names the problem"
}

run_srun --dl-runtime=bogus true
one_line_error "srun --dl-runtime=bogus" "dlrt: --dl-runtime=bogus: unknown runtime; valid runtimes: mxnet, horovod, caffe2, torch, torchrun, jax, tensorflow, infer$"

before=$(squeue -h | wc -l)
as_user sbatch --dl-runtime=theano --wrap true >"$OUT" 2>"$ERR"; RC=$?
one_line_error "sbatch --dl-runtime=theano" "valid runtimes: mxnet, horovod, caffe2, torch"
is "$(squeue -h | wc -l)" "$before" "sbatch submitted nothing"
unlike "$(cat "$OUT")" "Submitted" "sbatch printed no job id"

as_user salloc --dl-runtime=nope true >"$OUT" 2>"$ERR"; RC=$?
one_line_error "salloc --dl-runtime=nope" "valid runtimes"

for bad in 0 -2 abc 99999; do
	run_srun -n4 --dl-runtime=mxnet --dl-servers=$bad true
	one_line_error "--dl-servers=$bad" "--dl-servers=$bad: must be a number from 1 to 1024"
done

run_srun -N2 -n3 --dl-runtime=mxnet --dl-servers=2 touch "$WORK/ran"
one_line_error "mxnet with 3 tasks and 2 servers" \
	"needs at least 4 tasks \(1 scheduler \+ 2 servers \+ 1 worker\) but the step has 3: add tasks with -n or lower --dl-servers"
ok "$([ ! -e "$WORK/ran" ]; echo $?)" "the program never ran"

# A runtime's option given to another runtime, where it would do nothing.
run_srun -N1 -n1 --dl-store=helper --dl-runtime=torch touch "$WORK/ran"
one_line_error "--dl-store with torch" \
	"dlrt: --dl-store applies to --dl-runtime=caffe2 only; drop it for --dl-runtime=torch$"
ok "$([ ! -e "$WORK/ran" ]; echo $?)" "the program never ran"
is "$(squeue -h -u "$DLRT_TEST_USER" | wc -l)" 0 "srun left no allocation behind"
done_testing
