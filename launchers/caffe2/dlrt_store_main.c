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

#include "common/dlist.h"
#include "common/dlrt_err.h"
#include "common/errline.h"
#include "services/evloop.h"
#include "kvstore.h"
#include "store_session.h"
#include "services/service.h"
#include "services/service_run.h"
#include "services/svcauth.h"
#include "services/tcpserver.h"

#define PROG "dlrt-store"

/* Replies waiting for one client before its further requests wait too:
 * enough for a deep pipeline of rendezvous replies, small next to a value. */
#define DEFAULT_REPLY_PAUSE ((size_t)1 << 20)

struct sconn {
	struct dlrt_store_session s;
	struct dlrt_conn *conn;
	struct dlrt_dlist_node link; /* in app->conns */
};

struct app {
	struct dlrt_evloop *loop;
	struct dlrt_kv *kv;
	struct dlrt_dlist conns;
	size_t max_value, max_args, max_memory, reply_pause;
	int64_t stall_ms;    /* a client silent this long in the middle of a request */
	int64_t max_idle_ms; /* a client silent this long between requests (0 = never) */
	bool verbose;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [options]\n"
		"A Redis-protocol (RESP2) key/value store for Caffe2/gloo rendezvous.\n"
		"\n"
		"  --bind ADDR          numeric IPv4 address to listen on (default 127.0.0.1)\n"
		"  --port N             TCP port, 0 = any free port (default 0)\n"
		"  --port-range LO-HI   with --port 0: a free port in LO-HI (srun's SrunPortRange)\n"
		"  --allow IP[,IP...]   peers allowed to connect besides loopback\n"
		"  --allow-any          accept every peer (tests only)\n"
		"  --max-value BYTES    longest key or value (default %u)\n"
		"  --max-args N         most arguments in one request, and most queued MULTI\n"
"                       commands plus WATCHed keys of one client (default %u)\n"
		"  --max-memory BYTES   most bytes the store holds: keys, values and every\n"
		"                       client's queued MULTI commands, watched keys and name;\n"
		"                       a write or queued command past it gets Redis's -OOM\n"
		"                       error (default %zu)\n"
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
		"  --step-nodes N       the step's N nodes hold the service (their relays do): at\n"
		"                       the end of --lifetime-fd, serve on until they let go\n"
		"  --verbose            log connections and every command with its latency to stderr\n"
		"  --help               this text\n"
		"\n"
		"exit status: 0 the step ended (lifetime fd EOF, parent gone, SIGTERM/SIGINT/SIGHUP);\n"
		"1 runtime failure; 2 bad arguments; 3 cannot listen; 4 cannot write --ready-fd\n",
		DLRT_RESP_DEFAULT_MAX_BULK, DLRT_RESP_DEFAULT_MAX_ARGS,
		DLRT_KV_DEFAULT_MAX_MEMORY, DEFAULT_REPLY_PAUSE);
}

/* ---- logging (the library never prints; this program does) ------------- */

static void log_cmd(void *arg, const struct dlrt_kv_client *cl, size_t argc,
		    const uint8_t *const *argv, const size_t *argvlen, int64_t ns)
{
	struct dlrt_errline line;

	(void)arg;
	dlrt_errline_init(&line);
	dlrt_errline_printf(&line, PROG ": conn %" PRIu64 ": ", cl->id);
	for (size_t i = 0; i < argvlen[0] && i < 32; i++)
		dlrt_errline_printf(&line, "%c", argv[0][i] >= 'a' && argv[0][i] <= 'z' ?
				    argv[0][i] - 32 :
				    (argv[0][i] >= ' ' && argv[0][i] <= '~' ? argv[0][i] : '?'));
	/* The first argument is the key for the store's commands: showing it
	 * is what makes a stuck rendezvous debuggable. Values are not shown. */
	if (argc > 1) {
		dlrt_errline_printf(&line, " ");
		dlrt_errline_escaped(&line, argv[1], argvlen[1], 64);
	}
	if (argc > 2)
		dlrt_errline_printf(&line, " (+%zu args)", argc - 2);
	dlrt_errline_printf(&line, " %.1f us", (double)ns / 1000.0);
	dlrt_errline_end(&line);
}

