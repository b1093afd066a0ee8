#!/bin/bash
# --dl-checkpoint-dir in a shared folder (mode 1777) where another user
# ($STRANGER) took the job's folder first (job ids are easy to guess from
# squeue): a folder of the stranger's, open to all, or a symbolic link to one.
# A checkpoint must never be written where someone else can read or replace it,
# and a later attempt must never load one the stranger planted: dlrt refuses
# the step with one line naming the folder, its owner and the fix, and the
# stranger's folder receives nothing. A base folder that is itself the
# stranger's is refused the same way.
# Then the site's checkpoint_dir= (a 1777 base every user shares): each user has
# a folder of their own there, BASE/uid-<uid>, made by root and given to the user
# before anything of the job runs, and the job's folder is made in it. The
# stranger takes the next 30 job ids under the base, as before this
# BASE/<job> would have been: the victim's plain caffe2 step and a --dl-requeue
# batch job both run. A user folder the stranger took first (a user before their
# first job) fails only a step that asked for checkpoints; a plain step runs.
. "$(dirname "$0")/../lib.sh"

shared=$WORK/ckpt-scratch
mkdir "$shared" && chmod 1777 "$shared" # owned by root, like a site's scratch space
bait=$shared/bait # a folder of the stranger's, open to all
as_stranger_sh "mkdir '$bait' && chmod 0777 '$bait'"
# The task writes a checkpoint where DLRT_CHECKPOINT_DIR points, if it runs.
task='echo "ran ckpt=$DLRT_CHECKPOINT_DIR"; echo secret >"$DLRT_CHECKPOINT_DIR/model.pt"'

# ---- 1. DIR/<job> is the stranger's folder, mode 0777 ------------------------------
next=$(next_job)
as_stranger_sh "mkdir '$shared/$next' && chmod 0777 '$shared/$next'"
ok $? "$STRANGER pre-created $shared/$next (mode 0777)"
run_srun -N1 -n1 --dl-runtime=torch --dl-checkpoint-dir="$shared" --dl-hang-timeout=60 \
	bash -c "$task"
ok "$([ "$RC" -ne 0 ]; echo $?)" "the step is refused (rc $RC)"
unlike "$(cat "$OUT")" '^ran ' "the task never ran"
is "$(srun_errors | grep -c 'dlrt: ')" 1 "stderr has one dlrt line" || fail_detail "$(cat "$ERR")"
like "$(srun_errors)" "dlrt: --dl-checkpoint-dir: $shared/$next belongs to user $STRANGER \\(uid [0-9]+\\), not to you: .*have it removed" \
	"naming the folder, its owner and the fix" || fail_detail "$(cat "$ERR")"
is "$(find "$shared/$next" -mindepth 1 | wc -l)" 0 "the stranger's folder received nothing"

# ---- 2. DIR/<job> is a symbolic link to a folder of the stranger's ------------------
next=$(next_job)
as_stranger_sh "ln -s '$bait' '$shared/$next'"
ok $? "$STRANGER made $shared/$next a link to $bait"
run_srun -N1 -n1 --dl-runtime=torch --dl-checkpoint-dir="$shared" bash -c "$task"
ok "$([ "$RC" -ne 0 ]; echo $?)" "the step is refused (rc $RC)"
unlike "$(cat "$OUT")" '^ran ' "the task never ran"
is "$(srun_errors | grep -c 'dlrt: ')" 1 "stderr has one dlrt line" || fail_detail "$(cat "$ERR")"
like "$(srun_errors)" "dlrt: --dl-checkpoint-dir: $shared/$next is a symbolic link owned by user $STRANGER .*not a folder" \
	"saying it is the stranger's link" || fail_detail "$(cat "$ERR")"
is "$(find "$bait" -mindepth 1 | wc -l)" 0 "the link was not followed: its target received nothing"

# ---- 3. The base folder itself is the stranger's ------------------------------------
run_srun -N1 -n1 --dl-runtime=torch --dl-checkpoint-dir="$bait" bash -c "$task"
ok "$([ "$RC" -ne 0 ]; echo $?)" "a base folder of the stranger's is refused (rc $RC)"
is "$(srun_errors | grep -c 'dlrt: ')" 1 "with one dlrt line" || fail_detail "$(cat "$ERR")"
like "$(srun_errors)" "dlrt: --dl-checkpoint-dir: $bait belongs to user $STRANGER" \
	"naming the folder and its owner" || fail_detail "$(cat "$ERR")"
is "$(find "$bait" -mindepth 1 | wc -l)" 0 "it received nothing"

# ---- 4. Without a squatter the same step runs: the test can tell the difference -----
run_srun -N1 -n1 --dl-runtime=torch --dl-checkpoint-dir="$shared" bash -c "$task"
is "$RC" 0 "in a shared base nobody squatted, the step runs" || fail_detail "$(cat "$ERR")"
ck=$(sed -n 's/^ran ckpt=//p' "$OUT")
is "$(stat -c '%U %a' "$ck" 2>&1)" "$DLRT_TEST_USER 700" "its folder is the user's, 0700"

