#!/bin/bash
# The Horovod rendezvous driver as the plugin starts it (gloo mode): protocol
# conformance request by request from a task of the step (hvd_proto.py: status,
# body, Content-Length, close, the scope-clearing rule with the step's own scope
# sizes, rank_and_size, error codes, huge Content-Length, garbage, a slow client,
# 48 concurrent clients); it runs as the job user; a host outside the step gets
# no answer; it is gone once the step ends.
. "$(dirname "$0")/../lib.sh"

CLUSTER="$HERE/cluster.sh"
cat >"$WORK/step.sh" <<STEP
#!/bin/bash
if [ "\$SLURM_PROCID" = 0 ]; then
	/usr/bin/python3 "$TESTS_BIN/hvd_proto.py" conform \\
		"\$(scontrol show hostnames "\$SLURM_STEP_NODELIST" | paste -sd,)" \\
		"\$SLURM_STEP_TASKS_PER_NODE" >"$WORK/proto.out" 2>&1
	echo \$? >"$WORK/proto.rc"
	echo "\$HOROVOD_GLOO_RENDEZVOUS_ADDR \$HOROVOD_GLOO_RENDEZVOUS_PORT" >"$WORK/driver.addr"
	# Keep the step (and so the driver) alive until the test has looked at it.
	. "$WAIT_UNTIL"
	wait_until 60 test -e "$WORK/go-on"
fi
STEP
chmod 0755 "$WORK/step.sh"

as_user srun -w n1,n2 -N2 -n3 --dl-runtime=horovod --dl-horovod=gloo "$WORK/step.sh" \
	>"$OUT" 2>"$ERR" &
srun_pid=$!
wait_until 90 test -s "$WORK/driver.addr"
read -r addr port <"$WORK/driver.addr" 2>/dev/null
ok $((${port:-0} == 0)) "the step's tasks got the driver's address ($addr:$port)"
is "$(cat "$WORK/proto.rc" 2>/dev/null)" 0 "hvd_proto.py conform exited 0"
while read -r verdict what; do
	case $verdict in
	PASS) ok 0 "$what" ;;
	FAIL) ok 1 "$what" ;;
	*) diag "$verdict $what" ;;
	esac
done <"$WORK/proto.out"

# The tasks' address is their node's relay on loopback; the driver itself
# listens on n1's address (the node of task 0).
relay=$("$CLUSTER" exec n1 ss -Hltnp "sport = :${port:-1}" 2>/dev/null)
like "$relay" "127\.0\.0\.1:$port .*dlrt-relay" "the tasks' address is n1's relay on 127.0.0.1:$port"
listener=$("$CLUSTER" exec n1 ss -Hltnp 2>/dev/null | grep dlrt-hvd-driver)
pid=$(grep -o 'pid=[0-9]*' <<<"$listener" | head -1 | cut -d= -f2)
read -r addr port < <(awk '{sub(/:/, " ", $4); print $4; exit}' <<<"$listener")
like "$addr:$port" "^10\.77\.[0-9]+\.11:[0-9]+$" "n1 has dlrt-hvd-driver listening on $addr:$port"
uid=$(id -u "$DLRT_TEST_USER")
is "$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/${pid:-0}/status" 2>/dev/null)" "$uid $uid $uid $uid" \
	"it runs as the job user: real, effective, saved and fs uid (never root)"
ppid=$(ps -o ppid= -p "${pid:-0}" 2>/dev/null | tr -d ' ')
like "$(ps -o comm= -p "${ppid:-0}" 2>/dev/null)" "slurmstepd" "its parent is the step's slurmstepd"

# Hosts outside the step: n3 (a node of the cluster, not of this step) and the
# cluster's head (the bridge address) get no HTTP answer at all.
out3=$("$CLUSTER" exec n3 /usr/bin/python3 "$TESTS_BIN/hvd_proto.py" refused "$addr" "$port" 2>&1)
like "$out3" "^PASS" "n3, outside the step, is refused: $out3"
outh=$(/usr/bin/python3 "$TESTS_BIN/hvd_proto.py" refused "$addr" "$port" 2>&1)
like "$outh" "^PASS" "the head node, outside the step, is refused: $outh"

touch "$WORK/go-on"
wait "$srun_pid"
is "$?" 0 "the step ended cleanly"
[ -s "$ERR" ] && sed 's/^/#   /' "$ERR" | head
wait_until 5 pid_gone "${pid:-0}"
ok $? "the driver process is gone after the step"
is "$("$CLUSTER" exec n1 ss -Hltn "sport = :${port:-1}" 2>/dev/null | wc -l)" 0 "nothing listens on its port any more"
done_testing
