#!/bin/bash
# Every runtime with its tasks inside a container, checked as the bare runs
# are (t/11, t/20, t/30, t/32, t/37, t/38, t/39, t/50), one step each:
#   1. Slurm's own OCI containers: srun --container=BUNDLE, rootless crun
#      (the cluster's oci.conf, libexec/dlrt/dlrt-oci-run), one task per node
#      (Slurm 22.05 runs no more in a container step; 24.11 runs several, checked);
#   2. Charliecloud: srun --dl-runtime=X ch-run IMAGE -- PROG, two tasks per
#      node, unprivileged user namespace;
#   3. GPU plan: the variables dlrt sets reach the task inside both, equal to
#      the bare run's;
#   4. rootless Podman: every runtime with --network=host --env-host, two
#      tasks per node; without them, one line naming the cause and the fix
#      instead of a timeout;
#   5. another user inside their own container (ch-run, Podman) on the
#      job's node cannot reach the job's store through the node relay;
#   6. a dlrt-infer pool whose elements run in the crun container;
#   7. another user on the node takes crun's state folder's names first (the
#      old /tmp/dlrt-crun-USER: a folder, a file, a link to a folder of
#      theirs, a folder with a container of the step's name; the new
#      %b/crun's way): the step runs anyway.
# The image (tests/cluster/images.sh) holds nothing of dlrt: /usr is the
# host's, the programs are on the shared filesystem. Every task records
# whether it ran in the image (/.dlrt-test-image) and its rank.
. "$(dirname "$0")/../lib.sh"
# How srun shows slurmstepd's error line: "slurmstepd-n1: error: ..." up to Slurm 25.11,
# "[TIMESTAMP] error: ..." on 26.05.
STEPD_ERR='(slurmstepd-n[0-9]+: |\[[0-9T:.-]+\] )error: dlrt: '
. "$HERE/images.sh"

for c in crun ch-run podman redis-cli; do
	command -v "$c" >/dev/null || { echo "1..0 # SKIP $c missing (tests/cluster/install-deps.sh)"; exit 0; }
done
/usr/bin/python3 -c 'import torch.distributed.run' 2>/dev/null ||
	{ echo "1..0 # SKIP needs python3-torch (tests/cluster/install-deps.sh)"; exit 0; }
SRC=$(cd "$HERE/../.." && pwd)
# Podman 5 warns on every run on a cgroup-v1 host (the nodes see v1), on stderr, which
# the checks below read; Podman 4 knows neither the warning nor the variable.
export PODMAN_IGNORE_CGROUPSV1_WARNING=1
BUNDLE=$(oci_bundle "$DLRT_TEST_USER")
P=$TESTS_BIN/pslite_contract

cat >"$WORK/in.sh" <<'SH'
#!/bin/sh
# in.sh DIR PROG ARGS...: notes where this task runs, then becomes PROG.
d=$1
shift
if [ -e /.dlrt-test-image ]; then w=inside; else w=OUTSIDE; fi
# (by rank: in a container's own PID namespace every task may be PID 1)
echo "$w $(hostname) rank=${SLURM_PROCID:-none}" >"$d/$(hostname).${SLURM_PROCID:-none}.$$"
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
	d=$1
	. "${0%/*}/wait_until.sh"
	wait_until 120 eval '[ "$(ls "$d" | grep -c "^done\.")" -ge "$SLURM_NTASKS" ]'
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
[ -e /.dlrt-test-image ] && echo "WHERE inside $(hostname)"
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
runtimes "ch-run:" 2 "${CH_RUN[@]}" "$IMAGE" --
# (HOME=/tmp: Podman's storage in the node's own /tmp, not on the shared filesystem)
UIMG=$(user_image "$DLRT_TEST_USER")
# Two rootless Podmans starting at the same moment on a node race to create their
# runtime folder ("mkdir /tmp/containers-user-UID: file exists", and that task fails):
# made beforehand, as docs/containers.md tells users to.
uid=$(id -u "$DLRT_TEST_USER")
for n in n1 n2 n3; do
	on_node "$n" "$DLRT_TEST_USER" mkdir -p -m 0700 "/tmp/containers-user-$uid"
done
runtimes "podman --network=host:" 2 --export=ALL,HOME=/tmp podman run --rm -v /usr:/usr:ro \
	-v /var/tmp:/var/tmp --network=host --env-host --rootfs "$UIMG:O"