# ---- 5. The site's checkpoint_dir=, a 1777 base: the next 30 job ids squatted -------
CONF=$DLRT_CLUSTER_DIR/etc/plugstack.conf.d/dlrt.conf
# Kept in memory: done_testing removes $WORK before the EXIT trap runs.
SAVED=$(cat "$CONF")
trap 'printf "%s\n" "$SAVED" >"$CONF"' EXIT
trap 'exit 1' TERM INT
site=$WORK/site-scratch
mkdir "$site" && chmod 1777 "$site"
# srun and slurmstepd read it at every step
printf "%s\n" "$SAVED" | grep -v '^#' | sed "/dlrt.so/ s|\$| checkpoint_dir=$site|" >"$CONF"
next=$(next_job)
as_stranger_sh "for j in \$(seq $next $((next + 29))); do mkdir '$site/'\$j; done"
is "$(find "$site" -mindepth 1 -maxdepth 1 -user "$STRANGER" | wc -l)" 30 \
	"$STRANGER took the next 30 job ids ($next...) under the site's base"
uid=$(id -u "$DLRT_TEST_USER")
run_srun -N1 -n2 --dl-runtime=caffe2 bash -c 'echo "ran ckpt=${DLRT_CHECKPOINT_DIR-}"'
is "$RC:$(grep -c '^ran ' "$OUT")" 0:2 "the victim's plain caffe2 step runs" || fail_detail "$(srun_errors)"
ck=$(sed -n 's/^ran ckpt=//p' "$OUT" | head -1)
like "$ck" "^$site/uid-$uid/[0-9]+$" "its DLRT_CHECKPOINT_DIR is BASE/uid-<uid>/<job>"
is "$(stat -c '%U %a' "$site/uid-$uid" "$ck" 2>&1 | tr '\n' ' ')" "$DLRT_TEST_USER 700 $DLRT_TEST_USER 700 " \
	"the user's folder and the job's are the user's, 0700"
run_batch -N1 -n1 -t 5 --dl-runtime=torch --dl-requeue=1 <<'JOB'
#!/bin/bash
echo "batch ckpt=$DLRT_CHECKPOINT_DIR"
srun -n1 bash -c 'echo "step ckpt=$DLRT_CHECKPOINT_DIR"; echo w >"$DLRT_CHECKPOINT_DIR/model.pt"'
JOB
is "$RC" 0 "the victim's --dl-requeue batch job runs" || fail_detail "$(cat "$WORK/job.err" "$WORK/sbatch.err")"
bck=$(sed -n 's/^batch ckpt=//p' "$WORK/job.out")
is "$(sed -n 's/^step ckpt=//p' "$WORK/job.out")" "$bck" "its script and its step share one checkpoint folder"
like "$bck" "^$site/uid-$uid/[0-9]+$" "... in the user's own folder"
is "$(find "$site" -mindepth 2 -user "$DLRT_TEST_USER" -path "$site/[0-9]*" | wc -l)" 0 \
	"nothing of the victim's went into the stranger's folders"

# A base only root can write (mode 0755, the setup docs/ADMIN.md advises): nobody
# can take any name in it first, and the user's folder there can only be root's
# work, given to the user.
site3=$WORK/site-rootonly
mkdir "$site3" && chmod 0755 "$site3"
printf "%s\n" "$SAVED" | grep -v '^#' | sed "/dlrt.so/ s|\$| checkpoint_dir=$site3|" >"$CONF"
run_srun -N1 -n1 --dl-runtime=torch --dl-hang-timeout=60 bash -c "$task"
is "$RC" 0 "in a base only root can write, a --dl-hang-timeout step runs" || fail_detail "$(srun_errors)"
like "$(sed -n 's/^ran ckpt=//p' "$OUT")" "^$site3/uid-$uid/[0-9]+$" "... in BASE/uid-<uid>/<job>"
is "$(stat -c '%U %a' "$site3/uid-$uid" 2>&1)" "$DLRT_TEST_USER 700" \
	"root made the user's folder and gave it to the user, 0700"

# The stranger takes the user folder of a user who never ran a job here (as
# another base, so the victim's own is not there yet): only a step that asked for
# checkpoints is refused, in one line; a plain step runs.
site2=$WORK/site-scratch2
mkdir "$site2" && chmod 1777 "$site2"
printf "%s\n" "$SAVED" | grep -v '^#' | sed "/dlrt.so/ s|\$| checkpoint_dir=$site2|" >"$CONF"
as_stranger_sh "mkdir '$site2/uid-$uid' && chmod 0777 '$site2/uid-$uid'"
run_srun -N1 -n1 --dl-runtime=caffe2 bash -c 'echo "ran ckpt=${DLRT_CHECKPOINT_DIR-}"'
is "$RC:$(cat "$OUT")" "0:ran ckpt=" "a plain step runs, without DLRT_CHECKPOINT_DIR" || fail_detail "$(srun_errors)"
run_srun -N1 -n1 --dl-runtime=torch --dl-hang-timeout=60 bash -c "$task"
ok "$([ "$RC" -ne 0 ]; echo $?)" "a --dl-hang-timeout step is refused (rc $RC)"
like "$(srun_errors)" "dlrt: checkpoint_dir: $site2/uid-$uid belongs to user $STRANGER" \
	"in one line naming the folder and its owner" || fail_detail "$(cat "$ERR")"
is "$(find "$site2/uid-$uid" -mindepth 1 | wc -l)" 0 "the stranger's folder received nothing"
done_testing
