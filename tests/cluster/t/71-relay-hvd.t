#!/bin/bash
# Only the job's own processes reach the Horovod rendezvous driver. Another
# user (the stranger) on the SAME node as the driver and task 0, with curl
# against the driver's own address and against the node relay's loopback
# port: no HTTP answer at all (GET of rank_and_size and of a scope key, PUT);
# the job's value is intact. Then 1,500 idle connections of the stranger to
# the driver's port while a real 6-rank gloo step rendezvouses: it completes.
# Before the relay, the driver admitted every process of the step's nodes:
# GET returned the job's values and PUT answered 200.
. "$(dirname "$0")/../lib.sh"

getent passwd "$STRANGER" >/dev/null ||
	{ echo "1..0 # SKIP no user $STRANGER: bring the cluster up again"; exit 0; }
CLUSTER="$HERE/cluster.sh"

cat >"$WORK/task.sh" <<STEP
#!/bin/bash
url="http://\$HOROVOD_GLOO_RENDEZVOUS_ADDR:\$HOROVOD_GLOO_RENDEZVOUS_PORT"
if [ "\$SLURM_PROCID" = 0 ]; then
	echo "put: \$(curl -s -m 10 -X PUT --data-binary job-value -o /dev/null -w '%{http_code}' "\$url/global/victim")"
	echo "\$HOROVOD_GLOO_RENDEZVOUS_ADDR \$HOROVOD_GLOO_RENDEZVOUS_PORT" >"$WORK/relay.tmp"
	mv "$WORK/relay.tmp" "$WORK/relay"
fi
. "$WAIT_UNTIL"
wait_until 60 test -e "$WORK/probe.done"
echo "task \$SLURM_PROCID after: \$(curl -s -m 10 "\$url/global/victim")"
touch "$WORK/read.\$SLURM_PROCID"
# The driver lives on task 0's node until its tasks end: task 0 stays until
# the other node's task has read (bounded), or a slow n2 would find it gone.
if [ "\$SLURM_PROCID" = 0 ]; then
	wait_until 60 test -e "$WORK/read.1"
fi
STEP
chmod 0755 "$WORK/task.sh"

as_user srun -w n1,n2 -N2 -n2 --dl-runtime=horovod --dl-horovod=gloo "$WORK/task.sh" \
	>"$OUT" 2>"$ERR" &
srun_pid=$!
wait_until 60 test -s "$WORK/relay"
read -r rhost rport <"$WORK/relay" 2>/dev/null
is "$rhost" "127.0.0.1" "the tasks reach the driver through their node's relay (port ${rport:-none})"
drv=$("$CLUSTER" exec n1 ss -Hltnp 2>/dev/null | awk '/dlrt-hvd-driver/ {print $4; exit}')
like "$drv" "^10\.77\.[0-9]+\.11:[0-9]+$" "the driver listens on n1's address ($drv)"

# -w '%{http_code}' prints 000 when no HTTP answer came.
scurl() { on_node n1 "$STRANGER" curl -s -m 10 -o - -w ' code=%{http_code}' "$@" 2>&1; }
for target in "$drv" "127.0.0.1:${rport:-1}"; do
	what="the stranger on n1 at $target"
	got=$(scurl "http://$target/rank_and_size/n1:0")
	like "$got" "code=000$" "$what: GET /rank_and_size gets no answer" || fail_detail "got: $got"
	got=$(scurl "http://$target/global/victim")
	like "$got" "code=000$" "$what: GET of the job's key gets no answer" || fail_detail "got: $got"
	unlike "$got" "job-value" "$what: and reads nothing"
	got=$(scurl -X PUT --data-binary evil "http://$target/global/victim")
	like "$got" "code=000$" "$what: PUT gets no answer (no 200)" || fail_detail "got: $got"
done
touch "$WORK/probe.done"
wait "$srun_pid"
is "$?" 0 "the step succeeded" || fail_detail "$(head -5 "$ERR")"
like "$(cat "$OUT")" "put: 200" "the job's task wrote its key through the relay"
is "$(grep -c 'after: job-value$' "$OUT")" 2 "both nodes' tasks read the job's value back, intact"

# 1,500 idle connections of the stranger to the driver, held while the ranks
# rendezvous and allreduce.
cat >"$WORK/flood.py" <<'PY'
import resource, socket, sys, time, os
host, port, n, ready, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
socks = []
for _ in range(n):
    try:
        s = socket.create_connection((host, port), timeout=5)
        socks.append(s)
    except OSError:
        break
open(ready, "w").write(f"{len(socks)}\n")
end = time.monotonic() + 120
while time.monotonic() < end and not os.path.exists(stop):
    time.sleep(0.1)
print(f"held {len(socks)} connections")
PY
cat >"$WORK/gloo.sh" <<STEP
#!/bin/bash
if [ "\$SLURM_PROCID" = 0 ]; then
	echo ok >"$WORK/gloo.started"
fi
. "$WAIT_UNTIL"
wait_until 120 test -s "$WORK/s/flood.ready"
exec "$TESTS_BIN/gloo_hvd_allreduce"
STEP
chmod 0755 "$WORK/gloo.sh"
# The stranger's own folder: it writes there, the job's tasks read it.
mkdir -p "$WORK/s" && chown "$STRANGER": "$WORK/s" && chmod 0755 "$WORK/s"
as_user srun -N3 -n6 --dl-runtime=horovod --dl-horovod=gloo "$WORK/gloo.sh" >"$OUT" 2>"$ERR" &
srun_pid=$!
wait_until 60 test -s "$WORK/gloo.started"
drv=$("$CLUSTER" exec n1 ss -Hltnp 2>/dev/null | awk '/dlrt-hvd-driver/ {print $4; exit}')
on_node n1 "$STRANGER" python3 "$WORK/flood.py" "${drv%:*}" "${drv##*:}" 1500 \
	"$WORK/s/flood.ready" "$WORK/s/flood.stop" >"$WORK/flood.out" 2>&1 &
flood_pid=$!
wait "$srun_pid"
rc=$?
touch "$WORK/s/flood.stop"
wait "$flood_pid"
is "$(cat "$WORK/s/flood.ready" 2>/dev/null)" 1500 "the stranger opened 1,500 idle connections to the driver ($drv)"
is "$rc" 0 "the 6-rank gloo step completed meanwhile" || fail_detail "$(head -5 "$ERR")"
is "$(grep -c '^rank [0-5] of 6: allreduce ok sum=15$' "$OUT")" 6 \
	"all 6 ranks passed the rendezvous and the allreduce"
done_testing