# ---- 3. the GPU plan's variables inside, equal to the bare run's (fake GPUs
# and fixture topologies, as t/38 and t/40)
T=$WORK/topo
mkdir -p "$T"
cp "$SRC/tests/fixtures/topo/cluster-2s4g.xml" "$SRC/tests/fixtures/topo/cluster-2s4g-swapped.xml" "$T/"
ln -s cluster-2s4g.xml "$T/n1.xml"
ln -s cluster-2s4g.xml "$T/n2.xml"
ln -s cluster-2s4g-swapped.xml "$T/n3.xml"
chown -R "$DLRT_TEST_USER": "$T"
gpu() { # gpu TPN PREFIX...: each task's GPU variables, sorted
	local tpn=$1
	shift
	run_srun -N3 --ntasks-per-node="$tpn" -c4 --exclusive --gpus-per-node=4 --dl-runtime=jax \
		--dl-topology="$T/%n.xml" "$@" "$WORK/gpuenv.sh"
	grep '^GPU ' "$OUT" | sort
}
for tpn in 1 2; do
	bare=$(gpu "$tpn")
	like "$bare" "cvd=[0-3]" "bare, $tpn task(s) per node: the GPU plan sets CUDA_VISIBLE_DEVICES" ||
		fail_detail "$(srun_errors | head -3)"
	if [ "$tpn" = 1 ]; then
		kind="srun --container" in=$(gpu 1 --container="$BUNDLE")
	else
		kind=ch-run in=$(gpu 2 "${CH_RUN[@]}" "$IMAGE" --)
	fi
	is "$in" "$bare" "$kind: every task sees the GPU plan's variables of the bare run" ||
		fail_detail "$(srun_errors | head -3)"
	is "$(grep -c '^WHERE inside' "$OUT")" $((3 * tpn)) "$kind: (all $((3 * tpn)) tasks inside the image)"
done

# ---- 4. rootless Podman
PODMAN=(podman run --rm -v /usr:/usr:ro -v /var/tmp:/var/tmp)
fresh
# HOME=/tmp: Podman's storage in the node's own /tmp, not on the shared filesystem
run_srun -N3 --ntasks-per-node=1 --export=ALL,HOME=/tmp --dl-runtime=caffe2 "${PODMAN[@]}" \
	--network=host --env-host --rootfs "$UIMG:O" "$WORK/in.sh" "$WORK/where" "$WORK/c2.sh" "$WORK/c"
is "$RC" 0 "podman run --network=host --env-host: the caffe2 step ran" || errors
is "$(grep -cE '^task ([0-9]+): PONG OK v\1 at 127\.0\.0\.1$' "$OUT")" 3 \
	"podman --network=host: every task reached the helper store through its node's relay"
where podman caffe2 3
for args in "--env-host" "--network=slirp4netns --env-host" "--network=host"; do
	fresh
	# shellcheck disable=SC2086
	run_srun -N3 --ntasks-per-node=1 --export=ALL,HOME=/tmp --dl-runtime=torch "${PODMAN[@]}" \
		$args --rootfs "$UIMG:O" /usr/bin/python3 "$WORK/allreduce.py"
	errs=$(srun_errors | grep -v 'is not a shared mount')
	ok "$([ "$RC" -ne 0 ] && [ -z "$(ls "$WORK/where")" ]; echo $?)" \
		"podman run $args: the step fails before any task starts"
	if [ "$args" = --network=host ]; then want="podman run without --env-host: .*add --env-host to podman run$"
	elif [ "$args" = --env-host ]; then want="podman run without --network=host: .*relay on 127\.0\.0\.1.*add --network=host to podman run$"
	else want="podman run with a network other than host: .*add --network=host to podman run$"; fi
	like "$errs" "^$STEPD_ERR$want" "podman run $args: one line naming the cause and the fix" ||
		fail_detail "$errs"
done
# What that line stands for: in its own network the task's connection to its
# node's relay is refused (ECONNREFUSED), and torch would retry until its timeout.
cat >"$WORK/probe.py" <<'PY'
import os, socket
s = socket.socket()
s.settimeout(5)
print("PROBE relay 127.0.0.1:%s errno %d" % (os.environ["MASTER_PORT"],
      s.connect_ex(("127.0.0.1", int(os.environ["MASTER_PORT"])))))
PY
chmod 0644 "$WORK/probe.py"
run_srun -N1 --export=ALL,HOME=/tmp,DLRT_CONTAINER_CHECK=no --dl-runtime=torch "${PODMAN[@]}" \
	--env-host --rootfs "$UIMG:O" /usr/bin/python3 "$WORK/probe.py"
