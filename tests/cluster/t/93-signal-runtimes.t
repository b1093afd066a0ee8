#!/bin/bash
# --dl-signal reaches every task of every runtime's step, on every node: one batch
# job with a 3-minute limit and --dl-signal=USR1@175, so the warning is due within
# seconds of each step's start. Every task traps SIGUSR1, says so and exits 0. For
# torchrun the warning goes to the workers the agents started (a real torchrun),
# not to the agents, which would die of it. A step with --dl-signal=none gets
# nothing and is ended only by its own program, and so is one whose program does not
# catch the signal (its default action would end it).
. "$(dirname "$0")/../lib.sh"

cat >"$WORK/task.sh" <<'SH'
#!/bin/bash
trap 'echo "WARNED rt=$DLRT_RUNTIME task=$SLURM_PROCID node=$(hostname)"; exit 0' USR1
for _ in $(seq 120); do sleep 1; done
echo "NOT-WARNED rt=$DLRT_RUNTIME task=$SLURM_PROCID"
SH
cat >"$WORK/worker.py" <<'PY'
import os, signal, socket, sys, time
def warned(signum, frame):
    # one write: print() writes the line and its newline apart, which interleave
    os.write(1, f"WARNED rt=torchrun-worker task={os.environ['RANK']} node={socket.gethostname()}\n".encode())
    sys.exit(0)
signal.signal(signal.SIGUSR1, warned)
for _ in range(120):
    time.sleep(1)
print(f"NOT-WARNED rt=torchrun-worker task={os.environ['RANK']}", flush=True)
PY
chmod 0755 "$WORK/task.sh"
TORCHRUN=no
/usr/bin/python3 -c 'import torch.distributed.run' 2>/dev/null && [ -x /usr/bin/torchrun ] && TORCHRUN=yes

run_batch -N3 -n6 -c2 -t 3 --dl-signal=USR1@175 <<JOB
#!/bin/bash
for rt in mxnet horovod caffe2 torch jax tensorflow; do
	srun -N3 -n6 --dl-runtime=\$rt ./task.sh
done
if [ $TORCHRUN = yes ]; then
	srun -N3 -n3 --ntasks-per-node=1 --dl-runtime=torchrun --dl-nproc-per-node=2 /usr/bin/torchrun worker.py
	echo "torchrun agents rc \$?"
fi
srun -N1 -n1 --dl-runtime=torch --dl-signal=none bash -c 'sleep 15; echo "QUIET step ended by itself"'
srun -N1 -n1 --dl-runtime=torch bash -c 'sleep 55; echo "UNCAUGHT step ended by itself"'
JOB
# Tasks of a node write to the same output: two lines can land on one line (seen with
# torchrun's workers), so each "WARNED ..." is taken wherever it is on a line.
out=$(cat "$WORK/job.out")
warned=$(grep -oE 'WARNED rt=[a-z0-9-]+ task=[0-9]+ node=n[1-3]' <<<"$out")
is "$RC" 0 "the job ran every step" || fail_detail "$(tail -20 "$WORK/job.err")"
for rt in mxnet horovod caffe2 torch jax tensorflow; do
	is "$(grep "^WARNED rt=$rt " <<<"$warned" | sort -u | wc -l)" 6 "$rt: all 6 tasks got SIGUSR1" ||
		fail_detail "$(grep "rt=$rt " <<<"$out")"
	is "$(grep "^WARNED rt=$rt " <<<"$warned" | grep -oE 'node=n[1-3]' | sort -u | wc -l)" 3 \
		"$rt: on all 3 nodes"
done
if [ $TORCHRUN = yes ]; then
	is "$(grep '^WARNED rt=torchrun-worker ' <<<"$warned" | sort -u | wc -l)" 6 "torchrun: all 6 workers got it" ||
		fail_detail "$out"
	like "$out" '^torchrun agents rc 0$' "and the agents lived on and ended cleanly"
else
	ok 0 "# SKIP torchrun: needs python3-torch"
	ok 0 "# SKIP torchrun: needs python3-torch"
fi
unlike "$out" 'NOT-WARNED' "no task waited for its end"
like "$out" '^QUIET step ended by itself$' "--dl-signal=none: nothing is sent"
like "$out" '^UNCAUGHT step ended by itself$' \
	"a program that does not catch the signal is not sent it (it would end it)"
done_testing
