#!/bin/bash
# Another user floods the step's services with connections that never prove
# the step secret, at 2,000 connections a second and more, silent or sending
# garbage, from srun's host and from a node of the step: (i) srun's rendezvous
# while 5 steps exchange their addresses through it, (ii) a caffe2 step's
# dlrt-store, from the node it runs on, while the step's clients use it
# through their node relay. Every step must start and every client be served.
# Before the fix the rendezvous held new connections in the listen backlog
# behind the stranger's (64 admitted a second): steps took seconds or failed
# after the exchange timeout. Times are printed (# lines), never asserted: a
# loaded test machine would make them flaky.
. "$(dirname "$0")/../lib.sh"

getent passwd "$STRANGER" >/dev/null ||
	{ echo "1..0 # SKIP no user $STRANGER: bring the cluster up again"; exit 0; }
CLUSTER="$HERE/cluster.sh"

# The flooder: non-blocking connect()s at RATE a second to HOST:PORT until the
# stop file appears or SECS pass (bounded in time and count). silent: holds
# up to 4,000 connections and never sends a byte; garbage: sends 64 random
# bytes (a wrong answer) on each before closing it. Closes with a reset (no
# TIME_WAIT), so the local ports last. Writes "ready" once it flooded for
# half a second, then its counts at the end.
cat >"$WORK/flood.py" <<'PY'
import collections, os, resource, socket, struct, sys, time
host, port, mode, rate, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
ready, stop = sys.argv[6], sys.argv[7]
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
hold = min(4000 if mode == "silent" else 100, resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 64)
abort = struct.pack("ii", 1, 0)
held = collections.deque()
sent = failed = 0
start = time.monotonic()
said_ready = False
def drop(s):
    global sent
    if mode == "garbage":
        try:
            s.send(os.urandom(64))
            sent += 1
        except OSError:
            pass
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, abort)
    s.close()
n = 0
while True:
    now = time.monotonic()
    if now - start > secs or (n % 256 == 0 and os.path.exists(stop)):
        break
    due = int((now - start) * rate)
    if n >= due:
        time.sleep(0.0005)
        continue
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    e = s.connect_ex((host, port))
    if e not in (0, 115):  # EINPROGRESS
        failed += 1
    n += 1
    held.append(s)
    while len(held) > hold:
        drop(held.popleft())
    if not said_ready and now - start >= 0.5:
        open(ready, "w").write("ready\n")
        said_ready = True
el = time.monotonic() - start
for s in held:
    drop(s)
print(f"connects {n} in {el:.1f} s: {n / el:.0f}/s, failed {failed}, garbage sent {sent}", flush=True)
PY
chmod 0644 "$WORK/flood.py"
# The stranger's own folder: it writes there, root and the job read it.
mkdir -p "$WORK/s" && chown "$STRANGER": "$WORK/s" && chmod 0755 "$WORK/s"
RATE=2500

# rdv_port: the port of the rendezvous of the srun just started, as the
# test user on this cluster (SLURM_CONF), not one seen before (bounded).
SEEN=" "
rdv_listens() { # (rdv_port's condition: sets its rdv and port)
	local p pp
	for p in $(pgrep -u "$DLRT_TEST_USER" -f 'dlrt-c10d-store --bind 0.0.0.0'); do
		case "$SEEN" in *" $p "*) continue ;; esac
		pp=$(ps -o ppid= -p "$p" | tr -d ' ')
		tr '\0' '\n' 2>/dev/null <"/proc/$pp/environ" |
			grep -qx "SLURM_CONF=$SLURM_CONF" && rdv=$p
	done
	[ -n "$rdv" ] && port=$(ss -Hltnp 2>/dev/null |
		sed -n "s/.*:\([0-9]*\) .*pid=$rdv,.*/\1/p" | head -1)
	[ -n "$port" ]
}
rdv_port() {
	local rdv= port=
	wait_until -i 0.05 30 rdv_listens
	SEEN="$SEEN$rdv "
	RDV_PORT=$port
}

# One step of 4 tasks on 3 nodes whose tasks exchange through srun's
# rendezvous. It waits for a job of the user's own (--dependency) that ends
# once the rendezvous is up and (with a flood) the flood runs, so the exchange
# happens under the flood; the time printed is from that release to srun's
# exit (scheduling included: compare with step 0's, without a flood).
# step N MODE WHERE (MODE none: no flood; WHERE host or n1).
PRINT='echo T=$SLURM_PROCID U=$DMLC_PS_ROOT_URI P=$DMLC_PS_ROOT_PORT'
step() {
	local n=$1 mode=$2 where=$3 hold srun port t0 t1 rc fl= host
	rm -f "$WORK/release" "$WORK/s/ready.$n" "$WORK/s/stop.$n"
	hold=$(as_user sbatch --parsable -N1 -o /dev/null \
		--wrap "bash -c '. $WAIT_UNTIL; wait_until 60 test -e $WORK/release'")
	wait_until 120 eval '[ "$(squeue -h -j "$hold" -o %t 2>/dev/null)" = R ]'
	as_user srun --dependency=afterany:"$hold" -N3 -n4 --dl-runtime=mxnet --dl-exchange=srun bash -c "$PRINT" \
		>"$WORK/out.$n" 2>"$WORK/err.$n" &
	srun=$!
	rdv_port
	port=$RDV_PORT
	if [ "$mode" != none ] && [ -n "$port" ]; then
		if [ "$where" = host ]; then
			host=127.0.0.1
			as_stranger python3 "$WORK/flood.py" "$host" "$port" "$mode" "$RATE" 60 \
				"$WORK/s/ready.$n" "$WORK/s/stop.$n" >"$WORK/flood.$n" 2>&1 &
		else
			host=$NET.1
			on_node "$where" "$STRANGER" python3 "$WORK/flood.py" "$host" "$port" "$mode" \
				"$RATE" 60 "$WORK/s/ready.$n" "$WORK/s/stop.$n" >"$WORK/flood.$n" 2>&1 &
		fi
		fl=$!
		wait_until -i 0.05 5 test -e "$WORK/s/ready.$n"
	fi
	t0=$(date +%s.%N)
	touch "$WORK/release"
	wait "$srun"
	rc=$?
	t1=$(date +%s.%N)
	if [ -n "$fl" ]; then
		touch "$WORK/s/stop.$n"
		wait "$fl"
	fi
	STEP_TIME=$(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }")
	diag "step $n ($mode flood from $where to port ${port:-none}): rc $rc in ${STEP_TIME} s;" \
		"$(cat "$WORK/flood.$n" 2>/dev/null)"
	is "$rc" 0 "step $n ($mode flood from $where) succeeded" ||
		fail_detail "$(grep -v 'queued and waiting\|allocated resources' "$WORK/err.$n" | head -3)"
	if [ "$mode" != none ]; then
		like "$(cat "$WORK/flood.$n")" "^connects [0-9]+ in [0-9.]+ s: ([2-9][0-9]{3}|[0-9]{5,})/s" \
			"step $n: the stranger flooded at 2,000 connections a second or more"
	fi
	is "$(grep -c '^T=' "$WORK/out.$n")" 4 "step $n: all 4 tasks started"
}
NET=$(sed -n 's/^SlurmctldHost=.*(\(10\.77\.[0-9]*\)\.1)$/\1/p' "$SLURM_CONF")

