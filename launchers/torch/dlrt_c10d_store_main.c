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

#include "common/dlist.h"
#include "common/dlrt_err.h"
#include "common/errline.h"
#include "services/evloop.h"
#include "services/service.h"
#include "services/service_run.h"
#include "services/svcauth.h"
#include "services/tcpserver.h"
#include "tcpstore.h"

#define PROG "dlrt-c10d-store"

struct sconn {
	struct dlrt_tcpstore_client c;
	struct dlrt_conn *conn;
	struct dlrt_dlist_node link; /* in app->conns */
	bool woken;              /* answered while parked: flush and resume */
	struct sconn *wnext;
};

struct app {
	struct dlrt_evloop *loop;
	struct dlrt_tcpstore *store;
	struct dlrt_tcpstore_limits lim;
	struct dlrt_dlist conns;
	struct sconn *woken;
	int64_t resume_timer;
	int64_t stall_ms;
	bool verbose;
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
		"  --port-range LO-HI   with --port 0: a free port in LO-HI (srun's SrunPortRange)\n"
		"  --allow IP[,IP...]   peers allowed to connect besides loopback\n"
		"  --allow-any          accept every peer (srun's rendezvous, with --secret-fd; tests)\n"
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
		"  --step-nodes N       the step's N nodes hold the service (their relays do): at\n"
		"                       the end of --lifetime-fd, serve on until they let go\n"
		"  --verbose            log connections and every query to stderr\n"
		"  --help               this text\n"
		"\n"
		"exit status: 0 the step ended (lifetime fd EOF, parent gone, SIGTERM/SIGINT/SIGHUP);\n"
		"1 runtime failure; 2 bad arguments; 3 cannot listen; 4 cannot write --ready-fd\n",
		DLRT_TCPSTORE_DEFAULT_MAX_KEY, DLRT_TCPSTORE_DEFAULT_MAX_VALUE,
		DLRT_TCPSTORE_DEFAULT_MAX_STORE, DLRT_TCPSTORE_DEFAULT_MAX_WAIT_KEYS);
}

