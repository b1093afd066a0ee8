/* lcproc.c - dlrt-lifecycle's one reader of /proc (lcproc.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/parse.h"
#include "lcproc.h"

ssize_t dlrt_lcproc_read(pid_t pid, const char *name, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	if (!size)
		return -1;
	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

long dlrt_lcproc_parse_ppid(const char *stat)
{
	const char *rp = strrchr(stat, ')');
	long ppid;

	if (!rp || sscanf(rp + 1, " %*c %ld", &ppid) != 1)
		return -1;
	return ppid;
}

long dlrt_lcproc_ppid(pid_t pid)
{
	char buf[512];

	if (dlrt_lcproc_read(pid, "stat", buf, sizeof(buf)) <= 0)
		return -1;
	return dlrt_lcproc_parse_ppid(buf);
}

/* The hex mask after `field` ("SigCgt:") in a /proc/PID/status text; 0 if absent. */
static unsigned long long mask_of(const char *status, const char *field)
{
	const char *p = strstr(status, field);
	unsigned long long v = 0;

	if (p)
		sscanf(p + strlen(field), "%llx", &v);
	return v;
}

bool dlrt_lcproc_handles(pid_t pid, int sig)
{
	char buf[4096];

	if (sig < 1 || sig > 64 || dlrt_lcproc_read(pid, "status", buf, sizeof(buf)) < 0)
		return false;
	return ((mask_of(buf, "SigCgt:") | mask_of(buf, "SigIgn:")) >> (sig - 1)) & 1;
}

uint64_t dlrt_lcproc_wchar(pid_t pid)
{
	char buf[1024], *p;
	unsigned long long v = 0;

	if (dlrt_lcproc_read(pid, "io", buf, sizeof(buf)) < 0)
		return 0;
	p = strstr(buf, "wchar: ");
	if (p)
		sscanf(p + 7, "%llu", &v);
	return v;
}

void dlrt_lcproc_children(const pid_t *parents, size_t n,
			  void (*fn)(pid_t child, size_t i, void *ctx), void *ctx)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		uint32_t pid;
		long ppid;

		if (dlrt_parse_u32(e->d_name, 1, 1u << 30, &pid) < 0)
			continue;
		ppid = dlrt_lcproc_ppid((pid_t)pid);
		for (size_t i = 0; ppid > 0 && i < n; i++)
			if (parents[i] > 0 && parents[i] == ppid)
				fn((pid_t)pid, i, ctx);
	}
	if (d)
		closedir(d);
}
