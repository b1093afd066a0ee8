#!/bin/bash
# No failure a user can cause in dlrt drains a node. Slurm drains a node when the batch
# step's slurmstepd fails to set up (a SPANK callback of a `required` plugin that returns an
# error: "batch job complete failure"), so dlrt returns no error from slurmstepd for anything
# a user can get wrong: it fails the step's tasks instead (spank/stepd.c). A set of steps and
# batch jobs that dlrt refuses or fails, each in the context where it is found (srun, the
# nodes' user_init, task_init, the batch script's task_init), also with the bad option value
# handed past srun's and sbatch's own check, runs with dlrt loaded as installed (`optional`:
# Slurm ignores every return code) and then `required` (Slurm acts on them; slurmstepd and
# the clients read plugstack.conf at each start, so no daemon restarts); after each round
# every node is idle, none drained. docs/ADMIN.md, "Required or optional".
. "$(dirname "$0")/../lib.sh"

CONF=$DLRT_CLUSTER_DIR/etc/plugstack.conf.d/dlrt.conf
orig=$(cat "$CONF")
# Whatever happens, the cluster loads dlrt as it did before this test.
trap 'printf "%s\n" "$orig" >"$CONF"' EXIT

echo '<topology><object type=' >"$WORK/garbage.xml"
: >"$WORK/not-a-folder"
chown "$DLRT_TEST_USER": "$WORK/garbage.xml" "$WORK/not-a-folder"

# fails MODE DESC CMD...: CMD as the test user exits non-zero (each is a refusal or a
# failure dlrt makes on purpose; what each prints is other tests' concern).
fails() {
	local mode=$1 desc=$2
	shift 2
	as_user "$@" >"$OUT" 2>"$ERR"
	RC=$?
	ok $((RC == 0)) "$mode: $desc: fails (rc=$RC)" || fail_detail "stderr: $(head -3 "$ERR")"
	# What failed it, for a reader of the log (a batch job's line is in its output).
	diag "$(cat "$ERR" "$WORK/b.out" 2>/dev/null | grep -m1 'error')"
	rm -f "$WORK/b.out"
}

# no_drain MODE: once the test user's jobs are gone (bounded wait), every node is idle.
no_drain() {
	local states reasons n
	wait_until -i 0.5 120 eval '[ -z "$(squeue -h -u "$DLRT_TEST_USER" 2>/dev/null)" ]'
	# A node still completing the last job is not yet idle (bounded wait).
	wait_until -i 0.5 60 eval 'states=$(sinfo -h -N -o "%N %t" | sort -u); ! echo "$states" | grep -q " comp"'
	reasons=$(sinfo -h -R -o '%N: %E')
	is "$(echo "$states" | awk '{print $2}' | sort -u | tr '\n' ' ')" "idle " \
		"$1: every node idle after the failed dlrt steps, none drained" ||
		fail_detail "nodes: $(echo "$states" | tr '\n' ' ')reasons: $reasons"
	# Put a drained node back, so one failure here does not fail every later test.
	for n in $(echo "$states" | awk '$2 ~ /drain|drng|drained|down/ {print $1}'); do
		scontrol update nodename="$n" state=resume 2>/dev/null
	done
}

round() { # round MODE
	local m=$1
	# Refused by the client before anything runs.
	fails "$m" "srun --dl-runtime=bogus" srun -N1 -n1 --dl-runtime=bogus true
	fails "$m" "srun --dl-servers=0" srun -N1 -n4 --dl-runtime=mxnet --dl-servers=0 true
	# A bad value that reaches the nodes without srun's or sbatch's check: the option as
	# Slurm hands it to slurmstepd, through the job's environment (init_post_opt there).
	fails "$m" "a bad --dl-runtime value handed to the nodes of a step" \
		env _SLURM_SPANK_OPTION_dlrt_dl_runtime=bogus srun -N3 -n3 true
	fails "$m" "a bad --dl-runtime value handed to the batch step" \
		env _SLURM_SPANK_OPTION_dlrt_dl_runtime=bogus sbatch --wait -N1 -o "$WORK/b.out" --wrap true
	# Found on the nodes (user_init), failed in every task (task_init).
	fails "$m" "a --dl-topology file that is not hwloc XML" \
		srun -N1 -n2 --gpus-per-node=2 --dl-runtime=torch --dl-topology="$WORK/garbage.xml" true
	fails "$m" "a --dl-topology file that does not exist, in a dry run" \
		srun -N2 -n2 --gpus-per-node=1 --dl-runtime=torch --dl-topology=/nonexistent/%n.xml \
		--dl-dry-run true
	# Found in task_init: a trainer's own launcher under dlrt.
	fails "$m" "a program dlrt refuses in task_init (deepspeed's launcher)" \
		srun -N2 -n2 --dl-runtime=torch deepspeed train.py
	# The batch script's task_init: the job's checkpoint folder cannot be made.
	fails "$m" "a batch job whose --dl-checkpoint-dir is a file" \
		sbatch --wait -N1 -o "$WORK/b.out" --dl-runtime=torch --dl-requeue=1 \
		--dl-checkpoint-dir="$WORK/not-a-folder" --wrap true
	# A step srun refuses after Slurm created it, inside an allocation.
	cat >"$WORK/refused.sh" <<'JOB'
#!/bin/bash
srun -N1 -n1 --dl-runtime=mxnet true
JOB
	chmod 0755 "$WORK/refused.sh"
	fails "$m" "a step srun refuses after Slurm created it" \
		sbatch --wait -N1 -n2 -o "$WORK/b.out" "$WORK/refused.sh"
	no_drain "$m"
}

like "$orig" '^optional ' "dlrt is loaded optional, as installed"
round optional
printf "%s\n" "$orig" | sed 's/^optional /required /' >"$CONF"
like "$(cat "$CONF")" '^required ' "now loaded required"
round required
done_testing
