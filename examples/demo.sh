#!/bin/bash
# demo.sh - what `make demo` runs once the local cluster is up: an sbatch job
# under the plugin that prints each task's role and node on 3 nodes.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
eval "$("$top/tests/cluster/cluster.sh" env)"
work=$(mktemp -d "$DLRT_CLUSTER_DIR/work/demo.XXXX")
cp "$top/examples/roles.sbatch" "$work/"
chown -R "$DLRT_TEST_USER": "$work"
cd "$work"
echo "== sbatch examples/roles.sbatch (as user $DLRT_TEST_USER on the local 3-node cluster)"
if ! timeout 120 runuser -u "$DLRT_TEST_USER" -- env SLURM_CONF="$SLURM_CONF" \
	sbatch --wait -o roles.out roles.sbatch; then
	echo "demo: the job failed; its output:" >&2
	cat roles.out >&2 || true
	exit 1
fi
cat roles.out
echo
echo "== Try it yourself:"
echo "   eval \"\$($top/tests/cluster/cluster.sh env)\""
echo "   srun -N3 -n6 -c5 --dl-runtime=horovod --dl-dry-run true"
