#!/bin/bash
# dlrt-infer owner-only access: every connection proves it is the pool owner,
# with MUNGE (munged of the cluster) or, where MUNGE is not used, with a
# challenge-response over the pool secret. A process of another local user, a
# forged proof and a replayed proof are refused, each with one log line; the
# pool keeps serving its owner. The attacker is an independent client
# (Python, the munge command), not dlrt's own code.
. "$(dirname "$0")/../lib.sh"

T=/usr/share/datasets/fashion-mnist
STRANGER=${DLRT_STRANGER_USER:-dlrtu2}
if ! getent passwd "$STRANGER" >/dev/null; then
	echo "1..0 # SKIP no user $STRANGER: bring the cluster up again (tests/cluster/cluster.sh up)"
	exit 0
fi

cat >"$WORK/client.py" <<'PY'
# client.py ADDR PORT EPOCH ACTION [FILE|SECRET]: one connection; prints the outcome.
import hashlib, hmac, os, socket, struct, subprocess, sys
addr, port, epoch, action = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
arg = sys.argv[5] if len(sys.argv) > 5 else ''
VERSION = @DLRT_IP_VERSION@  # inference/proto/proto.h's, put in below
HELLO, WELCOME, ERROR, CHALLENGE, AUTH = 1, 2, 15, 21, 22
ROLE_CLIENT = 2
def s(x): return struct.pack('<I', len(x)) + x
def frame(t, p): return struct.pack('<IHH', len(p) + 4, VERSION, t) + p
c = socket.create_connection((addr, port), timeout=10)
buf = b''
def recv():
    global buf
    while True:
        if len(buf) >= 8:
            n, _, t = struct.unpack('<IHH', buf[:8])
            if len(buf) >= 4 + n:
                p, buf = buf[8:4 + n], buf[4 + n:]
                return t, p
        b = c.recv(65536)
        if not b:
            return None, b''
        buf += b
c.sendall(frame(HELLO, struct.pack('<BQ', ROLE_CLIENT, epoch) + s(b'attacker')))
t, p = recv()
if t != CHALLENGE:
    print('no challenge:', t); sys.exit(0)
mode, snonce = p[0], p[1:33]
cnonce = os.urandom(32)
transcript = b'DLRT-INFER-AUTH1' + bytes([mode]) + snonce + cnonce + bytes([ROLE_CLIENT]) + \
    struct.pack('<Q', epoch)
if action == 'munge':            # a fresh credential of whoever runs this
    proof = subprocess.run(['munge'], input=transcript, capture_output=True, check=True).stdout.strip()
    open(arg, 'wb').write(proof)
elif action == 'forge-munge':    # a fresh credential, one character changed
    proof = bytearray(subprocess.run(['munge'], input=transcript, capture_output=True,
                                     check=True).stdout.strip())
    i = len(proof) // 2
    proof[i] = ord('A') if proof[i] != ord('A') else ord('B')
    proof = bytes(proof)
elif action == 'secret':         # HMAC of this connection's transcript
    proof = hmac.new(arg.encode(), transcript, hashlib.sha256).hexdigest().encode()
    open(os.environ['SAVE'], 'wb').write(cnonce + proof)
elif action == 'forge-secret':   # a guess at the secret
    proof = hmac.new(b'0' * 64, transcript, hashlib.sha256).hexdigest().encode()
elif action == 'replay':         # what an earlier connection sent
    data = open(arg, 'rb').read()
    if mode == 2:
        cnonce, proof = data[:32], data[32:]
    else:
        proof = data
c.sendall(frame(AUTH, bytes([mode]) + cnonce + s(proof)))
t, p = recv()
if t == WELCOME:
    print('mode %d: WELCOME' % mode)
elif t == ERROR:
    print('mode %d: refused: %s' % (mode, p[4:].decode(errors='replace')))
else:
    print('mode %d: closed (%s)' % (mode, t))
PY
# The frames carry the protocol version this tree speaks.
V=$(sed -n 's/^#define DLRT_IP_VERSION \([0-9]*\).*/\1/p' "$HERE/../../inference/proto/proto.h")
sed -i "s/@DLRT_IP_VERSION@/${V:-0}/" "$WORK/client.py"
chmod 0644 "$WORK/client.py"

pool_has_worker() { # pool_has_worker DIR: a worker joined the pool of DIR
	[ "$(as_user env DLRT_INFER_POOL="$1" dlrt-infer status 2>/dev/null |
		grep -cE '^[0-9]+ +n[1-3]/')" -ge 1 ]
}
start_pool() { # start_pool DIR AUTH: one worker; sets ARRAY, address, port, epoch
	ARRAY=$(as_user env DLRT_INFER_POOL="$1" DLRT_INFER_AUTH="$2" dlrt-infer pool start \
		--workers 1 -- -c 1)
	wait_until -i 0.5 120 pool_has_worker "$1"
	eval "$(sed -n 's/^\(address\|port\|epoch\)=/\1=/p' "$1/access")"
}
owner() { as_user python3 "$WORK/client.py" "$address" "$port" "$epoch" "$@"; }
stranger() {
	timeout -k 5 60 runuser -u "$STRANGER" -- python3 "$WORK/client.py" "$address" "$port" \
		"$epoch" "$@"
}
refusals() { grep -c 'closing a connection: authentication refused' "$1"/element-*_0.log; }

