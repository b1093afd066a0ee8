/* lcprogress.c - the step's progress shared through the checkpoint folder
 * (lcprogress.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lcprogress.h"

int dlrt_lcprogress_write(const char *dir, uint32_t step, const char *node, time_t last)
{
	char path[4400], tmp[4500], buf[32];
	int fd, n;
	bool ok;

	snprintf(path, sizeof(path), "%s/.progress.%u.%s", dir, step, node);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	n = snprintf(buf, sizeof(buf), "%lld\n", (long long)last);
	ok = write(fd, buf, (size_t)n) == n;
	/* Closed once, whatever happened: the descriptor is gone after close(2)
	 * even when it fails, and a second close could end another's. */
	if (close(fd) < 0)
		ok = false;
	if (ok && rename(tmp, path) == 0)
		return 0;
	unlink(tmp);
	return -1;
}

time_t dlrt_lcprogress_latest(const char *dir, uint32_t step, time_t mine)
{
	char prefix[64], buf[32];
	size_t plen;
	time_t last = mine;
	DIR *d = opendir(dir);
	struct dirent *e;

	snprintf(prefix, sizeof(prefix), ".progress.%u.", step);
	plen = strlen(prefix);
	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		long long v = 0;
		ssize_t n;
		int fd;

		if (strncmp(e->d_name, prefix, plen) ||
		    (len > 4 && !strcmp(e->d_name + len - 4, ".tmp")))
			continue;
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		if (sscanf(buf, "%lld", &v) == 1 && v > (long long)last)
			last = (time_t)v;
	}
	if (d)
		closedir(d);
	return last;
}
