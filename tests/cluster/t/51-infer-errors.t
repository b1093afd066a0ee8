#!/bin/bash
# dlrt-infer's errors: one line naming cause and fix, bad input closes only that
# connection, proof of the pool owner is required, failed and cancelled jobs, --help.
. "$(dirname "$0")/../lib.sh"

T=/usr/share/datasets/fashion-mnist
POOL=$WORK/pool
infer() { as_user env DLRT_INFER_POOL="$POOL" dlrt-infer "$@"; }
one_line() { # one_line DESCRIPTION REGEX CMD...: fails with exactly one matching line
	local what=$1 re=$2
	shift 2
	"$@" >"$WORK/o" 2>"$WORK/e"
	local rc=$?
	ok "$([ $rc -ne 0 ] && [ "$(wc -l <"$WORK/e")" -eq 1 ] && grep -Eq -- "$re" "$WORK/e"; echo $?)" \
		"$what (exit $rc: $(head -c 160 "$WORK/e"))"
}

for c in "" submit status wait cancel plot local "pool start" "pool add" "pool stop" \
	"pool restart" "pool run" coordinator worker standby; do
	# shellcheck disable=SC2086
	as_user dlrt-infer $c --help >"$WORK/o" 2>&1
	ok "$([ $? -eq 0 ] && [ -s "$WORK/o" ]; echo $?)" "dlrt-infer $c --help"
done
one_line "submit without --model" "needs --model, --inputs and --batch" infer submit --inputs x
one_line "submit --batch 0" "--batch=0: expected a whole number" infer submit --model lenet5 \
	--inputs $T/t10k-images-idx3-ubyte.gz --batch 0
one_line "status with no pool" "no coordinator has started in .*: start a pool" infer status
one_line "pool restart without a journal" "has no journal: nothing to restart" infer pool restart
one_line "pool run outside the runtime" "must run inside a step of sbatch --dl-runtime=infer" \
	infer pool run
one_line "labels given as inputs" "expected 28x28 images" infer submit --model lenet5 \
	--inputs $T/t10k-labels-idx1-ubyte.gz --batch 4

ARRAY=$(infer pool start --workers 1 -- -c 2)
like "$ARRAY" '^[0-9]+$' "a pool of 1 worker"
wait_until -i 0.5 120 eval '[ "$(infer status 2>/dev/null | grep -cE "^[0-9]+ +n[1-3]/")" -ge 1 ]'
eval "$(sed -n 's/^\(address\|port\|epoch\)=/\1=/p' "$POOL/access")"
like "$address:$port" '^10\.77\.[0-9]+\.[0-9]+:[0-9]+$' "the access record names the coordinator"
ok "$(runuser -u nobody -- cat "$POOL/access" >/dev/null 2>&1; [ $? -ne 0 ]; echo $?)" \
	"another user cannot read the access record"

# Malformed input, another protocol version, a wrong secret, a stale epoch:
# each closes that connection only. V: the version this tree speaks.
V=$(sed -n 's/^#define DLRT_IP_VERSION \([0-9]*\).*/\1/p' "$HERE/../../inference/proto/proto.h")
like "$V" '^[0-9]+$' "the protocol version from inference/proto/proto.h ($V)"
python3 - "$address" "$port" "$epoch" "$V" >"$WORK/raw" 2>&1 <<'PY'
import socket, struct, sys
addr, port, epoch, V = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def s(x): x = x.encode(); return struct.pack('<I', len(x)) + x
def talk(data):
    c = socket.create_connection((addr, port), timeout=5)
    c.sendall(data)
    got = b''
    try:
        while True:
            b = c.recv(4096)
            if not b: break
            got += b
    except socket.timeout:
        return 'open'
    # The last frame's text (an ERROR after the CHALLENGE, if any).
    text = ''
    while len(got) >= 8:
        n, _, t = struct.unpack('<IHH', got[:8])
        if t == 15:
            text = got[12:4 + n].decode(errors='replace')
        got = got[4 + n:]
    return 'closed ' + repr(text)
def hello(ep, v=V):
    p = struct.pack('<BQ', 2, ep) + s('tester')
    return struct.pack('<IHH', len(p) + 4, v, 1) + p
def auth(mode, proof):
    p = bytes([mode]) + bytes(32) + s(proof)
    return struct.pack('<IHH', len(p) + 4, V, 22) + p
