#!/bin/bash
# dlrt-infer: a pool of 1 coordinator + 6 workers as job arrays over 3 nodes.
# Two jobs of different models (deepcnn, then lenet5 submitted while the first
# runs); the sixth worker joins late (pool add) while job 1 runs. Checks: every
# query answered exactly once, answers and accuracy equal to a single-process
# run, both jobs' query rates within 10% once converged, workers returned when
# a job ends, the late worker got work, and `pool stop` ends every element.
. "$(dirname "$0")/../lib.sh"

T=/usr/share/datasets/fashion-mnist
POOL=$WORK/pool
# Job 2 runs for about 8 s, so the steady period has a few dozen samples; it
# is submitted once the late worker is in, which Slurm may start seconds into
# job 1, so job 2 is sized to end well before job 1 even then.
N1=60000 N2=30000
infer() { as_user env DLRT_INFER_POOL="$POOL" dlrt-infer "$@"; }

if [ ! -r $T/t10k-images-idx3-ubyte.gz ]; then
	echo "1..0 # SKIP dataset-fashion-mnist is not installed (tests/cluster/install-deps.sh)"
	exit 0
fi

# The single-process reference, on this host (same binary, same weights).
MD=$DLRT_CLUSTER_DIR/prefix/share/dlrt/models
as_user dlrt-infer local --model deepcnn --inputs $T/train-images-idx3-ubyte.gz --count $N1 \
	--model-dir "$MD" --out "$WORK/ref1.csv" 2>"$WORK/ref1.acc"
ok $? "single-process reference for job 1 (deepcnn, $N1 inputs)"
as_user dlrt-infer local --model lenet5 --inputs $T/train-images-idx3-ubyte.gz --count $N2 \
	--model-dir "$MD" --out "$WORK/ref2.csv" 2>"$WORK/ref2.acc"
ok $? "single-process reference for job 2 (lenet5, $N2 inputs)"

# The pool: elements 0..5 (coordinator + 5 workers); -c 5 spreads them over nodes.
ARRAY=$(infer pool start --workers 5 --window 1 -- -c 5 2>"$WORK/start.err")
like "$ARRAY" '^[0-9]+$' "pool start submitted the array (job $ARRAY)"
workers_up() { infer status 2>/dev/null | grep -cE '^[0-9]+ +n[1-3]/'; }
wait_until -i 0.5 120 eval '[ "$(workers_up)" -ge 5 ]'
is "$(workers_up)" 5 "5 workers joined the coordinator"
stat -c '%a %U' "$POOL" "$POOL/access" >"$WORK/modes"
is "$(tr '\n' ' ' <"$WORK/modes")" "700 $DLRT_TEST_USER 600 $DLRT_TEST_USER " \
	"pool directory 0700 and access record 0600, owned by the user"
like "$(head -2 "$POOL"/element-"${ARRAY}"_0.log)" "array element 0: coordinator" \
	"the infer runtime made element 0 the coordinator"
like "$(cat "$POOL"/element-"${ARRAY}"_3.log)" "array element 3: worker" "and element 3 a worker"

J1=$(infer submit --model deepcnn --inputs $T/train-images-idx3-ubyte.gz --count $N1 --batch 10 \
	--name deep)
is "$J1" 1 "job 1 submitted"
LATE=$(infer pool add --workers 1 -- -c 5 -w n3)
like "$LATE" '^[0-9]+$' "a sixth worker submitted while job 1 runs (job $LATE)"
# Submit job 2 midway through job 1, once the late worker is in.
late_in() { # the late worker joined and job 1 is a tenth done ($d of its answers)
	d=$(infer status | awk -v j="$J1" '$1 == j && $3 == "deepcnn" { split($5, a, "/"); print a[1] }')
	[ "$(workers_up)" -ge 6 ] && [ "${d:-0}" -ge $((N1 / 10)) ]
}
wait_until -i 0.1 60 late_in
is "$(workers_up)" 6 "the late worker joined while job 1 runs ($d of $N1 done)"
J2=$(infer submit --model lenet5 --inputs $T/train-images-idx3-ubyte.gz --count $N2 --batch 10 \
	--name fast)
is "$J2" 2 "job 2 submitted while job 1 runs ($d of $N1 done)"

