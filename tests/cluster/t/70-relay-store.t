#!/bin/bash
# Only the job's own processes reach the Caffe2 helper store (dlrt-store).
# Another user (the stranger) running on the SAME node as the step's task,
# with redis-cli against the store's own address and against the node relay's
# loopback port, reads nothing, writes nothing and is disconnected; the job's
# value is intact and its own tasks still work. Before the relay, the store
# admitted every process of the step's nodes (its allowlist was by node), so
# the stranger's KEYS/GET/SET/FLUSHALL all worked from n1. The relay's port on
# [::1] is the relay's too, so a stranger cannot take it for "localhost".
. "$(dirname "$0")/../lib.sh"

command -v redis-cli >/dev/null || { echo "1..0 # SKIP redis-cli missing (redis-tools)"; exit 0; }
getent passwd "$STRANGER" >/dev/null ||
	{ echo "1..0 # SKIP no user $STRANGER: bring the cluster up again"; exit 0; }
CLUSTER="$HERE/cluster.sh"

cat >"$WORK/task.sh" <<STEP
#!/bin/bash
cli() { timeout 10 redis-cli -h "\$REDIS_HOST" -p "\$REDIS_PORT" "\$@" 2>&1; }
. "$WAIT_UNTIL"
wait_for() { wait_until 60 test -e "\$1"; }
if [ "\$SLURM_PROCID" = 0 ]; then
	echo "set: \$(cli SET victim-key victim-value)"
	echo "v6: \$(timeout 10 redis-cli -h ::1 -p "\$REDIS_PORT" GET victim-key 2>&1)"
	echo "\$REDIS_HOST \$REDIS_PORT" >"$WORK/relay.tmp" && mv "$WORK/relay.tmp" "$WORK/relay"
	wait_for "$WORK/probe.done"
	echo "after: \$(cli GET victim-key)"
	echo "keys after: \$(cli KEYS '*' | tr '\n' ' ')"
	# The store lives on this node until its tasks end: stay until the other
	# node's task has read (bounded), or a slow n2 would find it gone.
	wait_for "$WORK/worker.done"
else
	wait_for "$WORK/probe.done"
	echo "worker: \$(cli GET victim-key)"
	touch "$WORK/worker.done"
fi
STEP
chmod 0755 "$WORK/task.sh"

as_user srun -w n1,n2 -N2 -n2 --dl-runtime=caffe2 --dl-verbose "$WORK/task.sh" >"$OUT" 2>"$ERR" &
srun_pid=$!
wait_until 60 test -s "$WORK/relay"
read -r rhost rport <"$WORK/relay" 2>/dev/null
is "$rhost" "127.0.0.1" "the tasks reach the store through their node's relay (port ${rport:-none})"
store=$("$CLUSTER" exec n1 ss -Hltnp 2>/dev/null | awk '/dlrt-store/ {print $4; exit}')
shost=${store%:*} sport=${store##*:}
like "$store" "^10\.77\.[0-9]+\.11:[0-9]+$" "the store listens on n1's address ($store)"

# The stranger, on n1 (the store's node, where task 0 runs).
scli() { on_node n1 "$STRANGER" timeout 10 redis-cli -h "$1" -p "$2" "${@:3}" 2>&1; }
for target in "$shost $sport" "127.0.0.1 ${rport:-1}"; do
	set -- $target
	what="the stranger on n1 at $1:$2"
	keys=$(scli "$1" "$2" KEYS '*'); rc=$?
	unlike "$keys" "victim" "$what: KEYS * lists nothing of the job" ||
		fail_detail "got: $keys"
	ok "$([ "$rc" -ne 124 ]; echo $?)" "$what: the connection is closed, not left hanging"
	got=$(scli "$1" "$2" GET victim-key)
	unlike "$got" "victim-value" "$what: GET reads nothing" || fail_detail "got: $got"
	got=$(scli "$1" "$2" SET victim-key evil)
	unlike "$got" "^OK" "$what: SET writes nothing" || fail_detail "got: $got"
	got=$(scli "$1" "$2" FLUSHALL)
	unlike "$got" "^OK" "$what: FLUSHALL is refused" || fail_detail "got: $got"
	got=$(scli "$1" "$2" PING)
	unlike "$got" "PONG" "$what: not even PING" || fail_detail "got: $got"
done
# [::1] on the relay's port is the relay's: a program that connects to
# "localhost" and tries ::1 first cannot reach a stranger's listener there.
squat=$(on_node n1 "$STRANGER" python3 -c "
import socket, sys
s = socket.socket(socket.AF_INET6)
try:
    s.bind(('::1', int(sys.argv[1]))); print('bound')
except OSError as e:
    print('refused:', e.strerror)" "${rport:-1}" 2>&1)
like "$squat" "^refused: Address already in use" "the stranger cannot bind [::1] on the relay's port" ||
	fail_detail "got: $squat"
# A raw connection to the relay: closed at once (a reset or an end of file),
# before any byte is answered.
raw=$(on_node n1 "$STRANGER" timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/${rport:-1} || exit 9
	printf 'PING\r\n' >&3; echo connected, read \$(cat <&3 2>/dev/null | wc -c) bytes" 2>/dev/null)
is "$raw" "connected, read 0 bytes" "the relay closes the stranger's connection without a byte"

touch "$WORK/probe.done"
wait "$srun_pid"
is "$?" 0 "the step succeeded" || fail_detail "$(head -5 "$ERR")"
out=$(cat "$OUT")
like "$out" "set: OK" "the job's task wrote its key through the relay"
like "$out" "v6: victim-value" "and read it through the relay's [::1] listener"
like "$out" "after: victim-value" "the job's value is intact after the stranger's attempts"
like "$out" "keys after: victim-key $" "and the job's keyspace holds only its own key"
like "$out" "worker: victim-value" "the task on the other node (n2) reads it through its own relay" ||
	fail_detail "n2's relay log: $("$CLUSTER" exec n2 sh -c 'tail -n 20 "$(ls -t /tmp/dlrt-relay.*.log | head -1)"' 2>&1 | tr '\n' '|')"
done_testing
