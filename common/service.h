/* service.h - node services: programs a runtime needs on the root task's node.
 *
 * Some runtimes need a server running before any of their tasks starts and
 * for exactly as long as the step: Horovod's rendezvous driver
 * (dlrt-hvd-driver), Caffe2's key/value store (dlrt-store). A runtime
 * describes its service here (program name and its own arguments); the
 * plugin (spank/service.c) starts it from the install's libexec/dlrt as the
 * job user, waits for its port, and ends it with the step. The tasks learn
 * "ip:port" through the address exchange (root_port), see docs/ARCHITECTURE.md.
 *
 * Every service program takes this common command line, then the runtime's
 * own arguments:
 *   --bind IPV4          listen on this address only
 *   --port 0             any free port
 *   --allow IP,IP,...    the step's nodes; refuse every other peer
 *   --lifetime-fd FD     exit when FD reaches end of file (the step ended)
 *   --ready-fd FD        once listening, write "<port>\n" to FD and close it
 *   --secret-fd FD       the step secret: 32 bytes, then end of file; every
 *                        connection must prove it (tcpserver.h) before the
 *                        protocol sees a byte. Only the node relays
 *                        (dlrt-relay, common/relay.h) hold it.
 *   [--verbose]          log to stderr
 * The plugin's side is pure here (no SPANK symbol, no process handling: that
 * is spank/service.c); the functions from dlrt_service_write_ready on are the
 * service programs' side, shared so that every service ends with its step in
 * the same way.
 */
#ifndef DLRT_SERVICE_H
#define DLRT_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dlrt_err.h"
#include "evloop.h"

#define DLRT_SERVICE_MAX_ARGS 32

struct dlrt_service_spec {
	const char *program; /* file name in <prefix>/libexec/dlrt, e.g. "dlrt-hvd-driver" */
	const char *what;    /* for messages, e.g. "the Horovod rendezvous driver" */
	char *args[DLRT_SERVICE_MAX_ARGS]; /* the runtime's own arguments */
	size_t nargs;
	bool failed;         /* an argument could not be added (sticky) */
};

void dlrt_service_spec_init(struct dlrt_service_spec *s, const char *program, const char *what);
/* Appends one argument (errors are sticky, reported by dlrt_service_argv). */
void dlrt_service_spec_add(struct dlrt_service_spec *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void dlrt_service_spec_free(struct dlrt_service_spec *s);

/* What the plugin adds to every service's command line. */
struct dlrt_service_common {
	const char *path;    /* absolute path of the program */
	const char *bind_ip; /* numeric IPv4 */
	const char *allow;   /* comma list of numeric IPv4s */
	int lifetime_fd;
	int ready_fd;
	int secret_fd;       /* <= 0: none (a service outside a step; stdin is never it) */
	bool verbose;
};

/* The whole argv (NULL-terminated, one allocation: free() it), built before
 * fork so the child only execs. */
char **dlrt_service_argv(const struct dlrt_service_spec *s, const struct dlrt_service_common *c,
			 struct dlrt_err *err);

/* The service side of --allow: "IP,IP,..." (numeric IPv4, may be empty) into
 * a malloc'ed list in network order, loopback first, so the list is never
 * empty (an empty allow list means "everyone" to tcpserver). */
int dlrt_service_parse_allow(const char *list, uint32_t **out, size_t *n, struct dlrt_err *err);

/* Parses the readiness line "<port>\n" (1-65535). */
int dlrt_service_parse_ready(const char *buf, size_t len, uint16_t *port);

/* Service programs: writes the readiness line "<port>\n" to fd (the inverse
 * of dlrt_service_parse_ready) and closes fd; -1 if the launcher is gone. */
int dlrt_service_write_ready(int fd, uint16_t port);

/* Service programs: SIGTERM (the plugin's stop), SIGINT and SIGHUP end `loop`,
 * with the signal's name in *why. Blocks them and returns the signalfd to
 * close after the loop; -1 on error (errno). */
int dlrt_service_stop_on_signals(struct dlrt_evloop *loop, const char **why);

/* Service programs: what ties a service's life to the step. */
struct dlrt_service_watch {
	int lifetime_fd;     /* -1: none */
	pid_t parent_pid;    /* 0: none */
	int parent_pidfd;    /* -1: none, or pidfd_open is not supported */
	bool parent_is_ppid; /* parent_pid was our parent when the watch started */
	const char **why;
};

/* Service programs: ends `loop` when the step ends, with the reason in *why:
 * at end of file (or a read error) on lifetime_fd (-1: none; what is written
 * to it is ignored), or once process parent_pid (0: none) is gone, checked
 * every DLRT_SERVICE_WATCH_MS. Returns 0, or -1 (errno; e.g. EPERM when
 * lifetime_fd is a regular file, which epoll cannot watch). Undo with
 * dlrt_service_watch_end after the loop; a watch set to DLRT_SERVICE_WATCH_NONE
 * may be ended without having started. */
#define DLRT_SERVICE_WATCH_MS 100
#define DLRT_SERVICE_WATCH_NONE { .lifetime_fd = -1, .parent_pidfd = -1 }
int dlrt_service_watch_start(struct dlrt_service_watch *w, struct dlrt_evloop *loop,
			     int lifetime_fd, pid_t parent_pid, const char **why);
void dlrt_service_watch_end(struct dlrt_service_watch *w);

#endif
