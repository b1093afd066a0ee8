/* srunargs.c - srun's own options, read from its command line (srunargs.h). */
#include "srunargs.h"

#include <stdio.h>
#include <string.h>

bool dlrt_srunargs_mpi(const char *cmdline, size_t len, char *out, size_t outlen)
{
	const char *end = cmdline + len, *found = NULL, *w, *next;
	size_t flen = 0;
	bool after_opt = false;

	/* argv[0] is srun itself. */
	w = memchr(cmdline, '\0', len);
	for (w = w ? w + 1 : end; w < end; w = next) {
		const char *nul = memchr(w, '\0', (size_t)(end - w));
		size_t n = nul ? (size_t)(nul - w) : (size_t)(end - w);

		next = w + n + 1;
		if ((n == 1 && w[0] == ':') || (n == 2 && !memcmp(w, "--", 2)) ||
		    (!after_opt && (n == 0 || w[0] != '-')))
			break;
		if (n >= 6 && !memcmp(w, "--mpi=", 6)) {
			found = w + 6;
			flen = n - 6;
		} else if (n == 5 && !memcmp(w, "--mpi", 5) && next < end) {
			const char *vnul = memchr(next, '\0', (size_t)(end - next));

			found = next;
			flen = vnul ? (size_t)(vnul - next) : (size_t)(end - next);
		}
		after_opt = n > 1 && w[0] == '-' && !memchr(w, '=', n);
	}
	if (!found || !outlen)
		return false;
	snprintf(out, outlen, "%.*s", (int)(flen < outlen ? flen : outlen - 1), found);
	return true;
}