/* ---- the protocol glue -------------------------------------------------- */

static enum dlrt_proto_result on_data(struct dlrt_conn *conn, void *ctx)
{
	struct app *app = ctx;
	struct sconn *sc = conn->state;
	int rc = dlrt_store_session_feed(&sc->s, app->kv, &conn->in, &conn->out,
					 app->verbose ? log_cmd : NULL, NULL);

	/* One line per refused transaction: the refusal discards it, so the
	 * rest of its queue is not refused again. */
	if (sc->s.client.refused_full) {
		sc->s.client.refused_full = false;
		fprintf(stderr, PROG ": conn %" PRIu64 ": refused: %s\n", sc->s.client.id,
			dlrt_kv_full_message(app->kv));
	}
	return rc < 0 ? DLRT_PROTO_CLOSE : DLRT_PROTO_OK;
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
	dlrt_dlist_append(&app->conns, &sc->link);
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
	dlrt_dlist_unlink(&app->conns, &sc->link);
	dlrt_store_session_free(&sc->s);
	free(sc);
	conn->state = NULL;
}

/* Trainers keep their hiredis connection open, silent, for the whole
 * training run, so silence between requests is normal and only closed with
 * --max-idle-ms. Silence in the middle of a request (or a client that does
 * not read its replies) is a dead or broken peer holding memory: close it
 * after --idle-timeout-ms. Other clients are never blocked by it either way. */
#define EXPIRE_BUDGET 2000 /* keys with a TTL looked at per 100 ms tick */

