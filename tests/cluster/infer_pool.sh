# shellcheck shell=bash
# infer_pool.sh - shared by the dlrt-infer failure tests (t/52-infer-journal.t,
# t/53-infer-standby.t), sourced after lib.sh: the dataset (or SKIP), the
# pool, the single-process references, and the checks of a pool's results
# and of its timeline files across changes of coordinator.
# Sets T, IN, MD, POOL, TL, EV; defines the functions below.

T=/usr/share/datasets/fashion-mnist
IN=$T/train-images-idx3-ubyte.gz
MD=$DLRT_CLUSTER_DIR/prefix/share/dlrt/models
POOL=$WORK/pool
TL=$POOL/timeline.tsv
EV=$POOL/events.tsv
infer() { as_user env DLRT_INFER_POOL="$POOL" dlrt-infer "$@"; }

if [ ! -r "$IN" ]; then
	echo "1..0 # SKIP dataset-fashion-mnist is not installed (tests/cluster/install-deps.sh)"
	exit 0
fi

ref() { # ref NAME MODEL FIRST COUNT: the failure-free, single-process answers
	as_user dlrt-infer local --model "$2" --inputs "$IN" --first "$3" --count "$4" \
		--model-dir "$MD" --out "$WORK/ref$1.csv" 2>/dev/null
	tail -n +2 "$WORK/ref$1.csv" | sort -t, -k1n >"$WORK/ref$1.sorted"
}

exactly_once() { # exactly_once JOB N REF: rows, each input once, answers equal the reference
	local csv=$POOL/job-$1.csv
	is "$(($(wc -l <"$csv") - 1))" "$2" "job $1: $2 result rows"
	is "$(tail -n +2 "$csv" | cut -d, -f2 | sort -u | wc -l)" "$2" "job $1: every input exactly once"
	tail -n +2 "$csv" | cut -d, -f2-4 | sort -t, -k1n >"$WORK/pool$1.sorted"
	ok "$(cmp -s "$WORK/pool$1.sorted" "$WORK/ref$3.sorted"; echo $?)" \
		"job $1: answers equal to the failure-free run"
}

done_of() { infer status 2>/dev/null | awk -v j="$1" '/^WKR/ { exit } $1 == j { split($5, a, "/"); print a[1] }'; }
workers_up() { infer status 2>/dev/null | grep -cE '^[0-9]+ +n[1-3]/'; }
field() { sed -n "s/^$1=//p" "$POOL/access" 2>/dev/null; } # of the access record

# ---- the timeline files across a change of coordinator ----------------------

timeline_snapshot() { # before killing a coordinator
	cp "$TL" "$WORK/tl.before"
	cp "$EV" "$WORK/ev.before"
}

prefix_kept() { # prefix_kept FILE COPY: COPY has rows and FILE still starts with its bytes
	[ "$(tail -n +2 "$2" | wc -l)" -gt 0 ] && head -c "$(stat -c %s "$2")" "$1" | cmp -s - "$2"
}

timeline_kept() { # timeline_kept WHAT EVENT: after the change of coordinator WHAT
	prefix_kept "$TL" "$WORK/tl.before"
	ok $? "timeline.tsv still holds the $(($(wc -l <"$WORK/tl.before") - 1)) rows from before the $1"
	prefix_kept "$EV" "$WORK/ev.before"
	ok $? "events.tsv still holds the events from before the $1"
	wait_until -i 0.1 5 grep -q "	$2\$" "$EV"
	ok $? "events.tsv marks the $1 ($2)"
}

backwards() { # the first row whose time is below the one before, if any
	awk -F'\t' 'NR > 1 { if ($1 + 0 < p) { print "line " NR ": " $1 " after " p; exit } p = $1 + 0 }' "$1"
}

timeline_end_checks() { # timeline_end_checks KIND N: after N changes of coordinator
	local f
	for f in "$TL" "$EV"; do
		is "$(grep -c '^t	job	' "$f")" 1 "${f##*/}: one header"
		is "$(backwards "$f")" "" "${f##*/}: the time column never goes backwards ($(wc -l <"$f") lines)"
		is "$(stat -c %a "$f")" 600 "${f##*/} is private (0600)"
	done
	is "$(awk -F'\t' '$2 == 1 && $3 == "submitted"' "$EV" | wc -l)" 1 \
		"events.tsv still has job 1's submission, from before the first $1"
	is "$(grep -cE "	$1:[0-9]+\$" "$EV")" "$2" "events.tsv marks the $2 changes ($1:EPOCH)"
	is "$(awk -F'\t' '$3 == "first_task" || $3 == "first_result" { n[$2 " " $3]++ }
		END { for (k in n) if (n[k] > 1) print k }' "$EV")" "" \
		"events.tsv: each job's first_task and first_result once, across coordinators"
	diag "pool time of each $1: $(awk -F'\t' -v k="$1:" 'index($3, k) == 1 { printf "%s at %s s; ", $3, $1 }' "$EV")"
}
