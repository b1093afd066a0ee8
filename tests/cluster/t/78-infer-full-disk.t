#!/bin/bash
# dlrt-infer on a full filesystem: the pool folder is a 2 MiB filesystem. A
# job that fits completes with every row exactly once; a job whose results
# cannot fit FAILS: `wait` exits non-zero with one line naming job-N.csv and
# the cause (never "done"), `status` shows the same line, the rows the file
# does hold are right and each there once. Once its owner frees the space, the
# same pool (its journal kept running in the space it holds ahead) serves
# another job exactly once. Then, in a restarted array, the journal itself
# fails (a file size limit on the coordinator): the pool stops, `wait` says why, and after `pool
# restart` the job resumes and completes exactly once. Results and journal are
# written per loop turn, rows first: the failed job's count, replayed from the
# journal after a restart, still equals the rows its file held (the batch whose
# write met the full disk was not journaled).
#
# The filesystem is a loop-mounted ext4 image mounted on the host (where the
# client runs) and inside every node (each is a mount namespace with private
# propagation): one block device, so one filesystem seen from everywhere, as
# a shared filesystem would be. A tmpfs mounted in each namespace would be a
# different filesystem in each.
. "$(dirname "$0")/../lib.sh"
. "$HERE/infer_pool.sh"

NODES="n1 n2 n3"
IMG=$WORK/fs.img
LOOP=
ARRAY=
cleanup() {
	infer pool stop >/dev/null 2>&1
	# The elements hold files open there until they end (bounded wait; a lazy
	# unmount otherwise).
	wait_until -i 0.5 60 eval '[ -z "$ARRAY" ] || [ -z "$(squeue -h -j "$ARRAY" 2>/dev/null)" ]'
	for n in $NODES; do
		"$HERE/cluster.sh" exec "$n" umount "$POOL" 2>/dev/null ||
			"$HERE/cluster.sh" exec "$n" umount -l "$POOL" 2>/dev/null
	done
	umount "$POOL" 2>/dev/null || umount -l "$POOL" 2>/dev/null
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	LOOP=
	rm -f "$IMG"
}
trap cleanup EXIT

mkdir -p "$POOL"
truncate -s 2M "$IMG" && mkfs.ext4 -q -F -O ^has_journal -m 0 -N 64 "$IMG" &&
	LOOP=$(losetup -f --show "$IMG") && mount "$LOOP" "$POOL"
ok $? "a 2 MiB filesystem for the pool folder ($LOOP)" || exit 1
for n in $NODES; do "$HERE/cluster.sh" exec "$n" mount "$LOOP" "$POOL" || break; done
ok $? "mounted inside every node too"
chown "$DLRT_TEST_USER": "$POOL" && chmod 0700 "$POOL"

SMALL=2000 BIG=60000 N4=3000
ref A lenet5 0 $SMALL
ref B lenet5 0 $BIG
ref C lenet5 30000 $SMALL

ARRAY=$(infer pool start --workers 2 -- -c 2 2>"$WORK/start.err")
like "$ARRAY" '^[0-9]+$' "pool start submitted the array (job $ARRAY)" ||
	fail_detail "$(cat "$WORK/start.err")"
wait_until -i 0.5 120 eval '[ "$(workers_up)" -ge 2 ]'
is "$(workers_up)" 2 "2 workers joined"

# The pool folder has room for a small job: it completes, exactly once.
J=$(infer submit --model lenet5 --inputs "$IN" --count $SMALL --batch 50 2>/dev/null)
infer wait "$J" >"$WORK/wait1" 2>&1
ok $? "job $J ($SMALL queries) completes on the small filesystem" || fail_detail "$(cat "$WORK/wait1")"
exactly_once "$J" $SMALL A

# One that cannot fit: it fails, naming the file and the cause.
J2=$(infer submit --model lenet5 --inputs "$IN" --count $BIG --batch 100 2>/dev/null)
infer wait "$J2" >"$WORK/wait2" 2>&1
RC=$?
diag "wait: $(cat "$WORK/wait2")"
diag "df: $(df -k "$POOL" | tail -1)"
ok "$([ $RC -ne 0 ]; echo $?)" "wait for job $J2 ($BIG queries, too large for the disk) exits non-zero"
is "$(wc -l <"$WORK/wait2")" 1 "with one line"
like "$(cat "$WORK/wait2")" "^job $J2 failed: .*cannot write $POOL/job-$J2.csv: No space left on device: free space in the pool folder and resubmit\$" \
	"naming job-$J2.csv, the cause and the fix"
unlike "$(cat "$WORK/wait2")" " done" "never saying done"
like "$(infer status)" "failed .*error: cannot write $POOL/job-$J2.csv: No space left on device" \
	"status shows the job failed, with the same line"
rows=$(($(wc -l <"$POOL/job-$J2.csv") - 1))
done2=$(done_of "$J2")
ok "$([ "$rows" -lt $BIG ]; echo $?)" "job-$J2.csv holds $rows of $BIG rows: the disk was full"
is "$done2" "$rows" "the job counts as answered exactly the rows its file holds"
is "$(tail -n +2 "$POOL/job-$J2.csv" | cut -d, -f2 | sort | uniq -d | wc -l)" 0 \
	"no row twice"