static int64_t sweep(struct dlrt_evloop *loop, void *arg)
{
	struct app *app = arg;
	int64_t now = dlrt_now_ms();
	struct dlrt_dlist_node *n = app->conns.head, *next;

	(void)loop;
	/* Keys past their time to live that nobody reads again: return their
	 * memory, a bounded number per tick so no client waits long. */
	dlrt_kv_expire_cycle(app->kv, EXPIRE_BUDGET);
	for (; n; n = next) {
		struct sconn *sc = DLRT_DLIST_ENTRY(n, struct sconn, link);
		struct dlrt_conn *c = sc->conn;
		int64_t quiet = now - c->last_active_ms;
		bool busy = dlrt_store_session_partial(&sc->s, &c->in) || c->out.len;

		next = n->next;
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

enum { O_MAXVAL = 256, O_MAXARGS, O_IDLE, O_MAXIDLE, O_MAXMEM, O_PAUSE };

/* A number from `min` up to `max` for option `opt`; below min, the fix says
 * how much at least (`unit`). */
static int option_at_least(const char *opt, const char *arg, uint64_t min, uint64_t max,
			   const char *unit, uint64_t *out, struct dlrt_err *err)
{
	if (dlrt_service_parse_u64(opt, arg, 0, max, out, err) < 0)
		return -1;
	if (*out < min)
		return dlrt_err_set(err, "%s %s is too small: use at least %s", opt, arg, unit);
	return 0;
}

static int store_option(void *ctx, int opt, const char *arg, struct dlrt_err *err)
{
	struct app *app = ctx;
	uint64_t v;

	switch (opt) {
	case O_MAXVAL:
		if (option_at_least("--max-value", arg, 512, (uint64_t)1 << 32, "512 bytes", &v,
				    err) < 0)
			return -1;
		app->max_value = v;
		return 0;
	case O_MAXARGS:
		if (option_at_least("--max-args", arg, 3, 1u << 30, "3", &v, err) < 0)
			return -1;
		app->max_args = v;
		return 0;
	case O_MAXMEM:
		if (option_at_least("--max-memory", arg, 1024 * 1024, (uint64_t)1 << 40,
				    "1048576 bytes (1 MiB)", &v, err) < 0)
			return -1;
		app->max_memory = v;
		return 0;
	case O_PAUSE:
		if (option_at_least("--reply-pause", arg, 4096, (uint64_t)1 << 32, "4096 bytes",
				    &v, err) < 0)
			return -1;
		app->reply_pause = v;
		return 0;
	case O_IDLE:
		if (dlrt_service_parse_u64("--idle-timeout-ms", arg, 0, INT32_MAX, &v, err) < 0)
			return -1;
		app->stall_ms = (int64_t)v;
		return 0;
	case O_MAXIDLE:
		if (dlrt_service_parse_u64("--max-idle-ms", arg, 0, INT32_MAX, &v, err) < 0)
			return -1;
		app->max_idle_ms = (int64_t)v;
		return 0;
	default:
		return dlrt_err_set(err, "unknown option: see " PROG " --help");
	}
}

static int store_init(void *ctx, struct dlrt_evloop *loop, const struct dlrt_service_args *args,
		      struct dlrt_tcpserver_cfg *cfg, const struct dlrt_proto **proto,
		      struct dlrt_err *err)
{
	struct app *app = ctx;

	app->loop = loop;
	app->verbose = args->verbose;
	app->kv = dlrt_kv_create(app->max_value);
	if (!app->kv)
		return dlrt_err_set(err, "cannot set up the event loop: out of memory or file "
				    "descriptors");
	dlrt_kv_set_max_memory(app->kv, app->max_memory);
	/* One request may hold a few values of --max-value; replies likewise
	 * (MGET). Beyond that a client is closed, as Redis's buffer limits do.
	 * A client that does not read its replies is not read from once
	 * --reply-pause bytes of them wait (its pipeline waits in its socket). */
	cfg->max_request = 2 * app->max_value + 1024 * 1024;
	/* A MULTI queue (and the client's WATCHed keys) may hold as much as
	 * one request and as many entries as one request's arguments. */
	dlrt_kv_set_tx_limits(app->kv, cfg->max_request, app->max_args);
	cfg->max_reply = 4 * app->max_value + 16 * 1024 * 1024;
	cfg->out_pause = app->reply_pause;
	cfg->idle_timeout_ms = 0; /* our own sweep knows requests from silence */
	cfg->max_conns = 4096;
	dlrt_evloop_add_timer(loop, 100, sweep, app);
	*proto = &store_proto;
	return 0;
}

static void store_listening(void *ctx, struct dlrt_tcpserver *srv,
			    const struct dlrt_tcpserver_cfg *cfg)
{
	struct app *app = ctx;

	fprintf(stderr, PROG ": listening on %s:%u; at most %u connections (descriptor "
		"limit %lu), --max-memory %zu bytes\n", cfg->bind_addr,
		dlrt_tcpserver_port(srv), dlrt_tcpserver_max_conns(srv),
		dlrt_tcpserver_nofile(srv), app->max_memory);
}

static void store_stopped(void *ctx, const char *why)
{
	(void)ctx;
	fprintf(stderr, PROG ": exiting: %s\n", why);
}

static void store_teardown(void *ctx)
{
	struct app *app = ctx;

	dlrt_kv_destroy(app->kv);
	app->kv = NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "max-value", required_argument, NULL, O_MAXVAL },
		{ "max-args", required_argument, NULL, O_MAXARGS },
		{ "max-memory", required_argument, NULL, O_MAXMEM },
		{ "reply-pause", required_argument, NULL, O_PAUSE },
		{ "idle-timeout-ms", required_argument, NULL, O_IDLE },
		{ "max-idle-ms", required_argument, NULL, O_MAXIDLE },
		{ NULL, 0, NULL, 0 },
	};
	static const struct dlrt_service_protocol proto = {
		.prog = PROG,
		.what = "the store",
		.bind = "127.0.0.1",
		.allow_any = true,
		.options = opts,
		.usage = usage,
		.option = store_option,
		.init = store_init,
		.listening = store_listening,
		.stopped = store_stopped,
		.teardown = store_teardown,
	};
	struct app app = {
		.max_value = DLRT_RESP_DEFAULT_MAX_BULK,
		.max_args = DLRT_RESP_DEFAULT_MAX_ARGS,
		.max_memory = DLRT_KV_DEFAULT_MAX_MEMORY,
		.reply_pause = DEFAULT_REPLY_PAUSE,
		.stall_ms = 60000,
	};

	return dlrt_service_main(argc, argv, &proto, &app);
}
