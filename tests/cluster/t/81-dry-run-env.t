#!/bin/bash
# --dl-dry-run prints each task's whole environment, GPU/NIC variables with the rest, in
# the one precedence every task gets (docs/gpu-binding.md): what the user exported, then
# --dl-iface's, then the GPU plan's; and a real task gets exactly those values. Nodes have
# fake GPUs and the fixture topology of t/40 (n1, n2: tests/fixtures/topo/cluster-2s4g.xml:
# GPUs 0-1 and mlx5_0 on package 0, GPUs 2-3 and mlx5_1 on package 1, eth0 the netdev).
. "$(dirname "$0")/../lib.sh"

SRC=$(cd "$HERE/../.." && pwd)
T=$WORK/topo
mkdir -p "$T"
cp "$SRC/tests/fixtures/topo/cluster-2s4g.xml" "$T/"
ln -s cluster-2s4g.xml "$T/n1.xml"
ln -s cluster-2s4g.xml "$T/n2.xml"
VARS="CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER NCCL_IB_HCA UCX_NET_DEVICES NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME"
cat >"$WORK/show.sh" <<EOF
#!/bin/bash
# One line per task: its rank and the variables this test compares.
line="real \$SLURM_PROCID"
for v in $VARS; do line="\$line \$v=\${!v-unset}"; done
echo "\$line"
EOF
chmod 0755 "$WORK/show.sh"
chown -R "$DLRT_TEST_USER": "$T" "$WORK/show.sh"
# -w: only n1 and n2 have the fixture; a step right after another could
# otherwise land on n3 while n2 still completes the last one.
STEP=(-w n1,n2 -N2 --ntasks-per-node=2 -c8 --exclusive --gpus-per-node=4 --dl-runtime=torch
      "--dl-topology=$T/%n.xml")

# dry NAME: "rank value" of variable NAME in the dry run's "nX: task R env:" lines
dry() { sed -n "s/^n[0-9]*: task \([0-9]*\) env:.* $1=\([^ ]*\).*/\1 \2/p" "$OUT" | sort -n; }
# as_seen: the same variables as the dry run prints them, "rank VAR=value ..."
as_seen() {
	local r v line
	for r in 0 1 2 3; do
		line="$r"
		for v in $VARS; do
			line="$line $v=$(grep "^n[0-9]*: task $r env:" "$OUT" |
				sed -n "s/.* $v=\([^ ]*\).*/\1/p")"
		done
		echo "$line" | sed 's/[A-Z_]*= / /g; s/[A-Z_]*=$//'
	done
}
real_seen() { sed -n 's/^real //p' "$OUT" | sed 's/ [A-Z_]*=unset//g' | sort -n; }

# 1. the GPU plan's variables are in each task's environment in the dry run
run_srun "${STEP[@]}" --dl-dry-run "$WORK/show.sh"
is "$RC" 0 "dry run with a topology succeeds" || fail_detail "$(cat "$ERR")"
is "$(grep -c '^n[0-9]*: task [0-9]* env: ' "$OUT")" 4 "one environment line per task, from its node"
is "$(dry CUDA_VISIBLE_DEVICES | tr '\n' ' ')" "0 0,1 1 2,3 2 0,1 3 2,3 " \
	"CUDA_VISIBLE_DEVICES from the GPU plan (package 0 then 1 on each node)" ||
	fail_detail "$(cat "$OUT")"
is "$(dry NCCL_SOCKET_IFNAME | awk '{print $2}' | sort -u)" "=eth0" \
	"without --dl-iface, NCCL_SOCKET_IFNAME is the GPU plan's NIC"
like "$(grep '^n1: task 0 env:' "$OUT")" " DLRT_RANK=0 .*CUDA_VISIBLE_DEVICES=0,1 " \
	"the GPU plan's variables come with the rest of the environment"
ok "$(grep -q '^real ' "$OUT"; echo $((1 - $?)))" "the program never ran"

# 2. --dl-iface's NIC wins over the GPU plan's
run_srun "${STEP[@]}" --dl-iface=eth0 --dl-dry-run "$WORK/show.sh"
is "$RC" 0 "dry run with --dl-iface succeeds" || fail_detail "$(cat "$ERR")"
is "$(dry NCCL_SOCKET_IFNAME | awk '{print $2}' | sort -u)" "eth0" \
	"--dl-iface's NCCL_SOCKET_IFNAME wins over the GPU plan's"
is "$(dry NCCL_IB_HCA | tr '\n' ' ')" "0 =mlx5_0:1 1 =mlx5_1:1 2 =mlx5_0:1 3 =mlx5_1:1 " \
	"the GPU plan's NCCL_IB_HCA stays where nothing else sets it"
dry_iface=$(as_seen)
run_srun "${STEP[@]}" --dl-iface=eth0 "$WORK/show.sh"
is "$RC" 0 "the real step succeeds" || fail_detail "$(cat "$ERR")"
is "$(real_seen)" "$dry_iface" "the real tasks get exactly what the dry run showed"

# 3. what the user exported wins over both
as_user env NCCL_SOCKET_IFNAME=mine0 UCX_NET_DEVICES=mlx5_9:1 srun "${STEP[@]}" --dl-iface=eth0 \
	--dl-dry-run "$WORK/show.sh" >"$OUT" 2>"$ERR"
is "$?" 0 "dry run with exported variables succeeds" || fail_detail "$(cat "$ERR")"
is "$(dry NCCL_SOCKET_IFNAME | awk '{print $2}' | sort -u)" "mine0" \
	"the user's NCCL_SOCKET_IFNAME wins over --dl-iface's and the GPU plan's"
is "$(dry UCX_NET_DEVICES | awk '{print $2}' | sort -u)" "mlx5_9:1" \
	"the user's UCX_NET_DEVICES wins over the GPU plan's"
like "$(grep -c '^      env: .*NCCL_SOCKET_IFNAME=mine0' "$OUT")" "^4$" \
	"the role table shows the user's value too"
is "$(dry CUDA_VISIBLE_DEVICES | tr '\n' ' ')" "0 0,1 1 2,3 2 0,1 3 2,3 " \
	"the GPU plan still replaces Slurm's step-wide CUDA_VISIBLE_DEVICES"
dry_user=$(as_seen)
as_user env NCCL_SOCKET_IFNAME=mine0 UCX_NET_DEVICES=mlx5_9:1 srun "${STEP[@]}" --dl-iface=eth0 \
	"$WORK/show.sh" >"$OUT" 2>"$ERR"
is "$?" 0 "the real step with exported variables succeeds" || fail_detail "$(cat "$ERR")"
is "$(real_seen)" "$dry_user" "the real tasks get exactly what the dry run showed"

done_testing