like "$(cat "$OUT")" "^PROBE relay 127\.0\.0\.1:[0-9]+ errno 111$" \
	"(DLRT_CONTAINER_CHECK=no: in Podman's own network the relay refuses the task: ECONNREFUSED)" ||
	fail_detail "$(srun_errors | head -3)"

# ---- 5. another user inside their own container on the job's node
cat >"$WORK/victim.sh" <<SH
#!/bin/bash
cli() { timeout 10 redis-cli -h "\$REDIS_HOST" -p "\$REDIS_PORT" "\$@" 2>&1; }
echo "set: \$(cli SET victim-key victim-value)"
echo "\$REDIS_PORT" >"$WORK/relay.tmp" && mv "$WORK/relay.tmp" "$WORK/relay"
. "$WAIT_UNTIL"
wait_until 90 test -e "$WORK/probe.done"
echo "after: \$(cli GET victim-key)"
SH
chmod 0755 "$WORK/victim.sh"
as_user srun -w n1 -N1 -n1 --dl-runtime=caffe2 --container="$BUNDLE" "$WORK/victim.sh" >"$OUT" 2>"$ERR" &
victim=$!
wait_until 60 test -s "$WORK/relay"
rport=$(cat "$WORK/relay" 2>/dev/null)
like "$rport" '^[0-9]+$' "the victim's task (in a crun container on n1) has its node's relay at 127.0.0.1:$rport"
SIMG=$(user_image "$STRANGER")
for how in ch-run podman; do
	if [ $how = ch-run ]; then
		pre=(env USER="$STRANGER" ch-run -b /usr:/usr "$IMAGE" --)
	else
		on_node n1 "$STRANGER" mkdir -p /tmp/"$STRANGER"
		pre=(env HOME=/tmp/"$STRANGER" podman run --rm --network=host -v /usr:/usr:ro --rootfs "$SIMG:O")
	fi
	got=$(on_node n1 "$STRANGER" "${pre[@]}" sh -c \
		"cat /proc/self/uid_map | tr -s ' ' | sed 's/^ //' | head -1; for c in PING 'GET victim-key' 'SET victim-key evil'; do timeout 10 redis-cli -h 127.0.0.1 -p ${rport:-1} \$c 2>&1; done" 2>&1 |
		grep -v 'is not a shared mount')
	diag "$STRANGER in $how: $(tr '\n' '|' <<<"$got")"
	like "$(head -1 <<<"$got")" "^[0-9]+ [0-9]+ [0-9]+$" "$STRANGER runs inside $how's user namespace (uid_map $(head -1 <<<"$got"))"
	unlike "$got" "PONG|victim-value|^OK" "$STRANGER inside $how on n1: the relay answers nothing (no PING, GET or SET)"
done
touch "$WORK/probe.done"
wait "$victim"
is "$?" 0 "the victim's step succeeded" || fail_detail "$(head -5 "$ERR")"
like "$(cat "$OUT")" "after: victim-value" "the victim's value is intact"

# ---- 6. a dlrt-infer pool whose elements run in the crun container: the
# array's job script runs on the node, its srun takes SRUN_CONTAINER (as
# srun --container); dlrt-infer comes from the shared filesystem. Answers
# equal to the single-process run (t/50).
DS=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
POOL=$WORK/pool
infer() { as_user env DLRT_INFER_POOL="$POOL" dlrt-infer "$@"; }
as_user dlrt-infer local --model lenet5 --inputs "$DS" --count 2000 \
	--model-dir "$DLRT_CLUSTER_DIR/prefix/share/dlrt/models" --out "$WORK/ref.csv" 2>/dev/null
ARRAY=$(infer pool start --workers 2 --window 1 -- -c 2 --export=ALL,SRUN_CONTAINER="$BUNDLE" 2>"$WORK/start.err")
like "$ARRAY" '^[0-9]+$' "dlrt-infer pool start with SRUN_CONTAINER: submitted (job $ARRAY)" ||
	fail_detail "$(head -3 "$WORK/start.err")"
