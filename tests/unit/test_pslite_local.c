/* test_pslite_local.c - runs tests/unit/pslite_local.sh from `make unit`.
 *
 * The script starts real pslite_contract processes on loopback (a whole
 * ps-lite job, then the failure cases) and prints TAP, which this program
 * passes through by exec'ing it. The build folder is the one this test was
 * built into ($(BUILD) or $(BUILD)/asan), so the sanitized run exercises the
 * sanitized pslite_contract. The source tree comes from DLRT_SRCDIR, which
 * `make unit` sets, else the current directory.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	char exe[PATH_MAX], script[PATH_MAX + 64], build[PATH_MAX];
	const char *src = getenv("DLRT_SRCDIR");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0) {
		printf("1..0 # SKIP cannot read /proc/self/exe\n");
		return 0;
	}
	exe[n] = '\0';
	/* .../<build>/tests/test_pslite_local -> .../<build> */
	snprintf(build, sizeof(build), "%s", dirname(dirname(exe)));
	snprintf(script, sizeof(script), "%s/tests/unit/pslite_local.sh", src ? src : ".");
	fflush(stdout);
	execl("/bin/bash", "bash", script, build, (char *)NULL);
	printf("not ok 1 - exec %s\n1..1\n", script);
	return 1;
}
