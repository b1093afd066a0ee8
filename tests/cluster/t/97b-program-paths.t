#!/bin/bash
# The step's program is a path the job's user controls, and slurmstepd (root)
# looks at it before any task exists: whether it links MPI decides whether the
# tasks take the address exchange and whether an optional node service starts
# (spank/progcheck.c). A FIFO as the program kept root slurmstepd asleep in
# open(): srun waited forever, scancel left the job COMPLETING and the node
# held. Now a child that became the job's user looks at the path (without
# blocking, regular files only, with a deadline), so each step below ends on its
# own, with Slurm's own exec error, and the node is free again.
# Each hostile program: a FIFO, /dev/zero (through a link), and a link the user
# swaps between those and a real program while steps start.
# A FUSE file that never answers is not tried: without allow_other the kernel
# refuses every process whose real uid is not the mounting user's (root
# slurmstepd included) before asking the daemon, and with it Slurm's own exec
# of the task hangs on such a file whatever a plugin does.
. "$(dirname "$0")/../lib.sh"

P=$WORK/progs
mkdir -p "$P"
mkfifo "$P/fifo"
ln -s /dev/zero "$P/zero"
ln -s fifo "$P/swap"
chown -hR "$DLRT_TEST_USER": "$P"
STEP=(-N1 -w n1 -n1 --dl-runtime=caffe2)

# Frees a slurmstepd still asleep in the FIFO's open (the code before the fix),
# so that the tests after this one find the node free; bounded.
unblock() { timeout 2 bash -c "exec 3>'$P/fifo'" 2>/dev/null; }


# ends NAME PROGRAM: the step of PROGRAM ends by itself (srun is not the one
# killed at the bound), with Slurm's exec error, and the node comes back.
ends() {
	as_user timeout -k 5 60 srun "${STEP[@]}" "$2" >"$OUT" 2>"$ERR"
	RC=$?
	ok $((RC == 124 || RC == 137)) "$1: srun ends by itself (rc $RC)" ||
		fail_detail "srun was still waiting after 60 s: $(srun_errors | tail -3 | tr '\n' '|')"
	if [ "$RC" = 124 ] || [ "$RC" = 137 ]; then
		scancel -u "$DLRT_TEST_USER" 2>/dev/null
		sleep 2 # leave Slurm's kill time to show the stuck slurmstepd
		node_back "$1"
		unblock
	else
		like "$(srun_errors)" "execve\(\): $2: Permission denied|exited with exit code" \
			"$1: the task failed in Slurm's exec, as without dlrt"
		node_back "$1"
	fi
}

ends "a FIFO as the step's program" "$P/fifo"
ends "/dev/zero as the step's program" "$P/zero"

# The user swaps the link between a FIFO, /dev/zero and a real program as fast
# as it can while steps start: every step ends by itself and the node comes back.
as_user bash -c "end=\$((SECONDS + 60)); while [ \$SECONDS -lt \$end ] && [ ! -e '$WORK/stop' ]; do
	for t in fifo zero /bin/true; do ln -sfn \$t '$P/swap.new' && mv -T '$P/swap.new' '$P/swap'; done
done" &
swapper=$!
for i in 1 2 3; do
	as_user timeout -k 5 60 srun "${STEP[@]}" "$P/swap" >"$OUT" 2>"$ERR"
	RC=$?
	ok $((RC == 124 || RC == 137)) "link swap, step $i: srun ends by itself (rc $RC)" ||
		fail_detail "$(srun_errors | tail -3 | tr '\n' '|')"
done
touch "$WORK/stop"
wait "$swapper"
unblock
node_back "link swap"

# The FIFO was never opened: a writer finds no reader.
timeout 2 bash -c "echo x >'$P/fifo'" 2>/dev/null
is "$?" 124 "nobody holds the FIFO open for reading"

# A real program still runs, and an MPI program is still seen as one.
cp /bin/true "$P/prog"
chown "$DLRT_TEST_USER": "$P/prog"
run_srun "${STEP[@]}" --dl-verbose "$P/prog"
is "$RC" 0 "a regular program runs" || fail_detail "$(srun_errors | tail -3)"
run_srun -N1 -w n1 -n1 --dl-runtime=torch --dl-verbose "$TESTS_BIN/mpi_allreduce"
like "$(srun_errors)" "links MPI/PMIx: no address exchange before exec" \
	"an MPI program is still recognised (no exchange before its exec)"
done_testing