workers_up() { infer status 2>/dev/null | grep -cE '^[0-9]+ +n[1-3]/'; }
wait_until -i 0.5 240 eval '[ "$(workers_up)" -ge 2 ]'
is "$(workers_up)" 2 "infer: 2 workers joined the coordinator"
# (one process table for every node of this machine; other clusters' pools
# run from their own prefix)
inside=0
for pid in $(pgrep -u "$DLRT_TEST_USER" -f "^$DLRT_CLUSTER_DIR/prefix/bin/dlrt-infer pool run"); do
	[ -e "/proc/$pid/root/.dlrt-test-image" ] && inside=$((inside + 1))
done
is "$inside" 3 "infer: the coordinator and both workers run inside the image"
J=$(infer submit --model lenet5 --inputs "$DS" --count 2000 --batch 10 --name ctr)
infer wait "$J" >"$WORK/wait"
is $? 0 "infer: the job completed"
tail -n +2 "$POOL/job-$J.csv" | cut -d, -f2-4 | sort -t, -k1n >"$WORK/pool.sorted"
tail -n +2 "$WORK/ref.csv" | sort -t, -k1n >"$WORK/ref.sorted"
ok "$(cmp -s "$WORK/pool.sorted" "$WORK/ref.sorted"; echo $?)" "infer: answers equal to the single-process run"
infer pool stop >/dev/null
wait_until -i 0.5 60 eval '[ -z "$(squeue -h -j "$ARRAY" 2>/dev/null)" ]'
scancel "$ARRAY" 2>/dev/null

# A bundle that gives each task a network namespace of its own: the site's
# RunTimeRun wrapper (dlrt-oci-run) refuses it in a dlrt step, in one
# line; a step without dlrt runs in it as Slurm starts it.
NETNS=$(oci_bundle "$DLRT_TEST_USER" netns)
run_srun -N1 --dl-runtime=torch --container="$NETNS" /usr/bin/python3 "$WORK/allreduce.py"
ok "$([ "$RC" -ne 0 ]; echo $?)" "srun --container, a bundle with its own network: the dlrt step fails"
like "$(srun_errors)" "^dlrt-oci-run: .* gives each task its own network namespace .*relay on 127\.0\.0\.1.*remove that entry from the bundle's config\.json$" \
	"and dlrt-oci-run says why, with the fix, in one line" || fail_detail "$(srun_errors | head -3)"
run_srun -N1 --container="$NETNS" /bin/sh -c 'ls /.dlrt-test-image'
is "$RC,$(cat "$OUT")" "0,/.dlrt-test-image" "(a step without dlrt runs in that bundle unchanged)" ||
	fail_detail "$(srun_errors | head -3)"

# mxnet's extra scheduler is forked by dlrt next to task 0: it cannot be in
# Slurm's container. Every task says so at once, with the fix.
run_srun -N3 --ntasks-per-node=1 --dl-runtime=mxnet --dl-mxnet-sched=extra --dl-servers=1 \
	--container="$BUNDLE" "$P" --timeout-s 60 --rounds 3
ok "$([ "$RC" -ne 0 ]; echo $?)" "srun --container with --dl-mxnet-sched=extra fails"
like "$(srun_errors)" "^${STEPD_ERR}the extra mxnet scheduler cannot run inside srun --container's container .*--dl-mxnet-sched=task$" \
	"and says why, with the fix, in one line" || fail_detail "$(srun_errors | head -3)"

# 22.05 runs one task per node in a container step: Slurm says so itself. 24.11
# makes one bundle per task (its spool folder task-N/), so several tasks per node run.
SLURM_MAJOR=$(srun --version | sed -n 's/^slurm[^ ]* \([0-9]*\)\..*/\1/p')
if [ "${SLURM_MAJOR:-0}" -lt 23 ]; then
	run_srun -N1 -n2 --dl-runtime=torch --container="$BUNDLE" /bin/true
	ok "$([ "$RC" -ne 0 ]; echo $?)" "srun --container with 2 tasks on a node fails (Slurm 22.05's limit)"
else
	fresh
	run_srun -N1 -n2 --container="$BUNDLE" "$WORK/in.sh" "$WORK/where" /bin/true
	is "$RC" 0 "srun --container with 2 tasks on a node runs (Slurm $SLURM_MAJOR: a bundle per task)" ||
		errors
	where "srun --container" "2 tasks on a node" 2
fi

