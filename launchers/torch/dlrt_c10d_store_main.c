/* dlrt-c10d-store - torch.distributed's TCPStore, hosted for one job step
 * the way torchrun's agent hosts it.
 *
 * The SPANK plugin starts it on the node of task 0 before any task, with the
 * step secret: only the step's node relays (dlrt-relay) can talk to it, and
 * the tasks reach it through their node's relay on 127.0.0.1 with
 * TORCHELASTIC_USE_AGENT_STORE=True, so every rank is a store client and no
 * rank listens on an open port. See dlrt-c10d-store(8) and tcpstore.h.
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
#include "service.h"
#include "svcauth.h"
#include "tcpserver.h"
#include "tcpstore.h"

#define PROG "dlrt-c10d-store"

struct sconn {
	struct dlrt_tcpstore_client c;
	struct dlrt_conn *conn;
	struct sconn *prev, *next;
	bool woken;              /* answered while parked: flush and resume */
	struct sconn *wnext;
};

struct app {
	struct dlrt_evloop *loop;
	struct dlrt_tcpstore *store;
	struct dlrt_tcpserver *srv;
	struct dlrt_tcpstore_limits lim;
	struct sconn *conns;
	struct sconn *woken;
	int64_t resume_timer;
	int64_t stall_ms;
	struct dlrt_service_watch watch;
	bool verbose;
	const char *stop_reason;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [options]\n"
		"torch.distributed's TCPStore (the c10d store of torch 1.x's env:// rendezvous)\n"
		"for one job step.\n"
		"\n"
		"  --bind ADDR          numeric IPv4 address to listen on (default 127.0.0.1)\n"
		"  --port N             TCP port, 0 = any free port (default 0)\n"
		"  --allow IP[,IP...]   peers allowed to connect besides loopback\n"
		"  --allow-any          accept every peer (tests only)\n"
		"  --max-key BYTES      longest key (default %u)\n"
		"  --max-value BYTES    longest value (default %u)\n"
		"  --max-store BYTES    bytes of keys and values held in all (default %u)\n"
		"  --max-wait-keys N    keys in one WAIT or CHECK (default %u)\n"
		"  --idle-timeout-ms MS close a client stalled in the middle of a request\n"
		"                       or not reading its replies (default 60000)\n"
		"  --lifetime-fd FD     exit when FD reaches end-of-file (the step ended)\n"
		"  --parent-pid PID     exit when process PID is gone\n"
		"  --ready-fd FD        once listening, write the port and a newline to FD and close it\n"
		"  --secret-fd FD       read the step secret (32 bytes) from FD: every client must\n"
		"                       prove it first (dlrt-relay does)\n"
		"  --verbose            log connections and every query to stderr\n"
		"  --help               this text\n",
		DLRT_TCPSTORE_DEFAULT_MAX_KEY, DLRT_TCPSTORE_DEFAULT_MAX_VALUE,
		DLRT_TCPSTORE_DEFAULT_MAX_STORE, DLRT_TCPSTORE_DEFAULT_MAX_WAIT_KEYS);
}

static int parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	struct dlrt_err err;

	if (dlrt_service_parse_u64(opt, s, min, max, out, &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return -1;
	}
	return 0;
}

static void log_query(void *arg, const struct dlrt_tcpstore_client *c, unsigned q,
		      const uint8_t *key, size_t klen, const char *note)
{
	(void)arg;
	fprintf(stderr, PROG ": conn %" PRIu64 ": %s", c->id, dlrt_tcpstore_query_name(q));
	/* The key makes a stuck rendezvous debuggable; values are not shown. */
	if (key) {
		fputc(' ', stderr);
		for (size_t i = 0; i < klen && i < 96; i++)
			if (key[i] >= ' ' && key[i] <= '~' && key[i] != '\\')
				fputc(key[i], stderr);
			else
				fprintf(stderr, "\\x%02x", key[i]);
		if (klen > 96)
			fputs("...", stderr);
	}
	if (note)
		fprintf(stderr, " (%s)", note);
	fputc('\n', stderr);
}

