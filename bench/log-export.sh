#!/bin/bash
# log-export.sh - what --dl-log-dir costs: 4 tasks on 2 nodes each print LINES lines
# (64 bytes), timed end to end (srun start to exit), median of RUNS runs:
#   no export      srun, output to srun only (the floor)
#   srun -o        Slurm's own per-task files (-o DIR/%j-%s-%t.log): the baseline a user
#                  would use, without role names, time stamps or a copy on srun
#   --dl-log-dir   dlrt: role-named files, every line stamped, and still passed to srun
# Run by bench/run-all.sh (SLURM_CONF and SRUN from there). Timings are not pass/fail.
set -u
LINES=${LINES:-200000}
RUNS=${RUNS:-3}
SRUN=${SRUN:-srun}
W=$(mktemp -d "$DLRT_CLUSTER_DIR/work/bench-logs.XXXX")
chown "$DLRT_TEST_USER": "$W"
cd "$W" || exit 1
prog="yes 'dlrt log export benchmark line, 64 bytes with the newline.....' | head -n $LINES"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() { # timeit ARGS...: prints seconds of one srun
	local t0 t1
	t0=$(date +%s.%N)
	$SRUN -N2 -n4 --dl-runtime=torch "$@" bash -c "$prog" >/dev/null 2>&1 || return 1
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}
measure() { # measure NAME ARGS...: median seconds; exits the script if a run fails
	local name=$1 i s all=""
	shift
	for ((i = 0; i < RUNS; i++)); do
		s=$(timeit "$@") || { echo "log-export: $name: srun failed" >&2; exit 1; }
		all+="$s"$'\n'
	done
	printf '%s' "$all" | median
}

none=$(measure none) || exit 1
slurm=$(measure slurm -o "$W/slurm-%j-%s-%t.log") || exit 1
dlrt=$(measure dlrt --dl-log-dir="$W/dlrt") || exit 1
mb=$(echo "4 * $LINES * 64 / 1000000" | bc -l)
echo "### Log export: 4 tasks x $LINES lines (64 B), 2 nodes, median of $RUNS runs"
echo
echo "| method | seconds | MB/s | vs srun -o |"
echo "|---|---|---|---|"
printf '| no export (floor) | %.2f | %.0f | %.2f |\n' "$none" "$(echo "$mb / $none" | bc -l)" "$(echo "$none / $slurm" | bc -l)"
printf '| srun -o DIR/%%j-%%s-%%t.log (baseline) | %.2f | %.0f | 1.00 |\n' "$slurm" "$(echo "$mb / $slurm" | bc -l)"
printf '| **--dl-log-dir** (stamped, role names, tee to srun) | %.2f | %.0f | %.2f |\n' "$dlrt" "$(echo "$mb / $dlrt" | bc -l)" "$(echo "$dlrt / $slurm" | bc -l)"
echo
printf 'dlrt over no export: %.2fx (the relay itself); srun -o is faster because slurmstepd\n' "$(echo "$dlrt / $none" | bc -l)"
echo "writes per-task files itself and nothing goes through srun."
f=$(find "$W/dlrt" -name '*.log' | head -1)
echo
echo "dlrt files: $(find "$W/dlrt" -name '*.log' | wc -l) per run x $RUNS, $(wc -l <"$f") lines each (incl. 2 dlrt lines)"
rm -rf "$W"
