#!/bin/bash
# --dl-topology=FILE names a path the job's user controls. slurmstepd (root) must
# never open it: a FIFO would block root in open() with no timeout (the job stuck
# COMPLETING), /dev/zero would be read without end, and a file another user keeps
# private would be read with root's rights. The file is opened and read by a child
# that became the job's user; only a regular file of at most 64 MiB is accepted.
# Each refused step fails with one line and the node goes back to idle. The real
# attack swaps the path for a link between a check and root's open; pointing the
# link at the target from the start exercises the same open deterministically.
. "$(dirname "$0")/../lib.sh"

SRC=$(cd "$HERE/../.." && pwd)
T=$WORK/topo
mkdir -p "$T"
cp "$SRC/tests/fixtures/topo/cluster-2s4g.xml" "$T/good.xml"
mkfifo "$T/fifo"
ln -s fifo "$T/fifo.xml"
ln -s /dev/zero "$T/zero.xml"
truncate -s 65M "$T/big.xml" # sparse: over the limit without using the disk
# A file that crashes hwloc's XML reader (found by libFuzzer from cluster-2s4g.xml):
# the parse in the reading child dies, slurmstepd never parses it.
cp "$SRC/tests/fixtures/topo/crashes-hwloc.xml" "$T/crash.xml"
chown -R "$DLRT_TEST_USER": "$T"
# A valid topology that only the stranger may read: root could, the job's user not.
cp "$SRC/tests/fixtures/topo/cluster-2s4g.xml" "$WORK/private.xml"
chown "$STRANGER": "$WORK/private.xml"
chmod 0600 "$WORK/private.xml"
ln -s "$WORK/private.xml" "$T/other.xml"

STEP=(-N1 -w n1 -n1 --gpus-per-node=1 --dl-runtime=torch)


refused() { # refused NAME FILE REGEX
	run_srun "${STEP[@]}" --dl-topology="$T/$2" true
	ok $((RC == 0)) "$1: the step fails" || fail_detail "stderr: $(srun_errors)"
	is "$(srun_errors | grep -c 'dlrt:')" 1 "$1: one dlrt line" || fail_detail "stderr: $(srun_errors)"
	like "$(srun_errors)" "$3" "$1: the line says why"
	node_back "$1"
}

refused "FIFO" fifo.xml "topology file $T/fifo.xml is not a regular file \(a FIFO, a device or a folder\)"
refused "/dev/zero" zero.xml "topology file $T/zero.xml is not a regular file"
refused "over 64 MiB" big.xml "topology file $T/big.xml is larger than 64 MiB"
# hwloc 2.15 (Debian unstable) reads that file without crashing and refuses it as
# invalid (2.9 and 2.12 crash): there the line is hwloc's refusal.
hwloc_minor=$(pkg-config --modversion hwloc 2>/dev/null | sed -n 's/^2\.\([0-9]*\)\..*/\1/p')
if [ "${hwloc_minor:-0}" -ge 15 ]; then
	refused "a file that crashed older hwloc" crash.xml "hwloc could not load topology file $T/crash.xml \(check that it is hwloc XML"
else
	refused "a file that crashes hwloc" crash.xml "topology file $T/crash.xml crashes hwloc's XML reader \(signal 11\)"
fi
refused "another user's file" other.xml "cannot open topology file $T/other.xml as the job's user \(Permission denied\)"

# The FIFO was never opened: a writer would find no reader (and would block).
timeout 2 bash -c "echo x >'$T/fifo'" 2>/dev/null
is "$?" 124 "nobody holds the FIFO open for reading"

# A normal file still works, through a link too.
ln -s good.xml "$T/n1.xml"
chown -h "$DLRT_TEST_USER": "$T/n1.xml"
run_srun "${STEP[@]}" --dl-topology="$T/%n.xml" bash -c 'echo "cvd=$CUDA_VISIBLE_DEVICES"'
is "$RC" 0 "a regular topology file (through %n and a link) works" || fail_detail "stderr: $(srun_errors)"
like "$(cat "$OUT")" "^cvd=[0-9]" "and the task got its GPU"
node_back "regular file"

done_testing
