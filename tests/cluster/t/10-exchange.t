#!/bin/bash
# The address exchange of --dl-runtime=mxnet|torch on real steps, with the default carrier
# (auto: Slurm's PMIx here, where MpiDefault=pmix; srun's rendezvous with --mpi=none; t/88
# runs every runtime through both): every task learns the root's numeric address and a
# port checked free on the root's node, the address is reachable from the other nodes (a
# real ps-lite-contract job and a real torch.distributed gloo all_reduce across 3 nodes),
# concurrent steps get different ports, a step without PMIx (--mpi=none) gets the same
# exchange, and dlrt-kv's waits end with the ranks that are missing.
. "$(dirname "$0")/../lib.sh"

PRINT='echo T=$SLURM_PROCID N=$SLURMD_NODENAME IPS="$(hostname -I | tr " " ,)" R=$DMLC_ROLE U=$DMLC_PS_ROOT_URI P=$DMLC_PS_ROOT_PORT H=$DMLC_NODE_HOST MA=$MASTER_ADDR MP=$MASTER_PORT'

field() { # field LINE NAME
	echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# --- mxnet: every task agrees on the scheduler's address, which is task 0's node
run_srun -N3 -n7 --dl-runtime=mxnet bash -c "$PRINT"
is "$RC" 0 "mxnet -N3 -n7: the step ran with the exchange"
is "$(grep -c '^T=' "$OUT")" 7 "mxnet: all 7 tasks printed"
t0=$(grep '^T=0 ' "$OUT")
uri=$(field "$t0" U)
port=$(field "$t0" P)
like "$uri" '^10\.77\.[0-9]+\.[0-9]+$' "mxnet: DMLC_PS_ROOT_URI '$uri' is a numeric address of the cluster network"
is "$(field "$t0" H)" "$uri" "mxnet: the root URI is the scheduler's own node address"
like "$port" '^[0-9]+$' "mxnet: DMLC_PS_ROOT_PORT '$port' is numeric"
is "$(grep -c " U=$uri P=$port " "$OUT")" 7 "mxnet: every task got the same root address and port"
bad=0
while read -r line; do
	h=$(field "$line" H)
	case ",$(field "$line" IPS)," in *",$h,"*) ;; *)
		bad=1
		echo "#   $line"
		;;
	esac
done <"$OUT"
ok $bad "mxnet: every task's DMLC_NODE_HOST is an address of its own node"
is "$(grep -o ' N=n[0-9]* ' "$OUT" | sort -u | wc -l)" 3 "mxnet: the step spans 3 nodes"

# --- many tasks per node: one PMIx client per node, the node's other tasks read its answer
run_srun -N3 -n24 -O --dl-runtime=mxnet bash -c 'echo "N=$SLURMD_NODENAME R=$DMLC_PS_ROOT_URI:$DMLC_PS_ROOT_PORT H=$DMLC_NODE_HOST"'
is "$RC" 0 "mxnet -N3 -n24: the step ran"
is "$(grep -c '^N=' "$OUT")" 24 "all 24 tasks printed"
is "$(grep -o ' R=[0-9.]*:[0-9]*' "$OUT" | sort -u | wc -l)" 1 "all 24 tasks got the same root address"
is "$(grep -o '^N=n[0-9]* .* H=[0-9.]*$' "$OUT" | sed 's/ R=[^ ]*//' | sort -u | wc -l)" 3 "each node's tasks agree on their node's address (3 nodes, 3 addresses)"

# --- the address is reachable across nodes: a real ps-lite-contract job
run_srun -N3 -n6 --dl-runtime=mxnet --dl-servers=2 "$TESTS_BIN/pslite_contract" --timeout-s 20
is "$RC" 0 "ps-lite contract job across 3 nodes with no address typed by the user"
is "$(grep -c 'rounds ok' "$OUT")" 3 "ps-lite: the 3 workers checked every pulled value"
like "$(cat "$OUT")" 'scheduler on n1 .*all finalized' "ps-lite: the scheduler saw everyone finalize"

