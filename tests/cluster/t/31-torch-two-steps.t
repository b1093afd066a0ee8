#!/bin/bash
# Two torch steps at once in one job, each on all 3 nodes with rank 0 on n1:
# each gets its own store (dlrt-c10d-store) and node relays, and both train. Every
# task of each step first waits (bounded) until all tasks of the other step
# exist, so the two steps really overlap.
. "$(dirname "$0")/../lib.sh"

if ! /usr/bin/python3 -c 'import torch' 2>/dev/null ||
	[ ! -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
	echo "1..0 # SKIP needs python3-torch and dataset-fashion-mnist"
	exit 0
fi
cp "$HERE/../../examples/torch_fashion_mnist.py" "$WORK/train.py"
cat >"$WORK/meet.sh" <<'SH'
#!/bin/bash
# meet.sh ME OTHER CMD...: announce this task, wait up to 60 s for the other step's 3 tasks.
me=$1 other=$2; shift 2
touch "sync.$me.$SLURM_PROCID"
. ./wait_until.sh
wait_until -i 0.1 60 eval '[ "$(ls sync.$other.* 2>/dev/null | wc -l)" -ge 3 ]' && exec "$@"
echo "step $me: the other step never started" >&2
exit 1
SH
chmod 0755 "$WORK/meet.sh"

run_batch -N3 --ntasks-per-node=2 -c2 --dl-runtime=torch <<'JOB'
#!/bin/bash
srun --exact -N3 -n3 --ntasks-per-node=1 -c2 ./meet.sh a b /usr/bin/python3 train.py --steps 10 >a.out 2>a.err &
srun --exact -N3 -n3 --ntasks-per-node=1 -c2 ./meet.sh b a /usr/bin/python3 train.py --steps 10 >b.out 2>b.err &
wait %1; r1=$?
wait %2; r2=$?
echo "rc $r1 $r2"
JOB
is "$RC" 0 "the job finished"
is "$(grep '^rc ' "$WORK/job.out")" "rc 0 0" "both torch steps succeeded"
[ -s "$WORK/a.err" ] && diag "$(tail -5 "$WORK/a.err")"
[ -s "$WORK/b.err" ] && diag "$(tail -5 "$WORK/b.err")"
for s in a b; do
	is "$(grep -c '^RESULT ' "$WORK/$s.out")" 3 "step $s: three ranks reported"
	is "$(grep -oE 'params_sha256=[0-9a-f]+' "$WORK/$s.out" | sort -u | wc -l)" 1 \
		"step $s: parameters identical on its ranks"
done
ma=$(grep -oE 'master=[^ ]+' "$WORK/a.out" | sort -u) mb=$(grep -oE 'master=[^ ]+' "$WORK/b.out" | sort -u)
is "$(cut -d: -f1 <<<"$ma$(echo; echo "$mb")" | sort -u)" "master=127.0.0.1" \
	"both steps' ranks reach their store through their node's relay"
is "$(printf '%s\n%s\n' "$ma" "$mb" | sort -u | wc -l)" 6 \
	"six relays: one per node and step, no port shared between the steps"
done_testing
