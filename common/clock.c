/* clock.c - the monotonic clock every deadline uses (clock.h). */
#include "clock.h"

#include <time.h>

int64_t dlrt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t dlrt_now_us(void)
{
	return dlrt_now_ns() / 1000;
}

int64_t dlrt_now_ms(void)
{
	return dlrt_now_ns() / 1000000;
}
