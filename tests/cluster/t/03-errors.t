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

# Inside one allocation, as a user debugging with salloc: a step srun refuses after
# Slurm created it, the same as a dry run, and a dry run must each leave no step behind,
# or the allocation's next srun waits for their CPUs until the job ends.
# (slurmctld may list a step for a moment after its srun returned: left.txt is
# what is still listed 10 s later.)
run_batch -N3 -n12 -O <<JOB
#!/bin/bash
srun -N1 -n1 --dl-runtime=mxnet touch ran >/dev/null 2>refused.err; echo "refused rc \$?"
srun -N1 -n1 --dl-runtime=mxnet --dl-dry-run true >/dev/null 2>refused-dry.err
echo "refused dry run rc \$?"
srun -N2 -n3 --dl-runtime=mxnet --dl-dry-run true >/dev/null 2>dry.err; echo "dry run rc \$?"
. "$WAIT_UNTIL"
steps() { squeue -h -s -j "\$SLURM_JOB_ID" -o %i | grep -E '^[0-9]+\.[0-9]+\$'; }
wait_until 10 eval '! steps >/dev/null' 2>/dev/null
steps >left.txt
timeout 60 srun -N3 -n3 -O true; echo "next step rc \$?"
JOB
is "$RC" 0 "the allocation with refused steps ended by itself"
like "$(cat "$WORK/job.out")" "refused rc 1" "the refused step: srun exits 1"
is "$(cat "$WORK/refused.err")" "srun: error: dlrt: --dl-runtime=mxnet needs at least 3 tasks (1 scheduler + 1 server + 1 worker) but the step has 1: add tasks with -n or lower --dl-servers" \
	"the refused step: the one line on stderr, nothing after it"
ok "$([ ! -e "$WORK/ran" ]; echo $?)" "the refused step's program never ran"
like "$(cat "$WORK/job.out")" "refused dry run rc 1" "the refused dry run: srun exits 1"
is "$(wc -l <"$WORK/refused-dry.err")" 1 "the refused dry run: one line on stderr"
like "$(cat "$WORK/job.out")" "dry run rc 0" "the dry run ran"
is "$(cat "$WORK/left.txt")" "" "squeue -s lists no step left by the refusals or the dry run" ||
	fail_detail "steps left: $(tr '\n' ' ' <"$WORK/left.txt")"
like "$(cat "$WORK/job.out")" "next step rc 0" "the allocation's next srun started at once" ||
	fail_detail "job output: $(tr '\n' ' ' <"$WORK/job.out")"
done_testing
