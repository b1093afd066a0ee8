/* dlrt-store - the Caffe2 helper store: a Redis-protocol key/value server
 * that lives exactly as long as one job step.
 *
 * The SPANK plugin starts it on the master's node before any trainer, waits
 * for the bound port on --ready-fd, exports REDIS_HOST/REDIS_PORT, and ties
 * its life to the step with --lifetime-fd/--parent-pid. See dlrt-store(8).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlrt_err.h"
#include "evloop.h"
#include "kvstore.h"
#include "store_session.h"
#include "service.h"
#include "svcauth.h"
#include "tcpserver.h"

#define PROG "dlrt-store"

/* Replies waiting for one client before its further requests wait too:
 * enough for a deep pipeline of rendezvous replies, small next to a value. */
#define DEFAULT_REPLY_PAUSE ((size_t)1 << 20)

struct sconn {
	struct dlrt_store_session s;
	struct dlrt_conn *conn;
	struct sconn *prev, *next;
};

struct app {
	struct dlrt_evloop *loop;
	struct dlrt_kv *kv;
	struct dlrt_tcpserver *srv;
	struct sconn *conns;
	size_t max_value, max_args, max_memory, reply_pause;
	int64_t stall_ms;    /* a client silent this long in the middle of a request */
	int64_t max_idle_ms; /* a client silent this long between requests (0 = never) */
	int lifetime_fd;
	pid_t parent_pid;
	struct dlrt_service_watch watch;
	bool verbose;
	const char *stop_reason;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [options]\n"
		"A Redis-protocol (RESP2) key/value store for Caffe2/gloo rendezvous.\n"
		"\n"
		"  --bind ADDR          numeric IPv4 address to listen on (default 127.0.0.1)\n"
		"  --port N             TCP port, 0 = any free port (default 0)\n"
		"  --allow IP[,IP...]   peers allowed to connect besides loopback\n"
		"  --allow-any          accept every peer (tests only)\n"
		"  --max-value BYTES    longest key or value (default %u)\n"
		"  --max-args N         most arguments in one request (default %u)\n"
		"  --max-memory BYTES   most bytes of keys and values the store holds; a write\n"
		"                       past it gets Redis's -OOM error (default %zu)\n"
		"  --reply-pause BYTES  stop reading a client's requests while this much of\n"
		"                       its replies waits to be read (default %zu)\n"
		"  --idle-timeout-ms MS close a client stalled in the middle of a request\n"
		"                       or not reading its replies (default 60000)\n"
		"  --max-idle-ms MS     close a client idle between requests (default 0 = never)\n"
		"  --lifetime-fd FD     exit when FD reaches end-of-file (the step ended)\n"
		"  --parent-pid PID     exit when process PID is gone\n"
		"  --ready-fd FD        once listening, write the port and a newline to FD and close it\n"
		"  --secret-fd FD       read the step secret (32 bytes) from FD: every client must\n"
		"                       prove it first (dlrt-relay does)\n"
		"  --verbose            log connections and every command with its latency to stderr\n"
		"  --help               this text\n",
		DLRT_RESP_DEFAULT_MAX_BULK, DLRT_RESP_DEFAULT_MAX_ARGS,
		DLRT_KV_DEFAULT_MAX_MEMORY, DEFAULT_REPLY_PAUSE);
}

