#!/bin/bash
# srun --container's state and config, against other accounts and against root
# (tools/ocistate.c, tools/ociuser.c; docs/containers.md, docs/SECURITY.md):
#   1. Slurm 24.11 makes the step's and the task's spool folders mode 0770,
#      group the job's. An account whose PRIMARY group is the victim's (dlrtu3:
#      named in no member list) and, with a default ACL on SlurmdSpoolDir, a
#      user the ACL names (dlrtu2) could write them while the task runs: now
#      neither can (dlrt-oci-run takes the group's write and the ACLs off).
#   2. What such an account could do before: replace the bundle's config.json
#      in a 24.11 task folder, so that the task's config dlrt-oci-run writes for
#      crun carries its command. Now dlrt-oci-run refuses a config.json that is
#      not root's or the user's, in one line, and locks the folder.
#   3. Root's RunTimeQuery (oci.conf, run by slurmstepd as root) on a state
#      folder the job's user can write: a link there to a file only root may
#      read was read by root's crun; now crun runs as the user, who cannot.
#   4. A named pipe in place of a container's status file, planted by the
#      job's user in that folder: root's crun blocked on it, and slurmstepd,
#      which waits for RunTimeQuery without a limit, kept the job COMPLETING
#      for good. Now the user's crun is killed after 30 s and the job ends.
. "$(dirname "$0")/../lib.sh"
. "$HERE/images.sh"

command -v crun >/dev/null || { echo "1..0 # SKIP crun missing (tests/cluster/install-deps.sh)"; exit 0; }
SAME=${DLRT_SAMEGROUP_USER:-dlrtu3}
[ "$(id -g "$SAME" 2>/dev/null)" = "$(id -g "$DLRT_TEST_USER")" ] ||
	{ echo "1..0 # SKIP no account $SAME whose primary group is $DLRT_TEST_USER's (tests/cluster/cluster.sh up makes it)"; exit 0; }
BUNDLE=$(oci_bundle "$DLRT_TEST_USER")
SLURM_MAJOR=$(srun --version | sed -n 's/^slurm[^ ]* \([0-9]*\)\..*/\1/p')
SPOOL=$(scontrol show config | sed -n 's/^SlurmdSpoolDir *= *//p')
OCI_RUN=$DLRT_CLUSTER_DIR/prefix/libexec/dlrt/dlrt-oci-run
U=$DLRT_TEST_USER
node() { "$HERE/cluster.sh" exec n1 "$@"; } # as root on n1 (its spool)

# step_dirs JOB: STEP (the step's spool folder), TASK (task 0's, crun's
# --root=%b/crun in it) and RSTATE (root's RunTimeQuery's --root) on n1.
step_dirs() {
	if [ "${SLURM_MAJOR:-0}" -lt 23 ]; then
		STEP=$(printf '%s/oci-job%05u-%05u' "$SPOOL" "$1" 0) TASK=$STEP
	else
		STEP=$SPOOL/oci-job$1-0 TASK=$STEP/task-0
	fi
	RSTATE=$STEP/crun
}

# acl PATH NAME UID|-: sets (UID: a named entry rwx, the mask rwx) or removes (-)
# the ACL NAME (access or default) of PATH on n1, through its xattr (no libacl).
acl() {
	node python3 - "$@" <<'PY'
import os, struct, sys
path, kind, uid = sys.argv[1:]
name = "system.posix_acl_" + kind
if uid == "-":
    try:
        os.removexattr(path, name)
    except OSError:
        pass
    sys.exit(0)
n = 0xFFFFFFFF
e = [(0x01, 7, n), (0x02, 7, int(uid)), (0x04, 5, n), (0x10, 7, n), (0x20, 5, n)]
os.setxattr(path, name, struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *x) for x in e))
PY
}

# The victim's task: in the container, waits (bounded) until released.
cat >"$WORK/wait.sh" <<SH
#!/bin/bash
. "$WAIT_UNTIL"
touch "$WORK/started"
wait_until -i 0.1 120 test -e "$WORK/release"
SH
chmod 0755 "$WORK/wait.sh"
chown "$U": "$WORK/wait.sh"
chmod 0777 "$WORK"

# start_step: the victim's container step on n1, in the background (VICTIM);
# JOB its job id, the folders set (step_dirs); 1 when it did not start.
start_step() {
	rm -f "$WORK/started" "$WORK/release"
	JOB=$(next_job)
	as_user srun -w n1 -N1 -n1 --container="$BUNDLE" "$WORK/wait.sh" >"$OUT" 2>"$ERR" &
	VICTIM=$!
	step_dirs "$JOB"
	wait_until 60 test -e "$WORK/started" && return 0
	diag "the victim's step did not start: $(head -3 "$ERR" | tr '\n' '|')"
	return 1
}
end_step() {
	touch "$WORK/release"
	wait "$VICTIM"
}

# fails CMD...: 0 (a passing status for ok) when CMD fails, else 1.
fails() { if "$@"; then echo 1; else echo 0; fi; }

