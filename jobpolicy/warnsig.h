/* warnsig.h - --dl-signal's value: which signal warns a job's program and how
 * long before its time limit, in Slurm's --signal syntax. The plugin parses it
 * (runtime/opts.c's option and plugstack.conf key) and so does dlrt-lifecycle,
 * which gets it on its command line and names the signal in its lines.
 */
#ifndef DLRT_WARNSIG_H
#define DLRT_WARNSIG_H

#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"

/* --dl-signal's syntax, Slurm's --signal: "[R:]SIG[@SECS]" without the R
 * (SIG a name with or without "SIG", or a number; SECS 1 to 65535, default
 * 60 as in Slurm), or "none". *sig 0 for none. */
int dlrt_warnsig_parse(const char *v, int *sig, uint32_t *secs, struct dlrt_err *err);
/* "USR1" for SIGUSR1, else the number. */
const char *dlrt_warnsig_name(int sig, char *buf, size_t len);

#endif
