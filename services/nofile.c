#include "nofile.h"

#include <sys/resource.h>

/* fs.nr_open's default: setrlimit fails above it, and RLIM_INFINITY is
 * never accepted for RLIMIT_NOFILE. */
#define NOFILE_CEILING (1ul << 20)

unsigned long dlrt_nofile_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024; /* cannot happen; assume the usual default */
	if (rl.rlim_cur < rl.rlim_max && rl.rlim_cur < NOFILE_CEILING) {
		struct rlimit want = rl;

		want.rlim_cur = rl.rlim_max < NOFILE_CEILING ? rl.rlim_max : NOFILE_CEILING;
		/* Failing is harmless: the cap below then fits the old limit. */
		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			rl.rlim_cur = want.rlim_cur;
	}
	return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > NOFILE_CEILING ?
	       NOFILE_CEILING : (unsigned long)rl.rlim_cur;
}

unsigned dlrt_nofile_cap_conns(unsigned want, unsigned long limit)
{
	unsigned long room;

	/* A tiny limit (a test, a misconfigured node): keep half for connections. */
	room = limit > 2 * DLRT_NOFILE_HEADROOM ? limit - DLRT_NOFILE_HEADROOM : limit / 2;
	if (room < 1)
		room = 1;
	return want > room ? (unsigned)room : want;
}