# try_write WHO DIR: 0 when WHO could create a file in DIR on n1 (then removed).
try_write() {
	"$HERE/cluster.sh" exec n1 runuser -u "$1" -- sh -c \
		"touch '$2/planted-by-$1' 2>/dev/null && rm -f '$2/planted-by-$1'"
}

# ---- 1. the live step's folders: no other account writes them ----------------
for who in "$SAME" "$STRANGER"; do
	if [ "$who" = "$STRANGER" ]; then
		# (a default ACL on the spool: Slurm's folders for the step inherit it)
		acl "$SPOOL" default "$(id -u "$STRANGER")"
		how="$STRANGER, named in a default ACL on SlurmdSpoolDir"
	else
		how="$SAME, whose primary group is $U's"
	fi
	if start_step; then
		for d in "$STEP" "$TASK"; do
			ok "$(fails try_write "$who" "$d")" \
				"$how: cannot create anything in $d while the task runs ($(node stat -c '%U:%G %a' "$d"))"
		done
		if [ "${SLURM_MAJOR:-0}" -ge 23 ]; then
			ok "$(fails node runuser -u "$who" -- mv "$TASK/config.json" "$TASK/config.json.old" 2>/dev/null)" \
				"$how: cannot move the task's config.json away"
		fi
		has=$(node python3 -c 'import os, sys; print(" ".join(p for p in sys.argv[1:] if os.path.exists(p) and "system.posix_acl_access" in os.listxattr(p)))' "$STEP" "$TASK")
		is "$has" "" "$how: the step's folders have no access ACL left"
	fi
	end_step
	rc=$?
	if [ "$who" = "$STRANGER" ] && [ "${SLURM_MAJOR:-0}" -lt 23 ]; then
		# 22.05 writes config.json as root: with the ACL it inherited, refused
		# (root's file, so it cannot be taken off), in one line. srun's own
		# "task 0: Exited" line may come before or after it.
		is "$(srun_errors | grep -c 'dlrt-oci-run:')" 1 "$how: one dlrt-oci-run line" ||
			fail_detail "$(head -3 "$ERR")"
		like "$rc $(srun_errors | grep 'dlrt-oci-run:')" "^[1-9][0-9]* dlrt-oci-run: the container's bundle \(%b\): $STEP/config\.json has an access ACL: .*: remove the default ACL of SlurmdSpoolDir \(setfacl -k\), whose folders' files inherit it$" 			"$how: Slurm 22.05's config.json (root's) has an ACL: the task fails, in one line" ||
			fail_detail "$(head -3 "$ERR")"
	else
		is "$rc" 0 "$how: the victim's step ran" || fail_detail "$(head -3 "$ERR")"
	fi
	acl "$SPOOL" default -
done

# ---- 2. what a member of the step's group could do to config.json -----------
# A task folder as Slurm 24.11 leaves it (the user's, group the job's, 0770;
# config.json the user's, 0750), on n1 under SlurmdSpoolDir, as root makes it.
F=$SPOOL/oci-job999999-0/task-0
fake_task() {
	node rm -rf "$SPOOL/oci-job999999-0"
	node install -d -o "$U" -g "$(id -g "$U")" -m 0770 "$SPOOL/oci-job999999-0" "$F"
	node install -o "$U" -g "$(id -g "$U")" -m 0750 "$BUNDLE/config.json" "$F/config.json"
}
for who in "$SAME" "$STRANGER"; do
	fake_task
	if [ "$who" = "$STRANGER" ]; then
		acl "$SPOOL/oci-job999999-0" access "$(id -u "$STRANGER")"
		acl "$F" access "$(id -u "$STRANGER")"
		how="$STRANGER, named in the task folder's ACL"
	else
		how="$SAME, whose primary group is $U's"
	fi
	# Their config.json: the bundle's, with their command.
	node runuser -u "$who" -- sh -c "umask 022; mv '$F/config.json' '$F/config.json.old' &&
		sed 's|\"process\": *{|\"process\": {\"args\": [\"/bin/echo\", \"PLANTED-BY-$who\"], |' \
		'$BUNDLE/config.json' >'$F/config.json'"
	ok $? "$how: replaces config.json in the 0770 task folder ($(node stat -c '%U:%G %a' "$F"))"
	out=$(node runuser -u "$U" -- env SLURM_PROCID=0 PATH="$PATH" "$OCI_RUN" "$F" 0 -- /bin/sh -c \
		"grep -o 'PLANTED-BY-$who' '$F/config-task0.json'" 2>&1)
	rc=$?
	unlike "$out" "PLANTED-BY" "$how: the task's config for crun does not carry their command" ||
		fail_detail "rc $rc: $out"
	is "$rc,$(wc -l <<<"$out")" "1,1" "$how: dlrt-oci-run refuses it, in one line"
	like "$out" "^dlrt-oci-run: the container's bundle \(%b\): $F/config\.json belongs to user $who \(uid [0-9]+\), not to you or root: another account that could write the step's spool folder \(Slurm 24\.11 makes it mode 0770, group the job's\) may have replaced it: submit the job again, with --gid=<a group of yours alone> if others share your group$" \
		"$how: naming the cause and the fix" || fail_detail "$out"
	ok "$(fails try_write "$who" "$F")" \
		"$how: and can write the task folder no more ($(node stat -c '%U:%G %a' "$F"))"
