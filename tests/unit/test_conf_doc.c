/* Unit test: the installed plugstack.conf documents every site key, and the
 * man page dlrt(7) every option, both checked against the tables.
 *
 * The list of keys comes from the parser itself (its "unknown key" error names
 * the valid ones, generated from the generic keys and every runtime's), so a
 * key added to runtime/opts.c or to a runtime without a comment line in
 * etc/plugstack.conf.d/dlrt.conf.in fails here. The file's example line, which
 * uses every key, must parse. The OPTIONS section of docs/man/dlrt.7 has one
 * `.BI \-\-dl\-NAME= ARG` (or `.B \-\-dl\-NAME` for a flag) per option of
 * the flat option list, and names no option that is not in it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/opts.h"
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

/* "dl-gpu-bind" as roff writes it: "\\-\\-dl\\-gpu\\-bind". */
static void roff_name(const char *name, char *out, size_t len)
{
	size_t o = 0;

	o += (size_t)snprintf(out, len, "\\-\\-");
	for (const char *c = name; *c && o + 3 < len; c++) {
		if (*c == '-')
			out[o++] = '\\';
		out[o++] = *c;
	}
	out[o] = '\0';
}

/* Every option of the table in the man page's OPTIONS, and nothing else. */
static void check_man(const char *src)
{
	char path[4096], *man, *opts, *end, *line;
	struct dlrt_opt_desc d;
	int listed = 0;

	snprintf(path, sizeof(path), "%s/docs/man/dlrt.7", src ? src : ".");
	man = slurp(path);
	TAP_OK(man != NULL, "read %s", path);
	if (!man)
		return;
	opts = strstr(man, "\n.SH OPTIONS\n");
	TAP_OK(opts != NULL, "dlrt.7 has an OPTIONS section");
	if (!opts) {
		free(man);
		return;
	}
	opts += 1;
	end = strstr(opts + 1, "\n.SH ");
	if (end)
		end[1] = '\0';
	for (int id = 0; dlrt_opt_describe(id, &d) == 0; id++) {
		char name[128], want[256];

		roff_name(d.name, name, sizeof(name));
		if (d.arginfo)
			snprintf(want, sizeof(want), "\n.BI %s= %s\n", name, d.arginfo);
		else
			snprintf(want, sizeof(want), "\n.B %s\n", name);
		TAP_OK(strstr(opts, want) != NULL, "dlrt.7 OPTIONS documents --%s%s%s", d.name,
		       d.arginfo ? "=" : "", d.arginfo ? d.arginfo : "");
	}
	/* And the other way round: every option line names a table option. */
	for (line = strtok(opts, "\n"); line; line = strtok(NULL, "\n")) {
		char name[128];
		size_t n = 0;
		const char *c;

		if (strncmp(line, ".B \\-\\-dl\\-", 11) && strncmp(line, ".BI \\-\\-dl\\-", 12))
			continue;
		c = strstr(line, "dl\\-");
		for (; *c && *c != '=' && *c != ' ' && n + 1 < sizeof(name); c++)
			if (*c != '\\')
				name[n++] = *c;
		name[n] = '\0';
		TAP_OK(dlrt_opt_find(name) >= 0, "dlrt.7 line '%s' names an option of the table (%s)",
		       line, name);
		listed++;
	}
	TAP_OK(listed >= dlrt_opt_count(), "%d option lines in dlrt.7", listed);
	free(man);
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
	check_man(src);
	return tap_done();
}