static void feed(struct app *app, struct sconn *sc)
{
	struct dlrt_conn *conn = sc->conn;

	if (dlrt_tcpstore_feed(&sc->c, &conn->in, app->verbose ? log_query : NULL, NULL) < 0) {
		/* Refusals are always logged: they are a client of another torch
		 * version, a job over the limits, or someone probing. */
		fprintf(stderr, PROG ": conn %" PRIu64 ": closing: %s\n", sc->c.id,
			sc->c.error ? sc->c.error : "protocol error");
		conn->close_after_write = true;
	}
}

static enum dlrt_proto_result on_data(struct dlrt_conn *conn, void *ctx)
{
	struct sconn *sc = conn->state;

	feed(ctx, sc);
	return DLRT_PROTO_OK;
}

/* A parked WAIT was answered (inside another client's request): the reply
 * and any request queued behind it are handled from the loop, never from
 * inside the other client's on_data. */
static int64_t resume(struct dlrt_evloop *loop, void *arg)
{
	struct app *app = arg;

	(void)loop;
	app->resume_timer = 0;
	while (app->woken) {
		struct sconn *sc = app->woken;

		app->woken = sc->wnext;
		sc->woken = false;
		sc->wnext = NULL;
		if (sc->conn->in.len)
			feed(app, sc);
		dlrt_conn_flush(sc->conn); /* may close and free sc */
	}
	return -1;
}

static void on_wake(struct dlrt_tcpstore_client *c, void *arg)
{
	struct app *app = arg;
	struct sconn *sc = (struct sconn *)c->owner;

	if (sc->woken)
		return;
	sc->woken = true;
	sc->wnext = app->woken;
	app->woken = sc;
	if (!app->resume_timer)
		app->resume_timer = dlrt_evloop_add_timer(app->loop, 0, resume, app);
}

