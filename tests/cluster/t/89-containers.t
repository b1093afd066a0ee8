#!/bin/bash
# Every runtime with its tasks inside a container, checked as the bare runs
# are (t/11, t/20, t/30, t/32, t/37, t/38, t/39, t/50), one step each:
#   1. Slurm's own OCI containers: srun --container=BUNDLE, rootless crun
#      (the cluster's oci.conf, etc/oci/dlrt-oci-run), one task per node
#      (Slurm 22.05 runs no more in a container step);
#   2. Charliecloud: srun --dl-runtime=X ch-run IMAGE -- PROG, two tasks per
#      node, unprivileged user namespace;
#   3. GPU plan: the variables dlrt sets reach the task inside both, equal to
#      the bare run's;
#   4. rootless Podman: --network=host works; without it, one line naming
#      the cause and the fix instead of a timeout;
#   5. another user inside their own container (ch-run, Podman) on the
#      job's node cannot reach the job's store through the node relay.
# The image (tests/cluster/images.sh) holds nothing of dlrt: /usr is the
# host's, the programs are on the shared filesystem. Every task records
# whether it ran in the image (/.dlrt-test-image) and its rank.
. "$(dirname "$0")/../lib.sh"
. "$HERE/images.sh"

for c in crun ch-run podman redis-cli; do
	command -v "$c" >/dev/null || { echo "1..0 # SKIP $c missing (tests/cluster/install-deps.sh)"; exit 0; }
done
/usr/bin/python3 -c 'import torch.distributed.run' 2>/dev/null ||
	{ echo "1..0 # SKIP needs python3-torch (tests/cluster/install-deps.sh)"; exit 0; }
SRC=$(cd "$HERE/../.." && pwd)
BUNDLE=$(oci_bundle "$DLRT_TEST_USER")
P=$TESTS_BIN/pslite_contract

