#include "warnsig.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/parse.h"

/* Signals a program may sensibly be warned with; names as Slurm's --signal
 * takes them. */
static const struct {
	const char *name;
	int sig;
} warn_signals[] = {
	{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "INT", SIGINT },
	{ "HUP", SIGHUP },   { "QUIT", SIGQUIT }, { "URG", SIGURG },   { "CONT", SIGCONT },
	{ "ALRM", SIGALRM }, { "WINCH", SIGWINCH },
};

const char *dlrt_warnsig_name(int sig, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(warn_signals) / sizeof(*warn_signals); i++)
		if (warn_signals[i].sig == sig)
			return warn_signals[i].name;
	snprintf(buf, len, "%d", sig);
	return buf;
}

int dlrt_warnsig_parse(const char *v, int *sig, uint32_t *secs, struct dlrt_err *err)
{
	char name[16];
	const char *at;
	size_t n;
	uint32_t num;

	if (v && !strcmp(v, "none")) {
		*sig = 0;
		*secs = 0;
		return 0;
	}
	at = v ? strchr(v, '@') : NULL;
	n = v ? (at ? (size_t)(at - v) : strlen(v)) : 0;
	if (!v || n == 0 || n >= sizeof(name))
		goto bad;
	memcpy(name, v, n);
	name[n] = '\0';
	*secs = 60; /* Slurm's --signal default */
	if (at && dlrt_parse_u32(at + 1, 1, 65535, secs) < 0)
		goto bad;
	if (dlrt_parse_u32(name, 1, 64, &num) == 0) {
		*sig = (int)num;
		if (*sig == SIGKILL || *sig == SIGSTOP)
			goto bad;
		return 0;
	}
	for (size_t i = 0; i < sizeof(warn_signals) / sizeof(*warn_signals); i++)
		if (!strcmp(name, warn_signals[i].name) ||
		    (!strncmp(name, "SIG", 3) && !strcmp(name + 3, warn_signals[i].name))) {
			*sig = warn_signals[i].sig;
			return 0;
		}
bad:
	return dlrt_err_set(err, "--dl-signal=%.64s: give SIG@SECS as for sbatch --signal (e.g. "
			    "USR1@120: SIGUSR1 120 s before the time limit), or none",
			    v ? v : "");
}
