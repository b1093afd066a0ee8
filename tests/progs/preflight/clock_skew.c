/*
 * clock_skew.so: an LD_PRELOAD shim that puts one simulated node's wall clock
 * off, for --dl-preflight's clock check (t/99b-preflight.t). Never installed.
 *
 * The test cluster's nodes are namespaces of one machine and share its clock,
 * and a time namespace offsets only the monotonic and boot clocks, so a node
 * whose clock is wrong has to be told so: in a process whose SLURMD_NODENAME
 * is CLOCK_SKEW_NODE, CLOCK_REALTIME reads CLOCK_SKEW_MS later (or earlier,
 * negative). Every other clock, and every other node, is left alone. The real
 * time comes from the system call, so no dlsym is needed.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int clock_gettime(clockid_t clk, struct timespec *ts);

/* The skew of this process in nanoseconds; 0 when it is not on the node. */
static long long skew_ns(void)
{
	const char *node = getenv("CLOCK_SKEW_NODE"), *here = getenv("SLURMD_NODENAME");
	const char *ms = getenv("CLOCK_SKEW_MS");

	if (!node || !here || !ms || strcmp(node, here))
		return 0;
	return strtoll(ms, NULL, 10) * 1000000LL;
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	long long t;

	if (syscall(SYS_clock_gettime, clk, ts) < 0)
		return -1;
	if (clk != CLOCK_REALTIME)
		return 0;
	t = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + skew_ns();
	ts->tv_sec = (time_t)(t / 1000000000LL);
	ts->tv_nsec = (long)(t % 1000000000LL);
	return 0;
}
