#!/bin/bash
# dlrt-store's memory stays bounded whatever the job's own clients send:
#   - SETs of large values past --max-memory (256 MiB by default) get Redis's
#     -OOM error instead of growing the store;
#   - clients that pipeline GETs of a large value without reading the replies
#     are not read from once a little of their replies wait (backpressure), so
#     they cost that plus one reply each, not everything they asked for;
#   - the store's peak RSS (VmHWM, read as root from /proc) stays under twice
#     the limit plus slack, and a normal GET is answered during and after.
# The clients are the job's own tasks, using REDIS_HOST/REDIS_PORT as given.
. "$(dirname "$0")/../lib.sh"

cat >"$WORK/flood.py" <<'PY'
import os, socket, sys, time

host, port = os.environ["REDIS_HOST"], int(os.environ["REDIS_PORT"])
VAL = 8 << 20


def req(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def reply(f):
    line = f.readline()
    if line[:1] == b"$" and int(line[1:]) >= 0:
        data = f.read(int(line[1:]) + 2)
        return b"$%d" % (len(data) - 2)
    return line.strip()


def wait_for(path):
    for _ in range(1200):
        if os.path.exists(path):
            return True
        time.sleep(0.1)
    print("timeout waiting for", path)
    return False


s = socket.create_connection((host, port), timeout=60)
f = s.makefile("rb")
s.sendall(req(b"SET", b"probe", b"hello"))
print("probe SET:", reply(f).decode())
payload = b"x" * VAL
stored = 0
for i in range(64):  # 512 MiB: twice the default limit
    s.sendall(req(b"SET", b"big%d" % i, payload))
    r = reply(f)
    if r != b"+OK":
        print("SET big%d: %s" % (i, r.decode()))
        break
    stored += 1
print("values stored:", stored)
# Four clients pipeline GETs of an 8 MiB value and never read.
flood = []
for _ in range(4):
    c = socket.create_connection((host, port), timeout=60)
    c.setblocking(False)
    sent = 0
    for _ in range(200):
        try:
            c.send(req(b"GET", b"big0"))
            sent += 1
        except BlockingIOError:
            break
    flood.append(c)
print("pipelined GETs sent:", sent)
time.sleep(3)  # let the store do what it will with them
s.sendall(req(b"GET", b"probe"))
print("GET while flooded:", reply(f).decode())
open("flooded.tmp", "w").close()
os.rename("flooded.tmp", "flooded")
wait_for("measured")
for c in flood:
    c.close()
s2 = socket.create_connection((host, port), timeout=60)
f2 = s2.makefile("rb")
s2.sendall(req(b"GET", b"probe"))
print("GET afterwards:", reply(f2).decode())
PY

caffe2_store_job flood.py
job=$STORE_JOB
store_find
pid=$STORE_PID port=$STORE_PORT
ok "$([ -n "$pid" ]; echo $?)" "found the step's dlrt-store (pid ${pid:-none}, relay port ${port:-none})"
for _ in $(seq 1800); do [ -e "$WORK/flooded" ] && break; sleep 0.1; done
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/${pid:-0}/status" 2>/dev/null)
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/${pid:-0}/status" 2>/dev/null)
touch "$WORK/measured"
wait "$job"
RC=$?
diag "dlrt-store VmRSS ${rss:-?} kB, VmHWM ${hwm:-?} kB"
is "$RC" 0 "the job ran"
out=$(cat "$WORK/job.out" "$WORK/s1.out" 2>/dev/null)
[ -s "$WORK/s1.err" ] && diag "$(head -5 "$WORK/s1.err")"
sed 's/^/# /' <<<"$out"
like "$out" "step rc 0" "the caffe2 step succeeded"
like "$out" "probe SET: \+OK" "a normal SET works"
like "$out" "SET big[0-9]+: -OOM command not allowed when used memory > 'maxmemory'\." \
	"a SET past the store's limit gets Redis's -OOM error"
n=$(sed -n 's/^values stored: //p' <<<"$out")
ok "$([ -n "$n" ] && [ "$n" -ge 24 ] && [ "$n" -lt 32 ]; echo $?)" \
	"8 MiB values stored until the 256 MiB default limit ($n of them)" ||
	fail_detail "stored $n values of 8 MiB"
bound=$(( (2 * 256 + 96) * 1024 ))
ok "$([ -n "$hwm" ] && [ "$hwm" -lt "$bound" ]; echo $?)" \
	"the store's peak RSS stays under twice the limit plus slack (${hwm:-?} < $bound kB)" ||
	fail_detail "VmHWM ${hwm:-?} kB, VmRSS ${rss:-?} kB: buffered replies or values grow without bound"
ok "$([ -n "$rss" ] && [ "$rss" -lt "$bound" ]; echo $?)" "and so does its RSS while flooded (${rss:-?} kB)"
like "$out" "GET while flooded: \\\$5" "another client is answered while four pipeline without reading"
like "$out" "GET afterwards: \\\$5" "the store answers a normal GET afterwards"
done_testing
