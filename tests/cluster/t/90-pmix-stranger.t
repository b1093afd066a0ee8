#!/bin/bash
# Another user of a node against a step's PMIx server (docs/SECURITY.md, "Slurm's
# PMIx"). Slurm's mpi/pmix server listens on TCP 127.0.0.1, and PMIx's default
# `native` security takes, over TCP, the uid the client states: with it any
# user of the node reads every value of the step and publishes as its tasks.
# The test cluster runs slurmd as a site should (PMIX_MCA_psec=munge in its
# environment, docs/ADMIN.md): a client proves its uid through munged. Here a
# real libpmix client (pmix-stranger) run by the stranger states the job
# owner's uid and gid (stated_id.so) and must get nothing, while the job
# owner's own client, with the same coordinates and key names, reads the
# values; so a wrong port, namespace or key cannot make the test pass.
# Then the same stranger against a site without that setting (n1 and n2's slurmd
# restarted with PMIx's default, native): what dlrt itself keeps. Nothing that opens
# a service travels through PMIx, even with --dl-exchange=pmix forced, and under
# default settings (auto, on nodes the job shares) a stranger holding task 0's PMIx
# connection fails no step: the exchange goes through srun's rendezvous.
# No step depends on timing: the victim waits for a file, every wait bounded.
. "$(dirname "$0")/../lib.sh"
skip_all_without_pmix

psec=$(tr '\0' '\n' <"/proc/$(cat "$DLRT_CLUSTER_DIR/run/slurmd-n1.pid")/environ" 2>/dev/null |
	sed -n 's/^PMIX_MCA_psec=//p')
is "$psec" munge "the nodes' slurmd (and so every slurmstepd) runs with PMIX_MCA_psec=munge" ||
	fail_detail "tests/cluster/cluster.sh sets it (DLRT_CLUSTER_PMIX_PSEC); restart the cluster"

# The victim: a two-node --mpi=pmix step (tasks 0-2 on n1) whose tasks publish
# a value, fence, say so, and stay until the test is done (at most 100 s).
( run_srun -N2 -n6 -w n1,n2 --mpi=pmix bash -c '
	dlrt-kv --timeout 30 put secretkey "hello$SLURM_PROCID" fence || exit 1
	touch "ready.$SLURM_PROCID"
	. ./wait_until.sh
	wait_until 100 test -e go && exit 0
	echo "task $SLURM_PROCID: the test never said go" >&2; exit 1'
  exit "$RC" ) &
victim=$!
ready() { [ "$(ls "$WORK" | grep -c '^ready\.[0-5]$')" = 6 ]; }
wait_until 120 ready
ok "$(ready; echo $?)" \
	"the victim's tasks published their values through PMIx" || fail_detail "$(cat "$ERR")"
job=$(squeue -h -u "$DLRT_TEST_USER" -o %i | head -1)
read -r ns uri < <(pmix_coords n1 "$job" 0)
like "${uri:-}" '^slurm\.pmix\.[0-9]+\.0\.0;tcp4://127\.0\.0\.1:[0-9]+$' \
	"the step's PMIx server on n1: a TCP port of 127.0.0.1 (job $job)"

# The control: the job owner's own client (munge) with these coordinates is
# admitted as task 0 and reads task 4's value, the key the stranger asks for.
owner_get() {
	on_node n1 "$DLRT_TEST_USER" env PMIX_SECURITY_MODE=munge \
		"$TESTS_BIN/pmix-stranger" -t 30 -a "$1" "$ns" "$uri" get 4 secretkey 2>"$WORK/owner.err"
}
got=$(owner_get 0)
is "$got" "dlrt.secretkey=hello4" "the job owner's client, same coordinates, reads task 4's value" ||
	fail_detail "$(cat "$WORK/owner.err")"

# The stranger, stating the owner's uid and gid (native), and with its own
# munge credential: refused, nothing read, nothing published. Each try claims
# another of n1's tasks: PMIx 4.2 loses track of a rank refused twice (its
# next client waits forever), a denial of service docs/SECURITY.md accepts.
got=$(pmix_stranger n1 -t 30 -a 0 "$ns" "$uri" get 4 secretkey 2>"$WORK/s1.err"); rc=$?
is "$rc:$got" "1:" "a stranger stating the owner's uid reads nothing" ||
	fail_detail "$(cat "$WORK/s1.err")"
