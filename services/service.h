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
 *   [--parent-pid PID]   exit when process PID is gone
 *   --ready-fd FD        once listening, write "<port>\n" to FD and close it
 *   --secret-fd FD       the step secret: 32 bytes, then end of file; every
 *                        connection must prove it (tcpserver.h) before the
 *                        protocol sees a byte. Only the node relays
 *                        (dlrt-relay, services/relay.h) hold it.
 *   [--step-nodes N]     the step's nodes, whose relays hold the service
 *                        (svchold.h): at the end of the lifetime fd it serves
 *                        on until they let go (needs --secret-fd)
 *   [--verbose]          log to stderr
 * Service programs parse it with struct dlrt_service_args (below), so that
 * every service reads, checks and applies it in the same way; their main()
 * is dlrt_service_main() (service_run.h) with their protocol.
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

#include "common/dlrt_err.h"
#include "evloop.h"
#include "svcauth.h"

#define DLRT_SERVICE_MAX_ARGS 32

/* The exit codes of every service program (dlrt_service_main, service_run.h;
 * their man pages say the same). */
enum {
	DLRT_SERVICE_EXIT_OK = 0,     /* the step ended: lifetime fd at EOF, parent gone, a signal */
	DLRT_SERVICE_EXIT_FAIL = 1,   /* runtime failure: out of memory, the event loop */
	DLRT_SERVICE_EXIT_USAGE = 2,  /* bad command line */
	DLRT_SERVICE_EXIT_LISTEN = 3, /* cannot bind or listen */
	DLRT_SERVICE_EXIT_READY = 4,  /* cannot write the port to --ready-fd */
};

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
	uint32_t step_nodes; /* 0: none (the service ends with the lifetime fd) */
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

/* Service programs with --step-nodes: this signal means what the end of
 * --lifetime-fd means (task 0's node is done: serve on until the nodes let go,
 * svchold.h), for a launcher that cannot close the pipe's last write end. */
#define DLRT_SERVICE_LINGER_SIGNAL SIGUSR1

/* Service programs: what ties a service's life to the step. */
struct dlrt_service_watch {
	int lifetime_fd;     /* -1: none */
	/* Optional, set after the start: what the end of lifetime_fd does
	 * instead of ending the loop (a service the step's nodes hold lingers,
	 * service_run.c); *why is set all the same. */
	void (*lifetime_end)(void *arg);
	void *lifetime_end_arg;
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

/* ---- service programs: the common command line, parsed once ------------ */

/* Option codes of the common options, for getopt_long; a program's own
 * options use other values (e.g. 256 up, or letters). */
enum {
	DLRT_SERVICE_O_BIND = 0x5300,
	DLRT_SERVICE_O_PORT,
	DLRT_SERVICE_O_ALLOW,
	DLRT_SERVICE_O_ALLOW_ANY,
	DLRT_SERVICE_O_LIFETIME_FD,
	DLRT_SERVICE_O_PARENT_PID,
	DLRT_SERVICE_O_READY_FD,
	DLRT_SERVICE_O_SECRET_FD,
	DLRT_SERVICE_O_VERBOSE,
	DLRT_SERVICE_O_PORT_RANGE,
	DLRT_SERVICE_O_STEP_NODES,
};

/* Entries of a `struct option` table (getopt.h) for the common options.
 * --allow-any is apart: only a program that may serve everyone (tests of
 * the stores) lists it. */
#define DLRT_SERVICE_OPTIONS \
	{ "bind", required_argument, NULL, DLRT_SERVICE_O_BIND }, \
	{ "port", required_argument, NULL, DLRT_SERVICE_O_PORT }, \
	{ "allow", required_argument, NULL, DLRT_SERVICE_O_ALLOW }, \
	{ "lifetime-fd", required_argument, NULL, DLRT_SERVICE_O_LIFETIME_FD }, \
	{ "parent-pid", required_argument, NULL, DLRT_SERVICE_O_PARENT_PID }, \
	{ "ready-fd", required_argument, NULL, DLRT_SERVICE_O_READY_FD }, \
	{ "secret-fd", required_argument, NULL, DLRT_SERVICE_O_SECRET_FD }, \
	{ "verbose", no_argument, NULL, DLRT_SERVICE_O_VERBOSE }, \
	{ "port-range", required_argument, NULL, DLRT_SERVICE_O_PORT_RANGE }, \
	{ "step-nodes", required_argument, NULL, DLRT_SERVICE_O_STEP_NODES }
#define DLRT_SERVICE_OPTION_ALLOW_ANY \
	{ "allow-any", no_argument, NULL, DLRT_SERVICE_O_ALLOW_ANY }

struct dlrt_service_args {
	const char *bind;    /* as given (tcpserver checks it) */
	uint16_t port;       /* 0: any free port */
	uint16_t port_lo, port_hi; /* --port-range LO-HI with port 0 (0: none) */
	uint32_t *allow;     /* --allow parsed, loopback first; NULL: not given */
	size_t nallow;
	uint32_t loopback;   /* the allow list without --allow */
	bool allow_any;
	int lifetime_fd;     /* -1: none */
	pid_t parent_pid;    /* 0: none */
	int ready_fd;        /* -1: none */
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN];
	bool has_secret;
	uint32_t step_nodes; /* --step-nodes (0: not given) */
	bool verbose;
};

