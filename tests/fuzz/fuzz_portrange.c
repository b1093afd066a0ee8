/* Fuzz target: SrunPortRange as srun's plugin reads it from the slurm.conf at
 * $SLURM_CONF, which the user who runs srun may point anywhere
 * (services/service.c). Input: the file's bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "services/service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("slurm.conf", MFD_CLOEXEC);
	char path[64];
	struct dlrt_err err;
	uint16_t lo = 0, hi = 0;
	int rc;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		rc = dlrt_service_srun_port_range(path, &lo, &hi, &err);
		if (rc == 1 && (lo < 1 || lo > hi))
			abort();
		if (rc < 0 && !err.msg[0])
			abort();
	}
	close(fd);
	return 0;
}
