#!/bin/bash
# dlrt-infer right after pool start, while the array still waits in the queue
# (held on purpose, so the coordinator surely starts late):
#   - a job script running `pool start`, `submit` and `wait` at once works:
#     submit waits for the coordinator with one line saying why (pending, and
#     Slurm's reason), and every answer arrives exactly once;
#   - `status` then says the array is pending instead of failing;
#   - `pool start --wait` returns only once the coordinator serves, and gives
#     up after --timeout with one line naming the cause and the fix;
#   - `pool stop` cancels a pool still queued; a client then says it ended.
. "$(dirname "$0")/../lib.sh"

T=/usr/share/datasets/fashion-mnist
IN=$T/t10k-images-idx3-ubyte.gz
MD=$DLRT_CLUSTER_DIR/prefix/share/dlrt/models
N=2000
if [ ! -r "$IN" ]; then
	echo "1..0 # SKIP dataset-fashion-mnist is not installed (tests/cluster/install-deps.sh)"
	exit 0
fi
inferp() { local p=$1; shift; as_user env DLRT_INFER_POOL="$WORK/$p" dlrt-infer "$@"; }
element0() { squeue -h -r -j "$1" -o '%K %T' 2>/dev/null | awk '$1 == 0 { print $2 }'; }
cleanup() {
	for p in p1 p2 p3; do inferp $p pool stop >/dev/null 2>&1; done
	scancel -u "$DLRT_TEST_USER" 2>/dev/null
}
trap cleanup EXIT

as_user dlrt-infer local --model lenet5 --inputs "$IN" --count $N --model-dir "$MD" \
	--out "$WORK/ref.csv" 2>/dev/null
ok $? "single-process reference (lenet5, $N inputs)"

# ---- 1. a job script: pool start, submit at once, wait -----------------------
cat >"$WORK/script.sh" <<EOF
#!/bin/bash
export DLRT_INFER_POOL=$WORK/p1
dlrt-infer pool start --workers 2 -- -c 1 -H >$WORK/array1 || exit 10
J=\$(dlrt-infer submit --model lenet5 --inputs $IN --count $N --batch 20) || exit 11
echo "\$J" >$WORK/job1
dlrt-infer wait "\$J" || exit 12
EOF
chmod 0755 "$WORK/script.sh"
as_user "$WORK/script.sh" >"$WORK/script.out" 2>"$WORK/script.err" &
SCRIPT=$!
wait_until 20 eval '[ -s "$WORK/array1" ] && grep -q waiting "$WORK/script.err"'
A1=$(cat "$WORK/array1" 2>/dev/null)
like "$A1" '^[0-9]+$' "the script's pool start printed the array job id alone ($A1)"
is "$(element0 "$A1")" PENDING "its coordinator is still pending (held)"
is "$(stat -c '%a %U' "$WORK/p1/array")" "600 $DLRT_TEST_USER" "the array record is private (0600, the user's)"
sleep 2 # the submit keeps waiting; it does not fail
ok "$(kill -0 $SCRIPT 2>/dev/null; echo $?)" "the script's submit waits for the coordinator instead of failing"
is "$(grep -c . "$WORK/script.err")" 1 "with one progress line" || fail_detail "$(cat "$WORK/script.err")"
like "$(cat "$WORK/script.err")" "^dlrt-infer: waiting up to [0-9]+ s for the coordinator of $WORK/p1: array job $A1 is still pending \\(Slurm's reason: JobHeldUser\\)\$" \
	"naming the array, its state and Slurm's reason"
ST=$(inferp p1 status 2>&1)
is "$?" 0 "status right after pool start succeeds"
like "$ST" "^pool $WORK/p1: starting: array job $A1 is still pending \\(Slurm's reason: JobHeldUser\\); no coordinator yet\$" \
	"and says the array is pending, and why"

