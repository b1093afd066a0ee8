#!/bin/bash
# check.sh core|all|TEST... - dlrt's checks in a root of another release, run by `root.sh run`
# inside it (make check-debian13-core, make check-debian13, make check-sid-core, make
# check-sid): build warning-free against that release's Slurm, PMIx, Open MPI, hwloc and gcc
# (Debian 13: 24.11, 5, 5, 2.12, 14; sid: 26.05, 7, 6, 2.15, 16), then bring up the root's own
# test cluster and run the cluster tests on it. Every wait is the cluster scripts' own (bounded).
#
#   core   the release's core set below (make check runs both beside Debian 12's suite); the
#          unit tests (plain and ASan/UBSan, the release's gcc) run in it as the package's own
#          test step (t/67: make deb's dh_auto_test), not a second time
#   all    the unit tests and every cluster test
#   TEST   those cluster tests only (t/NN-name.t)
set -euo pipefail
cd "$(dirname "$0")/../.."

# Every runtime (mxnet, horovod gloo and mpi, caffe2, torch, torchrun, jax, tensorflow,
# infer), both exchanges (Slurm's PMIx and srun's rendezvous), MPI under --mpi=pmix, the
# PMIx key/value store, Slurm's containers, the packages, that no failing dlrt step drains a
# node, the services outliving task 0's node, and a step over a heterogeneous job's components
# (t/99c: auto's exchange there depends on the release; retries, requeue, containers).
CORE=(t/01-cluster.t t/02-plugin.t t/04-roles.t t/06-mpi.t t/10-exchange.t t/11-mxnet-pslite.t
	t/12-dlrt-kv.t t/20-hvd-gloo.t t/22-hvd-mpi.t t/30-torch-ddp.t t/32-caffe2-store.t
	t/36-torch-store.t t/37-torchrun.t t/38-jax.t t/39-tf.t t/50-infer-pool.t t/67-packages.t
	t/88-exchanges.t t/89-containers.t t/89b-container-state.t t/97-service-lifetime.t
	t/97c-no-drain.t t/99-hetjob.t t/99c-hetjob-later.t)
# Debian unstable's, smaller so that make check stays within CI's time with three releases:
# every runtime once (t/20 and t/22 are Horovod's two controllers), both exchanges (t/88
# runs every runtime through each), MPI under --mpi=pmix (t/06, t/22), the packages (t/67),
# the requeue (t/91: libslurm's job calls in their 26.05 form, the expedited requeue) and
# the step's services outliving task 0's node (t/97), no node drained by a user's
# mistake where Slurm 25.05+ takes the plugin's failure mode (t/97c), and a step over a
# heterogeneous job's components (t/99: how SPANK sees one changes between releases).
# Unstable's Slurm has no PMIx plugin: the PMIx checks skip there, each saying why.
SID_CORE=(t/01-cluster.t t/02-plugin.t t/06-mpi.t t/11-mxnet-pslite.t t/20-hvd-gloo.t
	t/22-hvd-mpi.t t/30-torch-ddp.t t/32-caffe2-store.t t/37-torchrun.t t/38-jax.t t/39-tf.t
	t/50-infer-pool.t t/67-packages.t t/88-exchanges.t t/91-requeue-limit.t
	t/97-service-lifetime.t t/97c-no-drain.t t/99-hetjob.t)
grep -q sid /etc/debian_version && CORE=("${SID_CORE[@]}")

what=${1:-core}
case "$what" in
core) tests=("${CORE[@]}") unit=0 ;;
all) tests=() unit=1 ;;
*) tests=("$@") unit=0 ;;
esac

echo "check.sh: $(. /etc/os-release && echo "$PRETTY_NAME"), Slurm $(dpkg-query -W -f '${Version}' slurmd)," \
	"PMIx $(dpkg-query -W -f '${Version}' libpmix-dev), Open MPI $(dpkg-query -W -f '${Version}' openmpi-bin)," \
	"torch $(dpkg-query -W -f '${Version}' python3-torch)"
make -j2 all
[ "$unit" -eq 0 ] || make unit
trap 'tests/cluster/cluster.sh down >/dev/null 2>&1 || true' EXIT
make cluster-up
tests/cluster/run-tests.sh "${tests[@]}"