infer wait "$J2" >"$WORK/wait2"
is $? 0 "job 2 completed"
infer wait "$J1" >"$WORK/wait1"
is $? 0 "job 1 completed"
infer status >"$WORK/status"
diag "$(cat "$WORK/wait1" "$WORK/wait2")"

# Exactly once: one row per query, every input index once.
for j in 1 2; do
	n=$([ $j = 1 ] && echo $N1 || echo $N2)
	csv=$POOL/job-$j.csv
	is "$(($(wc -l <"$csv") - 1))" "$n" "job $j: $n result rows"
	is "$(tail -n +2 "$csv" | cut -d, -f2 | sort -u | wc -l)" "$n" "job $j: every input exactly once"
	# Same answers as the single-process run (input index, prediction, score).
	tail -n +2 "$csv" | cut -d, -f2-4 | sort -t, -k1n >"$WORK/pool$j.sorted"
	tail -n +2 "$WORK/ref$j.csv" | sort -t, -k1n >"$WORK/ref$j.sorted"
	ok "$(cmp -s "$WORK/pool$j.sorted" "$WORK/ref$j.sorted"; echo $?)" \
		"job $j: answers equal to the single-process run"
	acc=$(grep -o 'accuracy [0-9.]*%' "$WORK/wait$j")
	is "$acc" "$(grep -o 'accuracy [0-9.]*%' "$WORK/ref$j.acc")" "job $j: $acc as in one process"
done

# The late worker (array $LATE) got work.
late_id=$(awk -v a="/${LATE}_1" 'index($2, a) { print $1 }' "$WORK/status")
like "$late_id" '^[0-9]+$' "the late worker is in the pool (worker $late_id)"
late_rows=$(tail -n +2 "$POOL/job-1.csv" "$POOL/job-2.csv" | awk -F, -v w="$late_id" '$5 == w' | wc -l)
ok "$([ "$late_rows" -gt 0 ]; echo $?)" "the late worker answered $late_rows queries"
nodes=$(awk '$2 ~ /^n[1-3]\// { split($2, a, "/"); print a[1] }' "$WORK/status" | sort -u | wc -l)
is "$nodes" 3 "the 6 workers ran on 3 nodes"

# Rates: from the coordinator's timeline (t job rate workers share done),
# from 1.5 s after job 2's first answer (the rates converge within 0.5 s; they
# are averages over the sliding window, 1 s here, so they show it a little
# later) until job 2 is about to run out of tasks. Both the two jobs' mean
# rates over that period and the median of the per-sample gaps must be within
# 10% (the dispatch rule keeps the queries given equal, so every sample is).
t2=$(awk -v j="$J2" '$2 == j && $3 == "first_result" { print $1 }' "$POOL/events.tsv")
t2end=$(awk -v j="$J2" '$2 == j && $3 == "done" { print $1 }' "$POOL/events.tsv")
awk -v a="$J1" -v b="$J2" -v from="$t2" -v to="$t2end" '
	NR > 1 && $1 >= from + 1.5 && $1 <= to - 1.1 { r[$1, $2] = $3; ts[$1] = 1 }
	END { for (t in ts) if (((t, a) in r) && ((t, b) in r) && r[t, a] > 0 && r[t, b] > 0)
		print t, r[t, a], r[t, b] }' "$POOL/timeline.tsv" | sort -n >"$WORK/pairs"