as_user scontrol release "$A1"
ok $? "the array released"
wait $SCRIPT
RC=$?
is "$RC" 0 "the script ran to its end: submit, then wait" || fail_detail "$(cat "$WORK/script.err" "$WORK/script.out")"
is "$(cat "$WORK/job1" 2>/dev/null)" 1 "submit printed job 1"
like "$(cat "$WORK/script.out")" "^job 1 done: $N/$N queries" "wait: job 1 done"
CSV=$WORK/p1/job-1.csv
is "$(($(wc -l <"$CSV") - 1))" $N "job 1: $N result rows"
tail -n +2 "$CSV" | cut -d, -f2-4 | sort -t, -k1n >"$WORK/pool.sorted"
tail -n +2 "$WORK/ref.csv" | sort -t, -k1n >"$WORK/ref.sorted"
ok "$(cmp -s "$WORK/pool.sorted" "$WORK/ref.sorted"; echo $?)" "every answer once, equal to the single-process run"
inferp p1 pool stop >/dev/null
ok $? "pool stop"
ok "$([ ! -e "$WORK/p1/array" ]; echo $?)" "pool stop removed the array record"

# ---- 2. pool start --wait returns once the coordinator serves ----------------
as_user env DLRT_INFER_POOL="$WORK/p2" dlrt-infer pool start --workers 1 --wait -- -c 1 -H \
	>"$WORK/array2" 2>"$WORK/start2.err" &
START=$!
wait_until 20 eval '[ -s "$WORK/array2" ] && grep -q waiting "$WORK/start2.err"'
A2=$(cat "$WORK/array2" 2>/dev/null)
like "$A2" '^[0-9]+$' "pool start --wait printed the array job id ($A2)"
sleep 2
ok "$(kill -0 $START 2>/dev/null; echo $?)" "pool start --wait has not returned while the array is pending"
ok "$([ ! -e "$WORK/p2/access" ]; echo $?)" "(no coordinator serves yet: no access record)"
as_user scontrol release "$A2"
wait $START
is "$?" 0 "pool start --wait returned 0 once released" || fail_detail "$(cat "$WORK/start2.err")"
is "$(cat "$WORK/array2")" "$A2" "its stdout is the array job id alone"
ok "$([ -e "$WORK/p2/access" ]; echo $?)" "when it returned, the coordinator had written its access record"
ST=$(inferp p2 status 2>&1)
like "$ST" "^pool $WORK/p2: epoch 1," "and a status right after it is answered by the coordinator" ||
	fail_detail "$ST"
inferp p2 pool stop >/dev/null
ok $? "pool stop"

# ---- 3. --timeout: one line, the cause and the fix; pool stop of a queued pool -
ERR=$(as_user env DLRT_INFER_POOL="$WORK/p3" dlrt-infer pool start --workers 1 --wait --timeout 3 \
	-- -c 1 -H 2>&1 >"$WORK/array3")
RC=$?
A3=$(cat "$WORK/array3")
is "$RC" 1 "pool start --wait --timeout 3 on a held array gives up (exit 1)"
like "$(tail -1 <<<"$ERR")" "^dlrt-infer: no coordinator served $WORK/p3 within 3 s: the pool's array job $A3 is still pending \\(Slurm's reason: JobHeldUser\\) \\(squeue -j $A3\\); give --timeout SECONDS to wait longer; the array stays queued \\(scancel $A3 drops it\\)\$" \
	"with one line naming the cause and the fix" || fail_detail "$ERR"
is "$(element0 "$A3")" PENDING "the array stays queued"
OUT=$(inferp p3 pool stop 2>&1)
is "$?" 0 "pool stop of a pool still queued"
like "$OUT" "array job $A3 cancelled before its coordinator started" "cancels its array"
wait_until 20 eval '[ -z "$(element0 "$A3")" ]'
is "$(element0 "$A3")" "" "the array left the queue"
# A record left by a pool whose array ended (e.g. cancelled by hand): a client
# says so at once instead of waiting.
printf 'job=%s\nafter_epoch=0\n' "$A3" >"$WORK/p3/array"
chown "$DLRT_TEST_USER": "$WORK/p3/array"
chmod 0600 "$WORK/p3/array"
ERR=$(inferp p3 wait 1 2>&1)
is "$?" 1 "wait on a pool whose array ended fails"
like "$ERR" "^dlrt-infer: no coordinator serves $WORK/p3: the pool's array job $A3 is no longer in the queue \\(element 0's log: .*\\); start a pool with dlrt-infer pool start\$" \
	"at once, with one line saying so" || fail_detail "$ERR"
chmod 0644 "$WORK/p3/array"
ERR=$(inferp p3 submit --model noop --inputs "$IN" --count 10 --batch 5 2>&1)
like "$ERR" "array is open to other users \\(mode 644\\): chmod go=" \
	"an array record open to others is refused, with the fix" || fail_detail "$ERR"

done_testing
