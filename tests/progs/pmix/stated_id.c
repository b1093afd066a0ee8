/*
 * stated_id.so: an LD_PRELOAD shim for the PMIx stranger tests. Never installed.
 *
 * PMIx's `native` security over TCP (the only transport of PMIx 4 and 5) does
 * not ask the kernel who the client is: the client sends geteuid() and
 * getegid() in its credential (psec/native create_cred) and the server
 * compares them with the job owner's. With this shim a real libpmix client,
 * run by another user, states the uid and gid in STATED_UID and STATED_GID,
 * which is all an attacker has to do (t/90-pmix-stranger.t).
 *
 * Only what the process *says* changes: the kernel still knows the real ids,
 * so files, signals and munge credentials stay the caller's own. The real ids
 * come from the system calls, not from libc's symbols, so no dlsym is needed
 * and the shim works in any thread, before or after main().
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static long stated_uid = -1;
static long stated_gid = -1;

/* A decimal id, or -1 (the real one is used) when unset or not a number. */
static long parse_id(const char *name)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v >= (unsigned long)(uid_t)-1)
		return -1;
	return (long)v;
}

/* Read once, before main() and before libpmix starts its threads: getenv is
 * not safe against a concurrent setenv. */
__attribute__((constructor)) static void stated_id_init(void)
{
	stated_uid = parse_id("STATED_UID");
	stated_gid = parse_id("STATED_GID");
}

uid_t getuid(void)
{
	return stated_uid >= 0 ? (uid_t)stated_uid : (uid_t)syscall(SYS_getuid);
}

uid_t geteuid(void)
{
	return stated_uid >= 0 ? (uid_t)stated_uid : (uid_t)syscall(SYS_geteuid);
}

gid_t getgid(void)
{
	return stated_gid >= 0 ? (gid_t)stated_gid : (gid_t)syscall(SYS_getgid);
}

gid_t getegid(void)
{
	return stated_gid >= 0 ? (gid_t)stated_gid : (gid_t)syscall(SYS_getegid);
}
