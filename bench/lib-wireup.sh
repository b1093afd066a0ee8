# shellcheck shell=bash
# lib-wireup.sh - the timing the wire-up benches share (hvd-, torch-, mxnet-wireup.sh).
# Sourced, never run: bench/run-all.sh skips bench/lib-*.sh.
#
# The sourcing script defines run_ms ARGS... (one step; prints its time in ms, or
# returns non-zero after saying why on stderr) and sets REPEAT.

# median_ms ARGS...: one discarded warm-up run, then REPEAT timed runs of
# run_ms ARGS...; prints their median in ms (the mean of the middle two for an
# even REPEAT). The warm-up takes the first step's costs (cold page cache,
# slurmd's first launch of a program) out of the numbers; a failed run fails it.
median_ms() {
	local i v all=()
	run_ms "$@" >/dev/null || return 1
	for ((i = 0; i < REPEAT; i++)); do
		v=$(run_ms "$@") || return 1
		all+=("$v")
	done
	printf '%s\n' "${all[@]}" | sort -n | awk '{ v[NR] = $1 } END {
		print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
