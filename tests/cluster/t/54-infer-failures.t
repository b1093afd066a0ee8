#!/bin/bash
# dlrt-infer worker failures: kill -9 a worker at random points of its task 20
# times, SIGSTOP a worker past the heartbeat bound, a worker near its Slurm
# time limit, a worker whose array element is requeued, and a node cut off the
# network. After each: every query answered exactly once, the CSV equal to a
# failure-free run, and the pool serving again. Detection times are printed as
# diagnostics only (the machine is shared: timings never decide a test).
. "$(dirname "$0")/../lib.sh"

T=/usr/share/datasets/fashion-mnist
IN=$T/train-images-idx3-ubyte.gz
POOL=$WORK/pool
N1=12000 N3=12000
infer() { as_user env DLRT_INFER_POOL="$POOL" dlrt-infer "$@"; }

if [ ! -r $IN ]; then
	echo "1..0 # SKIP dataset-fashion-mnist is not installed (tests/cluster/install-deps.sh)"
	exit 0
fi

MD=$DLRT_CLUSTER_DIR/prefix/share/dlrt/models
as_user dlrt-infer local --model deepcnn --inputs $IN --count $N1 --model-dir "$MD" \
	--out "$WORK/ref.csv" 2>/dev/null
ok $? "failure-free reference: deepcnn on $N1 inputs in one process"

# Exactly once and equal to the reference: CSV rows vs the first $2 reference rows.
check_csv() { # check_csv JOB COUNT WHAT
	local csv=$POOL/job-$1.csv
	is "$(($(wc -l <"$csv") - 1))" "$2" "$3: $2 result rows"
	is "$(tail -n +2 "$csv" | cut -d, -f2 | sort -u | wc -l)" "$2" "$3: every input exactly once"
	tail -n +2 "$csv" | cut -d, -f2-4 | sort -t, -k1n >"$WORK/got.sorted"
	tail -n +2 "$WORK/ref.csv" | sort -t, -k1n | head -n "$2" >"$WORK/ref.sorted"
	ok "$(cmp -s "$WORK/got.sorted" "$WORK/ref.sorted"; echo $?)" \
		"$3: answers equal to the failure-free run"
}
workers_up() { infer status 2>/dev/null | grep -cE '^[0-9]+ +n[1-3]/'; }
workers_at_least() { [ "$(workers_up)" -ge "$1" ]; }
wait_workers() { wait_until -i 0.25 120 workers_at_least "$1"; }
# PIDs of the restarting workers' processes (other clusters run dlrt-infer as the same user).
pool_workers() {
	# The worker processes themselves (named dlrt-infer), not the sruns that started them.
	for p in $(pgrep -u "$DLRT_TEST_USER" -x dlrt-infer); do
		tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qx "SLURM_ARRAY_JOB_ID=$RESTART" &&
			echo "$p"
	done
}
state() { infer status | awk -v j="$1" '$1 == j && $3 == "deepcnn" { print $4 }'; }
COORD_LOG() { cat "$POOL"/element-"${ARRAY}"_0.log; }
serving() { # serving WHAT: a small job after the failure completes, answered once
	local j
	j=$(infer submit --model deepcnn --inputs $IN --count 200 --batch 10)
	infer wait "$j" >/dev/null
	ok $? "$1: the pool serves again (job $j completed)"
	is "$(tail -n +2 "$POOL/job-$j.csv" | cut -d, -f2 | sort -u | wc -l)" 200 \
		"$1: job $j answered exactly once"
}

# The coordinator (element 0) and one ordinary worker; then 3 workers that
# restart after being killed (each a loop of srun steps), so 20 kills never
# empty the pool.
ARRAY=$(infer pool start --workers 1 --heartbeat 2 -- -c 1 -w n1)
RESTART=0 WALL=0 RQ=0 CUT=0
like "$ARRAY" '^[0-9]+$' "pool submitted (job $ARRAY)"
cat >"$WORK/workers.sh" <<EOF
#!/bin/bash
for i in \$(seq 1 40); do srun --ntasks=1 dlrt-infer worker --wait 60; done
EOF
chmod 0755 "$WORK/workers.sh"
RESTART=$(as_user sbatch --parsable --array=1-3 --dl-runtime=infer -c 1 -o "$WORK/w-%a.log" \
	--export=ALL,DLRT_INFER_POOL="$POOL" "$WORK/workers.sh")
