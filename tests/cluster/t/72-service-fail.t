#!/bin/bash
# When the service cannot start on the root task's node, the failure reaches
# every node of the step at once: the root's first task publishes the error
# through the address exchange instead of an address, and every node's tasks
# fail with that one line. Before, only the root's node failed at once; the
# other nodes waited the whole exchange_timeout for an address that never came.
# The test sets exchange_timeout far above the job's time limit (the harness
# kills srun after DLRT_JOB_TIMEOUT), so passing means "well before it".
. "$(dirname "$0")/../lib.sh"

CONF=$DLRT_CLUSTER_DIR/etc/plugstack.conf.d/dlrt.conf
DRIVER=$DLRT_CLUSTER_DIR/prefix/libexec/dlrt/dlrt-hvd-driver
# Kept in memory: done_testing removes $WORK before the EXIT trap runs.
SAVED=$(cat "$CONF")
MODE=$(stat -c %a "$DRIVER")
trap 'printf "%s\n" "$SAVED" >"$CONF"; chmod "$MODE" "$DRIVER"' EXIT
trap 'exit 1' TERM INT
printf "%s\n" "$SAVED" | grep -v '^#' | sed "/dlrt.so/ s|\$| exchange_timeout=3600|" >"$CONF"
# The plugin refuses to run a service program others could have replaced: a
# group-writable driver makes the service fail on the root's node (n1) only.
chmod g+w "$DRIVER"

t0=$(date +%s)
run_srun -l -w n1,n2,n3 -N3 -n5 --dl-runtime=horovod --dl-horovod=gloo touch "$WORK/ran"
took=$(( $(date +%s) - t0 ))
diag "srun ended after $took s (exchange_timeout=3600)"
ok "$([ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && [ "$RC" -ne 137 ]; echo $?)" \
	"srun fails on its own, long before exchange_timeout (rc=$RC)" ||
	fail_detail "stderr: $(head -c 600 "$ERR")"
ok "$([ ! -e "$WORK/ran" ]; echo $?)" "no task ran the program"
line='dlrt: .*/dlrt-hvd-driver is not an executable file writable only by its owner'
is "$(grep -c "$line" "$ERR")" 3 "every node's first task printed the one line (3 nodes)" ||
	fail_detail "stderr: $(head -c 900 "$ERR")"
is "$(grep dlrt: "$ERR" | sed 's/^.* dlrt: //' | sort -u | wc -l)" 1 "the same line on every node"
# srun -l labels each line with the task id; -n5 on 3 nodes: n1 0-2, n2 3, n3 4.
is "$(grep dlrt: "$ERR" | grep -o '^ *[0-9]*:' | tr -d ' :' | sort -n | paste -sd,)" "0,3,4" \
	"from the first task of n1 (0), n2 (3) and n3 (4)" || fail_detail "stderr: $(head -c 900 "$ERR")"
done_testing