n=$(wc -l <"$WORK/pairs")
# (mawk: no asort, so the median comes from sort.)
read -r mean1 mean2 gap < <(awk '{ s1 += $2; s2 += $3 }
	END { if (!NR) { print "0 0 1"; exit }
		m1 = s1 / NR; m2 = s2 / NR; d = m1 - m2; if (d < 0) d = -d
		printf "%.0f %.0f %.4f\n", m1, m2, d / (m1 > m2 ? m1 : m2) }' "$WORK/pairs")
med=$(awk '{ d = $2 - $3; if (d < 0) d = -d; printf "%.4f\n", d / ($2 > $3 ? $2 : $3) }' \
	"$WORK/pairs" | sort -n | awk -v n="$n" 'NR == int((n + 1) / 2)')
diag "steady period: $n samples; mean rates $mean1 and $mean2 q/s (gap $gap); median per-sample gap $med"
conv=$([ "$n" -ge 4 ] && awk -v g="${gap:-x}" 'BEGIN { exit !(g ~ /^[0-9.]+$/ && g <= 0.10) }'
	echo $?)
ok "$conv" "both jobs' query rates within 10% after convergence ($mean1 vs $mean2 q/s over $n samples)"
conv2=$(awk -v g="${med:-x}" 'BEGIN { exit !(g ~ /^[0-9.]+$/ && g <= 0.10) }'; echo $?)
ok "$conv2" "and sample by sample (median gap $med)"
if [ "$conv" != 0 ] || [ "$conv2" != 0 ]; then
	fail_detail "job 2 ran from ${t2:-?} to ${t2end:-?} s; median per-sample gap $med"
	fail_detail "from job 2's start, t: job rate/workers/share ..."
	awk -v f="${t2:-0}" 'NR > 1 && $1 >= f - 0.1 && $1 <= f + 4 {
		if ($1 != t) { if (l != "" && k++ % 4 == 0) print l; t = $1; l = $1 ":" }
		l = l "  " $2 " " $3 "/" $4 "/" $5 } END { print l }' "$POOL/timeline.tsv" |
		head -25 | while read -r l; do fail_detail "$l"; done
fi

# Workers returned: right after one job ends, the job that goes on gets the
# whole pool. Which job ended first is in events.tsv (in the order they
# happened): job 2 usually, but on a loaded machine the late worker may join
# so late that job 1 ends first, and the rule is the same either way. The
# coordinator samples the jobs that go on when one ends, so the other job's
# first row later than the ended job's last one in timeline.tsv is its share
# from that moment on, however late the periodic samples come on a loaded node.
first=$(awk -v a="$J1" -v b="$J2" 'NR > 1 && $3 == "done" && ($2 == a || $2 == b) { print $2; exit }' \
	"$POOL/events.tsv")
other=$([ "$first" = "$J1" ] && echo "$J2" || echo "$J1")
n_other=$([ "$other" = "$J1" ] && echo $N1 || echo $N2)
# Rows of one sample share its time and come in job order, so the other
# job's row in the ended job's last sample is from before the end: the first
# row after it has a later time.
read -r share done_other < <(awk -v a="$other" -v b="${first:-none}" '
	NR > 1 && $2 == b { s = ""; seen = 1; tb = $1 }
	NR > 1 && $2 == a && seen && s == "" && $1 > tb { s = $5; d = $6 } END { print s, d }' "$POOL/timeline.tsv")
left=$((n_other - ${done_other:-0}))
if [ "$left" -ge 600 ]; then
	is "$share" "6.00" "job $other ($left queries left) gets all 6 workers as soon as job ${first:-?} ends" ||
		fail_detail "events.tsv: $(grep -E 'done|failed|cancelled' "$POOL/events.tsv" | tr '\n\t' '; ');" \
			"timeline.tsv has no row of job $other after job ${first:-?}'s last"
else
	# Both jobs ran out of work together: nothing was left to hand over.
	ok 0 "job $other had $left queries left when job ${first:-?} ended # SKIP nothing to hand over"
fi
idle=$(awk '$2 ~ /^n[1-3]\// && $3 == "-"' "$WORK/status" | wc -l)
is "$idle" 6 "with both jobs done every worker is free"

infer plot "$J1" "$J2" --out "$WORK/rates.png" >/dev/null
ok "$([ -s "$WORK/rates.png" ] && file "$WORK/rates.png" | grep -q PNG; echo $?)" "plot drew a PNG"

[ -n "${DLRT_TEST_KEEP:-}" ] && cp -r "$POOL" "$DLRT_TEST_KEEP"
infer pool stop >/dev/null
ok $? "pool stop"
wait_until -i 0.5 60 eval '[ -z "$(squeue -h -j "$ARRAY,$LATE" 2>/dev/null)" ]'
is "$(squeue -h -j "$ARRAY,$LATE" 2>/dev/null | wc -l)" 0 "every array element ended"
ok "$([ ! -e "$POOL/access" ]; echo $?)" "the access record is gone"
scancel "$ARRAY" "$LATE" 2>/dev/null
done_testing