done
node rm -rf "$SPOOL/oci-job999999-0"

# ---- 3. root's RunTimeQuery on a state folder the job's user can write -------
# oci.conf's line as slurmstepd runs it (as root, sh -c, patterns filled in),
# for a step folder of the user's on n1 whose state the user made: the
# container's status file a link to a file only root may read.
step_dirs 999998
Q=$(sed -n 's/^RunTimeQuery="\(.*\)"$/\1/p' "$DLRT_CLUSTER_DIR/etc/oci.conf")
NAME=n1.$U.999998.0.0
node rm -rf "$STEP" "$SPOOL/dlrt-root-only"
node install -d -o "$U" -g "$(id -g "$U")" -m 0750 "$STEP"
node sh -c "umask 077; echo '{\"pid\": 0, \"process-start-time\": 0, \"cgroup-path\": \"\", \"rootfs\": \"/\", \"systemd-cgroup\": false, \"bundle\": \"ROOT-ONLY-SECRET\", \"created\": \"2026-01-01T00:00:00.000000000Z\", \"detached\": true, \"external_descriptors\": \"[]\", \"owner\": \"root\"}' >'$SPOOL/dlrt-root-only'"
node runuser -u "$U" -- sh -c "mkdir -p -m 0700 '$RSTATE/$NAME' && cp '$BUNDLE/config.json' '$RSTATE/$NAME/' &&
	ln -s '$SPOOL/dlrt-root-only' '$RSTATE/$NAME/status'"
ok $? "$U plants $RSTATE/$NAME/status, a link to a file only root may read"
line=$(sed -e "s|%n|n1|g; s|%u|$U|g; s|%j|999998|g; s|%s|0|g; s|%t|0|g; s|%b|$STEP/|g; s|%m|$STEP|g" <<<"$Q")
out=$(timeout 60 "$HERE/cluster.sh" exec n1 sh -c "$line" 2>&1)
diag "RunTimeQuery: ${line%% state *} ...: rc $?: $(head -3 <<<"$out" | tr '\n' '|')"
unlike "$out" "ROOT-ONLY-SECRET" "root's RunTimeQuery does not read through the user's link (crun runs as $U)"
node rm -rf "$STEP" "$SPOOL/dlrt-root-only"

# ---- 4. a named pipe for root's RunTimeQuery to block on ---------------------
# In place of the container's status file, in the state folder root's query
# reads (22.05: the task's own container, %t = 0; 24.11: the step's, %t = -1),
# planted while the task runs. Root's crun then read the pipe for good:
# slurmstepd, which waits for RunTimeQuery without a limit, never ended. (On
# 22.05 the user's own crun run reads that file too as the container ends, and
# waits there as the user: the user ends it, and with it the task.)
# n1_pids PATTERN: pids of the processes on n1 whose command line matches (the
# machine's other clusters have the same users, node names and job numbers:
# n1's network namespace tells).
n1_pids() {
	local ns p
	ns=$(readlink "/proc/$(cat "$DLRT_CLUSTER_DIR/run/slurmd-n1.pid")/ns/net")
	for p in $(pgrep -f "$1"); do
		[ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "$ns" ] && echo "$p"
	done
}
if start_step; then
	if [ "${SLURM_MAJOR:-0}" -lt 23 ]; then t=0; else t=-1; fi
	c=$RSTATE/n1.$U.$JOB.0.$t
	node runuser -u "$U" -- sh -c "mkdir -p '$c' && { [ ! -e '$c/status' ] ||
		mv '$c/status' '$c/status.real'; } && mkfifo '$c/status'"
	ok $? "$U puts a named pipe at $c/status"
	touch "$WORK/release"
	wait_until 60 eval '[ -z "$(pgrep -f "^/bin/bash $WORK/wait.sh\$")" ]'
	pids=$(n1_pids "crun .* run .* n1\.$U\.$JOB\.0\.0\$")
	# shellcheck disable=SC2086 # (one or more pids)
	[ -z "$pids" ] || node runuser -u "$U" -- kill -KILL $pids
	wait "$VICTIM"
	wait_until -i 0.5 240 eval '[ -z "$(n1_pids "^slurmstepd: \[$JOB\.0\]\$")" ]'
	is "$(n1_pids "^slurmstepd: \[$JOB\.0\]\$" | wc -l)" 0 \
		"the step's slurmstepd ends: root's RunTimeQuery is not held by the user's pipe" ||
		fail_detail "$(grep -F "[$JOB.0]" "$DLRT_CLUSTER_DIR/log/slurmd-n1.log" | tail -3 | tr '\n' '|')"
	# (on the old code: what unblocks root's crun, so that the cluster goes on)
	node timeout 5 sh -c "echo '{}' >'$c/status'" 2>/dev/null
fi
done_testing
