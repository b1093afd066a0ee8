/* service_run.h - the one start sequence of every node service program.
 *
 * dlrt-store, dlrt-hvd-driver and dlrt-c10d-store differ only in their
 * protocol. dlrt_service_main() does the rest the same way for all of them:
 * the common command line (struct dlrt_service_args, service.h) with the
 * program's own options, the checks of its descriptors, the switch to the
 * user for good, closing what slurmstepd left open, the stop signals, the
 * listener (tcpserver.h), the lifetime watch, the readiness line, the loop,
 * and one set of exit codes (DLRT_SERVICE_EXIT_*, service.h).
 */
#ifndef DLRT_SERVICE_RUN_H
#define DLRT_SERVICE_RUN_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/dlrt_err.h"
#include "evloop.h"
#include "service.h"
#include "tcpserver.h"

struct dlrt_service_protocol {
	const char *prog;    /* program name: the prefix of its lines, e.g. "dlrt-store" */
	const char *what;    /* for fixes, e.g. "the store" */
	const char *bind;    /* --bind's default */
	bool allow_any;      /* accepts --allow-any (tests only) */
	bool watch_parent;   /* without --lifetime-fd or --parent-pid: end with the parent */
	/* The program's own options (values 256..511), ended by a NULL name;
	 * --help and the common ones are added. */
	const struct option *options;
	void (*usage)(FILE *f);
	/* One of the program's own options: 0, or -1 with one line in err (exit 2). */
	int (*option)(void *app, int opt, const char *arg, struct dlrt_err *err);
	/* After the command line and its checks, before listening: the
	 * program's state, its timers on `loop`, its limits in `cfg` (the
	 * skeleton sets address, port, peers and secret) and its protocol.
	 * 0, or -1 with one line in err (exit 1). */
	int (*init)(void *app, struct dlrt_evloop *loop, const struct dlrt_service_args *args,
		    struct dlrt_tcpserver_cfg *cfg, const struct dlrt_proto **proto,
		    struct dlrt_err *err);
	/* Optional, with --verbose: the "listening" line, then the exit line. */
	void (*listening)(void *app, struct dlrt_tcpserver *srv, const struct dlrt_tcpserver_cfg *cfg);
	void (*stopped)(void *app, const char *why);
	/* After the server closed every connection: frees the program's state
	 * (also after a failed or skipped init). */
	void (*teardown)(void *app);
};

/* Runs the service `p` with state `app` (the protocol's own); returns the
 * exit code (DLRT_SERVICE_EXIT_*). Every failure is one line on stderr,
 * prefixed with p->prog. */
int dlrt_service_main(int argc, char **argv, const struct dlrt_service_protocol *p, void *app);

#endif