static int parse_u64(const char *opt, const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || errno || v > max || *s == '-') {
		fprintf(stderr, PROG ": %s '%s' is not a number between 0 and %" PRIu64
			": pass a plain decimal number\n", opt, s, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* ---- logging (the library never prints; this program does) ------------- */

static void log_escaped(const uint8_t *s, size_t n, size_t max)
{
	for (size_t i = 0; i < n && i < max; i++) {
		if (s[i] >= ' ' && s[i] <= '~' && s[i] != '\\')
			fputc(s[i], stderr);
		else
			fprintf(stderr, "\\x%02x", s[i]);
	}
	if (n > max)
		fputs("...", stderr);
}

static void log_cmd(void *arg, const struct dlrt_kv_client *cl, size_t argc,
		    const uint8_t *const *argv, const size_t *argvlen, int64_t ns)
{
	(void)arg;
	fprintf(stderr, PROG ": conn %" PRIu64 ": ", cl->id);
	for (size_t i = 0; i < argvlen[0] && i < 32; i++)
		fputc(argv[0][i] >= 'a' && argv[0][i] <= 'z' ? argv[0][i] - 32 :
		      (argv[0][i] >= ' ' && argv[0][i] <= '~' ? argv[0][i] : '?'), stderr);
	/* The first argument is the key for the store's commands: showing it
	 * is what makes a stuck rendezvous debuggable. Values are not shown. */
	if (argc > 1) {
		fputs(" ", stderr);
		log_escaped(argv[1], argvlen[1], 64);
	}
	if (argc > 2)
		fprintf(stderr, " (+%zu args)", argc - 2);
	fprintf(stderr, " %.1f us\n", (double)ns / 1000.0);
}

/* ---- the protocol glue -------------------------------------------------- */

static enum dlrt_proto_result on_data(struct dlrt_conn *conn, void *ctx)
{
	struct app *app = ctx;
	struct sconn *sc = conn->state;

	if (dlrt_store_session_feed(&sc->s, app->kv, &conn->in, &conn->out,
				    app->verbose ? log_cmd : NULL, NULL) < 0)
		return DLRT_PROTO_CLOSE;
	return DLRT_PROTO_OK;
}

static int on_open(struct dlrt_conn *conn, void *ctx)
{
	struct app *app = ctx;
	struct sconn *sc = calloc(1, sizeof(*sc));

	if (!sc)
		return -1;
	dlrt_store_session_init(&sc->s, app->kv, app->max_value, app->max_args);
	sc->s.out_pause = app->reply_pause;
	sc->conn = conn;
	sc->next = app->conns;
	if (app->conns)
		app->conns->prev = sc;
	app->conns = sc;
	conn->state = sc;
	if (app->verbose) {
		char ip[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &conn->peer_ipv4, ip, sizeof(ip));
		fprintf(stderr, PROG ": conn %" PRIu64 ": open from %s\n", sc->s.client.id, ip);
	}
	return 0;
}

static void on_close(struct dlrt_conn *conn, void *ctx)
{
	struct app *app = ctx;
	struct sconn *sc = conn->state;

	if (!sc)
		return;
	if (app->verbose)
		fprintf(stderr, PROG ": conn %" PRIu64 ": closed\n", sc->s.client.id);
	if (sc->prev)
		sc->prev->next = sc->next;
	else
		app->conns = sc->next;
	if (sc->next)
		sc->next->prev = sc->prev;
	dlrt_store_session_free(&sc->s);
	free(sc);
	conn->state = NULL;
}

/* Trainers keep their hiredis connection open, silent, for the whole
 * training run, so silence between requests is normal and only closed with
 * --max-idle-ms. Silence in the middle of a request (or a client that does
 * not read its replies) is a dead or broken peer holding memory: close it
 * after --idle-timeout-ms. Other clients are never blocked by it either way. */
static int64_t sweep(struct dlrt_evloop *loop, void *arg)
{
	struct app *app = arg;
	int64_t now = dlrt_now_ms();
	struct sconn *sc = app->conns, *next;

	(void)loop;
	for (; sc; sc = next) {
		struct dlrt_conn *c = sc->conn;
		int64_t quiet = now - c->last_active_ms;
		bool busy = dlrt_store_session_partial(&sc->s, &c->in) || c->out.len;

		next = sc->next;
		if ((busy && app->stall_ms > 0 && quiet > app->stall_ms) ||
		    (!busy && app->max_idle_ms > 0 && quiet > app->max_idle_ms)) {
			if (app->verbose)
				fprintf(stderr, PROG ": conn %" PRIu64 ": silent for %" PRId64
					" ms %s, closing\n", sc->s.client.id, quiet,
					busy ? "in the middle of a request" : "");
			dlrt_conn_close(c);
		}
	}
	return 100;
}

static const struct dlrt_proto store_proto = { on_data, on_open, on_close };

int main(int argc, char **argv)
{
	enum { O_BIND = 256, O_PORT, O_ALLOW, O_ALLOW_ANY, O_MAXVAL, O_MAXARGS, O_IDLE,
	       O_MAXIDLE, O_LIFEFD, O_PPID, O_READY, O_VERBOSE, O_HELP, O_SECRET, O_MAXMEM,
	       O_PAUSE };
	static const struct option opts[] = {
		{ "bind", required_argument, NULL, O_BIND },
		{ "port", required_argument, NULL, O_PORT },
		{ "allow", required_argument, NULL, O_ALLOW },
		{ "allow-any", no_argument, NULL, O_ALLOW_ANY },
		{ "max-value", required_argument, NULL, O_MAXVAL },
		{ "max-args", required_argument, NULL, O_MAXARGS },
		{ "max-memory", required_argument, NULL, O_MAXMEM },
		{ "reply-pause", required_argument, NULL, O_PAUSE },
		{ "idle-timeout-ms", required_argument, NULL, O_IDLE },
		{ "max-idle-ms", required_argument, NULL, O_MAXIDLE },
		{ "lifetime-fd", required_argument, NULL, O_LIFEFD },
		{ "parent-pid", required_argument, NULL, O_PPID },
		{ "ready-fd", required_argument, NULL, O_READY },
		{ "secret-fd", required_argument, NULL, O_SECRET },
		{ "verbose", no_argument, NULL, O_VERBOSE },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct app app = {
		.max_value = DLRT_RESP_DEFAULT_MAX_BULK,
		.max_args = DLRT_RESP_DEFAULT_MAX_ARGS,
		.max_memory = DLRT_KV_DEFAULT_MAX_MEMORY,
		.reply_pause = DEFAULT_REPLY_PAUSE,
		.stall_ms = 60000,
		.lifetime_fd = -1,
		.watch = DLRT_SERVICE_WATCH_NONE,
	};
	struct dlrt_tcpserver_cfg cfg = { .bind_addr = "127.0.0.1" };
	uint32_t loopback = htonl(INADDR_LOOPBACK), *allow = NULL;
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN];
	size_t nallow = 0;
	bool allow_any = false;
	int ready_fd = -1, sfd = -1, rc = 1, o;
	struct dlrt_err err = { { 0 } };
	uint64_t v;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case O_BIND:
			cfg.bind_addr = optarg;
			break;
		case O_SECRET:
			if (parse_u64("--secret-fd", optarg, INT32_MAX, &v) < 0)
				return 2;
			if (dlrt_svcauth_read_secret((int)v, 5000, secret, &err) < 0) {
				fprintf(stderr, PROG ": %s\n", err.msg);
				return 2;
			}
			cfg.secret = secret;
			break;
		case O_PORT:
			if (parse_u64("--port", optarg, 65535, &v) < 0)
				return 2;
			cfg.port = (uint16_t)v;
			break;
		case O_ALLOW:
			free(allow);
			allow = NULL;
			nallow = 0;
			if (dlrt_service_parse_allow(optarg, &allow, &nallow, &err) < 0) {
				fprintf(stderr, PROG ": %s\n", err.msg);
				return 2;
			}
			break;
		case O_ALLOW_ANY:
			allow_any = true;
			break;
		case O_MAXVAL:
			if (parse_u64("--max-value", optarg, (uint64_t)1 << 32, &v) < 0)
				return 2;
			if (v < 512) {
				fprintf(stderr, PROG ": --max-value %s is too small: use at least 512 bytes\n", optarg);
				return 2;
			}
			app.max_value = v;
			break;
		case O_MAXARGS:
			if (parse_u64("--max-args", optarg, 1u << 30, &v) < 0)
				return 2;
			if (v < 3) {
				fprintf(stderr, PROG ": --max-args %s is too small: use at least 3\n", optarg);
				return 2;
			}
			app.max_args = v;
			break;
		case O_MAXMEM:
			if (parse_u64("--max-memory", optarg, (uint64_t)1 << 40, &v) < 0)
				return 2;
			if (v < 1024 * 1024) {
				fprintf(stderr, PROG ": --max-memory %s is too small: use at least 1048576 bytes (1 MiB)\n", optarg);
				return 2;
			}
			app.max_memory = v;
			break;
		case O_PAUSE:
			if (parse_u64("--reply-pause", optarg, (uint64_t)1 << 32, &v) < 0)
				return 2;
			if (v < 4096) {
				fprintf(stderr, PROG ": --reply-pause %s is too small: use at least 4096 bytes\n", optarg);
				return 2;
			}
			app.reply_pause = v;
			break;
		case O_IDLE:
			if (parse_u64("--idle-timeout-ms", optarg, INT32_MAX, &v) < 0)
				return 2;
			app.stall_ms = (int64_t)v;
			break;
		case O_MAXIDLE:
			if (parse_u64("--max-idle-ms", optarg, INT32_MAX, &v) < 0)
				return 2;
			app.max_idle_ms = (int64_t)v;
			break;
		case O_LIFEFD:
			if (parse_u64("--lifetime-fd", optarg, INT32_MAX, &v) < 0)
				return 2;
			app.lifetime_fd = (int)v;
			break;
		case O_PPID:
			if (parse_u64("--parent-pid", optarg, INT32_MAX, &v) < 0 || v < 1)
				return 2;
			app.parent_pid = (pid_t)v;
			break;
		case O_READY:
			if (parse_u64("--ready-fd", optarg, INT32_MAX, &v) < 0)
				return 2;
			ready_fd = (int)v;
			break;
		case O_VERBOSE:
			app.verbose = true;
			break;
		case O_HELP:
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s': see " PROG " --help\n", argv[optind]);
		return 2;
	}
	if (ready_fd >= 0 && fcntl(ready_fd, F_GETFD) < 0) {
		fprintf(stderr, PROG ": --ready-fd %d is not an open file descriptor: "
			"open a pipe in the launcher and pass its write end\n", ready_fd);
		return 2;
	}
	if (app.lifetime_fd >= 0 && fcntl(app.lifetime_fd, F_GETFD) < 0) {
		fprintf(stderr, PROG ": --lifetime-fd %d is not an open file descriptor: "
			"pass the read end of a pipe the step holds open\n", app.lifetime_fd);
		return 2;
	}
	if (app.parent_pid) {
		if (getppid() != app.parent_pid && kill(app.parent_pid, 0) < 0 && errno == ESRCH) {
			fprintf(stderr, PROG ": --parent-pid %d does not exist: pass the pid of the "
				"process whose end should stop the store\n", (int)app.parent_pid);
			return 2;
		}
	}

	signal(SIGPIPE, SIG_IGN);
	app.loop = dlrt_evloop_create();
	app.kv = dlrt_kv_create(app.max_value);
	if (!app.loop || !app.kv ||
	    (sfd = dlrt_service_stop_on_signals(app.loop, &app.stop_reason)) < 0) {
		fprintf(stderr, PROG ": cannot set up the event loop: out of memory or file descriptors\n");
		goto out;
	}
	dlrt_kv_set_max_memory(app.kv, app.max_memory);

	/* One request may hold a few values of --max-value; replies likewise
	 * (MGET). Beyond that a client is closed, as Redis's buffer limits do.
	 * A client that does not read its replies is not read from once
	 * --reply-pause bytes of them wait (its pipeline waits in its socket). */
	cfg.max_request = 2 * app.max_value + 1024 * 1024;
	cfg.max_reply = 4 * app.max_value + 16 * 1024 * 1024;
	cfg.out_pause = app.reply_pause;
	cfg.idle_timeout_ms = 0; /* our own sweep knows requests from silence */
	cfg.max_conns = 4096;
	if (allow_any) {
		cfg.nallow = 0;
	} else if (nallow) {
		cfg.allow = allow;
		cfg.nallow = nallow;
	} else {
		cfg.allow = &loopback; /* loopback only */
		cfg.nallow = 1;
	}
	if (dlrt_tcpserver_start(&app.srv, app.loop, &cfg, &store_proto, &app, &err) < 0) {
		fprintf(stderr, PROG ": %s: pass --bind an address of this node and a free --port "
			"(0 picks one)\n", err.msg);
		goto out;
	}
	dlrt_evloop_add_timer(app.loop, 100, sweep, &app);
	if (dlrt_service_watch_start(&app.watch, app.loop, app.lifetime_fd, app.parent_pid,
				     &app.stop_reason) < 0) {
		if (app.lifetime_fd >= 0)
			fprintf(stderr, PROG ": --lifetime-fd %d cannot be watched (%s): pass a "
				"pipe or socket, not a regular file\n", app.lifetime_fd, strerror(errno));
		else
			fprintf(stderr, PROG ": cannot set up the event loop: %s\n", strerror(errno));
		goto out;
	}
	if (app.verbose)
		fprintf(stderr, PROG ": listening on %s:%u; at most %u connections (descriptor "
			"limit %lu), %zu bytes of keys and values\n", cfg.bind_addr,
			dlrt_tcpserver_port(app.srv), dlrt_tcpserver_max_conns(app.srv),
			dlrt_tcpserver_nofile(app.srv), app.max_memory);
	if (ready_fd >= 0 && dlrt_service_write_ready(ready_fd, dlrt_tcpserver_port(app.srv)) < 0) {
		fprintf(stderr, PROG ": cannot write the port to --ready-fd %d: the launcher "
			"closed its end of the pipe before the store was ready\n", ready_fd);
		goto out;
	}
	if (dlrt_evloop_run(app.loop) < 0) {
		fprintf(stderr, PROG ": the event loop failed: %s\n", strerror(errno));
		goto out;
	}
	if (app.verbose)
		fprintf(stderr, PROG ": exiting: %s\n",
			app.stop_reason ? app.stop_reason : "stopped");
	rc = 0;
out:
	dlrt_tcpserver_stop(app.srv);
	dlrt_kv_destroy(app.kv);
	dlrt_evloop_destroy(app.loop);
	dlrt_service_watch_end(&app.watch);
	if (sfd >= 0)
		close(sfd);
	free(allow);
	return rc;
}