like "$RESTART" '^[0-9]+$' "3 restarting workers submitted (job $RESTART)"
wait_workers 4
is "$(workers_up)" 4 "4 workers joined"

# ---- 1. kill -9 a worker at random points of its task, 20 times ------------------
# Jobs of $N1 queries follow each other so the workers are always busy (one
# task in flight each): any moment is a point inside some task.
JOBS=()
kills=0
for k in $(seq 1 20); do
	if [ ${#JOBS[@]} -eq 0 ] || [ "$(state "${JOBS[-1]}")" != running ]; then
		JOBS+=("$(infer submit --model deepcnn --inputs $IN --count $N1 --batch 10 --name kills)")
		sleep 0.3
	fi
	sleep "0.$((RANDOM % 9 + 1))"
	mapfile -t ws < <(pool_workers)
	[ "${#ws[@]}" -gt 0 ] || { sleep 0.5; continue; }
	kill -9 "${ws[$((RANDOM % ${#ws[@]}))]}" 2>/dev/null && kills=$((kills + 1))
done
is "$kills" 20 "20 workers killed by SIGKILL during ${#JOBS[@]} jobs"
for j in "${JOBS[@]}"; do
	infer wait "$j" >/dev/null
	ok $? "job $j completed despite the kills"
	check_csv "$j" $N1 "job $j (kills)"
done
lost=$(COORD_LOG | grep -c 'left (connection closed) with 1 tasks in flight (requeued)')
ok "$([ "$lost" -ge 10 ]; echo $?)" "killed workers had a task in flight, requeued ($lost of $kills)"
wait_workers 4
is "$(workers_up)" 4 "the killed workers restarted and joined again"
serving "after the kills"

# ---- 2. SIGSTOP a worker past the heartbeat bound -------------------------------
J2=$(infer submit --model deepcnn --inputs $IN --count $N1 --batch 10 --name stop)
j2_started() { # job 2 has answers ($d)
	d=$(infer status | awk -v j="$J2" '$1 == j && $3 == "deepcnn" { split($5, a, "/"); print a[1] }')
	[ "${d:-0}" -gt 0 ]
}
wait_until -i 0.05 10 j2_started
mapfile -t ws < <(pool_workers)
victim=${ws[0]}
t0=$(date +%s.%N)
kill -STOP "$victim"
wait_until 10 eval 'COORD_LOG | grep -q "silent for"'
t1=$(date +%s.%N)
line=$(COORD_LOG | grep 'silent for' | tail -1)
like "$line" 'silent for [0-9.]+ s \(heartbeat bound 2.00 s\) with 1 tasks in flight \(requeued\)' \
	"the stopped worker is declared dead by heartbeats, its task requeued"
diag "SIGSTOP noticed after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s (polled every 0.1 s): $line"
sleep 1
kill -CONT "$victim"
infer wait "$J2" >/dev/null
ok $? "job $J2 completed"
wait_until 8 eval 'COORD_LOG | grep -q "dropped an answer"'
like "$(COORD_LOG | grep 'is back')" 'worker [0-9]+ .* is back' "the resumed worker is taken back"
like "$(COORD_LOG | grep 'dropped an answer' | head -1)" \
	'dropped an answer of worker [0-9]+ for task [0-9]+ of job [0-9]+ \(attempt [0-9]+\): (already answered|dispatched again since)' \
	"its late answer is dropped, not recorded twice"
check_csv "$J2" $N1 "job $J2 (SIGSTOP)"
serving "after the SIGSTOP"

# ---- 3. a worker near its Slurm time limit gets no new task ---------------------
WALL=$(as_user sbatch --parsable --dl-runtime=infer --time=1 -c 1 -o "$WORK/wall.log" \
	--export=ALL,DLRT_INFER_POOL="$POOL",DLRT_INFER_WALLTIME_MARGIN=50 \
	--wrap "srun --ntasks=1 dlrt-infer worker --name walltime")
like "$WALL" '^[0-9]+$' "a worker with --time=1 and a 50 s margin (job $WALL)"
wait_until -i 0.25 80 eval 'COORD_LOG | grep -q "walltime.* from its Slurm time limit"'
like "$(COORD_LOG | grep 'walltime')" 'worker [0-9]+ \(walltime\) is [0-9]+ s from its Slurm time limit' \
	"the worker asks for no new task 50 s before its limit"
like "$(cat "$WORK/wall.log")" 'to the job.s time limit \(margin 50 s\): asking for no new tasks' \
	"it knows its end time from Slurm"
J3=$(infer submit --model deepcnn --inputs $IN --count $N3 --batch 10 --name wall)
infer wait "$J3" >/dev/null
ok $? "job 3 completed on the other workers"
is "$(infer status | awk '$2 == "walltime" { print $4 "/" $5 }')" "0/0" \
	"the worker near its time limit got no task of job 3"
check_csv "$J3" $N3 "job 3 (walltime)"
as_user scancel "$WALL" 2>/dev/null

# ---- 4. a worker whose array element is requeued: handled as a failure ---------
RQ=$(as_user sbatch --parsable --requeue --dl-runtime=infer -c 1 -o "$WORK/rq.log" \
	--export=ALL,DLRT_INFER_POOL="$POOL" --wrap "srun --ntasks=1 dlrt-infer worker --name requeued")
wait_until -i 0.25 80 eval 'infer status | grep -q " requeued "'
J4=$(infer submit --model deepcnn --inputs $IN --count $N1 --batch 10 --name requeue)
in_flight() { [ "$(infer status | awk -v w="$1" '$2 == w { print $5 }')" -gt 0 ] 2>/dev/null; }
wait_until -i 0.05 10 in_flight requeued
scontrol requeue "$RQ"
ok $? "scontrol requeue of the worker's element (job $RQ) while it works"
wait_until 60 eval 'COORD_LOG | grep -q "(requeued) left"'
like "$(COORD_LOG | grep '(requeued) left')" 'left \(connection closed\) with [01] tasks in flight' \
	"Slurm ending the requeued element is handled as a worker failure"
infer wait "$J4" >/dev/null
ok $? "job $J4 completed"
check_csv "$J4" $N1 "job $J4 (requeued worker)"
as_user scancel "$RQ" 2>/dev/null

# ---- 5. a node cut off the network: heartbeats notice its silent worker ---------
# The host side of n3's link to the bridge goes down for 4 s (the coordinator is on n1).
if [ "$DLRT_CLUSTER_ID" = 0 ]; then HIF=dlrt-n3-h; else HIF=dlrt$DLRT_CLUSTER_ID-n3-h; fi
trap 'ip link set "$HIF" up 2>/dev/null' EXIT
CUT=$(as_user sbatch --parsable --dl-runtime=infer -c 1 -w n3 -o "$WORK/cut.log" \
	--export=ALL,DLRT_INFER_POOL="$POOL" --wrap "srun --ntasks=1 dlrt-infer worker --name cutoff")
wait_until -i 0.25 80 eval 'infer status | grep -q " cutoff "'
J5=$(infer submit --model deepcnn --inputs $IN --count $N1 --batch 10 --name cut)
wait_until -i 0.05 10 in_flight cutoff
ip link set "$HIF" down
ok $? "n3 cut off the network while its worker works"
wait_until 30 eval 'COORD_LOG | grep -q "(cutoff) silent"'
line=$(COORD_LOG | grep '(cutoff) silent' | head -1)
like "$line" 'silent for [0-9.]+ s \(heartbeat bound 2.00 s\) with [01] tasks in flight' \
	"its silence is noticed by heartbeats"
diag "$line"
sleep 2
ip link set "$HIF" up
infer wait "$J5" >/dev/null
ok $? "job $J5 completed"
check_csv "$J5" $N1 "job $J5 (node cut off)"
as_user scancel "$CUT" 2>/dev/null

# ---- the end ---------------------------------------------------------------------
diag "$(COORD_LOG | grep -c 'dropped an answer') late answers dropped"
infer pool stop >/dev/null
as_user scancel "$RESTART" 2>/dev/null
wait_until -i 0.5 60 eval '[ -z "$(squeue -h -j "$ARRAY,$RESTART,$WALL,$RQ,$CUT" 2>/dev/null)" ]'
is "$(squeue -h -j "$ARRAY,$RESTART,$WALL,$RQ,$CUT" 2>/dev/null | wc -l)" 0 "every element ended"
done_testing
