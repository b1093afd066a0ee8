/* lctimes.h - the job's times as the step's first node shares them with the
 * others (lcshare.h): one line, "end=E preempt=P" (seconds since the epoch,
 * 0: none), at most DLRT_LCTIMES_MAX bytes. Only a process that holds the
 * step secret can set it (srun's rendezvous admits and signs with it), but it
 * still came over the network: the parser is strict, and fuzzed
 * (tests/fuzz/fuzz_lctimes.c).
 */
#ifndef DLRT_LCTIMES_H
#define DLRT_LCTIMES_H

#include <stddef.h>

#include "jobpolicy/lifecycle.h"

#define DLRT_LCTIMES_MAX 64

/* j's end and preemption times into out (DLRT_LCTIMES_MAX bytes). */
void dlrt_lctimes_format(const struct dlrt_lc_job *j, char *out);

/* Exactly "end=E preempt=P" with E, P decimal, 0 to 2^40 (no sign, no
 * leading zeros but a lone 0): 0 with j's end_time and preempt_time set (the
 * rest untouched), -1 otherwise. */
int dlrt_lctimes_parse(const char *s, struct dlrt_lc_job *j);

#endif
