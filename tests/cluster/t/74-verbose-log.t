#!/bin/bash
# --dl-verbose: a node service's stderr goes to a log in the node's /tmp. The old
# name, /tmp/<program>.<job>.<step>.log, was predictable: another user who created
# it first silently sent the log to /dev/null (or could have read it). Now the
# name ends in 16 random hex digits, the file is created by the job's user with
# O_EXCL|O_NOFOLLOW and mode 0600, and the verbose line names it.
. "$(dirname "$0")/../lib.sh"

# The stranger plants the predictable names of the next job ids on n1, writable by
# anyone so that a log sent there would show.
as_user sbatch --parsable -o /dev/null -w n1 --wrap true >"$WORK/last.id" 2>&1
last=$(cut -d';' -f1 "$WORK/last.id")
ok $([[ $last =~ ^[0-9]+$ ]]; echo $?) "the current job id is known ($last)" || fail_detail "$(cat "$WORK/last.id")"
planted=()
for id in $(seq $((last + 1)) $((last + 10))); do
	planted+=("/tmp/dlrt-store.$id.0.log")
done
on_node n1 "$STRANGER" bash -c 'for f; do : >"$f" && chmod 0666 "$f"; done' planted "${planted[@]}"
is "$(on_node n1 "$STRANGER" bash -c 'ls "$@" | wc -l' ls "${planted[@]}")" 10 "the stranger planted 10 log names on n1"

run_srun -N1 -w n1 -n1 --dl-runtime=caffe2 --dl-store=helper --dl-verbose bash -c 'echo "job=$SLURM_JOB_ID"'
is "$RC" 0 "a --dl-verbose caffe2 step with its helper store runs" || fail_detail "stderr: $(srun_errors)"
job=$(sed -n 's/^job=//p' "$OUT")
ok $([ "$job" -gt "$last" ] && [ "$job" -le $((last + 10)) ]; echo $?) \
	"its job id ($job) is one of the planted names"
log=$(sed -n 's/.*dlrt-store) listening on .*, log \(\/tmp\/[^ ]*\)$/\1/p' "$ERR")
like "$log" "^/tmp/dlrt-store\.$job\.0\.[0-9a-f]{16}\.log$" "the verbose line names the service's log, with a random part" ||
	fail_detail "stderr: $(cat "$ERR")"
if [ -n "$log" ]; then
	is "$("$HERE/cluster.sh" exec n1 stat -c '%U %a %F' "$log")" \
		"$DLRT_TEST_USER 600 regular file" "the log is a regular file of the job's user, mode 0600"
	on_node n1 "$STRANGER" cat "$log" >/dev/null 2>&1
	ok $(($? == 0)) "the stranger cannot read it"
fi
is "$("$HERE/cluster.sh" exec n1 bash -c 'cat "$@" | wc -c' cat "${planted[@]}")" 0 \
	"the stranger's planted files stayed empty"
on_node n1 "$STRANGER" rm -f "${planted[@]}"
done_testing
