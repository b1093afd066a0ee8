# hvd_local_lib.sh - what hvd_gloo_local.sh and hvd_elastic_local.sh share:
# the driver on 127.0.0.1 behind its lifetime pipe, and Horovod's slot
# assignment. Sourced; the caller sets `set -euo pipefail`, $tmp and $DRIVER.

# hvd_driver_start NAME ARGS...: starts $DRIVER with ARGS on 127.0.0.1, its
# log in $tmp/driver.log and its lifetime pipe on fd 7 (the driver exits when
# it closes); sets drv (pid) and port (from its readiness line, bounded).
hvd_driver_start() {
	local name=$1
	shift
	mkfifo "$tmp/life" "$tmp/ready"
	"$DRIVER" --bind 127.0.0.1 --port 0 --lifetime-fd 8 --ready-fd 9 "$@" \
		8<"$tmp/life" 9>"$tmp/ready" 2>"$tmp/driver.log" &
	drv=$!
	exec 7>"$tmp/life"
	read -r -t 10 port <"$tmp/ready" || {
		echo "$name: driver not ready in 10 s" >&2
		cat "$tmp/driver.log" >&2
		exit 1
	}
}

# hvd_driver_end NAME: the step ends: closes the lifetime pipe; the driver
# must exit 0 within 5 s. Sets fail=1 otherwise.
hvd_driver_end() {
	exec 7>&-
	for _ in $(seq 50); do kill -0 "$drv" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$drv" 2>/dev/null; then
		echo "$1: driver still running after its lifetime fd closed" >&2
		kill "$drv"
		fail=1
	else
		wait "$drv" || { echo "$1: driver exited with $?" >&2; fail=1; }
	fi
}

# hvd_slots HOSTS ("h:n,h:n,..."): Horovod's get_host_assignments, as the
# plugin computes it. Sets names, slots and size, and prints one line per
# slot in rank order: "HOST_INDEX LOCAL_RANK CROSS_RANK CROSS_SIZE".
hvd_slots() {
	local e h o lr cr cs
	IFS=, read -ra entries <<<"$1"
	names=() slots=() size=0
	for e in "${entries[@]}"; do names+=("${e%%:*}"); slots+=("${e##*:}"); done
	for e in "${slots[@]}"; do size=$((size + e)); done
	for h in "${!names[@]}"; do
		for ((lr = 0; lr < slots[h]; lr++)); do
			cr=0 cs=0
			for o in "${!names[@]}"; do
				if ((slots[o] > lr)); then
					((o < h)) && cr=$((cr + 1))
					cs=$((cs + 1))
				fi
			done
			echo "$h $lr $cr $cs"
		done
	done
}