# (i) srun's rendezvous: one step without a flood, for the time, then 5 under it.
step 0 none host
step 1 silent host
step 2 garbage host
step 3 silent n1
step 4 garbage n1
step 5 silent host

# (ii) a caffe2 step's dlrt-store, flooded from n1 (the node it runs on) by
# the stranger, while 20 clients on each of the step's two nodes connect
# through their node relay one after the other, each timing its own
# SET and GET (a fresh connection each, so every one needs the relay's
# upstream connection to the store).
cat >"$WORK/clients.py" <<'PY'
import os, socket, sys, time
host, port, n = os.environ["REDIS_HOST"], int(os.environ["REDIS_PORT"]), int(sys.argv[1])
rank = os.environ["SLURM_PROCID"]
worst, ok = 0.0, 0
for i in range(n):
    t = time.monotonic()
    try:
        s = socket.create_connection((host, port), 10)
        s.settimeout(10)
        k = f"k{rank}-{i}"
        s.sendall(f"*3\r\n$3\r\nSET\r\n${len(k)}\r\n{k}\r\n$1\r\nv\r\n".encode())
        got = s.recv(64)
        s.sendall(f"*2\r\n$3\r\nGET\r\n${len(k)}\r\n{k}\r\n".encode())
        got += s.recv(64)
        s.close()
        if got == b"+OK\r\n$1\r\nv\r\n":
            ok += 1
        else:
            print(f"client {i}: got {got!r}", flush=True)
    except OSError as e:
        print(f"client {i}: {e}", flush=True)
    worst = max(worst, time.monotonic() - t)
    time.sleep(0.1)
print(f"rank {rank}: served {ok} of {n}, slowest {worst:.3f} s", flush=True)
PY
chmod 0644 "$WORK/clients.py"
cat >"$WORK/task.sh" <<STEP
#!/bin/bash
if [ "\$SLURM_PROCID" = 0 ]; then
	echo "\$REDIS_PORT" >"$WORK/relay.tmp" && mv "$WORK/relay.tmp" "$WORK/relay"
fi
. "$WAIT_UNTIL"
wait_until 30 test -e "$WORK/s/ready.store"
exec python3 "$WORK/clients.py" 20
STEP
chmod 0755 "$WORK/task.sh"
for mode in silent garbage; do
	rm -f "$WORK/relay" "$WORK/s/ready.store" "$WORK/s/stop.store"
	as_user srun -w n1,n2 -N2 -n2 --dl-runtime=caffe2 "$WORK/task.sh" >"$OUT" 2>"$ERR" &
	srun_pid=$!
	wait_until 60 test -s "$WORK/relay"
	store=$("$CLUSTER" exec n1 ss -Hltnp 2>/dev/null | awk '/dlrt-store/ {print $4; exit}')
	like "$store" "^10\.77\.[0-9]+\.11:[0-9]+$" "$mode: the step's dlrt-store listens on n1 ($store)"
	on_node n1 "$STRANGER" python3 "$WORK/flood.py" "${store%:*}" "${store##*:}" "$mode" \
		"$RATE" 60 "$WORK/s/ready.store" "$WORK/s/stop.store" >"$WORK/flood.store" 2>&1 &
	fl=$!
	wait "$srun_pid"
	rc=$?
	touch "$WORK/s/stop.store"
	wait "$fl"
	diag "caffe2 step under a $mode flood of its dlrt-store from n1: rc $rc;" \
		"$(cat "$WORK/flood.store")"
	diag "$(grep '^rank' "$OUT" | tr '\n' ' ')"
	is "$rc" 0 "$mode: the caffe2 step succeeded under the flood" || fail_detail "$(head -3 "$ERR")"
	like "$(cat "$WORK/flood.store")" "^connects [0-9]+ in [0-9.]+ s: ([2-9][0-9]{3}|[0-9]{5,})/s" \
		"$mode: the stranger flooded the store at 2,000 connections a second or more"
	is "$(grep -c '^rank [01]: served 20 of 20,' "$OUT")" 2 \
		"$mode: every client on both nodes was served through its relay" ||
		fail_detail "$(grep -v '^rank' "$OUT" | head -5)"
done
done_testing
