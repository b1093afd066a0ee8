#!/bin/bash
# infer.sh - answer the 10,000 Fashion-MNIST test images with a trained model on a
# dlrt-infer pool (a job array: one coordinator and 5 workers over the nodes), then
# print the accuracy and the query rate. Run it where you run sbatch:
#
#   examples/infer.sh model.dlrtw          # the weights file train.sbatch wrote
#   examples/infer.sh lenet5               # or a built-in model
#
# The pool lives in $DLRT_INFER_POOL (default ./pool), a folder the nodes share.
set -euo pipefail
model=${1:-model.dlrtw}
case $model in
*/* | *.dlrtw) model=$(realpath "$model") ;; # the workers open it: an absolute path
esac
export DLRT_INFER_POOL=${DLRT_INFER_POOL:-$PWD/pool}
TEST=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz

# -c 8: two elements per 16-CPU node, so the 6 elements land on all 3 nodes.
array=$(dlrt-infer pool start --workers 5 --wait --timeout 300 -- -c 8 --job-name=fmnist-infer)
trap 'dlrt-infer pool stop >/dev/null' EXIT
echo "pool: array job $array (1 coordinator, 5 workers) in $DLRT_INFER_POOL"
# The labels are found next to the images (t10k-labels-idx1-ubyte.gz), so the pool
# keeps the accuracy.
job=$(dlrt-infer submit --model "$model" --inputs "$TEST" --batch 100 --name fmnist-test)
# e.g. "job 1 done: 10000/10000 queries, accuracy 88.10% (8810/10000), 1.42 s
# (7042 queries/s), results in .../job-1.csv"
dlrt-infer wait "$job"
status=$(dlrt-infer status)
echo "queries answered per worker:"
tail -n +2 "$DLRT_INFER_POOL/job-$job.csv" | cut -d, -f5 | sort -n | uniq -c |
	while read -r n w; do
		node=$(awk -v w="$w" '/^WKR/ { t = 1; next } t && $1 == w { split($2, a, "/"); print a[1] }' \
			<<<"$status")
		echo "  worker $w on ${node:-?}: $n"
	done