print('garbage:', talk(b'GET / HTTP/1.0\r\n\r\n'))
print('version:', talk(struct.pack('<IHH', 4, 9, 1)))
# An older dlrt-infer's client: its HELLO is refused with our version's ERROR
# frame, which that client reports as "protocol version V, ... speaks V-1".
print('older:', talk(hello(epoch, V - 1)))
print('secret:', talk(hello(epoch) + auth(2, '0' * 64) + auth(1, 'MUNGE:x:')))
print('epoch:', talk(hello(epoch + 5)))
PY
like "$(grep '^garbage:' "$WORK/raw")" "closed" "garbage is answered by closing the connection"
like "$(grep '^version:' "$WORK/raw")" "closed" "a wrong protocol version closes the connection"
like "$(grep '^older:' "$WORK/raw")" \
	"closed 'protocol version $((V - 1)), this dlrt-infer speaks $V: run the same dlrt version everywhere'" \
	"a peer of the previous version gets one ERROR line naming both versions and the fix"
like "$(grep '^secret:' "$WORK/raw")" "closed .*(wrong proof|pool uses)" "a wrong proof is refused with a reason"
like "$(grep '^epoch:' "$WORK/raw")" "closed .*stale access record" "a wrong epoch is refused"
infer status >"$WORK/st"
ok $? "the pool still answers status after all that"
# The element's log is written by its own process, but it may reach the file a
# moment after the client saw the connection close: wait for it (bounded).
wait_until 5 grep -q "closing a connection: protocol version 9" "$POOL"/element-"${ARRAY}"_0.log
like "$(cat "$POOL"/element-"${ARRAY}"_0.log)" "closing a connection: protocol version 9" \
	"the coordinator logged why it closed the connection"

# A client facing an older coordinator, which closes the connection on a HELLO
# of another version without a word (as protocol version 2 did): after its
# usual retries (a failover looks the same), one line.
OLD=$WORK/oldpool
as_user mkdir -m 0700 "$OLD"
python3 - "$WORK/oldport" >"$WORK/oldsrv" 2>&1 <<'PY' &
import socket, sys
s = socket.socket()
s.bind(('127.0.0.1', 0))
s.listen(1)
s.settimeout(30)
open(sys.argv[1] + '.tmp', 'w').write(str(s.getsockname()[1]))
__import__('os').rename(sys.argv[1] + '.tmp', sys.argv[1])
n = 0
while True:  # clients retry a closed connection (a failover): hang up on each
    try:
        c, _ = s.accept()
    except socket.timeout:
        break
    s.settimeout(3)
    c.settimeout(5)
    n += len(c.recv(4096))
    c.close()
print('got', n, 'bytes')
PY
OLDSRV=$!
wait_until 5 test -s "$WORK/oldport"
as_user sh -c "umask 077; printf 'epoch=1\naddress=127.0.0.1\nport=%s\n%s\n' '$(cat "$WORK/oldport")' \
	'$(grep '^secret=' "$POOL/access")' >'$OLD/access'"
as_user env DLRT_INFER_POOL="$OLD" dlrt-infer status >"$WORK/old.out" 2>"$WORK/old.err"
ok "$([ $? -ne 0 ]; echo $?)" "status against a coordinator that hangs up on HELLO fails"
is "$(wc -l <"$WORK/old.err")" 1 "with one line"
like "$(cat "$WORK/old.err")" "closed the connection after HELLO: a dlrt of another protocol version\? run the same dlrt version everywhere" \
	"that names the likely cause and the fix"
wait "$OLDSRV"
like "$(cat "$WORK/oldsrv")" "got [1-9][0-9]* bytes" "(the fake old coordinator got the HELLO)"

# A job whose model cannot be loaded fails with the worker's one-line reason.
J=$(infer submit --model nosuchmodel --inputs $T/t10k-images-idx3-ubyte.gz --count 100 --batch 10)
infer wait "$J" >"$WORK/w"
ok "$([ $? -eq 1 ]; echo $?)" "wait on a failed job exits 1"
like "$(cat "$WORK/w")" "job $J failed: 0/100 queries.*nosuchmodel" "it says the model is the cause"

# Cancel: answers recorded so far stay, each once; in-flight ones are dropped.
J=$(infer submit --model deepcnn --inputs $T/train-images-idx3-ubyte.gz --batch 10 --name long)
sleep 1
infer cancel "$J" >"$WORK/c"
is $? 0 "cancel a running job"
infer wait "$J" >"$WORK/w"
ok "$([ $? -eq 1 ]; echo $?)" "wait on a cancelled job exits 1"
like "$(cat "$WORK/w")" "job $J cancelled: [0-9]+/60000" "wait reports the cancellation"
rows=$(($(wc -l <"$POOL/job-$J.csv") - 1))
is "$(tail -n +2 "$POOL/job-$J.csv" | cut -d, -f2 | sort -u | wc -l)" "$rows" \
	"the cancelled job's $rows answers are each there once"
