/* fdio.c - writing a whole buffer to a descriptor (fdio.h). */
#include <errno.h>
#include <unistd.h>

#include "fdio.h"

int dlrt_write_all(int fd, const void *p, size_t n)
{
	const char *at = p;

	while (n) {
		ssize_t w = write(fd, at, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0)
			errno = ENOSPC; /* stored nothing and said no more */
		if (w <= 0)
			return -1;
		at += w;
		n -= (size_t)w;
	}
	return 0;
}