like "$(cat "$WORK/s1.err")" "^pmix-stranger: the server refused rank 0" "... refused at connect, in one line"
got=$(pmix_stranger n1 -t 30 -a 1 "$ns" "$uri" put dlrt.secretkey forged 2>"$WORK/s2.err"); rc=$?
is "$rc:$got" "1:" "a stranger stating the owner's uid publishes nothing" ||
	fail_detail "$(cat "$WORK/s2.err")"
got=$(as_stranger_on n1 env PMIX_SECURITY_MODE=munge \
	"$TESTS_BIN/pmix-stranger" -t 30 -a 2 "$ns" "$uri" get 4 secretkey 2>"$WORK/s3.err"); rc=$?
is "$rc:$got" "1:" "a stranger with its own munge credential reads nothing" ||
	fail_detail "$(cat "$WORK/s3.err")"

got=$(owner_get 1)
is "$got" "dlrt.secretkey=hello4" "the owner, as a task the stranger tried, still reads the true value" ||
	fail_detail "$(cat "$WORK/owner.err")"

touch "$WORK/go"
wait "$victim"
is "$?" 0 "the victim's step ended well" || fail_detail "$(cat "$ERR")"
run_srun -N2 -n2 -w n1,n2 --mpi=pmix bash -c 'dlrt-kv --timeout 30 put k "v$SLURM_PROCID" fence get 1 k'
is "$RC:$(sort -u "$OUT")" "0:v1" "dlrt-kv (PMIx) works under munge security" || fail_detail "$(cat "$ERR")"
run_mpi_srun -N2 -n4 -c2 --mpi=pmix "$TESTS_BIN/mpi_allreduce"
is "$RC:$(grep -c 'sum=6 ok' "$OUT")" "0:4" "an Open MPI allreduce under srun --mpi=pmix works under munge security" ||
	fail_detail "$(srun_errors | head -5)"

# ---- A site without PMIX_MCA_psec=munge: n1 and n2 with PMIx's default (native).
psec_nodes() { # psec_nodes VALUE: n1 and n2's slurmd restarted with PMIX_MCA_psec=VALUE
	for n in n1 n2; do
		DLRT_CLUSTER_PMIX_PSEC=$1 "$HERE/cluster.sh" stop-node "$n" >/dev/null 2>&1
		DLRT_CLUSTER_PMIX_PSEC=$1 "$HERE/cluster.sh" start-node "$n" >/dev/null 2>&1
	done
	wait_until 120 eval '[ "$(sinfo -h -n n1,n2 -o %t | sort -u)" = idle ]'
}
trap 'psec_nodes munge' EXIT
psec_nodes ""
ok "$?" "n1 and n2 run with PMIx's default security (native: a stated uid is believed)"

# The victim: a caffe2 step with a node service (its store), --dl-exchange=pmix
# forced; tasks 0 and 1 on n1 (only task 0, the node's first, runs dlrt-kv).
rm -f "$WORK"/ready.* "$WORK/go"
( run_srun -N2 -n3 -w n1,n2 --dl-runtime=caffe2 --dl-exchange=pmix bash -c '
	touch "ready.$SLURM_PROCID"
	. ./wait_until.sh
	wait_until 100 test -e go'
  exit "$RC" ) &
victim=$!
wait_until 120 eval '[ "$(ls "$WORK" | grep -c "^ready\.[0-2]\$")" = 3 ]'
job=$(squeue -h -u "$DLRT_TEST_USER" -o %i | head -1)
read -r ns uri < <(pmix_coords n1 "$job" 0)
# The stranger claims task 1, which never connects, and reads what task 0 published.
root=$(pmix_stranger n1 -t 30 -a 1 "$ns" "$uri" get 0 root 2>"$WORK/s4.err"); rc=$?
like "$rc:$root" "^0:dlrt\.root=[0-9a-f]{64} [0-9.]+:[0-9]+$" \
	"native security: a stranger stating the owner's uid reads task 0's exchange value, a signed address" ||
	fail_detail "$(cat "$WORK/s4.err")"