one_line "cancel it again" "already ended" infer cancel "$J"
one_line "wait for a job that does not exist" "no such job" infer wait 999

# An external model: the PyTorch example with the lenet5 weights, started once
# per worker and job, answers as the built-in lenet5 does.
P=$DLRT_CLUSTER_DIR/prefix/share/dlrt
J=$(infer submit --model "ext:/usr/bin/python3 $P/examples/torch_model.py --weights $P/models/lenet5.dlrtw" \
	--inputs $T/t10k-images-idx3-ubyte.gz --count 300 --batch 25)
infer wait "$J" >"$WORK/w"
is $? 0 "a job with an external PyTorch model completed"
as_user dlrt-infer local --model lenet5 --model-dir "$P/models" --inputs $T/t10k-images-idx3-ubyte.gz \
	--count 300 --out "$WORK/ref.csv" 2>/dev/null
tail -n +2 "$POOL/job-$J.csv" | cut -d, -f2,3 | sort -t, -k1n >"$WORK/ext.sorted"
tail -n +2 "$WORK/ref.csv" | cut -d, -f1,2 | sort -t, -k1n >"$WORK/ref.sorted"
is "$(wc -l <"$WORK/ext.sorted")" 300 "300 answers from the external model"
ok "$(cmp -s "$WORK/ext.sorted" "$WORK/ref.sorted"; echo $?)" \
	"its predictions equal the built-in lenet5's"
# Inputs as a list of image files (PGM and raw), relative to the list's folder.
mkdir -p "$WORK/imgs"
python3 - "$T/t10k-images-idx3-ubyte.gz" "$WORK/imgs" <<'PY'
import gzip, sys
d = gzip.open(sys.argv[1]).read()[16:]
with open(sys.argv[2] + '/list.txt', 'w') as lst:
    lst.write('# 40 Fashion-MNIST test images\n')
    for i in range(40):
        px = d[i * 784:(i + 1) * 784]
        name = 'img%02d.%s' % (i, 'pgm' if i % 2 else 'raw')
        with open(sys.argv[2] + '/' + name, 'wb') as f:
            f.write((b'P5\n# from t10k\n28 28\n255\n' if i % 2 else b'') + px)
        lst.write(name + '\n')
PY
chown -R "$DLRT_TEST_USER": "$WORK/imgs"
J=$(infer submit --model lenet5 --inputs "$WORK/imgs/list.txt" --batch 8)
infer wait "$J" >"$WORK/w"
is $? 0 "a job whose inputs are a list of 40 image files completed"
tail -n +2 "$POOL/job-$J.csv" | cut -d, -f2,3 | sort -t, -k1n >"$WORK/list.sorted"
head -40 "$WORK/ref.sorted" >"$WORK/ref40.sorted"
ok "$(cmp -s "$WORK/list.sorted" "$WORK/ref40.sorted"; echo $?)" \
	"its answers equal lenet5's on the same images from the IDX file"
echo "img99.pgm" >>"$WORK/imgs/list.txt"
one_line "a list naming a missing file" "list.txt line 42: cannot read .*img99.pgm" \
	infer submit --model lenet5 --inputs "$WORK/imgs/list.txt" --batch 8
J=$(infer submit --model "ext:/bin/false" --inputs $T/t10k-images-idx3-ubyte.gz --count 10 --batch 5)
infer wait "$J" >"$WORK/w"
like "$(cat "$WORK/w")" "failed: .*model command '/bin/false' did not get READY" \
	"a model command that dies at start fails its job with the reason"

timeout 20 runuser -u "$DLRT_TEST_USER" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" \
	DLRT_INFER_POOL="$POOL" dlrt-infer status --watch --interval 0.2 >"$WORK/watch"
is $? 0 "status --watch ends by itself when no job runs"
like "$(cat "$WORK/watch")" "^JOB +NAME +MODEL +STATE +DONE/TOTAL +PROGRESS +Q/S +WORKERS +ETA" \
	"it shows the job table"

infer pool stop >/dev/null
ok $? "pool stop"
wait_until -i 0.5 60 eval '[ -z "$(squeue -h -j "$ARRAY" 2>/dev/null)" ]'
is "$(squeue -h -j "$ARRAY" 2>/dev/null | wc -l)" 0 "the pool's elements ended"
scancel "$ARRAY" 2>/dev/null
done_testing