/* Defaults: listen on `bind`, any port, loopback only, nothing watched. */
void dlrt_service_args_init(struct dlrt_service_args *a, const char *bind);

/* Handles option `opt` (a DLRT_SERVICE_O_* value) with its argument: 1
 * handled, 0 not a common option (the program's own), -1 bad argument with
 * one line in err. --secret-fd reads the secret at once (5 s at most), so a
 * program may close every other descriptor right after parsing. */
int dlrt_service_args_option(struct dlrt_service_args *a, int opt, const char *arg,
			     struct dlrt_err *err);

/* "LO-HI" (1 <= LO <= HI <= 65535, decimal): 0, else -1. */
int dlrt_service_parse_port_range(const char *s, uint16_t *lo, uint16_t *hi);

/* SrunPortRange of the slurm.conf at `path` (key case-insensitive, as Slurm
 * reads it; the last one counts): 1 and the range, 0 when not set or the file
 * cannot be read (configless Slurm has none: srun then knows no range
 * either), -1 with one line in err when the value is not LO-HI. */
int dlrt_service_srun_port_range(const char *path, uint16_t *lo, uint16_t *hi,
				 struct dlrt_err *err);

/* After parsing: --ready-fd and --lifetime-fd are open descriptors, and the
 * --parent-pid process exists (`what` names the program in the fix, e.g.
 * "the store"). 0, or -1 with one line in err. */
int dlrt_service_args_check(const struct dlrt_service_args *a, const char *what,
			    struct dlrt_err *err);

/* Sets the listening part of a tcpserver configuration (tcpserver.h):
 * address, port, secret, and the peers: --allow's list, everyone with
 * --allow-any, else loopback only. The configuration points into `a`. */
struct dlrt_tcpserver_cfg;
void dlrt_service_args_server(struct dlrt_service_args *a, struct dlrt_tcpserver_cfg *cfg);

/* Starts the watch (dlrt_service_watch_start) on --lifetime-fd and
 * --parent-pid; 0, or -1 with one line in err. */
int dlrt_service_args_watch(const struct dlrt_service_args *a, struct dlrt_service_watch *w,
			    struct dlrt_evloop *loop, const char **why, struct dlrt_err *err);

/* Once listening: writes the port to --ready-fd (if given) and closes it.
 * 0, or -1 with one line in err (`what` as above). */
int dlrt_service_args_ready(const struct dlrt_service_args *a, uint16_t port, const char *what,
			    struct dlrt_err *err);

/* Frees the allow list and forgets the secret. */
void dlrt_service_args_free(struct dlrt_service_args *a);

/* A plain decimal number from min to max for option `opt`; -1 with one line
 * in err naming the range. */
int dlrt_service_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max,
			   uint64_t *out, struct dlrt_err *err);

#endif
