/* mpi_allreduce - an Open MPI program run under `srun --mpi=pmix --dl-runtime=...`.
 *
 * It proves dlrt leaves MPI's own PMIx wire-up alone (docs/contracts.md,
 * "PMIx and Open MPI": a PMIx session opened before exec breaks MPI_Init). Prints one line per
 * rank with the sum of all ranks and exits non-zero if the sum is wrong.
 * --times: also "rank R: past global at <ns>" after MPI_Init and a barrier
 * (the baseline of bench/hvd-wireup.sh). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rank, size, sum = -1;
	char host[256] = "";

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc > 1 && !strcmp(argv[1], "--times")) {
		struct timespec ts;

		MPI_Barrier(MPI_COMM_WORLD);
		clock_gettime(CLOCK_REALTIME, &ts);
		printf("rank %d: past global at %lld\n", rank,
		       (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	}
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	gethostname(host, sizeof(host) - 1);
	printf("rank %d of %d on %s: allreduce sum=%d %s (DLRT_ROLE=%s)\n", rank, size, host, sum,
	       sum == size * (size - 1) / 2 ? "ok" : "WRONG",
	       getenv("DLRT_ROLE") ? getenv("DLRT_ROLE") : "-");
	MPI_Finalize();
	return sum == size * (size - 1) / 2 ? 0 : 1;
}