unlike "$root" "#" "... with no step secret in it (before, IP:PORT#<secret> opened the step's store)"
cat >"$WORK/challenge.py" <<'PY'
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), 5)
    s.settimeout(5)
    s.recv(32)
    s.sendall(b"\0" * 32)
    print("answered" if s.recv(64) else "closed")
except OSError:
    print("closed")
PY
chmod 0644 "$WORK/challenge.py"
addr=${root##* }
is "$(as_stranger_on n1 python3 "$WORK/challenge.py" "${addr%:*}" "${addr##*:}")" closed \
	"the address read there admits the stranger to nothing without the secret"
touch "$WORK/go"
wait "$victim"
is "$?" 0 "the victim's step ran" || fail_detail "$(cat "$ERR")"

# Default settings (auto) on these shared nodes, with the stranger holding task 0's
# PMIx connection as the step runs: the exchange is srun's, the step runs through.
rm -f "$WORK"/ready.* "$WORK/go"
( run_srun -N2 -n2 -w n1,n2 --mpi=pmix --dl-runtime=torch --dl-verbose bash -c '
	touch "ready.$SLURM_PROCID"
	. ./wait_until.sh
	wait_until 100 test -e go
	exec python3 -c "
import torch, torch.distributed as d
d.init_process_group(\"gloo\")
t = torch.ones(1) * (d.get_rank() + 1)
d.all_reduce(t)
print(\"sum\", int(t.item()))"'
  exit "$RC" ) &
victim=$!
wait_until 60 test -e "$WORK/ready.0"
job=$(squeue -h -u "$DLRT_TEST_USER" -o %i | head -1)
read -r ns uri < <(pmix_coords n1 "$job" 0)
pmix_stranger n1 -t 60 -a 0 "$ns" "$uri" hold 0 20 >"$WORK/hold.out" 2>&1 &
holder=$!
wait_until 30 grep -q admitted "$WORK/hold.out"
like "$(cat "$WORK/hold.out")" "admitted as .* rank 0" "the stranger holds task 0's PMIx connection"
touch "$WORK/go"
wait "$victim"
is "$?:$(grep -c '^sum 3$' "$OUT")" "0:2" "auto on shared nodes: the torch step runs through" ||
	fail_detail "$(srun_errors | tail -3)"
like "$(grep -o "address exchange through [^:]*" "$ERR" | sort -u)" "srun's rendezvous" \
	"... its exchange went through srun's rendezvous"
wait "$holder"
# A task whose rank a stranger's refused connections spoiled first (PMIx 4.2 loses
# track of a rank refused twice; the stranger needs no forged uid for that) is told
# what may have happened, in one line, not blamed on an overloaded slurmstepd.
rm -f "$WORK"/ready.* "$WORK/go"
( run_srun -N1 -n1 -w n1 --mpi=pmix bash -c 'touch ready.0
	. ./wait_until.sh
	wait_until 60 test -e go
	dlrt-kv --timeout 5 put k v; echo "kv rc=$?"'
  exit "$RC" ) &
victim=$!
wait_until 60 test -e "$WORK/ready.0"
job=$(squeue -h -u "$DLRT_TEST_USER" -o %i | head -1)
read -r ns uri < <(pmix_coords n1 "$job" 0)
for try in 1 2; do
	PMIX_STATE_OWN=1 pmix_stranger n1 -t 10 -a 0 "$ns" "$uri" get 0 k >/dev/null 2>>"$WORK/own.err"
done
like "$(cat "$WORK/own.err")" "refused rank 0" "the stranger, as itself, was refused as task 0"
touch "$WORK/go"
wait "$victim"
like "$(grep -h 'dlrt-kv' "$ERR" "$OUT" | head -1)" \
	"Slurm's PMIx server (did not admit|refused) this task as rank 0.*another process connected as that rank first.*ProctrackType is not proctrack/cgroup.*use --dl-exchange=srun" \
	"the task kept out says who may have taken its rank, in one line" ||
	fail_detail "$(cat "$OUT" "$ERR" | tail -3)"
unlike "$(grep -h 'dlrt-kv' "$ERR" "$OUT" | head -1)" "--exclusive" \
	"... and does not advise --exclusive (a process left behind reaches exclusive nodes too)"
done_testing
