/* cli_common.c - what every dlrt-infer command uses: the one error line,
 * the parsers of numeric options, the commands whose only options are
 * --pool and --help, the pool directory, and the labels file that goes
 * with an inputs file.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errline.h"
#include "common/parse.h"
#include "cli.h"

const char *prog = "dlrt-infer";
const char *pool_opt;

int die(const char *fmt, ...)
{
	va_list ap;

	struct dlrt_errline line;

	dlrt_errline_init(&line);
	dlrt_errline_printf(&line, "%s: ", prog);
	va_start(ap, fmt);
	dlrt_errline_vprintf(&line, fmt, ap);
	va_end(ap);
	dlrt_errline_end(&line);
	return 1;
}

int parse_u32_opt(const char *name, const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
	if (dlrt_parse_u32(v, lo, hi, out) < 0) {
		die("--%s=%s: expected a whole number from %u to %u", name, v, lo, hi);
		return -1;
	}
	return 0;
}

/* The options given in (fractional) seconds: --interval, --window. */
int parse_seconds_opt(const char *name, const char *v, double lo, double hi, double *out)
{
	double d = atof(v);

	if (d < lo || d > hi) {
		die("--%s=%s: expected seconds from %g to %g", name, v, lo, hi);
		return -1;
	}
	*out = d;
	return 0;
}

/* The commands whose only options are --pool and --help (wait, cancel, pool
 * stop): -1 to go on with the arguments from optind, else the exit status
 * (0 once `help` is printed). */
int pool_only_opts(int argc, char **argv, const char *help)
{
	static const struct option lo[] = {
		{ "pool", required_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "p:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'p': pool_opt = optarg; break;
		case 'h': fputs(help, stdout); return 0;
		default: return 2;
		}
	}
	return -1;
}

int pool_dir(char *out, size_t len)
{
	struct dlrt_err err;

	if (dlrt_pool_dir(pool_opt, out, len, &err) < 0)
		return die("%s", err.msg) ? -1 : -1;
	return 0;
}

/* Debian's names: X-images-idx3-ubyte[.gz] has its labels in X-labels-idx1-ubyte[.gz]. */
int guess_labels(const char *inputs, char *out, size_t len)
{
	const char *p = strstr(inputs, "-images-idx3-ubyte");

	if (!p || (size_t)(p - inputs) + 40 + strlen(p) >= len)
		return -1;
	snprintf(out, len, "%.*s-labels-idx1-ubyte%s", (int)(p - inputs), inputs,
		 p + strlen("-images-idx3-ubyte"));
	return access(out, R_OK) == 0 ? 0 : -1;
}
