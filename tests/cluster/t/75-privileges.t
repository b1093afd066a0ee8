#!/bin/bash
# What dlrt starts from slurmstepd (root) on the job's behalf runs with exactly the
# job's uid, gid and supplementary groups as Slurm gives them (no NSS lookup inside
# slurmstepd, no group dropped or added) and none of slurmstepd's descriptors:
#   - the node service (here Caffe2's dlrt-store), seen from the node while it runs;
#   - the fail-fast scancel of a failing mxnet step (its background shell, which
#     sends the SIGKILL DLRT_FAILFAST_KILL_AFTER_S later, lives long enough to look at);
#   - the --dl-retries decision's scontrol (a wrapper first in the job's PATH records
#     what it was given, then runs the real one).
# t/64-retries.t shows the requeue itself still works.
. "$(dirname "$0")/../lib.sh"

U=$(id -u "$DLRT_TEST_USER") G=$(id -g "$DLRT_TEST_USER")
GROUPS_WANT=$(id -G "$DLRT_TEST_USER" | tr ' ' '\n' | sort -n | tr '\n' ' ')
# creds PID: "uid: r e s f | gid: r e s f | groups: sorted"
creds() {
	awk '/^Uid:/ {u = $2 " " $3 " " $4 " " $5} /^Gid:/ {g = $2 " " $3 " " $4 " " $5}
	     /^Groups:/ {for (i = 2; i <= NF; i++) print $i > "/dev/stderr"}
	     END {printf "uid: %s | gid: %s | groups: ", u, g}' "/proc/$1/status" 2>"$WORK/groups.$1"
	sort -n "$WORK/groups.$1" | tr '\n' ' '
}
CREDS_WANT="uid: $U $U $U $U | gid: $G $G $G $G | groups: $GROUPS_WANT"
# odd_fds PID: its descriptors other than /dev/null, pipes, sockets and its own epoll/signalfd
odd_fds() {
	for f in /proc/"$1"/fd/*; do readlink "$f"; done |
		grep -Ev '^(/dev/null|pipe:\[[0-9]+\]|socket:\[[0-9]+\]|anon_inode:\[(eventpoll|signalfd)\])$' | sort -u
}

# 1. the node service
PROG=$DLRT_CLUSTER_DIR/prefix/libexec/dlrt/dlrt-store
as_user srun -N1 -w n1 -n1 --dl-runtime=caffe2 --dl-store=helper \
	bash -c '. ./wait_until.sh; wait_until 120 test -e "$0"' "$WORK/svc.done" \
	>"$OUT" 2>"$ERR" &
bg=$!
store_found() { pid=$(pgrep -n -u "$U" -f "^$PROG "); [ -n "$pid" ]; }
wait_until 120 store_found
ok $([ -n "$pid" ]; echo $?) "the step's dlrt-store runs (pid ${pid:-none})"
if [ -n "$pid" ]; then
	is "$(creds "$pid")" "$CREDS_WANT" "the service has exactly the job's uid, gid and groups"
	is "$(odd_fds "$pid")" "" "the service holds only stdio, its pipes and its sockets" ||
		fail_detail "$(ls -l /proc/"$pid"/fd/)"
fi
touch "$WORK/svc.done"
chown "$DLRT_TEST_USER": "$WORK/svc.done"
wait "$bg"
is "$?" 0 "the caffe2 step ends well" || fail_detail "stderr: $(srun_errors)"

# 2. the fail-fast scancel: worker 0 fails, the servers and the scheduler would wait.
as_user srun -N1 -w n1 -n3 --dl-runtime=mxnet \
	bash -c '[ "$DLRT_ROLE" = worker ] && { sleep 1; exit 3; }; sleep 60' >"$OUT" 2>"$ERR" &
bg=$!
pid=
end_step_found() { # pid: this cluster's (SLURM_CONF) scancel shell, not another cluster's
	# run of the same test user
	for p in $(pgrep -u "$U" -f "dlrt-end-step [0-9]+\.[0-9]+ "); do
		tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qx "SLURM_CONF=$SLURM_CONF" && pid=$p
	done
	[ -n "$pid" ]
}
wait_until -i 0.05 60 end_step_found
ok $([ -n "$pid" ]; echo $?) "the fail-fast scancel shell runs (pid ${pid:-none})"
[ -n "$pid" ] && is "$(creds "$pid")" "$CREDS_WANT" "the scancel runs with exactly the job's uid, gid and groups"
wait "$bg"
like "$(cat "$ERR")" "dlrt: mxnet worker 0 .*exited with status 3: ending the step" "and it ended the step"

# 3. the requeue decision's scontrol
mkdir -p "$WORK/bin"
cat >"$WORK/bin/scontrol" <<EOF2
#!/bin/bash
# The descriptors are listed by a child whose redirection is its own, so the
# list is exactly what this shell was given (bash adds only 255, the script).
fds=(/proc/\$\$/fd/*)
readlink "\${fds[@]}" >>"$WORK/scontrol.fds" 2>/dev/null
{ echo "args: \$*"; grep -E '^(Uid|Gid|Groups):' /proc/\$\$/status; } >>"$WORK/scontrol.seen"
exec $(command -v scontrol) "\$@"
EOF2
chmod 0755 "$WORK/bin/scontrol"
chown -R "$DLRT_TEST_USER": "$WORK/bin"
PATH=$WORK/bin:$PATH run_batch --dl-retries=1 -N1 -w n1 <<<$'#!/bin/bash\ntrue'
is "$RC" 0 "a --dl-retries batch job runs"
seen=$(cat "$WORK/scontrol.seen" 2>/dev/null)
like "$seen" "args: show job -o [0-9]+" "the decision ran scontrol as the job's PATH finds it" ||
	fail_detail "sbatch: $(cat "$WORK/sbatch.err" "$WORK/job.err" 2>/dev/null)"
is "$(sed -n 's/^Uid:[[:space:]]*//p' <<<"$seen" | head -1 | tr -s '\t ' ' ')" "$U $U $U $U" "its uid is the job's (all four)"
is "$(sed -n 's/^Gid:[[:space:]]*//p' <<<"$seen" | head -1 | tr -s '\t ' ' ')" "$G $G $G $G" "its gid is the job's"
is "$(sed -n 's/^Groups:[[:space:]]*//p' <<<"$seen" | head -1 | tr -s '\t ' '\n' | grep . | sort -n | tr '\n' ' ')" \
	"$GROUPS_WANT" "its groups are the job's"
grep -qx /dev/null "$WORK/scontrol.fds"
ok $? "its descriptors were listed (stdin is /dev/null)"
# bash's own script descriptor (255) aside: stdin /dev/null, output into dlrt's pipe.
is "$(grep -Ev '^(/dev/null|pipe:\[[0-9]+\])$' "$WORK/scontrol.fds" | grep -vx "$WORK/bin/scontrol" | sort -u)" "" \
	"it holds no descriptor of slurmstepd" || fail_detail "$(cat "$WORK/scontrol.fds")"
done_testing
