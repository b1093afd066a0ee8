#!/bin/bash
# The plugin as Slurm loads it: exported symbols, options in every client's --help.
. "$(dirname "$0")/../lib.sh"

so=$DLRT_CLUSTER_DIR/prefix/lib/dlrt/dlrt.so
syms=$(nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort | tr '\n' ' ')
like "$syms" '^plugin_name plugin_type plugin_version (slurm_spank_[a-z_]+ )+$' \
	"dlrt.so exports only plugin_* and slurm_spank_* ($syms)"
like "$(cat "$DLRT_CLUSTER_DIR/etc/plugstack.conf.d/dlrt.conf")" "^optional $so" \
	"loaded through a plugstack.conf.d file, as optional"

for client in srun sbatch salloc; do
	help=$(as_user "$client" --help 2>&1)
	for opt in dl-runtime=NAME dl-servers=N dl-verbose dl-dry-run; do
		like "$help" "--$opt +\[dlrt\]" "$client --help shows --$opt"
	done
done
like "$(as_user srun --dl-runtime=bogus true 2>&1)" "valid runtimes: mxnet, horovod, caffe2, torch, torchrun" \
	"an unknown runtime's error lists the runtimes"
# slurmd loaded the plugin cleanly: no SPANK error (loading, init, option
# registration) and no dlrt error outside a step (plugstack.conf) in any node's log. Only SPANK lines count: per-step errors that
# later tests provoke on purpose ("[job.step] error: dlrt: ...", the batch step's
# "[job.batch] error: dlrt: ..." of a refused retry record, PMIx lines that
# name the cluster's dlrt-cluster folder) stay in the logs until the daemons
# restart, so a second run on a cluster still up would see them.
unlike "$(grep -hiE 'spank|error: dlrt:' "$DLRT_CLUSTER_DIR"/log/slurmd-*.log | grep -Ev '\] \[[0-9]+\.([0-9]+|batch|extern)\] error: dlrt: ')" \
	"error" "no SPANK error in the slurmd logs"
done_testing
