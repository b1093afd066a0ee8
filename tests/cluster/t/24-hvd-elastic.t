#!/bin/bash
# Elastic Horovod is refused in gloo mode: an elastic worker runs a second gloo
# rendezvous after every reset, which Horovod's own elastic driver supports by
# resetting its server between rounds and dlrt's one-round-per-step driver does
# not (the second round read the first round's pair addresses and hung). The step
# fails before any task runs, with one line that names the variable and the way
# out; HOROVOD_ELASTIC=0 changes nothing.
. "$(dirname "$0")/../lib.sh"

for layout in "-N3 -n6" "-N2 -n5"; do
	# shellcheck disable=SC2086 # the layout is several options
	run_srun $layout --export=ALL,HOROVOD_ELASTIC=1 --dl-runtime=horovod --dl-horovod=gloo \
		touch "$WORK/ran"
	ok $((RC == 0)) "$layout HOROVOD_ELASTIC=1: the step fails (rc=$RC)"
	lines=$(grep 'dlrt:' "$ERR" | sed 's/.*dlrt: //' | sort -u)
	is "$(grep -c . <<<"$lines")" 1 "$layout: one distinct dlrt line" ||
		fail_detail "stderr: $(head -c 600 "$ERR")"
	like "$lines" "^HOROVOD_ELASTIC=1: dlrt's gloo rendezvous serves one round per step .* unset HOROVOD_ELASTIC .* horovodrun$" \
		"$layout: the line names the variable, the cause and the fix"
	ok "$([ ! -e "$WORK/ran" ]; echo $?)" "$layout: the program never ran"
done

# Horovod reads the variable with strtol: 0 is not elastic.
run_srun -N3 -n6 --export=ALL,HOROVOD_ELASTIC=0 --dl-runtime=horovod "$TESTS_BIN/gloo_hvd_allreduce"
is "$RC" 0 "HOROVOD_ELASTIC=0: a real libgloo rendezvous and allreduce still run"
is "$(grep -c '^rank [0-5] of 6: allreduce ok sum=15$' "$OUT")" 6 "all 6 ranks passed" ||
	fail_detail "stderr: $(head -c 600 "$ERR")"

for _ in $(seq 100); do # the failed steps' jobs may still be completing
	[ "$(squeue -h -u "$DLRT_TEST_USER" | wc -l)" -eq 0 ] && break
	sleep 0.1
done
left=$(pgrep -u "$DLRT_TEST_USER" -f "dlrt-hvd-driver --bind $(echo "$DLRT_CLUSTER_ID" | sed 's/^/10.77./')\\." | wc -l)
is "$left" 0 "no driver left running"
done_testing
