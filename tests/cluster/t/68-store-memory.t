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
# Queued transactions count in the same --max-memory, across all clients: eight
# clients each queue up to 100 SETs of 1 MiB after MULTI (under the per-client
# bound, 800 MiB in all). Past 256 MiB a command is refused with Redis's -OOM
# naming --max-memory, its transaction discarded, one log line each; the
# store's peak RSS stays under the bound plus 64 MiB (the program, the clients'
# input buffers, malloc's slack), and it serves afterwards with the memory back.
# dlrt-c10d-store (torch's store) likewise counts what it holds for its clients,
# not only values: 64 connections that each WAIT on 4,096 keys of 4 KiB (16 MiB
# of key list each, 1 GiB in all) are refused past --max-store with one log line,
# its peak RSS stays bounded, and a normal client is still answered.
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
wait_until 180 test -e "$WORK/flooded"
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

# ---- dlrt-store: MULTI queues of eight clients count against --max-memory -----------
cat >"$WORK/multiflood.py" <<'PY'
import os, socket, time

host, port = os.environ["REDIS_HOST"], int(os.environ["REDIS_PORT"])
VAL = b"x" * (1 << 20)


def req(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def reply(f):
    line = f.readline()
    if line[:1] == b"$" and int(line[1:]) >= 0:
        return f.read(int(line[1:]) + 2)[:-2]
    return line.strip()


def wait_for(path):
    for _ in range(1200):
        if os.path.exists(path):
            return True
        time.sleep(0.1)
    print("timeout waiting for", path)
    return False


def used(f, s):
    s.sendall(req(b"INFO"))
    for line in reply(f).split(b"\r\n"):
        if line.startswith(b"used_memory:"):
            return int(line.split(b":")[1])
    return -1


# One after the other, so what each gets does not depend on timing.
clients, total = [], 0
for i in range(8):
    s = socket.create_connection((host, port), timeout=60)
    f = s.makefile("rb")
    s.sendall(req(b"MULTI"))
    reply(f)
    queued = 0
    for j in range(100):
        s.sendall(req(b"SET", b"c%d-%d" % (i, j), VAL))
        r = reply(f)
        if r != b"+QUEUED":
            print("client %d refused: %s" % (i, r.decode()))
            break
        queued += 1
    print("client %d queued %d MiB" % (i, queued))
    total += queued if r == b"+QUEUED" else 0
    clients.append((s, f))
print("held in queues: %d MiB" % total)
open("queued.tmp", "w").close()
os.rename("queued.tmp", "queued")
wait_for("qmeasured")
s, f = clients[7]  # the last one was refused
s.sendall(req(b"SET", b"k", b"v"))
reply(f)
s.sendall(req(b"EXEC"))
print("EXEC of a refused transaction:", reply(f).decode())
# The others end with DISCARD or hang up.
for s, f in clients[:3]:
    s.sendall(req(b"DISCARD"))
    reply(f)
for s, f in clients[3:]:
    s.close()
p = socket.create_connection((host, port), timeout=60)
pf = p.makefile("rb")
for _ in range(600):  # the closes reach the store through the relay
    u = used(pf, p)
    if u < (1 << 20):
        break
    time.sleep(0.1)
print("used_memory afterwards: %d" % u)
big = b"y" * (60 << 20)
stored = 0
for i in range(4):
    p.sendall(req(b"SET", b"probe%d" % i, big))
    stored += reply(pf) == b"+OK"
print("60 MiB values stored afterwards: %d" % stored)
p.sendall(req(b"GET", b"probe3"))
print("GET afterwards: %d bytes" % len(reply(pf)))
PY

rm -f "$WORK/addr" "$WORK/queued" "$WORK/qmeasured"
caffe2_store_job multiflood.py --dl-verbose
job=$STORE_JOB
store_find
pid=$STORE_PID
ok "$([ -n "$pid" ]; echo $?)" "found the step's dlrt-store again (pid ${pid:-none})"
wait_until 180 test -e "$WORK/queued"
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/${pid:-0}/status" 2>/dev/null)
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/${pid:-0}/status" 2>/dev/null)
touch "$WORK/qmeasured"
wait "$job"
RC=$?
diag "dlrt-store with eight MULTI queues: VmRSS ${rss:-?} kB, VmHWM ${hwm:-?} kB"
is "$RC" 0 "the job ran"
out=$(cat "$WORK/job.out" "$WORK/s1.out" 2>/dev/null)
sed 's/^/# /' <<<"$(grep -v '^dlrt:' <<<"$out")"
like "$out" "step rc 0" "the caffe2 step succeeded"
like "$out" "client [0-9] refused: -OOM dlrt-store is full \(--max-memory=268435456 bytes" \
	"a command queued past the bound gets -OOM naming --max-memory" ||
	fail_detail "the clients' queues are not counted against --max-memory"
held=$(sed -n 's/^held in queues: \([0-9]*\) MiB$/\1/p' <<<"$out")
ok "$([ -n "$held" ] && [ "$held" -le 256 ] && [ "$held" -ge 128 ]; echo $?)" \
	"the eight clients together queue up to the 256 MiB bound (${held:-?} MiB)"
bound=$(( (256 + 64) * 1024 ))
ok "$([ -n "$hwm" ] && [ "$hwm" -lt "$bound" ]; echo $?)" \
	"the store's peak RSS stays under --max-memory plus 64 MiB (${hwm:-?} < $bound kB)" ||
	fail_detail "VmHWM ${hwm:-?} kB, VmRSS ${rss:-?} kB: MULTI queues grow past --max-memory"
like "$out" "EXEC of a refused transaction: -EXECABORT Transaction discarded" \
	"the refused transaction is discarded (EXECABORT)"
like "$out" "used_memory afterwards: [0-9]{1,6}$" \
	"EXEC, DISCARD and hanging up give the queues back"
like "$out" "60 MiB values stored afterwards: 4" "the store has its whole budget again (240 MiB of values)"
like "$out" "GET afterwards: 62914560 bytes" "and serves"
refused=$(grep -c '^client [0-9] refused' <<<"$out")
slog=$(sed -n 's/.*dlrt-store) listening on .*, log \(\/tmp\/[^ ]*\)$/\1/p' "$WORK/s1.err" | head -1)
nlog=$("$HERE/cluster.sh" exec n1 grep -c ': refused: dlrt-store is full (--max-memory=268435456 bytes' \
	"${slog:-/nonexistent}" 2>/dev/null)
is "${nlog:-0}" "$refused" "the store logs one line naming the bound per refused transaction" ||
	fail_detail "log ${slog:-not named in s1.err}: $("$HERE/cluster.sh" exec n1 grep refused "${slog:-/nonexistent}" 2>&1 | head -3)"

# ---- dlrt-c10d-store: keys held in WAITs count against --max-store ------------------
# The store runs as the test user on this host with its defaults (256 MiB); the
# clients speak torch 1.x's TCPStore wire format (tcpstore.h).
cat >"$WORK/waitflood.py" <<'PY'
import socket, struct, sys, threading

port = int(sys.argv[1])
Q_SET, Q_GET, Q_WAIT = 0, 2, 5


def s_(b):
    return struct.pack("=Q", len(b)) + b


def wait_req(tag):
    keys = [b"%s-%04d-" % (tag, i) + b"k" * (4096 - 12) for i in range(4096)]
    return bytes([Q_WAIT]) + struct.pack("=Q", len(keys)) + b"".join(s_(k) for k in keys)


closed = []


def flood(i):
    c = socket.create_connection(("127.0.0.1", port), timeout=60)
    try:
        c.sendall(wait_req(b"w%02d" % i))
        c.settimeout(3)
        if c.recv(1) == b"":
            closed.append(i)
    except socket.timeout:
        pass  # parked: the store holds its keys
    except OSError:
        closed.append(i)
    socks.append(c)


socks = []
threads = [threading.Thread(target=flood, args=(i,)) for i in range(64)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("waits refused:", len(closed))
open("waitflooded", "w").close()
p = socket.create_connection(("127.0.0.1", port), timeout=30)
p.sendall(bytes([Q_SET]) + s_(b"probe") + s_(b"hello") + bytes([Q_GET]) + s_(b"probe"))
n = struct.unpack("=Q", p.recv(8, socket.MSG_WAITALL))[0]
print("probe GET:", p.recv(n, socket.MSG_WAITALL).decode())
PY
store=$DLRT_CLUSTER_DIR/prefix/libexec/dlrt/dlrt-c10d-store
as_user bash -c "exec '$store' --bind 127.0.0.1 --port 0 --ready-fd 3 3>'$WORK/c10d.port' 2>'$WORK/c10d.log'" &
c10d=$!
wait_until 10 test -s "$WORK/c10d.port"
cport=$(head -1 "$WORK/c10d.port")
cpid=$(pgrep -u "$DLRT_TEST_USER" -f "^$store --bind 127.0.0.1" | head -1)
ok "$([ -n "$cport" ] && [ -n "$cpid" ]; echo $?)" "dlrt-c10d-store listens (pid ${cpid:-none}, port ${cport:-none})"
wout=$(cd "$WORK" && timeout 120 python3 "$WORK/waitflood.py" "${cport:-0}" 2>&1)
chwm=$(awk '/^VmHWM:/ {print $2}' "/proc/${cpid:-0}/status" 2>/dev/null)
kill "${cpid:-0}" 2>/dev/null
wait "$c10d" 2>/dev/null
diag "dlrt-c10d-store VmHWM ${chwm:-?} kB; $(tr '\n' ';' <<<"$wout")"
cbound=$(( (256 + 160) * 1024 ))
ok "$([ -n "$chwm" ] && [ "$chwm" -lt "$cbound" ]; echo $?)" \
	"64 WAITs on 4,096 keys of 4 KiB keep its peak RSS bounded (${chwm:-?} < $cbound kB)" ||
	fail_detail "VmHWM ${chwm:-?} kB: keys held by WAITs are not counted against --max-store"
n=$(sed -n 's/^waits refused: //p' <<<"$wout")
ok "$([ -n "$n" ] && [ "$n" -ge 40 ]; echo $?)" "the WAITs past the limit are refused (${n:-?} of 64)"
like "$(cat "$WORK/c10d.log")" "dlrt-c10d-store: conn [0-9]+: closing: the store is full \(--max-store=268435456 bytes" \
	"the store logs one line naming the bound" || fail_detail "$(tail -3 "$WORK/c10d.log")"
is "$(grep -c 'closing: the store is full' "$WORK/c10d.log")" "${n:-x}" "one line per refused client"
like "$wout" "probe GET: hello" "a normal client is answered afterwards"
done_testing