# ---- 7. crun's state folder, taken first by another user on the node. Kept
# in /tmp/dlrt-crun-USER (the old oci.conf), a name anyone can create first in
# the node's shared /tmp: a folder, a file or a link of theirs there failed the
# step (crun: "cannot create state directory"), and so did a folder of theirs
# holding a container of the step's name ("container ... already exists"). It
# is now the step's own folder (%b/crun: SlurmdSpoolDir/oci-jobJJJJJ-SSSSS/crun,
# which Slurm makes for the job's user, in a folder only root can write):
# the stranger cannot create that name, or anything on its way, at all. Each
# squat is in place before the step is submitted: nothing here races.
SPOOL=$(scontrol show config | sed -n 's/^SlurmdSpoolDir *= *//p')
OLD=/tmp/dlrt-crun-$DLRT_TEST_USER
OCI_RUN=$DLRT_CLUSTER_DIR/prefix/libexec/dlrt/dlrt-oci-run
for squat in folder file link stale; do
	job=$(next_job)
	# 22.05: SPOOL/oci-jobJJJJJ-SSSSS/crun; 24.11: SPOOL/oci-jobJ-S/task-T/crun
	# (the task's folder, in the step's: the user's, mode 0770, group the job's).
	if [ "${SLURM_MAJOR:-0}" -lt 23 ]; then
		step_dir=$(printf '%s/oci-job%05u-%05u' "$SPOOL" "$job" 0)
		state_dir=$step_dir/crun
	else
		step_dir=$SPOOL/oci-job$job-0
		state_dir=$step_dir/task-0/crun
	fi
	name=n1.$DLRT_TEST_USER.$job.0.0
	# (as root: the old folder an earlier step of the victim's left behind)
	"$HERE/cluster.sh" exec n1 rm -rf "$OLD" "/tmp/$STRANGER-crun"
	case $squat in
	folder) mk="mkdir -m 0755 $OLD" ;;
	file) mk="echo squat >$OLD" ;;
	link) mk="mkdir -m 0755 /tmp/$STRANGER-crun && ln -s /tmp/$STRANGER-crun $OLD" ;;
	stale) mk="mkdir -m 0777 $OLD $OLD/$name && echo '{}' >$OLD/$name/status" ;;
	esac
	on_node n1 "$STRANGER" bash -c "umask 0; $mk"
	ok $? "$squat: $STRANGER takes $OLD on n1 first ($mk)"
	# The new place's predictable parts: the step's folder and its crun/.
	made=no
	on_node n1 "$STRANGER" bash -c "umask 0; mkdir -p '$state_dir' || mkdir '$step_dir' ||
		ln -s /tmp '$step_dir' || echo squat >'$step_dir'" 2>/dev/null && made=yes
	is "$made" no "$squat: $STRANGER cannot create $step_dir (a folder, a link, a file) nor $state_dir"
	fresh
	# shellcheck disable=SC2016 # (the task expands them)
	run_srun -w n1 -N1 -n1 --container="$BUNDLE" "$WORK/in.sh" "$WORK/where" \
		/bin/sh -c 'echo "job $SLURM_JOB_ID step $SLURM_STEP_ID"'
	is "$RC" 0 "$squat: the victim's srun --container step on n1 runs anyway" || errors
	is "$(cat "$OUT"),$(cut -d' ' -f1,2 "$WORK"/where/* 2>/dev/null)" "job $job step 0,inside n1" \
		"$squat: (it is job $job, step 0, container $name, inside the image)"
	st=$(on_node n1 root stat -c '%U %a' "$state_dir" 2>/dev/null)
	ok "$([ -z "$st" ] || [ "$st" = "$DLRT_TEST_USER 700" ]; echo $?)" \
		"$squat: its state folder $state_dir is the victim's, mode 0700 (${st:-removed})"
	# dlrt-oci-run with the old place refuses it before crun runs, in one line.
	err=$(on_node n1 "$DLRT_TEST_USER" "$OCI_RUN" "$WORK" 0 -- crun --rootless=true \
		--root="$OLD" state "$name" 2>&1)
	is "$?,$(wc -l <<<"$err")" "1,1" "$squat: dlrt-oci-run given --root=$OLD refuses it, in one line"
	like "$err" "^dlrt-oci-run: the runtime's state folder \(--root\): $OLD is in /tmp, which other users can write \(mode 1777\), .* \(a (folder|file|symbolic link) of user $STRANGER .* is there now\): keep it in the step's own folder: --root=%b/crun in every RunTime\* line of oci\.conf$" \
		"$squat: naming the cause and the fix" || fail_detail "$err"
done
"$HERE/cluster.sh" exec n1 rm -rf "$OLD" "/tmp/$STRANGER-crun"
done_testing
