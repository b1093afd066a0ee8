/* buildpath.c - where a unit test finds a program of its build (buildpath.h). */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildpath.h"

/* out = DIR/REL; 0 when it is an executable. */
static int try_in(const char *dir, const char *rel, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", dir, rel);
	return access(out, X_OK) == 0 ? 0 : -1;
}

int test_build_program(const char *rel, char *out, size_t len)
{
	const char *e;
	char tmp[4096];
	ssize_t n;

	if ((e = getenv("DLRT_BUILD")) && *e && try_in(e, rel, out, len) == 0)
		return 0;
	if ((e = getenv("DLRT_PLUGIN")) && *e) {
		snprintf(tmp, sizeof(tmp), "%s", e);
		if (try_in(dirname(tmp), rel, out, len) == 0)
			return 0;
	}
	n = readlink("/proc/self/exe", tmp, sizeof(tmp) - 1);
	if (n <= 0)
		return -1;
	tmp[n] = '\0';
	dirname(tmp); /* $(BUILD)/tests or $(BUILD)/asan/tests */
	if (strlen(tmp) + 8 >= sizeof(tmp))
		return -1;
	strcat(tmp, "/..");
	if (try_in(tmp, rel, out, len) == 0)
		return 0;
	strcat(tmp, "/..");
	return try_in(tmp, rel, out, len);
}

int test_build_dir(const char *rel, char *out, size_t len)
{
	size_t n;

	if (test_build_program(rel, out, len) < 0)
		return -1;
	n = strlen(out);
	if (n < strlen(rel) + 1)
		return -1;
	out[n - strlen(rel) - 1] = '\0'; /* drop "/REL" */
	return 0;
}
