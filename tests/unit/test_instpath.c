/* Unit tests: where installed files are found (common/instpath.c): the
 * compiled-in folder first, else the same place relative to the running file
 * (a moved tree), without ".." in the result; neither gives one line naming both. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/instpath.h"
#include "tap.h"

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);

	if (fd >= 0)
		close(fd);
}

int main(void)
{
	char top[] = "/tmp/dlrt-instpath-XXXXXX", p[512], out[512], want[600], cmd[600];
	struct dlrt_err err = { { 0 } };

	if (!mkdtemp(top)) {
		printf("1..0 # SKIP cannot create a temporary folder\n");
		return 0;
	}
	/* A module tree: <top>/lib/dlrt/dlrt.so, <top>/libexec/dlrt/svc; and a
	 * "compiled-in" folder <top>/built with its own svc. */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/lib/dlrt %s/libexec/dlrt %s/built", top, top, top);
	if (system(cmd) != 0)
		return 1;
	snprintf(p, sizeof(p), "%s/libexec/dlrt/svc", top);
	touch(p);
	snprintf(p, sizeof(p), "%s/built/svc", top);
	touch(p);
	snprintf(p, sizeof(p), "%s/lib/dlrt/dlrt.so", top);

	snprintf(want, sizeof(want), "%s/built", top);
	TAP_IS_INT(dlrt_instpath_find(want, p, "../../libexec/dlrt", "svc", out, sizeof(out), &err),
		   0, "found");
	snprintf(want, sizeof(want), "%s/built/svc", top);
	TAP_IS_STR(out, want, "the compiled-in folder comes first");

	snprintf(want, sizeof(want), "%s/absent", top);
	TAP_IS_INT(dlrt_instpath_find(want, p, "../../libexec/dlrt", "svc", out, sizeof(out), &err),
		   0, "found in a moved tree");
	snprintf(want, sizeof(want), "%s/libexec/dlrt/svc", top);
	TAP_IS_STR(out, want, "the same place relative to the anchor, without ..");

	snprintf(want, sizeof(want), "%s/absent", top);
	TAP_IS_INT(dlrt_instpath_find(want, p, "../../libexec/dlrt", "other", out, sizeof(out), &err),
		   -1, "missing everywhere");
	TAP_OK(strstr(err.msg, "cannot find other in ") && strstr(err.msg, "/absent nor in ") &&
	       strstr(err.msg, "reinstall dlrt"), "one line naming both places and the fix (%s)",
	       err.msg);
	TAP_IS_INT(dlrt_instpath_find(want, NULL, "../../libexec/dlrt", "svc", out, sizeof(out), &err),
		   -1, "no anchor: only the compiled-in folder");
	TAP_IS_INT(dlrt_instpath_find("/usr/libexec/dlrt", p, "../../libexec/dlrt", "svc", out, 8,
				      &err), -1, "a result that does not fit is refused");

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", top);
	return tap_done();
}
