/* Unit test: the installed plugstack.conf documents every site key.
 *
 * The list of keys comes from the parser itself (its "unknown key" error names
 * the valid ones), so a key added to common/opts.c without a comment line in
 * etc/plugstack.conf.d/dlrt.conf.in fails here. The file's example line, which
 * uses every key, must parse.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"
#include "tap.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

int main(void)
{
	const char *src = getenv("DLRT_SRCDIR");
	char path[4096], *conf, *list, *ex, *args[64];
	struct dlrt_config cfg;
	struct dlrt_err err = { "" };
	char *bogus[] = { "dlrt_no_such_key=1" };
	int nargs = 0, nkeys = 0;

	snprintf(path, sizeof(path), "%s/etc/plugstack.conf.d/dlrt.conf.in", src ? src : ".");
	conf = slurp(path);
	TAP_OK(conf != NULL, "read %s", path);
	if (!conf)
		return tap_done();

	TAP_IS_INT(dlrt_config_parse(&cfg, 1, bogus, &err), -1, "an unknown key is refused");
	list = strstr(err.msg, "(valid: ");
	TAP_OK(list != NULL, "the error lists the valid keys: %s", err.msg);
	for (char *k = list ? strtok(list + 8, ", )") : NULL; k; k = strtok(NULL, ", )")) {
		char want[128];

		snprintf(want, sizeof(want), "#   %s=", k);
		TAP_OK(strstr(conf, want) != NULL, "key %s is documented in dlrt.conf.in", k);
		nkeys++;
	}
	TAP_OK(nkeys >= 5, "%d keys found", nkeys);

	/* "#   optional @PLUGIN@ key=value ..." : the example must be valid. */
	ex = strstr(conf, "#   optional @PLUGIN@ ");
	TAP_OK(ex != NULL, "the file has an example line");
	if (ex) {
		ex += strlen("#   optional @PLUGIN@ ");
		ex[strcspn(ex, "\n")] = '\0';
		for (char *a = strtok(ex, " "); a && nargs < 64; a = strtok(NULL, " "))
			args[nargs++] = a;
		err.msg[0] = '\0';
		TAP_IS_INT(dlrt_config_parse(&cfg, nargs, args, &err), 0, "the example parses (%s)",
			   err.msg);
		TAP_IS_INT(nargs, nkeys, "the example uses every key once");
	}
	free(conf);
	return tap_done();
}
