#!/bin/bash
# "Done means": a user loads the module and runs the examples of `man dlrt` exactly as
# the page prints them (copied out of the rendered page, not retyped here).
. "$(dirname "$0")/../lib.sh"

P=$DLRT_CLUSTER_DIR/prefix
# The rendered EXAMPLES section, as the user sees it after `module load dlrt`.
cat >"$WORK/man.sh" <<'SH'
. /usr/share/lmod/lmod/init/bash
module use "$1/etc/modulefiles"
module load dlrt
MANWIDTH=120 man dlrt 2>/dev/null | sed -n '/^EXAMPLES/,/^EXIT STATUS/p'
SH
ex=$(as_user env -i HOME="$WORK" PATH=/usr/bin:/bin bash --noprofile --norc "$WORK/man.sh" "$P")
ok "$([ -n "$ex" ]; echo $?)" "man dlrt has EXAMPLES after module load dlrt"
# Indented blocks of the section (the commands), with continuation lines joined.
# Their indent (14 columns up to groff 1.23, 12 in 1.24) is the first command's.
IN=$(grep -m1 -- '--dl-dry-run true' <<<"$ex" | sed -E 's/^( *).*/\1/' | wc -L)
[ "$IN" -gt 0 ] || IN=14
blocks=$(sed -E -n "s/^ {$IN}//p; /^\$/p" <<<"$ex" | cat -s)

# Each example runs in a login-like shell with the module loaded, as the test user.
run_example() { # run_example FILE: runs the shell file, output to $OUT, status in $RC
	cat >"$WORK/run.sh" <<SH
. /usr/share/lmod/lmod/init/bash
module use "$P/etc/modulefiles"
module load dlrt
cd "$WORK"
. "$1"
SH
	as_user env -i HOME="$WORK" PATH=/usr/bin:/bin SLURM_CONF="$SLURM_CONF" \
		bash --noprofile --norc "$WORK/run.sh" >"$OUT" 2>"$ERR"
	RC=$?
}

# 1. The dry run.
grep -m1 -- '--dl-dry-run true' <<<"$blocks" >"$WORK/ex1.sh"
run_example "$WORK/ex1.sh"
is "$RC" 0 "example 1 (dry run): $(cat "$WORK/ex1.sh")"
like "$(sed -n 2p "$OUT")" "^roles: 1 scheduler, 2 servers, 3 workers$" "it prints the MXNet roles"

# 2. What each Horovod task sees (a command continued with a backslash).
awk '/--dl-runtime=horovod bash -c/ {p=1} p {print} p && !/\\$/ {exit}' <<<"$blocks" >"$WORK/ex2.sh"
run_example "$WORK/ex2.sh"
is "$RC" 0 "example 2 (horovod variables)"
is "$(grep -cE '^rank [0-3] of 4, local [0-3] on n[1-3]$' "$OUT")" 4 "every rank prints its Horovod slot"

# 3. The PyTorch job script, submitted with sbatch as the page says.
awk '/^#!\/bin\/bash/ {p=1} p && /^$/ {exit} p {print}' <<<"$blocks" >"$WORK/job.sh"
like "$(cat "$WORK/job.sh")" "#SBATCH --dl-runtime=torch" "example 3 is a job script"
run_srun -N1 -n1 --dl-runtime=torch --dl-dry-run true
if grep -q 'MASTER_ADDR=' "$OUT"; then
	echo 'sbatch --wait -o job.out job.sh' >"$WORK/ex3.sh"
	run_example "$WORK/ex3.sh"
	is "$RC" 0 "example 3 (PyTorch job) ran"
	# (gloo since 2025 logs each connected mesh, Debian unstable's always: not the ranks')
	is "$(grep -v '/gloo/transport/tcp/context.cc:[0-9]*\] INFO Rank [0-9]* is connected to ' \
		"$WORK/job.out" | sort | tr '\n' ' ')" "0 4 1 4 2 4 3 4 " "every rank joined a world of 4"
else
	# torch's MASTER_ADDR/PORT come from the address exchange; until
	# it is switched on the example cannot rendezvous.
	ok 0 "example 3 (PyTorch job) # SKIP the address exchange is not enabled yet (no MASTER_ADDR)"
fi
done_testing
