#!/bin/bash
# The step's node services live as long as the step, not as long as the tasks
# of the node that hosts them: task 0 (on the service's node) ends at once,
# and the tasks of the other nodes use the service afterwards, one second
# later in most steps and several seconds later in some. With real clients
# through each node's relay: redis-py and redis-cli INCRBY on the Caffe2
# helper store (every request answered, every counter exact: no increment
# lost and none applied twice), curl PUT/GET on the Horovod rendezvous
# driver (every request answered 200 with the value written) and torch's
# TCPStore add on the torch c10d store. Then the
# service is gone and the nodes are idle: lingering never outlives the step.
# Before the services waited for the step, 4 to 8 of 10 such steps had a
# client reset ("Connection reset by peer", curl 52/56), sometimes after its
# command had been applied.
. "$(dirname "$0")/../lib.sh"

/usr/bin/python3 -c 'import redis' 2>/dev/null ||
	{ echo "1..0 # SKIP python3-redis missing (tests/cluster/install-deps.sh)"; exit 0; }
JOB_TIMEOUT=600
STEPS=20

# Each task: task 0 ends at once; the others wait DELAY seconds, then make
# their request and print one line saying what they got.
cat >"$WORK/caffe2_task.sh" <<'SH'
#!/bin/bash
[ "$SLURM_PROCID" = 0 ] && exit 0
sleep "$1"
# Every step's task 1 uses redis-py; task 2 uses redis-cli where asked.
if [ "$2" = cli ] && [ "$SLURM_PROCID" = 2 ]; then
	v=$(timeout 30 redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" INCRBY ctr 1 2>&1)
else
	v=$(timeout 30 /usr/bin/python3 -c '
import os, redis
r = redis.Redis(host=os.environ["REDIS_HOST"], port=int(os.environ["REDIS_PORT"]),
                socket_timeout=20)
print(r.incrby("ctr", 1))' 2>&1 | tail -1)
fi
echo "step $SLURM_STEP_ID task $SLURM_PROCID incr=$v"
SH
cat >"$WORK/hvd_task.sh" <<'SH'
#!/bin/bash
[ "$SLURM_PROCID" = 0 ] && exit 0
sleep "$1"
url="http://$HOROVOD_GLOO_RENDEZVOUS_ADDR:$HOROVOD_GLOO_RENDEZVOUS_PORT/global/k$SLURM_PROCID"
put=$(curl -s -m 20 -X PUT --data-binary "v$SLURM_STEP_ID.$SLURM_PROCID" -o /dev/null \
	-w '%{http_code}' "$url" 2>&1; echo " rc=$?")
get=$(curl -s -m 20 "$url" 2>&1; echo " rc=$?")
echo "step $SLURM_STEP_ID task $SLURM_PROCID put=$put get=$get"
SH
cat >"$WORK/torch_task.sh" <<'SH'
#!/bin/bash
[ "$SLURM_PROCID" = 0 ] && exit 0
sleep "$1"
v=$(timeout 60 /usr/bin/python3 -c '
import datetime, os
import torch.distributed as d
s = d.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), None, False,
               datetime.timedelta(seconds=20))
print(s.add("ctr", 1))' 2>&1 | tail -1)
echo "step $SLURM_STEP_ID task $SLURM_PROCID incr=$v"
SH
chmod 0755 "$WORK/caffe2_task.sh" "$WORK/hvd_task.sh" "$WORK/torch_task.sh"
TORCH_STEPS=4

# One allocation, many short three-node steps (as a job script would run them).
run_batch -N3 -n3 <<JOB
#!/bin/bash
for i in \$(seq 1 $STEPS); do
	client=py; [ \$((i % 4)) = 0 ] && client=cli
	delay=1; [ \$i -gt $((STEPS - 2)) ] && delay=5
	srun -N3 -n3 --dl-runtime=caffe2 ./caffe2_task.sh \$delay \$client >>caffe2.out 2>>caffe2.err
	echo "caffe2 step rc \$?"
done
for i in \$(seq 1 $STEPS); do
	delay=1; [ \$i -gt $((STEPS - 2)) ] && delay=5
	srun -N3 -n3 --dl-runtime=horovod ./hvd_task.sh \$delay >>hvd.out 2>>hvd.err
	echo "horovod step rc \$?"
done
for i in \$(seq 1 $TORCH_STEPS); do
	srun -N3 -n3 --dl-runtime=torch ./torch_task.sh 2 >>torch.out 2>>torch.err
	echo "torch step rc \$?"
done
JOB
is "$RC" 0 "the batch job of $((2 * STEPS)) three-node steps ended" ||
	fail_detail "$(tail -3 "$WORK/job.err" "$WORK/sbatch.err" 2>/dev/null)"

is "$(grep -c '^caffe2 step rc 0$' "$WORK/job.out")" "$STEPS" \
	"every caffe2 step succeeded with task 0 ended first" ||
	fail_detail "$(grep -v 'rc 0$' "$WORK/job.out" | head -3)"
is "$(grep -c ' incr=' "$WORK/caffe2.out")" $((2 * STEPS)) \
	"every later task of every caffe2 step got an answer line"
# Per step, the two clients' INCRBY answers are exactly 1 and 2.
bad=$(awk '/ incr=/ { split($0, a, "incr="); v[$2] = v[$2] " " a[2] }
	END { for (s in v) { n = split(v[s], x, " "); if (n != 2 || x[1] + x[2] != 3 || x[1] * x[2] != 2) print "step " s ":" v[s] } }' \
	"$WORK/caffe2.out")
is "$bad" "" "every counter is exact: the two INCRBYs of each step answered 1 and 2 (none lost, none twice)" ||
	fail_detail "$(grep -v 'incr=[12]$' "$WORK/caffe2.out" | head -5)"
is "$(grep -c 'incr=[12]$' "$WORK/caffe2.out")" $((2 * STEPS)) "no client saw an error (redis-py and redis-cli)" ||
	fail_detail "$(head -3 "$WORK/caffe2.err")"

# torch's c10d store (dlrt-c10d-store) with torch's own TCPStore client.
is "$(grep -c '^torch step rc 0$' "$WORK/job.out")" "$TORCH_STEPS" \
	"every torch step succeeded with task 0 ended first"
bad=$(awk '/ incr=/ { split($0, a, "incr="); v[$2] = v[$2] " " a[2] }
	END { for (s in v) { n = split(v[s], x, " "); if (n != 2 || x[1] + x[2] != 3 || x[1] * x[2] != 2) print "step " s ":" v[s] } }' \
	"$WORK/torch.out")
is "$bad$(grep -c 'incr=[12]$' "$WORK/torch.out")" $((2 * TORCH_STEPS)) \
	"torch's TCPStore.add on the c10d store: every client answered, every counter exact" ||
	fail_detail "$(grep -v 'incr=[12]$' "$WORK/torch.out" | head -3; head -3 "$WORK/torch.err")"

is "$(grep -c '^horovod step rc 0$' "$WORK/job.out")" "$STEPS" \
	"every horovod step succeeded with task 0 ended first" ||
	fail_detail "$(grep -v 'rc 0$' "$WORK/job.out" | head -3)"
good=$(grep -cE '^step ([0-9]+) task ([12]) put=200 rc=0 get=v\1\.\2 rc=0$' "$WORK/hvd.out")
is "$good" $((2 * STEPS)) "every PUT and GET on the driver answered, with the value written" ||
	fail_detail "$(grep -vE 'put=200 rc=0 get=v[0-9.]+ rc=0$' "$WORK/hvd.out" | head -5)"

# A stranger's connections keep nothing alive: while the store waits for the
# other nodes, another user on task 0's node holds 20 connections to it that
# never prove the secret; the step still ends when its last task does, and
# the store with it.
cat >"$WORK/hold_task.sh" <<'SH'
#!/bin/bash
[ "$SLURM_PROCID" = 0 ] && { touch hold0.done; exit 0; }
exec sleep 4
SH
chmod 0755 "$WORK/hold_task.sh"
as_user srun -N3 -n3 --dl-runtime=caffe2 ./hold_task.sh >/dev/null 2>"$WORK/hold.err" &
hold_pid=$!
store_addr() { "$HERE/cluster.sh" exec n1 ss -Hltnp 2>/dev/null | awk '/"dlrt-store"/ {print $4; exit}'; }
served() { # the cluster's service or relay processes matching $1 still run
	pgrep -u "$DLRT_TEST_USER" -f "^$DLRT_CLUSTER_DIR/prefix/libexec/dlrt/dlrt-($1)" >/dev/null
}
wait_until 60 test -e "$WORK/hold0.done"
addr=$(store_addr)
as_stranger_on n1 python3 -c '
import socket, sys, time
h, p = sys.argv[1].rsplit(":", 1)
s = []
for _ in range(20):
    try: s.append(socket.create_connection((h, int(p)), timeout=3))
    except OSError: break
time.sleep(15)' "${addr:-127.0.0.1:1}" &
stranger_pid=$!
t0=$SECONDS
wait "$hold_pid"
is "$?" 0 "a step with a stranger's connections on its lingering store succeeded"
wait_until 10 eval '! served store'
ok $? "its store ended with the step's last task ($((SECONDS - t0)) s), not with the stranger's connections"
kill "$stranger_pid" 2>/dev/null
wait "$stranger_pid" 2>/dev/null

# A lingering service still ends with its step: task 0 ends at once, the
# others would run for minutes; the step is cancelled while its service
# lingers for them, and everything of it is gone promptly.
cat >"$WORK/long_task.sh" <<'SH'
#!/bin/bash
[ "$SLURM_PROCID" = 0 ] && { touch task0.done; exit 0; }
exec sleep 300
SH
chmod 0755 "$WORK/long_task.sh"
as_user srun -N3 -n3 --dl-runtime=caffe2 ./long_task.sh >"$WORK/long.out" 2>"$WORK/long.err" &
long_pid=$!
wait_until 60 test -e "$WORK/task0.done"
sleep 1
store=$(pgrep -u "$DLRT_TEST_USER" -f "^$DLRT_CLUSTER_DIR/prefix/libexec/dlrt/dlrt-store")
ok "$([ -n "$store" ] && kill -0 "$store" 2>/dev/null; echo $?)" \
	"task 0 has ended and the store still serves the other nodes (pid ${store:-none})"
step=$(squeue -h -s -u "$DLRT_TEST_USER" -o '%i' | grep -E '^[0-9]+\.[0-9]+$' | head -1)
t0=$SECONDS
scancel "${step:-none}"
wait "$long_pid"
ended=$((SECONDS - t0))
ok "$([ "$ended" -lt 60 ]; echo $?)" "the cancelled step ended (${ended} s after scancel of $step)"
wait_until 20 eval '! served "store|relay"'
ok $? "its store and relays are gone with it"
wait_until 30 eval '[ "$(sinfo -h -o %t | sort -u)" = idle ]'

# Nothing lingers after the step: no service or relay process of this
# cluster's (the nodes share the host's PID namespace), and every node idle.
left=$(pgrep -a -u "$DLRT_TEST_USER" -f "^$DLRT_CLUSTER_DIR/prefix/libexec/dlrt/dlrt-(store|hvd-driver|c10d-store|relay)")
is "$left" "" "no service or relay is left on any node"
is "$(sinfo -h -o '%t' | sort -u | tr '\n' ' ')" "idle " "every node is idle"
done_testing