static void log_query(void *arg, const struct dlrt_tcpstore_client *c, unsigned q,
		      const uint8_t *key, size_t klen, const char *note)
{
	struct dlrt_errline line;

	(void)arg;
	dlrt_errline_init(&line);
	dlrt_errline_printf(&line, PROG ": conn %" PRIu64 ": %s", c->id,
			    dlrt_tcpstore_query_name(q));
	/* The key makes a stuck rendezvous debuggable; values are not shown. */
	if (key) {
		dlrt_errline_printf(&line, " ");
		dlrt_errline_escaped(&line, key, klen, 96);
	}
	if (note)
		dlrt_errline_printf(&line, " (%s)", note);
	dlrt_errline_end(&line);
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
	dlrt_dlist_append(&app->conns, &sc->link);
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
	dlrt_dlist_unlink(&app->conns, &sc->link);
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
	struct dlrt_dlist_node *n = app->conns.head, *next;

	(void)loop;
	for (; n; n = next) {
		struct sconn *sc = DLRT_DLIST_ENTRY(n, struct sconn, link);
		struct dlrt_conn *c = sc->conn;
		bool busy = dlrt_tcpstore_partial(&sc->c, &c->in) || c->out.len;

		next = n->next;
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

enum { O_MAXKEY = 256, O_MAXVAL, O_MAXSTORE, O_MAXWAIT, O_IDLE };

static int c10d_option(void *ctx, int opt, const char *arg, struct dlrt_err *err)
{
	struct app *app = ctx;
	uint64_t v;

	switch (opt) {
	case O_MAXKEY:
		if (dlrt_service_parse_u64("--max-key", arg, 64, 1u << 20, &v, err) < 0)
			return -1;
		app->lim.max_key = v;
		return 0;
	case O_MAXVAL:
		if (dlrt_service_parse_u64("--max-value", arg, 512, 1u << 30, &v, err) < 0)
			return -1;
		app->lim.max_value = v;
		return 0;
	case O_MAXSTORE:
		if (dlrt_service_parse_u64("--max-store", arg, 4096, (uint64_t)1 << 40, &v, err) < 0)
			return -1;
		app->lim.max_store = v;
		return 0;
	case O_MAXWAIT:
		if (dlrt_service_parse_u64("--max-wait-keys", arg, 1, 1u << 20, &v, err) < 0)
			return -1;
		app->lim.max_wait_keys = v;
		return 0;
	case O_IDLE:
		if (dlrt_service_parse_u64("--idle-timeout-ms", arg, 0, INT32_MAX, &v, err) < 0)
			return -1;
		app->stall_ms = (int64_t)v;
		return 0;
	default:
		return dlrt_err_set(err, "unknown option: see " PROG " --help");
	}
}

static int c10d_init(void *ctx, struct dlrt_evloop *loop, const struct dlrt_service_args *args,
		     struct dlrt_tcpserver_cfg *cfg, const struct dlrt_proto **proto,
		     struct dlrt_err *err)
{
	struct app *app = ctx;

	app->loop = loop;
	app->verbose = args->verbose;
	app->store = dlrt_tcpstore_create(&app->lim, on_wake, app);
	if (!app->store)
		return dlrt_err_set(err, "cannot set up the event loop: out of memory or file "
				    "descriptors");
	/* One request holds at most two values and a key (COMPARE_SET) or a key
	 * list; one reply at most one value. Beyond that a client is closed. */
	cfg->max_request = 2 * (app->lim.max_value + 8) + app->lim.max_key + 64;
	if (cfg->max_request < app->lim.max_wait_keys * (app->lim.max_key + 8) + 64)
		cfg->max_request = app->lim.max_wait_keys * (app->lim.max_key + 8) + 64;
	cfg->max_reply = 2 * (app->lim.max_value + 8) + 4096;
	cfg->idle_timeout_ms = 0; /* our sweep knows requests from silence */
	cfg->max_conns = 4096;
	dlrt_evloop_add_timer(loop, 1000, sweep, app);
	*proto = &c10d_proto;
	return 0;
}

static void c10d_listening(void *ctx, struct dlrt_tcpserver *srv,
			   const struct dlrt_tcpserver_cfg *cfg)
{
	(void)ctx;
	fprintf(stderr, PROG ": listening on %s:%u%s\n", cfg->bind_addr, dlrt_tcpserver_port(srv),
		cfg->secret ? " (step secret required)" : "");
}

static void c10d_stopped(void *ctx, const char *why)
{
	struct app *app = ctx;

	fprintf(stderr, PROG ": exiting: %s (%zu keys, %zu bytes)\n", why,
		dlrt_tcpstore_nkeys(app->store), dlrt_tcpstore_bytes(app->store));
}

static void c10d_teardown(void *ctx)
{
	struct app *app = ctx;

	dlrt_tcpstore_destroy(app->store);
	app->store = NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "max-key", required_argument, NULL, O_MAXKEY },
		{ "max-value", required_argument, NULL, O_MAXVAL },
		{ "max-store", required_argument, NULL, O_MAXSTORE },
		{ "max-wait-keys", required_argument, NULL, O_MAXWAIT },
		{ "idle-timeout-ms", required_argument, NULL, O_IDLE },
		{ NULL, 0, NULL, 0 },
	};
	static const struct dlrt_service_protocol proto = {
		.prog = PROG,
		.what = "the store",
		.bind = "127.0.0.1",
		.allow_any = true,
		.options = opts,
		.usage = usage,
		.option = c10d_option,
		.init = c10d_init,
		.listening = c10d_listening,
		.stopped = c10d_stopped,
		.teardown = c10d_teardown,
	};
	struct app app = {
		.lim = {
			.max_key = DLRT_TCPSTORE_DEFAULT_MAX_KEY,
			.max_value = DLRT_TCPSTORE_DEFAULT_MAX_VALUE,
			.max_store = DLRT_TCPSTORE_DEFAULT_MAX_STORE,
			.max_wait_keys = DLRT_TCPSTORE_DEFAULT_MAX_WAIT_KEYS,
		},
		.stall_ms = 60000,
	};

	return dlrt_service_main(argc, argv, &proto, &app);
}