tail -n +2 "$POOL/job-$J2.csv" | cut -d, -f2-4 | sort >"$WORK/part.sorted"
sort "$WORK/refB.sorted" >"$WORK/refB.lex"
is "$(comm -23 "$WORK/part.sorted" "$WORK/refB.lex" | wc -l)" 0 \
	"every row it holds is whole and equals the failure-free run"

# Its owner frees the space: the same pool serves again, exactly once. (The
# coordinator's log is on the full disk too: its line about the failure may
# be lost, so the client's line is the one that counts.)
rm -f "$POOL/job-$J2.csv"
J3=$(infer submit --model lenet5 --inputs "$IN" --first 30000 --count $SMALL --batch 50 2>/dev/null)
infer wait "$J3" >"$WORK/wait3" 2>&1
ok $? "after freeing the space, job $J3 completes on the same pool" || fail_detail "$(cat "$WORK/wait3")"
exactly_once "$J3" $SMALL C

# The element logs are on that disk too, written by srun, which stops writing
# a task's output for good after one failed write: the journal check below
# reads the coordinator's log, so it runs in a new array, with new logs
# (pool stop, then pool restart from the journal).
infer pool stop >/dev/null 2>&1
wait_until -i 0.5 120 eval '[ -z "$(squeue -h -j "$ARRAY" 2>/dev/null)" ]'
is "$(squeue -h -j "$ARRAY" 2>/dev/null | wc -l)" 0 "pool stop ended every element"
ARRAY=$(infer pool restart --workers 2 -- -c 2 2>"$WORK/restart0.err")
like "$ARRAY" '^[0-9]+$' "pool restart in a new array (job $ARRAY), with new logs" ||
	fail_detail "$(cat "$WORK/restart0.err")"
wait_until -i 0.5 120 eval '[ "$(workers_up)" -ge 2 ]'
is "$(workers_up)" 2 "2 workers joined the restarted pool"
# The results of a loop turn are written together, before the turn's answers
# are journaled: the write that met the full disk failed its whole batch, and
# none of that batch's answers was journaled. The restarted coordinator
# replayed the journal: job J2 still counts exactly the rows its file held.
is "$(done_of "$J2")" "$rows" "after a restart from the journal, job $J2 counts the same $rows answers: the failed batch was never journaled"

# The journal itself cannot be written (a file size limit on the coordinator,
# just above the journal's size, so the journal hits it first): the answer
# is not acknowledged, the pool stops, every wait says why; after pool
# restart the job resumes where the journal ends and completes exactly once.
ref D lenet5 10000 $N4
pid=$(field pid)
jsz=$(stat -c %s "$POOL/journal")
# As the owner: lowering its own process's limit needs no privilege.
as_user prlimit --pid "$pid" --fsize=$((jsz + 4096)) 2>"$WORK/prlimit.err"
ok $? "the coordinator (pid $pid) may write files up to $((jsz + 4096)) bytes; the journal has $jsz" ||
	fail_detail "$(cat "$WORK/prlimit.err")"
J4=$(infer submit --model lenet5 --inputs "$IN" --first 10000 --count $N4 --batch 50 2>/dev/null)
infer wait "$J4" >"$WORK/wait4" 2>&1
RC=$?
ok "$([ $RC -ne 0 ]; echo $?)" "wait for job $J4 exits non-zero when the journal cannot be written"
is "$(wc -l <"$WORK/wait4")" 1 "with one line"
like "$(cat "$WORK/wait4")" "^job $J4 failed: .*the pool stopped: cannot write the journal $POOL/journal: File too large: free space in the pool folder, then dlrt-infer pool restart\$" \
	"naming the journal, the cause and the fix"
wait_until -i 0.5 120 eval '[ -z "$(squeue -h -j "$ARRAY" 2>/dev/null)" ]'
is "$(squeue -h -j "$ARRAY" 2>/dev/null | wc -l)" 0 "the pool stopped (no element left)"
like "$(cat "$POOL"/element-"$ARRAY"_0.log)" "cannot write the journal .*; the pool stops" \
	"the coordinator's log says why"
rows4=$(($(wc -l <"$POOL/job-$J4.csv") - 1))
R=$(infer pool restart --workers 2 -- -c 2 2>"$WORK/restart.err")
like "$R" '^[0-9]+$' "pool restart (job $R)" || fail_detail "$(cat "$WORK/restart.err")"
ARRAY=$R
wait_until -i 0.25 120 eval '[ -n "$(field epoch)" ] && infer status >/dev/null 2>&1'
resumed=$(sed -n "s/.*job $J4 resumes with \([0-9]*\) of $N4 queries answered/\1/p" \
	"$POOL"/element-"$R"_0.log)
is "$resumed" "$rows4" "job $J4 resumes with the $rows4 answers its results file held: the journal and the file agree"
infer wait "$J4" >"$WORK/wait5" 2>&1
ok $? "job $J4 resumes from the journal and completes" || fail_detail "$(cat "$WORK/wait5")"
exactly_once "$J4" $N4 D

cleanup # before done_testing removes the work folder
done_testing
