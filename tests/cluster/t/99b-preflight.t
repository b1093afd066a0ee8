#!/bin/bash
# --dl-preflight: before a step starts, each node of the allocation is checked;
# a node with a rate-limited link, a full /dev/shm, a missing GPU device, a
# clock that is off or a checkpoint folder that is not the shared one is named in one line (node,
# check, figure), recorded in the job's retry record, and the step runs on the
# allocation's other nodes. A healthy allocation passes without a line; bad
# values are refused with one line before anything runs.
. "$(dirname "$0")/../lib.sh"
CL=$HERE/cluster.sh
# A generous timeout: the machine running the cluster is loaded.
PF="--dl-preflight=quick,timeout=30"

# pf_job SBATCH_ARGS... -- SRUN_ARGS...: a 3-node job whose 2-node torch step
# prints its nodes; output in $WORK/job.out, srun's errors in $WORK/job.err.
pf_job() {
	local sb=() sr=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sb+=("$1"); shift; done
	shift
	sr=("$@")
	run_batch -N3 "${sb[@]}" <<JOB
#!/bin/bash
srun -N2 -n2 --dl-runtime=torch ${sr[*]} bash -c 'echo "ran \$(hostname) rank=\$RANK"'
echo "srun rc=\$?"
JOB
	PF_ERR=$(grep 'dlrt' "$WORK/job.err" 2>/dev/null)
	PF_RAN=$(grep -c '^ran ' "$WORK/job.out" 2>/dev/null)
}

# expect_named NODE CHECK WHAT: exactly one line, naming NODE and CHECK, and the
# step ran on two other nodes.
expect_named() {
	is "$(grep -c 'dlrt: --dl-preflight: ' <<<"$PF_ERR")" 1 "$3: one line" ||
		fail_detail "stderr: $PF_ERR"
	like "$PF_ERR" "dlrt: --dl-preflight: node $1 failed $2: " "$3: it names $1 and $2" ||
		fail_detail "stderr: $PF_ERR"
	is "$PF_RAN" 2 "$3: the step ran on two nodes" || fail_detail "out: $(cat "$WORK/job.out")"
	unlike "$(grep '^ran ' "$WORK/job.out")" "^ran $1 " "$3: none of them $1"
	like "$(cat "$WORK/job.out")" "srun rc=0" "$3: the step succeeded"
}

# ---- bad values: one line, before anything runs ----------------------------------
run_srun -N1 --dl-runtime=torch --dl-preflight=fast true
is "$RC" 1 "--dl-preflight=fast is refused"
is "$(srun_errors | wc -l)" 1 "with one line"
like "$(srun_errors)" "dlrt: --dl-preflight=fast: give off, quick or full" "naming the valid values"
run_srun -N1 --dl-runtime=torch --dl-preflight=quick,shm=1G true
like "$(srun_errors)" "dlrt: --dl-preflight=quick,shm=1G: give off" "a size with a unit is refused"
run_srun -N1 --dl-runtime=torch --dl-preflight=quick true
is "$RC" 1 "outside an allocation: refused"
like "$(srun_errors)" "dlrt: --dl-preflight needs an allocation" "with one line saying why"

# ---- a healthy allocation: no line -------------------------------------------------
pf_job -- "$PF"
is "$PF_ERR" "" "healthy: no line" || fail_detail "stderr: $PF_ERR"
is "$PF_RAN" 2 "healthy: the step ran on its two nodes"

# ---- another user floods the probe ports during a check: no node is named --------
# As the other user on n2: every new listening socket of the test user's on n2's
# address (the probe server's: it lives only while the check runs) gets 400 idle
# connections that never prove the secret, each made again when the server ends it.
FLOOD='
import select, socket, sys, time
uid, end = int(sys.argv[1]), time.time() + float(sys.argv[2])
seen, held, made = set(), {}, 0
def listeners():
	out = set()
	for line in open("/proc/net/tcp").readlines()[1:]:
		f = line.split()
		if f[3] != "0A" or int(f[7]) != uid or f[1].startswith("0100007F"):
			continue
		ip, port = f[1].split(":")
		out.add((socket.inet_ntoa(bytes.fromhex(ip)[::-1]), int(port, 16)))
	return out
def connect(a):
	global made
	try:
		s = socket.socket(); s.setblocking(False); s.connect_ex(a)
		held[s] = a; made += 1
	except OSError:
		pass
while time.time() < end:
	for a in listeners() - seen:
		seen.add(a)
		for _ in range(400):
			connect(a)
	# keep 400 idle connections per port: one the server ends is made again
	if held:
		r, _, _ = select.select(list(held), [], [], 0)
		for s in r:
			try:
				if s.recv(4096):
					continue # the challenge: never answered
			except (BlockingIOError, InterruptedError):
				continue
			except OSError:
				pass
			a = held.pop(s); s.close(); connect(a)
	time.sleep(0.01)
print("flooded", len(seen), "ports,", made, "connections", flush=True)
'
as_stranger_on n2 python3 -c "$FLOOD" "$(id -u "$DLRT_TEST_USER")" 15 >"$WORK/flood.out" 2>&1 &
flood=$!
sleep 1
pf_job -- "${PF/quick/full}"
wait "$flood"
diag "$(cat "$WORK/flood.out")"
like "$(cat "$WORK/flood.out")" "flooded [1-9][0-9]* ports" "the other user reached the probe server on n2"
is "$PF_ERR" "" "flooded: no node named" || fail_detail "stderr: $PF_ERR"
is "$PF_RAN" 2 "flooded: the step ran on its two nodes"

