/* test_hvd_gloo_local.c - a real libgloo allreduce through dlrt-hvd-driver, in `make unit`.
 *
 * Runs tests/unit/hvd_gloo_local.sh (driver on 127.0.0.1, one
 * gloo_hvd_allreduce per slot with Horovod's variables, data plane on lo)
 * for a single host and for the uneven layout 3,1,2, and reports each as a
 * TAP line. The build folder comes from DLRT_PLUGIN (set by `make unit`) or
 * DLRT_BUILD; the script from DLRT_SRCDIR or the current directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buildpath.h"
#include "tap.h"

static int run(const char *src, const char *build, const char *hosts, int nranks)
{
	char cmd[4096], line[512];
	int ok_lines = 0, status;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "HVD_TIMEOUT=60 timeout 120 %s/tests/unit/hvd_gloo_local.sh '%s' '%s' 2>&1",
		 src, build, hosts);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		if (strstr(line, ": allreduce ok sum="))
			ok_lines++;
		printf("# %s", line);
	}
	status = pclose(p);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok_lines == nranks ? 0 : -1;
}

int main(void)
{
	const char *src = getenv("DLRT_SRCDIR") ? getenv("DLRT_SRCDIR") : ".";
	char build[2048];

	if (test_build_dir("libexec/dlrt-hvd-driver", build, sizeof(build)) < 0)
		snprintf(build, sizeof(build), "build"); /* the script names what is missing */

	TAP_OK(run(src, build, "localhost:3", 3) == 0, "gloo allreduce, 3 ranks on one host");
	TAP_OK(run(src, build, "n1:3,n2:1,n3:2", 6) == 0,
	       "gloo allreduce, uneven 3,1,2 on three simulated hosts (local and cross scopes)");
	return tap_done();
}
