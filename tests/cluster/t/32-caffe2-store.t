#!/bin/bash
# The Caffe2 helper store (dlrt-store) as the plugin starts it, with real redis-cli
# (redis-tools) from the nodes:
#   - it listens before any task starts (every task's first PING, without retry, works);
#   - every supported command and its error replies (tests/fixtures/resp_cases.bash,
#     redis-server 7.0.15's replies) from the master's node;
#   - from another node of the step: a huge bulk length and malformed input get
#     Redis's protocol error and a close, a client stalled mid-command stalls nobody;
#   - a node of the job outside the step is refused;
#   - it is gone when the step ends;
#   - a REDIS_HOST the user exported means their redis (no helper), unless
#     --dl-store=helper.
. "$(dirname "$0")/../lib.sh"

command -v redis-cli >/dev/null || { echo "1..0 # SKIP redis-cli missing (redis-tools)"; exit 0; }
cp "$HERE/../fixtures/resp_cases.bash" "$WORK/"
cat >"$WORK/c2task.sh" <<'SH'
#!/bin/bash
# Runs in each task of the caffe2 step: task 0 (master, n1) the command list,
# task 1 (n2) the abuse; each waits (bounded) for the other and for the probe.
cli() { timeout 5 redis-cli --no-raw -h "$REDIS_HOST" -p "$REDIS_PORT" "$@" 2>&1; }
. ./wait_until.sh
wait_for() { wait_until 30 test -e "$1" || echo "timeout waiting for $1"; }
echo "task $SLURM_PROCID first PING: $(cli PING)"
if [ "$SLURM_PROCID" = 0 ]; then
	. ./resp_cases.bash
	for i in "${!CMDS[@]}"; do
		eval "set -- ${CMDS[$i]}"
		got=$(cli "$@")
		[[ ${CMDS[$i]} == KEYS* ]] && got=$(sed 's/^[0-9]*) //' <<<"$got" | sort)
		if [ "$got" == "${WANT[$i]}" ]; then echo "case ok: ${CMDS[$i]}"
		else echo "case FAILED: ${CMDS[$i]}: got $(printf %q "$got") want $(printf %q "${WANT[$i]}")"; fi
	done
	echo "$REDIS_HOST $REDIS_PORT" >addr.tmp && mv addr.tmp addr
	wait_for abuse.done
	wait_for probe.done
else
	exec 5<>"/dev/tcp/$REDIS_HOST/$REDIS_PORT"
	printf '*3\r\n$5\r\nSETNX\r\n$3\r\nab' >&5          # stops mid-command and stays
	exec 3<>"/dev/tcp/$REDIS_HOST/$REDIS_PORT"
	printf '*1\r\n$99999999999\r\n' >&3
	echo "huge bulk: $(timeout 5 cat <&3 | tr -d '\r') (rc $?)"
	exec 3<>"/dev/tcp/$REDIS_HOST/$REDIS_PORT"
	printf '*x\r\n' >&3
	echo "malformed: $(timeout 5 cat <&3 | tr -d '\r') (rc $?)"
	t0=$(date +%s%N)
	echo "PING while a client is stalled: $(cli PING) in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
	exec 5<&-
	touch abuse.done
	wait_for addr
fi
SH
chmod 0755 "$WORK/c2task.sh"

