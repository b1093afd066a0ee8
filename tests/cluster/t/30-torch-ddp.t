#!/bin/bash
# A real PyTorch training run under `sbatch --dl-runtime=torch` with a plain
# `srun python3 train.py`: a small CNN on Fashion-MNIST (Debian's
# dataset-fashion-mnist) with DistributedDataParallel (gloo, CPU) on 3 nodes x 2
# tasks. No address or port is set by hand: MASTER_ADDR/MASTER_PORT come from
# dlrt. Asserts: all 6 ranks finish, the loss falls (per rank, and on a fixed
# held-out batch), the parameters are bit-identical on every rank, and every
# rank reached dlrt's store through its own node's relay (127.0.0.1, one port
# per node).
. "$(dirname "$0")/../lib.sh"

DATA=/usr/share/datasets/fashion-mnist
if [ ! -r "$DATA/train-images-idx3-ubyte.gz" ] || ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	echo "1..0 # SKIP needs python3-torch and dataset-fashion-mnist (tests/cluster/install-deps.sh)"
	exit 0
fi
cp "$HERE/../../examples/torch_fashion_mnist.py" "$WORK/train.py"

run_batch -N3 --ntasks-per-node=2 -c2 --dl-runtime=torch <<'JOB'
#!/bin/bash
srun /usr/bin/python3 train.py --steps 40
JOB
is "$RC" 0 "sbatch --dl-runtime=torch: DDP training job succeeded"
[ "$RC" -eq 0 ] || diag "$(tail -20 "$WORK/job.err")"
out=$(grep '^RESULT ' "$WORK/job.out")
is "$(wc -l <<<"$out" | tr -d ' ')" 6 "six ranks reported"
is "$(grep -oE 'rank=[0-5] world=6' <<<"$out" | sort -u | wc -l)" 6 "ranks 0-5 of a world of 6"
is "$(grep -oE 'host=n[1-3]' <<<"$out" | sort | uniq -c | awk '{print $1}' | sort -u)" 2 \
	"two ranks on each of the 3 nodes"
fall=$(awk '/^RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	print (v["loss_last"] < 0.8 * v["loss_first"] && v["eval_after"] < 0.8 * v["eval_before"]) ? "falls" : "flat " $0 }' \
	<<<"$out" | sort -u)
is "$fall" "falls" "the loss falls on every rank, and on the held-out batch"
is "$(grep -oE 'params_sha256=[0-9a-f]{64}' <<<"$out" | sort -u | wc -l)" 1 \
	"the parameters are bit-identical on all ranks at the end"
is "$(grep -oE 'master=[^ ]+' <<<"$out" | cut -d: -f1 | sort -u)" "master=127.0.0.1" \
	"every rank's MASTER_ADDR is its node's relay on loopback"
pairs=$(awk '/^RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	print v["host"], v["master"] }' <<<"$out" | sort -u)
is "$(wc -l <<<"$pairs" | tr -d ' '),$(cut -d' ' -f2 <<<"$pairs" | sort -u | wc -l | tr -d ' ')" "3,3" \
	"one relay port per node, the same for the node's two ranks" || fail_detail "$pairs"
done_testing
