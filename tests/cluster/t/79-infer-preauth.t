#!/bin/bash
# dlrt-infer before authentication: another local user (dlrtu2) floods the
# coordinator with connections that announce a 16 MiB frame and send part of
# it, and with connections that send nothing, more of them than may wait for
# authentication at once. The coordinator buffers none of the big frames (its
# RSS stays small: read as root from /proc, a generous functional bound, not
# a timing), closes every stranger's connection (the big ones at once, the
# silent ones at the authentication deadline or when newer ones push them
# out), and its owner's job completes exactly once meanwhile.
. "$(dirname "$0")/../lib.sh"
. "$HERE/infer_pool.sh"

STRANGER=${DLRT_STRANGER_USER:-dlrtu2}
if ! getent passwd "$STRANGER" >/dev/null; then
	echo "1..0 # SKIP no user $STRANGER: bring the cluster up again (tests/cluster/cluster.sh up)"
	exit 0
fi
NBIG=32 NSILENT=96 SENT_MB=8 N=3000

cat >"$WORK/flood.py" <<'PY'
# flood.py ADDR PORT NBIG NSILENT MB: NBIG connections announce a 16 MiB frame
# and send MB MiB of it; NSILENT send nothing. Prints "sent", then waits (at
# most 60 s) until the coordinator closed them and prints how many it closed.
import socket, struct, sys, time
addr, port, nbig, nsilent, mb = sys.argv[1], int(sys.argv[2]), *map(int, sys.argv[3:6])
VERSION, AUTH = @DLRT_IP_VERSION@, 22
head = struct.pack('<IHH', 16 << 20, VERSION, AUTH)
chunk = b'x' * (1 << 20)
big, silent = [], []
for _ in range(nbig):
    s = socket.create_connection((addr, port), timeout=10)
    s.settimeout(2)
    try:
        s.sendall(head)
        for _ in range(mb):
            s.sendall(chunk)
    except OSError:
        pass  # refused and closed by the coordinator: what we want
    big.append(s)
for _ in range(nsilent):
    silent.append(socket.create_connection((addr, port), timeout=10))
print('sent', flush=True)
def closed(s):
    try:
        s.settimeout(0.05)
        while True:
            b = s.recv(65536)
            if not b:
                return True
    except socket.timeout:
        return False
    except OSError:
        return True
end = time.monotonic() + 60
open_ = big + silent
while open_ and time.monotonic() < end:
    open_ = [s for s in open_ if not closed(s)]
    time.sleep(0.5)
print('big closed', sum(1 for s in big if s not in open_))
print('silent closed', sum(1 for s in silent if s not in open_), flush=True)
PY
V=$(sed -n 's/^#define DLRT_IP_VERSION \([0-9]*\).*/\1/p' "$HERE/../../inference/proto/proto.h")
sed -i "s/@DLRT_IP_VERSION@/${V:-0}/" "$WORK/flood.py"
chmod 0644 "$WORK/flood.py"
ref A lenet5 0 $N

ARRAY=$(infer pool start --workers 1 -- -c 1 2>"$WORK/start.err")
like "$ARRAY" '^[0-9]+$' "pool start submitted the array (job $ARRAY)" ||
	fail_detail "$(cat "$WORK/start.err")"
wait_until -i 0.5 120 eval '[ "$(workers_up)" -ge 1 ]'
is "$(workers_up)" 1 "the worker joined"
address=$(field address) port=$(field port) pid=$(field pid)
rss() { awk '/^VmRSS:/ { print int($2 / 1024) }' "/proc/$pid/status" 2>/dev/null; }
diag "coordinator pid $pid at $address:$port, RSS $(rss) MB before the flood"

as_stranger python3 "$WORK/flood.py" "$address" "$port" $NBIG $NSILENT $SENT_MB \
	>"$WORK/flood.out" 2>"$WORK/flood.err" &
FLOOD=$!
wait_until -i 0.25 60 grep -q '^sent' "$WORK/flood.out"
ok "$(grep -q '^sent' "$WORK/flood.out"; echo $?)" \
	"$STRANGER opened $NBIG connections announcing 16 MiB (sending $SENT_MB MiB each) and $NSILENT silent ones" ||
	fail_detail "$(cat "$WORK/flood.err")"
r=$(rss)
ok "$([ -n "$r" ] && [ "$r" -lt 100 ]; echo $?)" \
	"the coordinator's RSS stays small during the flood: ${r:-?} MB (bound 100 MB)"

# The owner's job meanwhile (its connections authenticate at once).
J=$(infer submit --model lenet5 --inputs "$IN" --count $N --batch 50 2>"$WORK/submit.err")
like "$J" '^[0-9]+$' "the owner submits a job during the flood" ||
	fail_detail "$(cat "$WORK/submit.err")"
infer wait "$J" >"$WORK/wait" 2>&1
ok $? "and it completes" || fail_detail "$(cat "$WORK/wait")"
exactly_once "$J" $N A

wait "$FLOOD"
is "$(sed -n 's/^big closed //p' "$WORK/flood.out")" $NBIG \
	"the coordinator closed all $NBIG connections that announced 16 MiB" ||
	fail_detail "$(cat "$WORK/flood.out" "$WORK/flood.err")"
is "$(sed -n 's/^silent closed //p' "$WORK/flood.out")" $NSILENT \
	"and all $NSILENT silent ones (authentication deadline, or pushed out by newer ones)"
LOG=$(cat "$POOL"/element-"$ARRAY"_0.log)
is "$(grep -c 'closing a connection: a frame of 16777216 bytes before authentication' <<<"$LOG")" \
	$NBIG "each big frame refused from its header, one log line each"
evicted=$(sed -n 's/.*, and \([0-9]*\) beyond the .* that may wait for it at once$/\1/p' <<<"$LOG" |
	awk '{ n += $1 } END { print n + 0 }')
ok "$([ "$evicted" -ge $((NSILENT - 64)) ]; echo $?)" \
	"more than the 64 waiting at once: the oldest were closed ($evicted)" ||
	fail_detail "$(grep 'did not authenticate' <<<"$LOG")"
like "$LOG" "closed [0-9]+ connections that did not authenticate within 10 s" \
	"the rest at the 10 s deadline, in one log line"
is "$(infer status | grep -c '^WKR')" 1 "the pool still serves its owner"
infer pool stop >/dev/null 2>&1
done_testing