# --- torch: every rank gets its node's relay to dlrt's store (t/36 covers
# the store itself); a real gloo all_reduce
run_srun -N3 -n4 --dl-runtime=torch bash -c "$PRINT"
is "$RC" 0 "torch -N3 -n4: the step ran with the exchange"
is "$(grep -oE ' MA=[^ ]*' "$OUT" | sort -u)" " MA=127.0.0.1" "torch: MASTER_ADDR is the node relay on loopback"
is "$(grep -oE 'MP=[0-9]+' "$OUT" | sort -u | wc -l)" 3 "torch: one relay port per node (4 ranks, 3 nodes)"
run_srun -N1 -n2 --export=ALL,MASTER_PORT=23456 --dl-runtime=torch printenv MASTER_PORT
is "$(sort -u "$OUT")" 23456 "torch: a MASTER_PORT the user exported wins"
if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
	run_srun -N3 -n3 --dl-runtime=torch /usr/bin/python3 -c '
import torch, torch.distributed as d
d.init_process_group("gloo")
t = torch.ones(1) * (d.get_rank() + 1)
d.all_reduce(t)
print("sum", int(t.item()))'
	is "$RC" 0 "torch gloo init_process_group(env://) across 3 nodes"
	is "$(grep -c '^sum 6$' "$OUT")" 3 "torch: every rank got the all_reduce sum"
else
	ok 1 "python3-torch is installed on the nodes (tests/cluster/install-deps.sh)"
fi

# --- two concurrent mxnet steps in one job get different ports
run_batch -N3 -n12 -O --dl-runtime=mxnet <<'JOB'
#!/bin/bash
for s in a b; do
	srun -N3 -n6 -O bash -c 'echo $DMLC_PS_ROOT_URI:$DMLC_PS_ROOT_PORT; sleep 2' >"step.$s" &
done
wait
sort -u step.a | sed 's/^/A /'
sort -u step.b | sed 's/^/B /'
JOB
is "$RC" 0 "two concurrent mxnet steps in one job ran"
a=$(sed -n 's/^A //p' "$WORK/job.out")
b=$(sed -n 's/^B //p' "$WORK/job.out")
is "$(echo "$a" | wc -l):$(echo "$b" | wc -l)" "1:1" "each step agreed on one root address ($a, $b)"
ok "$([ -n "$a" ] && [ "$a" != "$b" ] && echo 0 || echo 1)" "the concurrent steps got different root ports"

# --- no PMIx: the exchange goes through srun's rendezvous, so it needs none
run_srun -N3 -n4 --mpi=none --dl-runtime=mxnet bash -c "$PRINT"
is "$RC" 0 "--mpi=none: the mxnet step ran with the exchange"
is "$(sed -n 's/.* U=\([^ ]*\) P=\([0-9]*\) .*/\1:\2/p' "$OUT" | sort -u | wc -l)" 1 \
	"--mpi=none: all 4 tasks agree on one root address"
is "$(grep -c '^T=' "$OUT")" 4 "--mpi=none: all 4 tasks printed"
run_srun -N1 -n1 --mpi=none --dl-runtime=torch bash -c 'echo "MA=$MASTER_ADDR MP=$MASTER_PORT"'
like "$(cat "$OUT")" '^MA=[0-9.]+ MP=[0-9]+$' "--mpi=none with torch: MASTER_ADDR and MASTER_PORT set"

# --- bounded waits name the missing ranks (dlrt-kv, the same bridge code)
if [ -n "$NO_PMIX" ]; then
	skip "dlrt-kv's bounded waits: $NO_PMIX"
else
	run_srun -N3 -n3 --mpi=pmix bash -c '[ $SLURM_PROCID = 2 ] && sleep 9; exec dlrt-kv --timeout 3 put a b fence'
	ok "$([ "$RC" -ne 0 ] && echo 0 || echo 1)" "a fence with a late rank fails instead of hanging"
	like "$(cat "$ERR")" 'fence timed out after 3 s; ranks that did not arrive: 2' "the fence timeout names rank 2"
	run_srun -N3 -n3 --mpi=pmix bash -c '[ $SLURM_PROCID = 1 ] && exec sleep 8; exec dlrt-kv --timeout 3 put a b awaitall a'
	like "$(cat "$ERR")" 'tasks 1 did not publish dlrt.a within 3 s' "awaitall names the rank that never published"
fi

done_testing
