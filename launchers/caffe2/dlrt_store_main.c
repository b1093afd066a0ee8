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
	struct dlrt_err err;

	if (dlrt_service_parse_u64(opt, s, 0, max, out, &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return -1;
	}
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
	enum { O_MAXVAL = 256, O_MAXARGS, O_IDLE, O_MAXIDLE, O_HELP, O_MAXMEM, O_PAUSE };
	static const struct option opts[] = {
		{ "max-value", required_argument, NULL, O_MAXVAL },
		{ "max-args", required_argument, NULL, O_MAXARGS },
		{ "max-memory", required_argument, NULL, O_MAXMEM },
		{ "reply-pause", required_argument, NULL, O_PAUSE },
		{ "idle-timeout-ms", required_argument, NULL, O_IDLE },
		{ "max-idle-ms", required_argument, NULL, O_MAXIDLE },
		DLRT_SERVICE_OPTIONS,
		DLRT_SERVICE_OPTION_ALLOW_ANY,
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct app app = {
		.max_value = DLRT_RESP_DEFAULT_MAX_BULK,
		.max_args = DLRT_RESP_DEFAULT_MAX_ARGS,
		.max_memory = DLRT_KV_DEFAULT_MAX_MEMORY,
		.reply_pause = DEFAULT_REPLY_PAUSE,
		.stall_ms = 60000,
		.watch = DLRT_SERVICE_WATCH_NONE,
	};
	struct dlrt_tcpserver_cfg cfg = { 0 };
	struct dlrt_service_args args;
	int sfd = -1, rc = 1, o;
	struct dlrt_err err = { { 0 } };
	uint64_t v;

	dlrt_service_args_init(&args, "127.0.0.1");
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (dlrt_service_args_option(&args, o, optarg, &err)) {
		case 1:
			continue;
		case -1:
			fprintf(stderr, PROG ": %s\n", err.msg);
			return 2;
		}
		switch (o) {
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
	if (dlrt_service_args_check(&args, "the store", &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		dlrt_service_args_free(&args);
		return 2;
	}
	app.verbose = args.verbose;

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
	dlrt_service_args_server(&args, &cfg);
	if (dlrt_tcpserver_start(&app.srv, app.loop, &cfg, &store_proto, &app, &err) < 0) {
		fprintf(stderr, PROG ": %s: pass --bind an address of this node and a free --port "
			"(0 picks one)\n", err.msg);
		goto out;
	}
	dlrt_evloop_add_timer(app.loop, 100, sweep, &app);
	if (dlrt_service_args_watch(&args, &app.watch, app.loop, &app.stop_reason, &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		goto out;
	}
	if (app.verbose)
		fprintf(stderr, PROG ": listening on %s:%u; at most %u connections (descriptor "
			"limit %lu), %zu bytes of keys and values\n", cfg.bind_addr,
			dlrt_tcpserver_port(app.srv), dlrt_tcpserver_max_conns(app.srv),
			dlrt_tcpserver_nofile(app.srv), app.max_memory);
	if (dlrt_service_args_ready(&args, dlrt_tcpserver_port(app.srv), "the store", &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
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
	dlrt_service_args_free(&args);
	return rc;
}
