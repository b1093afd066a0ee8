#!/bin/bash
# Horovod gloo mode end to end: `sbatch --dl-runtime=horovod --dl-horovod=gloo` runs a
# real libgloo program whose store speaks Horovod's HTTP rendezvous protocol (global,
# local_<host>, cross_<local_rank> scopes, as horovod/common/gloo does) across 3 nodes
# with uneven layouts, then a gloo allreduce. No horovodrun, no ssh, no variable set by
# hand: the plugin started dlrt-hvd-driver and gave every task its HOROVOD_* variables.
. "$(dirname "$0")/../lib.sh"

PRINT='echo HOST=$(hostname) $(env | grep -E "^(SLURM_PROCID|SLURM_LOCALID|SLURM_NODEID|SLURMD_NODENAME|SLURM_JOB_ID|DLRT_|HOROVOD_|NCCL_)" | tr "\n" " ")'
run_batch -N3 -n6 --dl-runtime=horovod --dl-horovod=gloo <<JOB
#!/bin/bash
srun bash -c '$PRINT'
srun "$TESTS_BIN/gloo_hvd_allreduce"
echo "block rc=\$?"
srun -m cyclic "$TESTS_BIN/gloo_hvd_allreduce"
echo "cyclic rc=\$?"
JOB
is "$RC" 0 "sbatch --dl-runtime=horovod --dl-horovod=gloo job succeeded"
out=$(cat "$WORK/job.out")
is "$(grep -c '^rank [0-5] of 6: allreduce ok sum=15$' <<<"$out")" 12 \
	"block and cyclic steps: all 6 ranks passed the 3 rendezvous and the allreduce"
like "$out" "block rc=0" "block step exit 0"
like "$out" "cyclic rc=0" "cyclic step exit 0"
grep '^HOST=' <<<"$out" >"$WORK/env.out"
tpn=$(grep -o 'DLRT_LOCAL_SIZE=[0-9]*' "$WORK/env.out" | sort | uniq -c | awk '{print $2}' | cut -d= -f2 | sort -rn | paste -sd,)
diag "local sizes of the steps: $tpn"
ok $(($(tr , '\n' <<<"$tpn" | sort -u | wc -l) < 2)) "the layout is uneven (local sizes $tpn)"
is "$(grep -c . "$WORK/env.out")" 6 "every task printed its environment"
problems=$(/usr/bin/python3 "$HERE/check_roles.py" horovod <"$WORK/env.out")
ok $? "HOROVOD_* match Slurm's placement; gloo variables consistent"
[ -n "$problems" ] && echo "$problems" | sed 's/^/#   /'
# srun's own notes about waiting for the previous step's nodes ("Step created for job J"
# on 22.05, "... for StepId=J.S" on 24.11) are not errors, nor is
# the line gloo since 2025 logs for every connected mesh (Debian unstable's: always).
grep -v -e 'step creation temporarily disabled' -e 'step creation still disabled' -e 'Step created for ' \
	-e '^\[[^]]*gloo/transport/tcp/context.cc:[0-9]*\] INFO Rank [0-9]* is connected to ' \
	"$WORK/job.err" >"$WORK/job.err.real"
is "$(wc -c <"$WORK/job.err.real")" 0 "nothing on the job's stderr"
[ -s "$WORK/job.err.real" ] && sed 's/^/#   /' "$WORK/job.err.real" | head

# 12 ranks, 4 per node, through srun directly.
run_srun -N3 -n12 --ntasks-per-node=4 --dl-runtime=horovod "$TESTS_BIN/gloo_hvd_allreduce"
is "$RC" 0 "12 ranks, default mode (gloo), srun"
is "$(grep -c 'allreduce ok sum=66$' "$OUT")" 12 "all 12 ranks reduced to 66"
done_testing
