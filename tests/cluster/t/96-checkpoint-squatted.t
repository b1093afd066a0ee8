#!/bin/bash
# --dl-checkpoint-dir in a shared folder (mode 1777) where another user
# ($STRANGER) took the job's folder first (job ids are easy to guess from
# squeue): a folder of the stranger's, open to all, or a symbolic link to one.
# A checkpoint must never be written where someone else can read or replace it,
# and a later attempt must never load one the stranger planted: dlrt refuses
# the step with one line naming the folder, its owner and the fix, and the
# stranger's folder receives nothing. A base folder that is itself the
# stranger's is refused the same way.
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
done_testing