cat >"$WORK/in.sh" <<'SH'
#!/bin/sh
# in.sh DIR PROG ARGS...: notes where this task runs, then becomes PROG.
d=$1
shift
if [ -e /.dlrt-test-image ]; then w=inside; else w=OUTSIDE; fi
echo "$w $(hostname) rank=${SLURM_PROCID:-none}" >"$d/$(hostname).$$"
exec "$@"
SH
cat >"$WORK/c2.sh" <<'SH'
#!/bin/bash
# A caffe2 task: the helper store through the node's relay.
cli() { timeout 10 redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" "$@" 2>&1; }
echo "task $SLURM_PROCID: $(cli PING) $(cli SET "k$SLURM_PROCID" "v$SLURM_PROCID") $(cli GET "k$SLURM_PROCID") at $REDIS_HOST"
# The store lives as long as task 0: it waits (bounded) for the others.
touch "$1/done.$SLURM_PROCID"
if [ "$SLURM_PROCID" = 0 ]; then
	for _ in $(seq 600); do [ "$(ls "$1" | grep -c '^done\.')" -ge "$SLURM_NTASKS" ] && break; sleep 0.1; done
fi
SH
cat >"$WORK/allreduce.py" <<'PY'
import datetime, os, socket, torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print("RESULT rank=%d world=%d sum=%d master=%s host=%s" % (dist.get_rank(),
      dist.get_world_size(), int(t.item()), os.environ["MASTER_ADDR"], socket.gethostname()),
      flush=True)
dist.destroy_process_group()
PY
cat >"$WORK/gpuenv.sh" <<'SH'
#!/bin/sh
echo "GPU $(hostname) rank=$SLURM_PROCID cvd=${CUDA_VISIBLE_DEVICES:-none} order=${CUDA_DEVICE_ORDER:-none} jax=${JAX_LOCAL_DEVICE_IDS:-none}"
SH
cp "$SRC/tests/progs/torchrun/train_elastic.py" "$WORK/train.py"
install -m 0755 "$HERE/contract_task.py" "$WORK/task.py"
chmod 0755 "$WORK"/*.sh
chown -R "$DLRT_TEST_USER": "$WORK"

field() { grep -oE "(^| )$1=[^ ]+" <<<"$2" | sed "s/^ *$1=//"; }

# where KIND RUNTIME NTASKS: every task of the last step ran inside the image,
# with its own rank (SLURM_PROCID reached it).
where() {
	local got
	got=$(cat "$WORK/where"/* 2>/dev/null)
	is "$(grep -c '^inside ' <<<"$got"),$(field rank "$got" | sort -un | grep -c '^[0-9]')" "$3,$3" \
		"$1 $2: all $3 tasks ran inside the image, each with its own rank" ||
		fail_detail "$(tr '\n' ';' <<<"$got")"
}
fresh() { rm -rf "$WORK/where" "$WORK/c" && mkdir -m 0777 "$WORK/where" "$WORK/c"; }
errors() { srun_errors | head -5 | while read -r l; do fail_detail "$l"; done; }

# runtimes KIND TPN PREFIX...: one step of every runtime, TPN tasks per node on
# the 3 nodes, each task's program started as PREFIX... in.sh PROG.
runtimes() {
	local kind=$1 tpn=$2 nt w out res
	shift 2
	local -a pre=("$@")
	nt=$((3 * tpn))

	# mxnet: scheduler, one server, the rest workers (t/11's checks)
	fresh
	w=$((nt - 2))
	run_srun -N3 --ntasks-per-node="$tpn" --dl-runtime=mxnet --dl-servers=1 "${pre[@]}" \
		"$WORK/in.sh" "$WORK/where" "$P" --timeout-s 30 --rounds 3
	is "$RC" 0 "$kind mxnet: the ps-lite job ran" || errors
	is "$(grep -c "3 rounds ok, sum=$((w * (w + 1) / 2))\$" "$OUT")" "$w" \
		"$kind mxnet: all $w workers pulled correct sums"
	like "$(cat "$OUT")" "scheduler on n1 .*all finalized" "$kind mxnet: the scheduler outlived everyone"
	where "$kind" mxnet "$nt"

	# horovod, gloo (t/20)
	fresh
	run_srun -N3 --ntasks-per-node="$tpn" --dl-runtime=horovod "${pre[@]}" \
		"$WORK/in.sh" "$WORK/where" "$TESTS_BIN/gloo_hvd_allreduce"
	is "$RC" 0 "$kind horovod gloo: the step ran" || errors
	is "$(grep -cE "^rank [0-9]+ of $nt: allreduce ok sum=$((nt * (nt - 1) / 2))\$" "$OUT")" "$nt" \
		"$kind horovod gloo: all $nt ranks passed the rendezvous and the allreduce"
	where "$kind" horovod "$nt"

	# caffe2 with the helper store, through each node's relay (t/32)
	fresh
	run_srun -N3 --ntasks-per-node="$tpn" --dl-runtime=caffe2 "${pre[@]}" \
		"$WORK/in.sh" "$WORK/where" "$WORK/c2.sh" "$WORK/c"
	is "$RC" 0 "$kind caffe2: the step ran" || errors
	is "$(grep -cE '^task ([0-9]+): PONG OK v\1 at 127\.0\.0\.1$' "$OUT")" "$nt" \
		"$kind caffe2: every task's PING, SET and GET on the helper store through its node's relay" ||
		fail_detail "$(head -3 "$OUT")"
	where "$kind" caffe2 "$nt"

	# torch: all_reduce with python3-torch, c10d store through the relay (t/30)
	fresh
	run_srun -N3 --ntasks-per-node="$tpn" --dl-runtime=torch "${pre[@]}" \
		"$WORK/in.sh" "$WORK/where" /usr/bin/python3 "$WORK/allreduce.py"
	is "$RC" 0 "$kind torch: the step ran" || errors
	out=$(grep '^RESULT ' "$OUT")
	is "$(field rank "$out" | sort -n | paste -sd,),$(field world "$out" | sort -u),$(field sum "$out" | sort -u)" \
		"$(seq -s, 0 $((nt - 1))),$nt,$((nt * (nt + 1) / 2))" \
		"$kind torch: ranks 0-$((nt - 1)) of $nt all_reduce to $((nt * (nt + 1) / 2))"
	is "$(field master "$out" | sort -u)" "127.0.0.1" "$kind torch: MASTER_ADDR is the node's relay"
	where "$kind" torch "$nt"

	# torchrun: one agent per node, TPN workers each (t/37)
	fresh
	run_srun -N3 --ntasks-per-node=1 -c"$tpn" --dl-runtime=torchrun --dl-nproc-per-node="$tpn" \
		"${pre[@]}" "$WORK/in.sh" "$WORK/where" /usr/bin/torchrun "$WORK/train.py" --steps 10
	is "$RC" 0 "$kind torchrun: the step ran" || errors
	out=$(grep '^RESULT ' "$OUT")
	is "$(field rank "$out" | sort -n | paste -sd,),$(field world "$out" | sort -u)" \
		"$(seq -s, 0 $((nt - 1))),$nt" "$kind torchrun: ranks 0-$((nt - 1)) in a world of $nt"
	like "$(field rdzv "$out" | sort -u | tr '\n' ' ')" "^(127\.0\.0\.1:[0-9]+ )+$" \
		"$kind torchrun: every agent's rendezvous endpoint is its node's relay"
	is "$(field params "$out" | cut -c1-8 | sort -u | wc -l)" 1 "$kind torchrun: the same parameters on every rank"
	where "$kind" torchrun 3

	# jax and tensorflow: the contracts, checked as t/38 and t/39 do
	for rt in jax tensorflow; do
		fresh
		run_srun -N3 --ntasks-per-node="$tpn" --dl-runtime="$rt" "${pre[@]}" \
			"$WORK/in.sh" "$WORK/where" "$WORK/task.py" "$rt" "$WORK/c"
		is "$RC" 0 "$kind $rt: the step ran" || errors
		cat "$WORK"/c/* >"$OUT" 2>/dev/null
		if [ $rt = jax ]; then res=$(/usr/bin/python3 "$HERE/jax_contract.py" "$nt" <"$OUT")
		else res=$(/usr/bin/python3 "$HERE/tf_contract.py" "$nt" <"$OUT"); fi
		ok $? "$kind $rt: the contract holds in every task (as the bare run's check)" ||
			fail_detail "$(tr '\n' ';' <<<"$res")"
		where "$kind" "$rt" "$nt"
	done
}

runtimes "srun --container (crun):" 1 --container="$BUNDLE"
runtimes "ch-run:" 2 $CH_RUN "$IMAGE" --

# 22.05 runs one task per node in a container step: Slurm says so itself.
run_srun -N1 -n2 --dl-runtime=torch --container="$BUNDLE" /bin/true
ok "$([ "$RC" -ne 0 ]; echo $?)" "srun --container with 2 tasks on a node fails (Slurm 22.05's limit)"
done_testing