static int on_open(struct dlrt_conn *conn, void *ctx)
{
	struct app *app = ctx;
	struct sconn *sc = calloc(1, sizeof(*sc));

	if (!sc)
		return -1;
	dlrt_tcpstore_client_init(app->store, &sc->c, &conn->out, sc);
	sc->conn = conn;
	sc->next = app->conns;
	if (app->conns)
		app->conns->prev = sc;
	app->conns = sc;
	conn->state = sc;
	if (app->verbose) {
		char ip[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &conn->peer_ipv4, ip, sizeof(ip));
		fprintf(stderr, PROG ": conn %" PRIu64 ": open from %s\n", sc->c.id, ip);
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
		fprintf(stderr, PROG ": conn %" PRIu64 ": closed%s\n", sc->c.id,
			sc->c.waiting ? " while waiting" : "");
	if (sc->woken) {
		struct sconn **pp = &app->woken;

		while (*pp != sc)
			pp = &(*pp)->wnext;
		*pp = sc->wnext;
	}
	if (sc->prev)
		sc->prev->next = sc->next;
	else
		app->conns = sc->next;
	if (sc->next)
		sc->next->prev = sc->prev;
	dlrt_tcpstore_client_free(&sc->c);
	free(sc);
	conn->state = NULL;
}

/* torch's clients stay connected and silent for the whole training run (the
 * second, callback connection never sends at all), so only silence in the
 * middle of a request, or replies nobody reads, close a client. */
static int64_t sweep(struct dlrt_evloop *loop, void *arg)
{
	struct app *app = arg;
	int64_t now = dlrt_now_ms();
	struct sconn *sc = app->conns, *next;

	(void)loop;
	for (; sc; sc = next) {
		struct dlrt_conn *c = sc->conn;
		bool busy = dlrt_tcpstore_partial(&sc->c, &c->in) || c->out.len;

		next = sc->next;
		if (busy && app->stall_ms > 0 && now - c->last_active_ms > app->stall_ms) {
			fprintf(stderr, PROG ": conn %" PRIu64 ": stalled in the middle of a "
				"request for %" PRId64 " ms, closing\n", sc->c.id,
				now - c->last_active_ms);
			dlrt_conn_close(c);
		}
	}
	return 1000;
}

static const struct dlrt_proto c10d_proto = { on_data, on_open, on_close };

int main(int argc, char **argv)
{
	enum { O_MAXKEY = 256, O_MAXVAL, O_MAXSTORE, O_MAXWAIT, O_IDLE, O_HELP };
	static const struct option opts[] = {
		{ "max-key", required_argument, NULL, O_MAXKEY },
		{ "max-value", required_argument, NULL, O_MAXVAL },
		{ "max-store", required_argument, NULL, O_MAXSTORE },
		{ "max-wait-keys", required_argument, NULL, O_MAXWAIT },
		{ "idle-timeout-ms", required_argument, NULL, O_IDLE },
		DLRT_SERVICE_OPTIONS,
		DLRT_SERVICE_OPTION_ALLOW_ANY,
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct app app = {
		.lim = {
			.max_key = DLRT_TCPSTORE_DEFAULT_MAX_KEY,
			.max_value = DLRT_TCPSTORE_DEFAULT_MAX_VALUE,
			.max_store = DLRT_TCPSTORE_DEFAULT_MAX_STORE,
			.max_wait_keys = DLRT_TCPSTORE_DEFAULT_MAX_WAIT_KEYS,
		},
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
		case O_MAXKEY:
			if (parse_u64("--max-key", optarg, 64, 1u << 20, &v) < 0)
				return 2;
			app.lim.max_key = v;
			break;
		case O_MAXVAL:
			if (parse_u64("--max-value", optarg, 512, 1u << 30, &v) < 0)
				return 2;
			app.lim.max_value = v;
			break;
		case O_MAXSTORE:
			if (parse_u64("--max-store", optarg, 4096, (uint64_t)1 << 40, &v) < 0)
				return 2;
			app.lim.max_store = v;
			break;
		case O_MAXWAIT:
			if (parse_u64("--max-wait-keys", optarg, 1, 1u << 20, &v) < 0)
				return 2;
			app.lim.max_wait_keys = v;
			break;
		case O_IDLE:
			if (parse_u64("--idle-timeout-ms", optarg, 0, INT32_MAX, &v) < 0)
				return 2;
			app.stall_ms = (int64_t)v;
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
	app.store = dlrt_tcpstore_create(&app.lim, on_wake, &app);
	if (!app.loop || !app.store ||
	    (sfd = dlrt_service_stop_on_signals(app.loop, &app.stop_reason)) < 0) {
		fprintf(stderr, PROG ": cannot set up the event loop: out of memory or file descriptors\n");
		goto out;
	}

	/* One request holds at most two values and a key (COMPARE_SET) or a key
	 * list; one reply at most one value. Beyond that a client is closed. */
	cfg.max_request = 2 * (app.lim.max_value + 8) + app.lim.max_key + 64;
	if (cfg.max_request < app.lim.max_wait_keys * (app.lim.max_key + 8) + 64)
		cfg.max_request = app.lim.max_wait_keys * (app.lim.max_key + 8) + 64;
	cfg.max_reply = 2 * (app.lim.max_value + 8) + 4096;
	cfg.idle_timeout_ms = 0; /* our sweep knows requests from silence */
	cfg.max_conns = 4096;
	dlrt_service_args_server(&args, &cfg);
	if (dlrt_tcpserver_start(&app.srv, app.loop, &cfg, &c10d_proto, &app, &err) < 0) {
		fprintf(stderr, PROG ": %s: pass --bind an address of this node and a free --port "
			"(0 picks one)\n", err.msg);
		goto out;
	}
	dlrt_evloop_add_timer(app.loop, 1000, sweep, &app);
	if (dlrt_service_args_watch(&args, &app.watch, app.loop, &app.stop_reason, &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		goto out;
	}
	if (app.verbose)
		fprintf(stderr, PROG ": listening on %s:%u%s\n", cfg.bind_addr,
			dlrt_tcpserver_port(app.srv), cfg.secret ? " (step secret required)" : "");
	if (dlrt_service_args_ready(&args, dlrt_tcpserver_port(app.srv), "the store", &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		goto out;
	}
	if (dlrt_evloop_run(app.loop) < 0) {
		fprintf(stderr, PROG ": the event loop failed: %s\n", strerror(errno));
		goto out;
	}
	if (app.verbose)
		fprintf(stderr, PROG ": exiting: %s (%zu keys, %zu bytes)\n",
			app.stop_reason ? app.stop_reason : "stopped",
			dlrt_tcpstore_nkeys(app.store), dlrt_tcpstore_bytes(app.store));
	rc = 0;
out:
	dlrt_tcpserver_stop(app.srv);
	dlrt_tcpstore_destroy(app.store);
	dlrt_evloop_destroy(app.loop);
	dlrt_service_watch_end(&app.watch);
	if (sfd >= 0)
		close(sfd);
	dlrt_service_args_free(&args);
	return rc;
}
