#!/bin/bash
# A service out of descriptors does not spin: the step's dlrt-store gets a
# descriptor limit far below what the job then opens (the test lowers it with
# prlimit, as a site's low limit would); the excess connections are shed at
# once instead of staying in the backlog with the event loop waking for them
# forever. The store's CPU time stays low while the job holds its connections,
# and a normal request is answered once they close. The clients are the job's
# own tasks, using REDIS_HOST/REDIS_PORT as given.
. "$(dirname "$0")/../lib.sh"

cat >"$WORK/conns.py" <<'PY'
import os, socket, time

host, port = os.environ["REDIS_HOST"], int(os.environ["REDIS_PORT"])


def wait_for(path):
    for _ in range(1200):
        if os.path.exists(path):
            return True
        time.sleep(0.1)
    print("timeout waiting for", path)
    return False


wait_for("limited")
held = []
for _ in range(200):
    try:
        held.append(socket.create_connection((host, port), timeout=10))
    except OSError as e:
        print("connect:", e)
        break
print("connections opened:", len(held))
open("flooded.tmp", "w").close()
os.rename("flooded.tmp", "flooded")
wait_for("measured")
for c in held:
    c.close()
time.sleep(1)
s = socket.create_connection((host, port), timeout=30)
s.sendall(b"PING\r\n")
print("PING afterwards:", s.makefile("rb").readline().strip().decode())
PY

caffe2_store_job conns.py
job=$STORE_JOB
cputicks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null; }
store_find
pid=$STORE_PID port=$STORE_PORT
ok "$([ -n "$pid" ]; echo $?)" "found the step's dlrt-store (pid ${pid:-none}, relay port ${port:-none})"
# As the job's user (the store's owner): root here may lack CAP_SYS_RESOURCE.
[ -n "$pid" ] && as_user prlimit --pid "$pid" --nofile=48:48
ok "$([ "$(awk '/^Max open files/ {print $4}' "/proc/${pid:-0}/limits" 2>/dev/null)" = 48 ]; echo $?)" \
	"the store's descriptor limit is now 48"
touch "$WORK/limited"
wait_until 180 test -e "$WORK/flooded"
sleep 1
t0=$(cputicks "${pid:-0}")
sleep 5
t1=$(cputicks "${pid:-0}")
touch "$WORK/measured"
wait "$job"
RC=$?
used=$(( ${t1:-0} - ${t0:-0} ))
diag "dlrt-store used $used ticks of CPU ($(getconf CLK_TCK)/s) in 5 s with the excess pending"
is "$RC" 0 "the job ran"
out=$(cat "$WORK/job.out" "$WORK/s1.out" 2>/dev/null)
[ -s "$WORK/s1.err" ] && diag "$(head -5 "$WORK/s1.err")"
sed 's/^/# /' <<<"$out"
like "$out" "step rc 0" "the caffe2 step succeeded"
like "$out" "connections opened: [0-9]+" "the job opened its connections"
# An idle store uses next to nothing; one spinning on a pending connection it
# cannot accept uses a core, or its share of a loaded machine (well over this).
ok "$([ -n "$t0" ] && [ -n "$t1" ] && [ "$used" -lt "$(( $(getconf CLK_TCK) / 2 ))" ]; echo $?)" \
	"out of descriptors, the store does not spin ($used ticks in 5 s)" ||
	fail_detail "$used ticks of CPU in 5 s: the accept loop wakes for a connection it cannot take"
like "$out" "PING afterwards: \\+PONG" "a normal request is answered once the job's connections close"
done_testing