run_batch -N3 -c2 <<'JOB'
#!/bin/bash
srun -N2 -n2 -w n1,n2 --dl-runtime=caffe2 ./c2task.sh >s1.out 2>s1.err &
. ./wait_until.sh
wait_until 30 test -s addr
read -r host port <addr
echo "store at $host:$port"
# The tasks' address is their node's relay; the store itself listens on n1's
# address (this script runs on n1, and ss shows the user's own processes).
read -r host port < <(ss -Hltnp 2>/dev/null | awk '/dlrt-store/ {sub(/:/, " ", $4); print $4; exit}')
echo "the store itself at $host:$port"
srun -N1 -n1 -w n3 bash -c "echo \"outside PING: \$(timeout 5 redis-cli -h $host -p $port PING 2>&1)\"; touch probe.done"
wait %1
echo "step rc $?"
sleep 0.5
echo "after the step: $(timeout 5 redis-cli -h $host -p $port PING 2>&1)"
JOB
is "$RC" 0 "the job ran"
out=$(cat "$WORK/job.out" "$WORK/s1.out")
[ -s "$WORK/s1.err" ] && diag "$(head -5 "$WORK/s1.err")"
grep -E '^(store at|the store itself|outside PING|after the step|huge bulk|malformed|PING while)' <<<"$out" | sed 's/^/# /'
like "$out" "step rc 0" "the caffe2 step succeeded"
is "$(grep -c '^task [01] first PING: PONG$' <<<"$out")" 2 \
	"the helper listened before any task started (first PING, no retry, on both nodes)"
like "$(grep '^store at' <<<"$out")" "^store at 127\.0\.0\.1:[0-9]+$" \
	"REDIS_HOST/REDIS_PORT are the node relay's loopback address"
like "$(grep '^the store itself at' <<<"$out")" "^the store itself at 10\.77\.[0-9]+\.11:[0-9]+$" \
	"the store listens on the master's node (n1)"
n=$(grep -c '^case ok: ' <<<"$out")
ok "$([ "$n" -ge 60 ] && ! grep -q '^case FAILED' <<<"$out"; echo $?)" \
	"redis-cli: all $n commands and error replies as redis-server gives them"
grep '^case FAILED' <<<"$out" | head -5 | sed 's/^/# /'
like "$out" "huge bulk: -ERR Protocol error: invalid bulk length \(rc 0\)" \
	"a huge bulk length from another node: Redis's error, then the store closes"
like "$out" "malformed: -ERR Protocol error: invalid multibulk length \(rc 0\)" \
	"malformed input: Redis's error, then close"
like "$out" "PING while a client is stalled: PONG in [0-9]+ ms" "a client stalled mid-command stalls nobody"
unlike "$(grep '^outside PING' <<<"$out")" "PONG" "a node of the job outside the step is refused"
like "$(grep '^outside PING' <<<"$out")" "^outside PING: .+" "(and redis-cli says so)"
unlike "$(grep '^after the step' <<<"$out")" "PONG" "the store is gone when the step ends"

# The user's own redis: REDIS_HOST exported means no helper, unless --dl-store=helper.
cat >"$WORK/show.sh" <<'SH'
#!/bin/bash
echo "REDIS=$REDIS_HOST:$REDIS_PORT"
SH
chmod 0755 "$WORK/show.sh"
run_srun -N2 -n2 --dl-runtime=caffe2 --dl-verbose --export=ALL,REDIS_HOST=10.9.9.9,REDIS_PORT=7000 "$WORK/show.sh"
is "$(sort -u "$OUT")" "REDIS=10.9.9.9:7000" "a user's REDIS_HOST/REDIS_PORT reach the tasks"
unlike "$(cat "$ERR")" "dlrt-store\) listening" "and no helper store was started"
grep 'dlrt' "$ERR" | head -3 | sed 's/^/# /'
run_srun -N2 -n2 --dl-runtime=caffe2 --dl-store=helper --dl-verbose \
	--export=ALL,REDIS_HOST=10.9.9.9,REDIS_PORT=7000 "$WORK/show.sh"
is "$(sed 's/:[0-9]*$//' "$OUT" | sort -u)" "REDIS=127.0.0.1" \
	"--dl-store=helper: the helper's address (through the node relay) replaces the user's"
like "$(cat "$ERR")" "dlrt-store\) listening on 10\.77\.[0-9]+\.11:[0-9]+" "and the helper was started (--dl-verbose)"
grep 'listening' "$ERR" | head -1 | sed 's/^/# /'
done_testing
