#!/bin/bash
# ps-lite waits forever for a peer that died; dlrt ends the step at the first
# failing role instead, with one line naming the role and task. The roles run
# through a wrapper that behaves as ps-lite does after losing a peer (it waits,
# here 100 s), so only dlrt can end these steps early: a scheduler killed with
# SIGKILL mid-run, a scheduler whose port was taken between dlrt's check and
# its bind, a worker exiting non-zero, each with the scheduler as task 0 and as
# the extra process (--dl-mxnet-sched=extra).
. "$(dirname "$0")/../lib.sh"

P=$TESTS_BIN/pslite_contract
W=$WORK/pslite-wait.sh
cat >"$W" <<WRAP
#!/bin/bash
# The scheduler is the program itself (its death is what dlrt must see).
# Servers and workers that fail wait like ps-lite's do: forever (100 s here).
if [ "\$FAIL_WORKER" = 1 ] && [ "\$DMLC_ROLE" = worker ] && [ "\$DLRT_ROLE_INDEX" = 1 ]; then
	sleep 1
	echo "worker 1 gives up" >&2
	exit 3
fi
if [ "\$DMLC_ROLE" = scheduler ]; then
	if [ "\$TAKE_PORT" = 1 ]; then
		# Another process takes the port after dlrt checked it was free.
		timeout 30 python3 -c 'import socket, os, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((os.environ["DMLC_PS_ROOT_URI"], int(os.environ["DMLC_PS_ROOT_PORT"]))); s.listen()
open(os.environ["HOLD_READY"], "w").close(); time.sleep(60)' </dev/null >/dev/null 2>&1 &
		. "$WAIT_UNTIL"
		wait_until -i 0.05 5 test -e "\$HOLD_READY"
	fi
	exec $P "\$@"
fi
$P "\$@" || exec sleep 100
WRAP
chmod 0755 "$W"

# run_case DESC EXPECT-REGEX SRUN-ARGS... : the step must fail well before the
# 60 s a ps-lite role would wait, with exactly one dlrt line, naming the role.
run_case() {
	local desc=$1 want=$2 t0 t1
	shift 2
	t0=$(date +%s)
	run_srun -N3 -n6 --dl-runtime=mxnet --dl-servers=2 "$@"
	t1=$(date +%s)
	ok "$([ "$RC" -ne 0 ] && echo 0 || echo 1)" "$desc: the step fails"
	ok "$([ $((t1 - t0)) -lt 40 ] && echo 0 || echo 1)" "$desc: ended by dlrt, not by the 60 s waits ($((t1 - t0)) s)"
	is "$(grep -c 'dlrt: mxnet ' "$ERR")" 1 "$desc: one dlrt line"
	like "$(grep 'dlrt: mxnet ' "$ERR")" "$want" "$desc: it names the role and task"
}

for mode in task extra; do
	if [ $mode = task ]; then who='scheduler \(task 0 on n1\)'; else
		who='scheduler \(the extra process on n1, next to task 0\)'
	fi
	run_case "$mode scheduler killed mid-run" "dlrt: mxnet $who was killed by signal 9 .*ending the step" \
		--dl-mxnet-sched=$mode "$W" --timeout-s 60 --rounds 100000 --round-delay-ms 20 \
		--crash scheduler --crash-after-ms 1000
	run_case "$mode scheduler's port taken" "dlrt: mxnet $who exited with status 1: ending the step" \
		--dl-mxnet-sched=$mode --export=ALL,TAKE_PORT=1,HOLD_READY=$WORK/held.$mode \
		"$W" --timeout-s 60 --rounds 3
	like "$(cat "$ERR")" 'scheduler on n1 .*bind .*Address already in use' "$mode: the scheduler's own bind error is shown"
	run_case "$mode worker 1 exits 3" 'dlrt: mxnet worker 1 \(task [0-9]+ on n[0-9]\) exited with status 3: ending the step' \
		--dl-mxnet-sched=$mode --export=ALL,FAIL_WORKER=1 "$W" --timeout-s 60 --rounds 3
done

# A step that succeeds prints no dlrt line; a role ended by SIGTERM (scancel,
# Ctrl-C) is never reported as the cause.
run_srun -N3 -n6 --dl-runtime=mxnet --dl-servers=2 "$P" --timeout-s 20 --rounds 3
is "$RC" 0 "a healthy step still succeeds"
unlike "$(cat "$ERR")" 'dlrt: mxnet' "a healthy step: no dlrt line"
run_srun -N3 -n3 --dl-runtime=mxnet --dl-servers=1 bash -c '[ $SLURM_PROCID = 2 ] && kill -TERM $$; sleep 2'
unlike "$(cat "$ERR")" 'dlrt: mxnet' "a task ended by SIGTERM is not reported as the failure"
done_testing
