#!/bin/bash
# Only the job's own processes reach torch's c10d store. dlrt hosts it
# (dlrt-c10d-store, behind the step secret) and every rank is a client through
# its node's relay (MASTER_ADDR=127.0.0.1, TORCHELASTIC_USE_AGENT_STORE=True).
# A real torch step (init_process_group(env://), a key set through its store,
# a barrier) runs while another user (the stranger) on the SAME node runs
# torch's own TCPStore client against the relay's port and against the
# store's real address: it reads nothing, writes nothing, and is disconnected
# within its short timeouts; the job's key is intact. Before, rank 0 hosted
# torch's TCPStore on every address with no authentication, and the stranger
# read and overwrote the job's keys at MASTER_ADDR:MASTER_PORT.
# Last: a user who exports MASTER_PORT keeps torch's own store (rank 0).
. "$(dirname "$0")/../lib.sh"

/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
	{ echo "1..0 # SKIP needs python3-torch (tests/cluster/install-deps.sh)"; exit 0; }
getent passwd "$STRANGER" >/dev/null ||
	{ echo "1..0 # SKIP no user $STRANGER: bring the cluster up again"; exit 0; }
CLUSTER="$HERE/cluster.sh"

cat >"$WORK/task.py" <<PY
import datetime, os, sys, time
import torch.distributed as d
d.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=120))
store = d.distributed_c10d._get_default_store()
rank = d.get_rank()
if rank == 0:
    store.set("victim-key", "victim-value")
    with open("$WORK/relay.tmp", "w") as f:
        f.write(os.environ["MASTER_ADDR"] + " " + os.environ["MASTER_PORT"] + "\n")
    os.rename("$WORK/relay.tmp", "$WORK/relay")
d.barrier()
for _ in range(1200):
    if os.path.exists("$WORK/probe.done"):
        break
    time.sleep(0.1)
print("rank %d got: %s" % (rank, store.get("victim-key").decode()), flush=True)
d.barrier()
PY

as_user srun -w n1,n2 -N2 -n2 --dl-runtime=torch /usr/bin/python3 "$WORK/task.py" >"$OUT" 2>"$ERR" &
srun_pid=$!
wait_until 120 test -s "$WORK/relay"
read -r rhost rport <"$WORK/relay" 2>/dev/null
is "$rhost" "127.0.0.1" "rank 0 reaches the store through its node's relay (port ${rport:-none})"
store=$("$CLUSTER" exec n1 ss -Hltnp 2>/dev/null | awk '/dlrt-c10d-stor/ {print $4; exit}')
shost=${store%:*} sport=${store##*:}
like "$store" "^10\.77\.[0-9]+\.11:[0-9]+$" "dlrt-c10d-store listens on n1's address ($store)"

# The stranger on n1 (the store's node, where rank 0 runs), with torch's own
# client and short timeouts: whatever happens must end, and show nothing.
probe() { # probe HOST PORT: get, set, num_keys, each by a fresh TCPStore client
	local what
	for what in get set num_keys; do
		on_node n1 "$STRANGER" timeout 60 /usr/bin/python3 -c '
import datetime, sys
import torch.distributed as d
host, port, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    s = d.TCPStore(host, port, None, False, datetime.timedelta(seconds=3))
    if what == "get":
        for k in ("victim-key", "/worker/attempt_0/default_pg/victim-key"):
            print("get", k, s.get(k))
    elif what == "set":
        s.set("/worker/attempt_0/default_pg/victim-key", "evil")
        print("set done", s.get("/worker/attempt_0/default_pg/victim-key"))
    else:
        print("num_keys", s.num_keys())
except Exception as e:
    print(what, "refused:", type(e).__name__, str(e).splitlines()[0][:80] if str(e) else "")
' "$1" "$2" "$what" 2>&1 | tail -1
		[ "${PIPESTATUS[0]}" -ne 124 ] || echo "$what: TIMED OUT"
	done
}
for target in "127.0.0.1 ${rport:-1}" "$shost ${sport:-1}"; do
	set -- $target
	what="the stranger on n1 at $1:$2"
	got=$(probe "$1" "$2")
	diag "$what: $(tr "\n" ";" <<<"$got")"
	unlike "$got" "TIMED OUT" "$what: every attempt ends within its timeout" ||
		fail_detail "got: $got"
	unlike "$got" "victim-value" "$what: reads nothing of the job" || fail_detail "got: $got"
	unlike "$got" "set done b'evil'" "$what: writes nothing" || fail_detail "got: $got"
	unlike "$got" "num_keys [0-9]" "$what: cannot even count the keys" || fail_detail "got: $got"
done
# A raw connection to the relay is closed before any byte is answered.
raw=$(on_node n1 "$STRANGER" timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/${rport:-1} || exit 9
	printf '\x06' >&3; echo connected, read \$(cat <&3 2>/dev/null | wc -c) bytes" 2>/dev/null)
is "$raw" "connected, read 0 bytes" "the relay closes the stranger's connection without a byte"

touch "$WORK/probe.done"
wait "$srun_pid"
is "$?" 0 "the torch step succeeded" || fail_detail "$(tail -5 "$ERR")"
is "$(grep -c 'got: victim-value$' "$OUT")" 2 \
	"both ranks (n1 and n2, each through its node's relay) read the job's key intact"

# A user who exports MASTER_PORT: torch's own store on rank 0, as without dlrt.
port=$((30000 + RANDOM % 2000))
run_srun -w n1,n2 -N2 -n2 --export=ALL,MASTER_PORT=$port --dl-runtime=torch /usr/bin/python3 -c '
import datetime, os, torch, torch.distributed as d
d.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=120))
t = torch.ones(1); d.all_reduce(t)
print("MA=%s MP=%s AGENT=%s sum=%d" % (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"],
      os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "-"), t.item()))'
is "$RC" 0 "a user's own MASTER_PORT: the step runs" || fail_detail "$(tail -5 "$ERR")"
is "$(grep -cE "^MA=10\.77\.[0-9]+\.11 MP=$port AGENT=- sum=2$" "$OUT")" 2 \
	"rank 0's node and the user's port, no agent store: torch's own rendezvous" ||
	fail_detail "$(head -3 "$OUT")"
done_testing
