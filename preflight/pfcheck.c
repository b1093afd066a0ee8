#include "pfcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/dlrt_err.h"
#include "common/parse.h"
#include "gpubind/gpuplan.h"

int dlrt_pf_check_gpus(const char *cuda_visible, const char *step_gpus, const char *job_gpus,
		       const char *prefix, char *figure, size_t len)
{
	struct dlrt_gpuplan_alloc a;
	struct dlrt_err err = { "" };

	if ((!step_gpus || !*step_gpus) && (!job_gpus || !*job_gpus) &&
	    (!cuda_visible || !*cuda_visible))
		return 0; /* no GPU in the step */
	if (dlrt_gpuplan_alloc_parse(&a, NULL, cuda_visible, step_gpus, job_gpus, &err) < 0) {
		snprintf(figure, len, "%s", err.msg);
		return -1;
	}
	for (int i = 0; i < a.ngpus; i++) {
		char path[DLRT_PF_FIGURE_MAX / 2];
		struct stat st;
		int fd;

		snprintf(path, sizeof(path), "%s%d", prefix, a.global[i]);
		fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0) {
			snprintf(figure, len, "GPU %d of the step (%s): %s %s", a.global[i], a.source,
				 path, errno == ENOENT ? "is missing" : strerror(errno));
			return -1;
		}
		if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode)) {
			snprintf(figure, len, "GPU %d of the step (%s): %s is not a character device",
				 a.global[i], a.source, path);
			close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

uint64_t dlrt_pf_mem_request(const char *mem_per_node, const char *mem_per_cpu,
			     const char *cpus_on_node)
{
	uint32_t m = 0, c = 0;

	if (mem_per_node && dlrt_parse_u32(mem_per_node, 0, 1u << 31, &m) == 0)
		return m;
	if (mem_per_cpu && cpus_on_node && dlrt_parse_u32(mem_per_cpu, 0, 1u << 31, &m) == 0 &&
	    dlrt_parse_u32(cpus_on_node, 0, 1u << 20, &c) == 0)
		return (uint64_t)m * c;
	return 0;
}

int dlrt_pf_check_mem(const char *meminfo, uint64_t req_mib, char *figure, size_t len)
{
	const char *p = meminfo ? strstr(meminfo, "MemAvailable:") : NULL;
	unsigned long long kb;

	if (!req_mib)
		return 0;
	if (!p || sscanf(p + 13, "%llu", &kb) != 1)
		return 0; /* a kernel without the field: nothing to compare */
	if (kb / 1024 >= req_mib)
		return 0;
	snprintf(figure, len, "%llu MiB available, the step asks for %" PRIu64 " MiB", kb / 1024,
		 req_mib);
	return -1;
}

int dlrt_pf_check_shm(const char *path, uint32_t min_mib, char *figure, size_t len)
{
	struct statvfs sv;
	uint64_t free_mib;

	if (!min_mib)
		return 0;
	if (statvfs(path, &sv) < 0) {
		snprintf(figure, len, "%s: %s", path, strerror(errno));
		return -1;
	}
	free_mib = (uint64_t)sv.f_bavail * sv.f_frsize / (1024 * 1024);
	if (free_mib >= min_mib)
		return 0;
	snprintf(figure, len, "%" PRIu64 " MiB free in %s, %u MiB needed", free_mib, path, min_mib);
	return -1;
}

int dlrt_pf_ckpt_write(const char *dir, const char *name, const char *token, char *figure,
		       size_t len)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1;
	size_t n = strlen(token);

	if (dfd >= 0)
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, token, n) != (ssize_t)n || fsync(fd) < 0) {
		snprintf(figure, len, "%s is not writable: %s", dir, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlinkat(dfd, name, 0);
		}
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	close(fd);
	close(dfd);
	return 0;
}

enum dlrt_pf_ckpt dlrt_pf_ckpt_read(const char *dir, const char *name, const char *token)
{
	char path[1400], buf[128];
	size_t n = strlen(token);
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return DLRT_PF_CKPT_UNSHARED;
	got = read(fd, buf, sizeof(buf));
	close(fd);
	return got == (ssize_t)n && n < sizeof(buf) && !memcmp(buf, token, n) ?
		       DLRT_PF_CKPT_SHARED : DLRT_PF_CKPT_UNSHARED;
}
