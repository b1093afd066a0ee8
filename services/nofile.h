/* nofile.h - fitting a service's connection cap to its descriptor limit.
 *
 * Debian starts processes with a soft RLIMIT_NOFILE of 1024 and a hard one
 * far higher; a service that allows 4096 connections under 1024 descriptors
 * runs out (EMFILE) long before its cap. So a service raises the soft limit
 * to the hard one, and caps its connections below what is left.
 */
#ifndef DLRT_NOFILE_H
#define DLRT_NOFILE_H

/* Descriptors kept for the service's own files (event loop, signals, the
 * lifetime pipe, logs, the reserve descriptor) besides its connections. */
#define DLRT_NOFILE_HEADROOM 64u

/* Raises the soft limit to the hard limit (at most 1 Mi, what the kernel's
 * nr_open allows by default); returns the soft limit in force afterwards. */
unsigned long dlrt_nofile_raise(void);

/* `want` connections, lowered so that they and DLRT_NOFILE_HEADROOM fit
 * under `limit` (at least 1). */
unsigned dlrt_nofile_cap_conns(unsigned want, unsigned long limit);

#endif
