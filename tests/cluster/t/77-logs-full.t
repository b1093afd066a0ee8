#!/bin/bash
# --dl-log-dir on a full filesystem: the task's log is never cut silently. It ends
# with a "dlrt log cut here: CAUSE" line, the task's stderr (srun) gets one warning
# naming the file and the cause, srun still gets every line, and the step's exit
# status is the program's; dlrt-logs reads the cut log like any other.
. "$(dirname "$0")/../lib.sh"
CL=$HERE/cluster.sh

# A 256 KiB tmpfs as DIR on n1. Each node is a mount namespace of its own (private
# propagation), so the mount is made inside n1, where slurmstepd sees it.
dir=$WORK/small
mkdir "$dir"
umount_small() { "$CL" exec n1 umount "$dir" 2>/dev/null; }
trap umount_small EXIT
"$CL" exec n1 mount -t tmpfs -o size=256k,mode=1777 tmpfs "$dir"
ok $? "a 256 KiB tmpfs at $dir on n1"

# 4000 lines of 100 bytes (about 530 KiB stamped): more than fits.
run_srun -w n1 -N1 -n1 --dl-runtime=torch --dl-log-dir="$dir" bash -c \
	'echo "job=$SLURM_JOB_ID"; for i in $(seq 4000); do printf "line %05d %088d\n" $i 0; done; exit 7'
is "$RC" 7 "the step's exit status is the program's (7)"
is "$(grep -c '^line ' "$OUT")" 4000 "srun got every line"
is "$(grep -c '^line 04000 ' "$OUT")" 1 "the last one too"
job=$(sed -n 's/^job=//p' "$OUT")
log=$dir/$job/0/worker-0.log
warn=$(grep 'dlrt: --dl-log-dir' "$ERR")
is "$(wc -l <<<"$warn")" 1 "the task's stderr has one warning" || fail_detail "$(cat "$ERR")"
like "$warn" "^dlrt: --dl-log-dir: writing $log failed: No space left on device; the log ends with a \"log cut here: \" line" \
	"naming the file and the cause"
text=$("$CL" exec n1 cat "$log")
last=$(tail -n 1 <<<"$text")
like "$last" "^[0-9-]{10}T[0-9:.]{15}Z dlrt log cut here: No space left on device; the rest of this task's output went only to srun$" \
	"the log ends with the marker line"
like "$text" "Z dlrt start task 0 " "it starts as usual"
is "$(grep -cvE '^[0-9-]{10}T[0-9:.]{15}Z (out|err|dlrt) ' <<<"$text")" 0 "every line in it is whole and stamped"
ok "$(grep -q 'Z out line 00001 ' <<<"$text"; echo $?)" "the first lines are in it"
merged=$(on_node n1 "$DLRT_TEST_USER" dlrt-logs --dir "$dir" --merge "$job" 2>&1)
ok $? "dlrt-logs --merge reads the cut log"
like "$(tail -n 1 <<<"$merged")" "Z 0 worker-0 dlrt log cut here: No space left on device" "and shows the marker last"
like "$(on_node n1 "$DLRT_TEST_USER" dlrt-logs --dir "$dir" "$job" 2>&1)" "worker-0 .* log cut" \
	"the list says the log was cut"

umount_small
trap - EXIT
done_testing