# ---- MUNGE (the default where munged answers) ------------------------------------
P1=$WORK/pool-munge
start_pool "$P1" auto
A1=$ARRAY
like "$(cat "$P1"/element-"$A1"_0.log)" "connections authenticate with MUNGE \(pool owner uid $(id -u "$DLRT_TEST_USER") only\)" \
	"with munged running, the coordinator uses MUNGE"
like "$(as_user env DLRT_INFER_POOL="$P1" dlrt-infer status)" 'n[1-3]/[0-9]+_1' \
	"dlrt-infer's own worker and client authenticate with MUNGE"
touch "$WORK/cred" && chown "$DLRT_TEST_USER": "$WORK/cred"
is "$(owner munge "$WORK/cred")" "mode 1: WELCOME" \
	"the owner's fresh MUNGE credential (made by the munge command) is accepted"
like "$(owner replay "$WORK/cred")" "^mode 1: refused: replayed MUNGE credential" \
	"the same credential on a second connection is refused as replayed"
like "$(owner forge-munge)" "^mode 1: refused: forged or corrupt MUNGE credential" \
	"a forged credential is refused"
cp "$WORK/cred" "$WORK/cred2" && chown "$STRANGER": "$WORK/cred2"
like "$(stranger munge "$WORK/cred2")" \
	"^mode 1: refused: MUNGE credential of uid $(id -u "$STRANGER"), not the pool owner" \
	"a process of another local user ($STRANGER) is refused"
ok "$(timeout 30 runuser -u "$STRANGER" -- env DLRT_INFER_POOL="$P1" PATH="$PATH" \
	dlrt-infer status >/dev/null 2>&1; [ $? -ne 0 ]; echo $?)" \
	"another user's dlrt-infer cannot use the pool"
is "$(refusals "$P1")" 3 "each refusal is one line in the coordinator's log"
diag "$(grep 'authentication refused' "$P1"/element-*_0.log)"
J=$(as_user env DLRT_INFER_POOL="$P1" dlrt-infer submit --model lenet5 \
	--inputs $T/t10k-images-idx3-ubyte.gz --count 100 --batch 10)
as_user env DLRT_INFER_POOL="$P1" dlrt-infer wait "$J" >/dev/null
ok $? "the pool keeps serving its owner"
as_user env DLRT_INFER_POOL="$P1" dlrt-infer pool stop >/dev/null

# ---- the pool secret's challenge-response (no MUNGE) -----------------------------
P2=$WORK/pool-secret
start_pool "$P2" secret
A2=$ARRAY
like "$(cat "$P2"/element-"$A2"_0.log)" "authenticate with the pool secret's challenge-response \(MUNGE not used: DLRT_INFER_AUTH=secret\)" \
	"DLRT_INFER_AUTH=secret forces the secret's challenge-response"
like "$(as_user env DLRT_INFER_POOL="$P2" dlrt-infer status)" 'n[1-3]/[0-9]+_1' \
	"dlrt-infer's own worker and client authenticate with the secret"
secret=$(sed -n 's/^secret=//p' "$P2/access")
touch "$WORK/mac" && chown "$DLRT_TEST_USER": "$WORK/mac"
is "$(as_user env SAVE="$WORK/mac" python3 "$WORK/client.py" "$address" "$port" "$epoch" secret "$secret")" \
	"mode 2: WELCOME" "the owner's proof (HMAC of the challenge with the access record's secret) is accepted"
like "$(owner replay "$WORK/mac")" "^mode 2: refused: wrong proof of the pool secret" \
	"the same proof on a second connection is refused (replayed)"
like "$(owner forge-secret)" "^mode 2: refused: wrong proof of the pool secret" \
	"a proof made with a guessed secret is refused (forged)"
like "$(stranger forge-secret)" "^mode 2: refused: wrong proof" \
	"a process of another local user, which cannot read the secret, is refused"
ok "$(runuser -u "$STRANGER" -- cat "$P2/access" >/dev/null 2>&1; [ $? -ne 0 ]; echo $?)" \
	"another user cannot read the access record"
is "$(refusals "$P2")" 3 "each refusal is one line in the coordinator's log"
J=$(as_user env DLRT_INFER_POOL="$P2" dlrt-infer submit --model lenet5 \
	--inputs $T/t10k-images-idx3-ubyte.gz --count 100 --batch 10)
as_user env DLRT_INFER_POOL="$P2" dlrt-infer wait "$J" >/dev/null
ok $? "the pool keeps serving its owner"
as_user env DLRT_INFER_POOL="$P2" dlrt-infer pool stop >/dev/null

wait_until -i 0.5 60 eval '[ -z "$(squeue -h -j "$A1,$A2" 2>/dev/null)" ]'
is "$(squeue -h -j "$A1,$A2" 2>/dev/null | wc -l)" 0 "both pools ended"
done_testing
