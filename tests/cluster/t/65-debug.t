#!/bin/bash
# Interactive debugging: srun --pty --dl-runtime=X bash is a real terminal shell with
# exactly the environment the task would get without --pty; --dl-verbose logs dlrt's
# work in each task with timings; --dl-dry-run prints the plan and runs nothing.
. "$(dirname "$0")/../lib.sh"

# pty_srun "SRUN ARGS" COMMANDS: type COMMANDS into an `srun --pty ... bash` running in a
# pseudo-terminal (script(1)); the transcript goes to $OUT.
pty_srun() {
	(sleep 2; printf '%s\n' "$2"; sleep 1) |
		timeout -k 5 60 runuser -u "$DLRT_TEST_USER" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" \
			HOME="$WORK" TERM=dumb script -qefc "srun $1 --pty bash --norc --noprofile" /dev/null \
			>"$OUT" 2>&1
	RC=$?
	tr -d '\r' <"$OUT" >"$OUT.clean"
}

for rt in horovod torch caffe2; do
	pty_srun "-N1 -n1 --dl-runtime=$rt" \
		'[ -t 0 ] && [ -t 1 ] && echo "TTY=yes"; env | grep -E "^(DLRT_|HOROVOD_|RANK=|WORLD_SIZE=|MASTER_|NUM_SHARDS=|SHARD_ID=|RUN_ID=|CAFFE2_)" | sort | sed "s/^/ENV /"; exit 5'
	is "$RC" 5 "$rt: srun --pty bash ran and passed on the shell's exit status"
	like "$(cat "$OUT.clean")" "TTY=yes" "$rt: the shell has a terminal"
	got=$(grep '^ENV ' "$OUT.clean" | sed 's/^ENV //' | grep -v '^DLRT_VERBOSE=')
	run_srun -N1 -n1 --dl-runtime=$rt bash -c \
		'env | grep -E "^(DLRT_|HOROVOD_|RANK=|WORLD_SIZE=|MASTER_|NUM_SHARDS=|SHARD_ID=|RUN_ID=|CAFFE2_)" | sort'
	# RUN_ID names the step, each step has its own ports (Horovod's driver,
	# torch's store), and the checkpoint folder names the job: they differ
	# between the two runs (two jobs).
	norm='s/^RUN_ID=dlrt-[0-9]*-[0-9]*-/RUN_ID=dlrt-J-S-/; s/^\(HOROVOD_GLOO_RENDEZVOUS_PORT\|MASTER_PORT\)=[0-9]*$/\1=P/; s|^\(DLRT_CHECKPOINT_DIR=.*/\)[0-9]*$|\1J|'
	want=$(sed "$norm" "$OUT")
	got=$(sed "$norm" <<<"$got")
	like "$got" "^DLRT_RUNTIME=$rt$" "$rt: the shell has the dlrt environment"
	is "$got" "$want" "$rt: exactly the environment a task gets without --pty"
done

# --pty with a log folder: the shell stays interactive, nothing is redirected.
pty_srun "-N1 -n1 --dl-runtime=torch --dl-log-dir=$WORK/ptylogs --dl-verbose" \
	'[ -t 1 ] && echo "STILL_TTY"; exit 0'
like "$(cat "$OUT.clean")" "STILL_TTY" "--dl-log-dir leaves a --pty shell on its terminal"
like "$(cat "$OUT.clean")" "dlrt: n[1-3] task 0: ready after [0-9.]+ ms in dlrt: torch worker 0" \
	"--dl-verbose shows in the interactive session"

# --dl-verbose: every task says what dlrt did and how long it took. Slurm picks the
# nodes: while the previous job's node is still completing, a 2-node step gets n2 and n3.
run_srun -N2 -n3 --dl-runtime=torch --dl-verbose true
is "$RC" 0 "srun --dl-verbose"
is "$(grep -cE '^dlrt: n[1-3] task [0-2]: role table \(3 tasks, 2 nodes\) built in [0-9.]+ ms$' "$ERR")" 2 \
	"one role-table line per node, with its time"
is "$(grep -cE '^dlrt: n[1-3] task [0-2]: ready after [0-9.]+ ms in dlrt: torch worker [0-2], starting the program$' "$ERR")" 3 \
	"one ready line per task, with its time"
run_srun -N2 -n2 --dl-runtime=horovod --dl-verbose --dl-log-dir=logs true
like "$(cat "$ERR")" "dlrt: n[1-3] task [01]: output also to $WORK/logs/[0-9]+/0/worker-[01].log" \
	"the log file of each task is named"
run_srun -N1 -n1 --dl-runtime=torch true
is "$(grep -c '^dlrt:' "$ERR")" 0 "without --dl-verbose dlrt prints nothing"

# --dl-dry-run: the plan, nothing runs.
run_srun -N2 -n4 --dl-runtime=mxnet --dl-servers=1 --dl-dry-run touch "$WORK/ran"
like "$(head -1 "$OUT")" "^dlrt dry run: job [0-9]+ step [0-9]+, runtime mxnet, 4 tasks on 2 nodes" "dry run plan"
ok "$([ ! -e "$WORK/ran" ]; echo $?)" "and the program did not run"
# The node service's start: which, where, and how long it took (gloo mode
# starts the Horovod rendezvous driver on the node of task 0).
run_srun -N3 -n3 --dl-runtime=horovod --dl-horovod=gloo --dl-verbose true
is "$RC" 0 "srun --dl-runtime=horovod --dl-verbose"
like "$(cat "$ERR")" "dlrt: n1 task 0: the Horovod rendezvous driver listening on 10\.77\.$DLRT_CLUSTER_ID\.11:[0-9]+ \(pid [0-9]+\), started in [0-9]+\.[0-9]{3} ms" \
	"--dl-verbose logs the service start with its address and timing"
is "$(grep -c 'rendezvous driver listening' "$ERR")" 1 "once, from the node that runs it"

done_testing