# ---- a full /dev/shm (each node has its own tmpfs of 256 MiB) --------------------
"$CL" exec n2 fallocate -l 250M /dev/shm/dlrt-preflight-fill
pf_job -- "$PF"
"$CL" exec n2 rm -f /dev/shm/dlrt-preflight-fill
expect_named n2 shm "full /dev/shm"
like "$PF_ERR" "MiB free in /dev/shm, 64 MiB needed" "the figure: what is free, what is needed"
like "$(cat "$WORK/.dlrt/jobs/"*/dlrt-retries.log 2>/dev/null)" \
	"attempt=0 preflight node=n2 check=shm left out of the step" "noted in the job's retry record"
unlike "$(cat "$WORK/.dlrt/jobs/"*/dlrt-retries.log 2>/dev/null)" "attempt=0 node=n2 " \
	"not as a failed node of the attempt: the step ran without it"

# ---- a missing GPU device: n2's view of the device folder is empty ---------------
"$CL" exec n2 mount -t tmpfs -o size=1m dlrt-preflight "$DLRT_CLUSTER_DIR/dev"
pf_job --gpus-per-node=2 -- "$PF,gpudev=$DLRT_CLUSTER_DIR/dev/nvidia"
"$CL" exec n2 umount "$DLRT_CLUSTER_DIR/dev"
expect_named n2 gpu "missing GPU device"
like "$PF_ERR" "dev/nvidia0 is missing" "the figure: the device file"

# ---- a checkpoint folder that is not the shared one on n2 ------------------------
as_user mkdir -p "$WORK/ckpt"
"$CL" exec n2 mount -t tmpfs -o size=1m,mode=1777 dlrt-preflight "$WORK/ckpt"
pf_job -- "$PF" --dl-checkpoint-dir="$WORK/ckpt"
"$CL" exec n2 umount "$WORK/ckpt"
expect_named n2 ckpt "unshared checkpoint folder"
is "$(ls -A "$WORK/ckpt" | grep -c dlrt-preflight)" 0 "the probe file is removed"

# ---- a rate-limited link (tc tbf on n2's interface) ------------------------------
"$CL" exec n2 tc qdisc add dev eth0 root tbf rate 2mbit burst 32kbit latency 400ms
pf_job -- "$PF"
"$CL" exec n2 tc qdisc del dev eth0 root
expect_named n2 net "rate-limited link"
like "$PF_ERR" "sends [0-9.]+ MB/s to n3, its peers' median is" "the figure: its rate and its peers'"
# ---- a clock 5 s ahead on n2 (clock_skew.so: the simulated nodes share this
# machine's clock, so n2's dlrt-preflight is told its wall clock is off) --------
pf_job "--export=ALL,LD_PRELOAD=$TESTS_BIN/clock_skew.so,CLOCK_SKEW_NODE=n2,CLOCK_SKEW_MS=5000" \
	-- "$PF,clock=2000"
expect_named n2 clock "a clock 5 s off"
like "$PF_ERR" "[45]\.[0-9]+ s ahead of n1's clock \(limit 2000 ms\)" \
	"the figure: the offset against the first node's clock and the limit"

# ---- no spare node: the job is requeued without it (--dl-retries) -------------
# An idle cluster gives a 2-node job n1 and n2; n2's /dev/shm is full.
cat >"$WORK/nospare.sh" <<JOB
#!/bin/bash
srun -N2 -n2 --dl-runtime=torch $PF bash -c 'echo "ran \$(hostname) attempt=\$DLRT_ATTEMPT"'
echo "srun rc=\$?"
JOB
chmod 0755 "$WORK/nospare.sh"
"$CL" exec n2 fallocate -l 250M /dev/shm/dlrt-preflight-fill
job=$(as_user sbatch --parsable --open-mode=append -o "$WORK/nospare-%j.out" -e "$WORK/nospare-%j.err" \
	-N2 --dl-retries=1 "$WORK/nospare.sh" 2>"$WORK/sbatch.err")
ok $? "sbatch -N2 --dl-retries=1 (job $job)"
wait_done "$job" 240
"$CL" exec n2 rm -f /dev/shm/dlrt-preflight-fill
nerr=$(grep dlrt "$WORK/nospare-$job.err" 2>/dev/null)
like "$nerr" "dlrt: --dl-preflight: node n2 failed shm: " "no spare: n2 named" || fail_detail "stderr: $nerr"
like "$nerr" "dlrt: --dl-preflight: the step did not start without n2:shm; --dl-retries requeues" \
	"srun says the step did not start without it"
is "$(job_field "$job" JobState)" COMPLETED "the job finished by itself"
is "$(job_field "$job" ExcNodeList)" n2 "with n2 excluded"
like "$(cat "$WORK/.dlrt/jobs/$job/dlrt-retries.log" 2>/dev/null)" \
	"attempt=0 node=n2 step=preflight check=shm" "recorded like a failed node of the attempt"
a1=$(grep '^ran .* attempt=1' "$WORK/nospare-$job.out")
is "$(wc -l <<<"$a1")" 2 "attempt 1 ran the step on two nodes" || fail_detail "out: $(cat "$WORK/nospare-$job.out")"
unlike "$a1" "^ran n2 " "without n2"
done_testing
