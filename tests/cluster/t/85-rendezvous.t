#!/bin/bash
# srun's rendezvous (the store the step's tasks exchange addresses through,
# exchange/rdvclient.h) against another user of the same hosts: it runs as the
# job's user and only while srun does; a stranger cannot read its secret from
# srun, is refused without it, and cannot lock the step out by holding
# connections open; the program never sees the secret. With SrunPortRange in
# slurm.conf it listens inside that range.
. "$(dirname "$0")/../lib.sh"

cat >"$WORK/stranger.py" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
# A wrong answer to the challenge: the rendezvous hangs up, nothing is read.
s = socket.create_connection(("127.0.0.1", port), 5)
s.settimeout(5)
challenge = b""
while len(challenge) < 32:
    chunk = s.recv(32 - len(challenge))
    if not chunk:
        break
    challenge += chunk
s.sendall(b"\0" * 32)
try:
    print("wrong-answer:", "closed" if s.recv(64) == b"" else "answered", flush=True)
except socket.timeout:
    print("wrong-answer: still open", flush=True)
# Then hold 100 silent connections, more than may wait for their answer
# at once, until told to stop.
held = []
for _ in range(100):
    try:
        held.append(socket.create_connection(("127.0.0.1", port), 5))
    except OSError:
        break
print("held:", len(held), flush=True)
sys.stdin.read()
PY
chmod 0644 "$WORK/stranger.py"

# The step waits for its allocation (--begin) while the rendezvous is up.
PRINT='echo T=$SLURM_PROCID U=$DMLC_PS_ROOT_URI P=$DMLC_PS_ROOT_PORT RV=${SLURM_DLRT_RENDEZVOUS:-none}'
as_user srun --begin=now+15 -N3 -n4 --dl-runtime=mxnet --dl-exchange=srun bash -c "$PRINT" >"$OUT" 2>"$ERR" &
SRUN_JOB=$!
RDV_PID=
rdv_found() { # RDV_PID: the rendezvous of this cluster's srun (its SLURM_CONF), not
	# another cluster's run of the same test user
	for p in $(pgrep -u "$DLRT_TEST_USER" -f 'dlrt-c10d-store --bind 0.0.0.0'); do
		pp=$(ps -o ppid= -p "$p" | tr -d ' ')
		tr '\0' '\n' 2>/dev/null <"/proc/$pp/environ" | grep -qx "SLURM_CONF=$SLURM_CONF" && RDV_PID=$p
	done
	[ -n "$RDV_PID" ]
}
wait_until 120 rdv_found
ok "$([ -n "$RDV_PID" ] && echo 0 || echo 1)" "srun started its rendezvous before the step has nodes"
SRUN_PID=$(ps -o ppid= -p "$RDV_PID" 2>/dev/null | tr -d ' ')
is "$(ps -o comm= -p "$SRUN_PID" 2>/dev/null)" srun "the rendezvous is srun's child"
is "$(ps -o user= -p "$RDV_PID" 2>/dev/null)" "$DLRT_TEST_USER" "it runs as the job's user"
PORT=$(ss -Hltnp 2>/dev/null | sed -n "s/.*:\([0-9]*\) .*pid=$RDV_PID,.*/\1/p" | head -1)
ok "$([ -n "$PORT" ] && echo 0 || echo 1)" "it listens (port ${PORT:-none})"

# The secret is in srun's environment only: a stranger cannot read it.
ok "$(as_stranger cat "/proc/$SRUN_PID/environ" >/dev/null 2>&1 && echo 1 || echo 0)" \
	"the stranger cannot read srun's environment"
is "$(stat -c %a "/proc/$SRUN_PID/environ" 2>/dev/null)" 400 "srun's environ is its user's only"

# The stranger's connections while the step waits for its nodes.
mkfifo "$WORK/hold"
chmod 0666 "$WORK/hold"
as_stranger python3 "$WORK/stranger.py" "$PORT" <"$WORK/hold" >"$WORK/stranger.out" 2>&1 &
STRANGER_JOB=$!
exec 9>"$WORK/hold"
wait_until 60 grep -sq '^held:' "$WORK/stranger.out"
is "$(sed -n 's/^wrong-answer: //p' "$WORK/stranger.out")" closed "a wrong answer is hung up on"
like "$(sed -n 's/^held: //p' "$WORK/stranger.out")" '^[0-9]+$' "the stranger holds its connections open"

wait "$SRUN_JOB"
RC=$?
exec 9>&-
wait "$STRANGER_JOB"
is "$RC" 0 "the step ran, with the stranger's connections held open"
is "$(grep -c '^T=' "$OUT")" 4 "all 4 tasks started"
is "$(sed -n 's/.* U=\([^ ]*\) P=\([0-9]*\) .*/\1:\2/p' "$OUT" | sort -u | wc -l)" 1 \
	"all 4 tasks got the same root address"
is "$(grep -c 'RV=none$' "$OUT")" 4 "no program sees the rendezvous' secret"
wait_until 5 pid_gone "$RDV_PID"
ok "$(kill -0 "$RDV_PID" 2>/dev/null && echo 1 || echo 0)" "the rendezvous ended with srun"

# SrunPortRange in slurm.conf (sites firewall their login nodes to it): the
# rendezvous listens inside it. srun reads a copy of the cluster's slurm.conf
# with the line added (every other path in it is absolute).
LO=47200 HI=47209
{ cat "$SLURM_CONF"; echo "SrunPortRange=$LO-$HI"; } >"$WORK/slurm.conf"
chmod 0644 "$WORK/slurm.conf"
timeout -k 5 "$JOB_TIMEOUT" runuser -u "$DLRT_TEST_USER" -- env SLURM_CONF="$WORK/slurm.conf" \
	PATH="$PATH" HOME="$WORK" srun --begin=now+3 -N3 -n4 --dl-runtime=mxnet --dl-exchange=srun bash -c "$PRINT" \
	>"$OUT" 2>"$ERR" &
SRUN_JOB=$!
RPORT=
rport_found() { # RPORT: the port of the rendezvous of the srun run with $WORK/slurm.conf
	for p in $(pgrep -u "$DLRT_TEST_USER" -f 'dlrt-c10d-store --bind 0.0.0.0'); do
		pp=$(ps -o ppid= -p "$p" | tr -d ' ')
		tr '\0' '\n' 2>/dev/null <"/proc/$pp/environ" |
			grep -qx "SLURM_CONF=$WORK/slurm.conf" &&
			RPORT=$(ss -Hltnp 2>/dev/null | sed -n "s/.*:\([0-9]*\) .*pid=$p,.*/\1/p" | head -1)
	done
	[ -n "$RPORT" ]
}
wait_until -i 0.05 30 rport_found
ok "$([ -n "$RPORT" ] && [ "$RPORT" -ge "$LO" ] && [ "$RPORT" -le "$HI" ]; echo $?)" \
	"with SrunPortRange=$LO-$HI the rendezvous listens inside it (port ${RPORT:-none})"
wait "$SRUN_JOB"
is "$?" 0 "and the step exchanges through it" || fail_detail "$(srun_errors | head -3)"
is "$(grep -c '^T=' "$OUT")" 4 "all 4 tasks started"

done_testing
