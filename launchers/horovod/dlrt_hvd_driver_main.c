/* dlrt-hvd-driver - Horovod's gloo rendezvous server, for one Slurm step.
 *
 * horovodrun starts horovod/runner/http/http_server.py before any worker and
 * registers the scope sizes of its host plan; this program does the same for
 * dlrt: one epoll loop (services/evloop.h), the shared TCP server core
 * (services/tcpserver.h) and the pure parser and store of this folder. It lives
 * exactly as long as the step: it exits when its lifetime fd reaches EOF or
 * its parent process is gone. With --elastic it is also elastic Horovod's
 * driver for a host set that only shrinks: it holds GET /rank_and_size at
 * the round's barrier, learns from slurmd which nodes are gone (--step) and
 * publishes the next round. See docs/man/dlrt-hvd-driver.1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/dlist.h"
#include "common/dlrt_err.h"
#include "services/evloop.h"
#include "http.h"
#include "hvd_elastic.h"
#include "hvd_plan.h"
#include "hvd_steppids.h"
#include "hvd_watch.h"
#include "rendezvous.h"
#include "services/service.h"
#include "services/service_run.h"
#include "services/svcauth.h"
#include "services/tcpserver.h"

#define PROG "dlrt-hvd-driver"

struct conn_state;

/* Elastic Horovod (hvd_elastic.h): the round, the workers held at its
 * barrier, and the question to Slurm (hvd_watch.h) that tells which nodes
 * still run processes of the step. */
struct elastic {
	bool on;                  /* --elastic or --step */
	bool ask_slurm;           /* --step JOB.STEP: ask Slurm for the step's pids */
	struct dlrt_hvd_steppids_req req;
	int min_np, max_np;
	int64_t timeout_ms;       /* barrier: silent slots fail after this */
	int64_t poll_ms;
	struct dlrt_hvd_round round;
	bool over;                /* the job cannot go on: every later ask gets -1 */
	struct dlrt_dlist parked; /* held at the barrier, in the order they asked */
	int64_t keepalive_timer, expire_timer, poll_timer;
	struct dlrt_hvd_watch *watch;
};

struct driver {
	struct dlrt_evloop *loop;
	struct elastic el;
	struct dlrt_hvd_store *store;
	struct dlrt_http_limits lim;
	struct dlrt_hvd_plan plan;
	bool have_plan;
	unsigned long long max_store;
	unsigned max_conns;
	int64_t idle_ms;
	bool verbose;
	unsigned long requests;
	const struct dlrt_tcpserver *srv; /* for the exit line's counts */
};

struct conn_state {
	struct dlrt_http_parser parser;
	struct timespec t0;
	bool answered;
	/* Held at the elastic barrier: the rank_and_size key, in the list. */
	struct dlrt_conn *conn;
	char *park_key;
	size_t park_klen;
	struct dlrt_dlist_node link; /* in elastic.parked */
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " [options]\n"
"Horovod gloo rendezvous server (HTTP, horovod/runner/http/http_server.py protocol).\n"
"\n"
"  --bind ADDR          numeric IPv4 address to listen on (default 0.0.0.0)\n"
"  --port N             TCP port, 0 = any free port (default 0)\n"
"  --port-range LO-HI   with --port 0: a free port in LO-HI (srun's SrunPortRange)\n"
"  --hosts LIST         ordered host:slots list, e.g. n1:2,n2:1,n3:3; registers the\n"
"                       scopes global, local_<host>, cross_<local_rank> and answers\n"
"                       GET /rank_and_size/<host>:<local_rank>\n"
"  --allow LIST         IPv4 addresses allowed to connect besides loopback\n"
"  --max-body BYTES     largest object a PUT may carry (default 16777216), a\n"
"                       base64 body (what Horovod's client sends) by its decoded\n"
"                       length; larger gets 413\n"
"  --max-store BYTES    bound on all stored keys and values (default 536870912)\n"
"  --max-conns N        concurrent connections (default 1024)\n"
"  --idle-timeout-ms MS close a connection silent this long (default 3000)\n"
"  --lifetime-fd FD     exit when FD reaches end of file (e.g. a pipe's read end)\n"
"  --parent-pid PID     exit when process PID is gone (default: the parent process)\n"
"  --ready-fd FD        once listening, write the port as a decimal line to FD, close it\n"
"  --secret-fd FD       read the step secret (32 bytes) from FD; every client must\n"
"                       prove it first (dlrt-relay does)\n"
"  --step-nodes N       the step's N nodes hold the service (their relays do): at\n"
"                       the end of --lifetime-fd, serve on until they let go\n"
"  --elastic            elastic Horovod: hold GET /rank_and_size at the barrier until\n"
"                       every slot of the round asked or failed, then publish the\n"
"                       next round's plan (horovod/runner/elastic)\n"
"  --step JOB.STEP      implies --elastic: ask the nodes' slurmd which still run\n"
"                       processes of this step; the slots of the others fail\n"
"  --min-np N           fewer slots than N left: the job ends (default 1)\n"
"  --max-np N           at most N ranks in a round (default: no bound)\n"
"  --elastic-timeout-ms MS  a slot silent this long after the first one asked\n"
"                       fails (default 60000)\n"
"  --verbose            one line per request on stderr, with timing\n"
"  --help               this text\n"
"\n"
"exit status: 0 the step ended (lifetime fd EOF, parent gone, SIGTERM/SIGINT/SIGHUP);\n"
"1 runtime failure; 2 bad arguments; 3 cannot listen; 4 cannot write --ready-fd\n");
}

static int __attribute__((format(printf, 2, 0))) usage_error(struct dlrt_err *err,
							       const char *fmt, const char *arg)
{
	char what[DLRT_ERR_MAX];

	snprintf(what, sizeof(what), fmt, arg);
	return dlrt_err_set(err, "%s (see " PROG " --help)", what);
}

static int parse_num(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

static int64_t micros_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)(t.tv_sec - t0->tv_sec) * 1000000 + (t.tv_nsec - t0->tv_nsec) / 1000;
}

static int on_open(struct dlrt_conn *conn, void *ctx)
{
	struct conn_state *cs = calloc(1, sizeof(*cs));

	(void)ctx;
	if (!cs)
		return -1;
	dlrt_http_parser_init(&cs->parser);
	clock_gettime(CLOCK_MONOTONIC, &cs->t0);
	conn->state = cs;
	return 0;
}

static void unpark(struct driver *d, struct conn_state *cs)
{
	if (!cs->park_key)
		return;
	dlrt_dlist_unlink(&d->el.parked, &cs->link);
	free(cs->park_key);
	cs->park_key = NULL;
}

static void on_close(struct dlrt_conn *conn, void *ctx)
{
	struct conn_state *cs = conn->state;

	if (cs)
		unpark(ctx, cs);
	free(conn->state);
	conn->state = NULL;
}

static void log_request(const struct dlrt_conn *conn, const struct conn_state *cs,
			const struct dlrt_http_req *req, const struct dlrt_hvd_reply *r)
{
	char ip[INET_ADDRSTRLEN] = "?";
	struct in_addr a = { .s_addr = conn->peer_ipv4 };
	int64_t us = micros_since(&cs->t0);

	inet_ntop(AF_INET, &a, ip, sizeof(ip));
	if (req->target)
		fprintf(stderr, PROG ": %s %.*s %.*s -> %d %zu bytes %lld.%03lld ms%s\n", ip,
			(int)req->method_len, req->method_str,
			req->target_len > 200 ? 200 : (int)req->target_len, req->target,
			r->status, r->len, (long long)(us / 1000), (long long)(us % 1000),
			r->cleared ? " (scope complete: cleared)" :
			r->park ? " (held at the elastic barrier)" : "");
	else
		fprintf(stderr, PROG ": %s (malformed request) -> %d %lld.%03lld ms\n", ip,
			r->status, (long long)(us / 1000), (long long)(us % 1000));
}

/* --- elastic Horovod: the barrier of a round (hvd_elastic.h) --- */

#define KEEPALIVE_MS 1000
/* A node that is down costs Slurm's MessageTimeout (10 s by default). */
#define STEPPIDS_TIMEOUT_MS 30000

static void answer_held(struct dlrt_conn *conn, const struct dlrt_hvd_reply *r)
{
	if (dlrt_http_reply(&conn->out, r->status, r->body, r->len) < 0) {
		dlrt_buf_consume(&conn->out, conn->out.len);
		dlrt_http_reply(&conn->out, 500, NULL, 0);
	}
	conn->close_after_write = true;
	dlrt_conn_flush(conn);
}

static void stop_barrier_timers(struct driver *d)
{
	struct elastic *el = &d->el;

	if (el->keepalive_timer > 0)
		dlrt_evloop_del_timer(d->loop, el->keepalive_timer);
	if (el->expire_timer > 0)
		dlrt_evloop_del_timer(d->loop, el->expire_timer);
	if (el->poll_timer > 0)
		dlrt_evloop_del_timer(d->loop, el->poll_timer);
	el->keepalive_timer = el->expire_timer = el->poll_timer = 0;
	dlrt_hvd_watch_cancel(el->watch);
	el->watch = NULL;
}

/* Horovod's INVALID_SLOT_INFO: the worker ends ("has been removed"). */
static void removed(struct dlrt_hvd_reply *r)
{
	memset(r, 0, sizeof(*r));
	r->status = 200;
	r->len = (size_t)dlrt_hvd_slot_format(NULL, r->text, sizeof(r->text));
	r->body = (const uint8_t *)r->text;
}

/* Every slot of the round asked or failed: Horovod's barrier action
 * (_on_workers_recorded -> resume -> RendezvousServer.init), then every held
 * worker gets its slot in the new plan. */
static void release_barrier(struct driver *d)
{
	struct elastic *el = &d->el;
	const struct dlrt_hvd_plan *cur = dlrt_hvd_store_plan(d->store);
	struct dlrt_hvd_plan next;
	struct dlrt_err err;
	unsigned number = el->round.number;
	size_t failed = el->round.nfailed;

	stop_barrier_timers(d);
	if (dlrt_hvd_round_next_plan(&el->round, cur, el->min_np, el->max_np, &next, &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		el->over = true;
	} else {
		if (dlrt_hvd_store_reinit(d->store, &next, &err) < 0 ||
		    dlrt_hvd_round_start(&el->round, number + 1, next.nslots, &err) < 0) {
			fprintf(stderr, PROG ": elastic round %u: %s\n", number + 1, err.msg);
			el->over = true;
		} else {
			fprintf(stderr, PROG ": elastic round %u: %zu slot(s) failed; round %u: %zu "
				"ranks on %zu hosts\n", number, failed, number + 1, next.nslots,
				next.nhosts);
		}
		dlrt_hvd_plan_free(&next);
	}
	while (el->parked.head) {
		struct conn_state *cs = DLRT_DLIST_ENTRY(el->parked.head, struct conn_state, link);
		struct dlrt_conn *conn = cs->conn;
		struct dlrt_hvd_reply r;

		if (el->over) {
			removed(&r);
		} else {
			dlrt_hvd_store_rank_and_size(d->store, cs->park_key, cs->park_klen, &r);
		}
		unpark(d, cs);
		answer_held(conn, &r);
	}
}

static void check_barrier(struct driver *d)
{
	if (dlrt_hvd_round_complete(&d->el.round))
		release_barrier(d);
}

/* Held connections are not idle: the tcpserver would close them. */
static int64_t keepalive_tick(struct dlrt_evloop *loop, void *arg)
{
	struct driver *d = arg;
	int64_t now = dlrt_now_ms();

	(void)loop;
	for (struct dlrt_dlist_node *n = d->el.parked.head; n; n = n->next)
		DLRT_DLIST_ENTRY(n, struct conn_state, link)->conn->last_active_ms = now;
	if (!d->el.parked.head) {
		d->el.keepalive_timer = 0;
		return -1;
	}
	return KEEPALIVE_MS;
}

static int64_t expire_tick(struct dlrt_evloop *loop, void *arg)
{
	struct driver *d = arg;
	size_t n;

	(void)loop;
	d->el.expire_timer = 0;
	n = dlrt_hvd_round_expire(&d->el.round);
	fprintf(stderr, PROG ": elastic round %u: %zu slot(s) did not ask for their rank within "
		"%lld ms of the first: they failed\n", d->el.round.number, n,
		(long long)d->el.timeout_ms);
	check_barrier(d);
	return -1;
}

static int64_t poll_tick(struct dlrt_evloop *loop, void *arg);

static void watch_done(void *arg, int ok, const char *out, size_t len)
{
	struct driver *d = arg;
	const struct dlrt_hvd_plan *plan = dlrt_hvd_store_plan(d->store);
	unsigned char *alive = calloc(plan->nhosts + 1, 1);
	struct dlrt_err err;
	size_t nalive = 0;

	d->el.watch = NULL;
	/* The answer counts if it parses and names at least one node of the
	 * plan (this one runs the driver): an empty answer is Slurm not
	 * answering, never every node gone. */
	if (alive && dlrt_hvd_pids_parse(out, len, plan, alive, &err) == 0) {
		for (size_t h = 0; h < plan->nhosts; h++)
			nalive += alive[h];
		for (size_t h = 0; nalive && h < plan->nhosts; h++) {
			size_t n = alive[h] ? 0 : dlrt_hvd_round_host_lost(&d->el.round, plan, h);

			if (n)
				fprintf(stderr, PROG ": elastic round %u: Slurm runs no task of the "
					"step on %s any more: its %zu slot(s) failed\n",
					d->el.round.number, plan->hosts[h], n);
		}
	} else if (alive && d->verbose) {
		fprintf(stderr, PROG ": asking Slurm for the step's pids (%s): %s\n",
			ok ? "exit 0" : "failed", err.msg);
	}
	free(alive);
	check_barrier(d);
	if (d->el.parked.head && !d->el.poll_timer && !d->el.watch)
		d->el.poll_timer = dlrt_evloop_add_timer(d->loop, d->el.poll_ms, poll_tick, d);
}

static int64_t poll_tick(struct dlrt_evloop *loop, void *arg)
{
	struct driver *d = arg;
	const struct dlrt_hvd_plan *plan = dlrt_hvd_store_plan(d->store);
	char *nodes = d->el.req.nodes;
	size_t used = 0;
	struct dlrt_err err;

	d->el.poll_timer = 0;
	if (!d->el.parked.head || d->el.watch)
		return -1;
	nodes[0] = '\0';
	for (size_t h = 0; h < plan->nhosts; h++) {
		int n = snprintf(nodes + used, sizeof(d->el.req.nodes) - used, "%s%s", h ? "," : "",
				 plan->hosts[h]);

		if (n < 0 || (size_t)n >= sizeof(d->el.req.nodes) - used) {
			nodes[0] = '\0'; /* too many to name: ask for all of the step's */
			break;
		}
		used += (size_t)n;
	}
	if (dlrt_hvd_watch_start(&d->el.watch, loop, dlrt_hvd_steppids_write, &d->el.req,
				 STEPPIDS_TIMEOUT_MS, watch_done, d, &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		d->el.poll_timer = dlrt_evloop_add_timer(loop, d->el.poll_ms, poll_tick, d);
	}
	return -1;
}

/* A worker of the round asked rank_and_size: hold it at the barrier. */
static int hold_at_barrier(struct driver *d, struct dlrt_conn *conn, struct conn_state *cs,
			   const struct dlrt_http_req *req, int rank)
{
	const char *key = memchr(req->target + 1, '/', req->target_len - 1);
	struct elastic *el = &d->el;
	bool first = !el->parked.head && !dlrt_hvd_round_open(&el->round);

	key++;
	cs->park_klen = req->target_len - (size_t)(key - req->target);
	cs->park_key = malloc(cs->park_klen + 1);
	if (!cs->park_key)
		return -1;
	memcpy(cs->park_key, key, cs->park_klen);
	cs->park_key[cs->park_klen] = '\0';
	cs->conn = conn;
	dlrt_dlist_append(&el->parked, &cs->link);
	dlrt_hvd_round_ready(&el->round, rank);
	if (!el->keepalive_timer)
		el->keepalive_timer = dlrt_evloop_add_timer(d->loop, KEEPALIVE_MS, keepalive_tick, d);
	if (first && !el->expire_timer)
		el->expire_timer = dlrt_evloop_add_timer(d->loop, el->timeout_ms, expire_tick, d);
	if (el->ask_slurm && !el->poll_timer && !el->watch)
		el->poll_timer = dlrt_evloop_add_timer(d->loop, 0, poll_tick, d);
	return 0;
}

/* One request per connection (HTTP/1.0, as Horovod's server): answer, close. */
static enum dlrt_proto_result on_data(struct dlrt_conn *conn, void *ctx)
{
	struct driver *d = ctx;
	struct conn_state *cs = conn->state;
	struct dlrt_http_req req;
	struct dlrt_hvd_reply reply = { .status = 0 };
	int rc;

	if (cs->answered) {
		/* Bytes after the request (a pipelined one): we close anyway. */
		dlrt_buf_consume(&conn->in, conn->in.len);
		return DLRT_PROTO_CLOSE;
	}
	rc = dlrt_http_parse(&cs->parser, dlrt_buf_head(&conn->in), conn->in.len, &d->lim, &req);
	if (rc == DLRT_HTTP_NEED_MORE) {
		if (!conn->close_after_write)
			return DLRT_PROTO_OK;
		rc = 413; /* the input buffer is full: cannot happen within our limits */
	}
	if (rc == DLRT_HTTP_COMPLETE)
		dlrt_hvd_store_handle(d->store, req.method, req.target, req.target_len,
				      req.body, req.body_len, &reply);
	else
		reply.status = rc;
	if (reply.park && d->el.over) {
		removed(&reply); /* the job cannot go on: no round will come */
	} else if (reply.park) {
		if (d->verbose)
			log_request(conn, cs, &req, &reply);
		if (hold_at_barrier(d, conn, cs, &req, reply.park_rank) < 0) {
			reply.status = 500;
		} else {
			d->requests++;
			cs->answered = true;
			dlrt_buf_consume(&conn->in, conn->in.len);
			check_barrier(d);
			return DLRT_PROTO_OK;
		}
	}
	if (dlrt_http_reply(&conn->out, reply.status, reply.body, reply.len) < 0) {
		dlrt_buf_consume(&conn->out, conn->out.len);
		reply.status = 500;
		reply.len = 0;
		dlrt_http_reply(&conn->out, 500, NULL, 0);
	}
	d->requests++;
	if (d->verbose)
		log_request(conn, cs, &req, &reply);
	cs->answered = true;
	dlrt_buf_consume(&conn->in, conn->in.len);
	return DLRT_PROTO_CLOSE;
}

enum { O_HOSTS = 256, O_MAXBODY, O_MAXSTORE, O_MAXCONNS, O_IDLE, O_ELASTIC, O_STEP,
	O_MINNP, O_MAXNP, O_ETIMEOUT };

/* JOB.STEP as Slurm numbers them. */
static int parse_step(const char *s, uint32_t *job, uint32_t *step)
{
	unsigned long long j, t;
	char buf[32];
	char *dot;

	if (strlen(s) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", s);
	dot = strchr(buf, '.');
	if (!dot)
		return -1;
	*dot = '\0';
	if (parse_num(buf, UINT32_MAX, &j) || parse_num(dot + 1, UINT32_MAX, &t))
		return -1;
	*job = (uint32_t)j;
	*step = (uint32_t)t;
	return 0;
}

static int driver_option(void *ctx, int opt, const char *arg, struct dlrt_err *err)
{
	struct driver *d = ctx;
	unsigned long long v;

	switch (opt) {
	case O_HOSTS:
		/* The last --hosts counts, as for every other option. */
		if (d->have_plan)
			dlrt_hvd_plan_free(&d->plan);
		d->have_plan = false;
		if (dlrt_hvd_plan_parse(&d->plan, arg, err) < 0) {
			struct dlrt_err why = *err;

			return dlrt_err_set(err, "--hosts: %s", why.msg);
		}
		d->have_plan = true;
		return 0;
	case O_MAXBODY:
		if (parse_num(arg, 1ull << 32, &v))
			return usage_error(err, "--max-body '%s' is not a byte count up to 4 GiB", arg);
		d->lim.max_body = (size_t)v;
		return 0;
	case O_MAXSTORE:
		if (parse_num(arg, ULLONG_MAX, &v))
			return usage_error(err, "--max-store '%s' is not a byte count", arg);
		d->max_store = v;
		return 0;
	case O_MAXCONNS:
		if (parse_num(arg, 1u << 20, &v) || v == 0)
			return usage_error(err, "--max-conns '%s' is not a count from 1 to 1048576", arg);
		d->max_conns = (unsigned)v;
		return 0;
	case O_IDLE:
		if (parse_num(arg, 86400000, &v))
			return usage_error(err, "--idle-timeout-ms '%s' is not a number of milliseconds", arg);
		d->idle_ms = (int64_t)v;
		return 0;
	case O_ELASTIC:
		d->el.on = true;
		return 0;
	case O_STEP:
		if (parse_step(arg, &d->el.req.job_id, &d->el.req.step_id))
			return usage_error(err, "--step '%s' is not JOB.STEP (two numbers)", arg);
		d->el.ask_slurm = true;
		d->el.on = true;
		return 0;
	case O_MINNP:
	case O_MAXNP:
		if (parse_num(arg, 1u << 20, &v) || v == 0)
			return usage_error(err, opt == O_MINNP ? "--min-np '%s' is not a count from 1 to 1048576" :
					   "--max-np '%s' is not a count from 1 to 1048576", arg);
		*(opt == O_MINNP ? &d->el.min_np : &d->el.max_np) = (int)v;
		return 0;
	case O_ETIMEOUT:
		if (parse_num(arg, 86400000, &v) || v == 0)
			return usage_error(err, "--elastic-timeout-ms '%s' is not a number of milliseconds", arg);
		d->el.timeout_ms = (int64_t)v;
		return 0;

	default:
		return dlrt_err_set(err, "unknown option: see " PROG " --help");
	}
}

static const struct dlrt_proto driver_proto = {
	.on_data = on_data, .on_open = on_open, .on_close = on_close,
};

static int driver_init(void *ctx, struct dlrt_evloop *loop, const struct dlrt_service_args *args,
		       struct dlrt_tcpserver_cfg *cfg, const struct dlrt_proto **proto,
		       struct dlrt_err *err)
{
	struct driver *d = ctx;

	d->loop = loop;
	d->verbose = args->verbose;
	if (dlrt_hvd_store_create(&d->store, d->have_plan ? &d->plan : NULL, (size_t)d->max_store,
				  err) < 0)
		return -1;
	if (d->el.on) {
		if (!d->have_plan)
			return dlrt_err_set(err, "--elastic needs --hosts (see " PROG " --help)");
		if (d->el.max_np && d->el.min_np > d->el.max_np)
			return dlrt_err_set(err, "--min-np %d is above --max-np %d: give min <= max",
					    d->el.min_np, d->el.max_np);
		if ((size_t)d->el.min_np > d->plan.nslots)
			return dlrt_err_set(err, "--min-np %d is above the %zu slots of --hosts: lower it",
					    d->el.min_np, d->plan.nslots);
		if (dlrt_hvd_round_start(&d->el.round, 1, d->plan.nslots, err) < 0)
			return -1;
		dlrt_hvd_store_set_barrier(d->store, 1);
	}
	/* A base64 body of a --max-body object is 4/3 as long; the store
	 * keeps and answers with the body as sent, as Horovod's server does. */
	cfg->max_request = d->lim.max_head + dlrt_http_wire_max(&d->lim) + 4096;
	cfg->max_reply = dlrt_http_wire_max(&d->lim) + 512;
	cfg->max_conns = d->max_conns;
	cfg->idle_timeout_ms = d->idle_ms;
	*proto = &driver_proto;
	return 0;
}

static void driver_listening(void *ctx, struct dlrt_tcpserver *srv,
			     const struct dlrt_tcpserver_cfg *cfg)
{
	struct driver *d = ctx;

	d->srv = srv;
	fprintf(stderr, PROG ": listening on %s:%u, %zu ranks on %zu hosts, %zu allowed peers besides loopback\n",
		cfg->bind_addr, dlrt_tcpserver_port(srv), d->plan.nslots, d->plan.nhosts,
		cfg->nallow - 1);
	fprintf(stderr, PROG ": at most %u connections (descriptor limit %lu)\n",
		dlrt_tcpserver_max_conns(srv), dlrt_tcpserver_nofile(srv));
}

static void driver_stopped(void *ctx, const char *why)
{
	struct driver *d = ctx;

	fprintf(stderr, PROG ": exiting (%s) after %lu requests; %lu connections closed before "
		"they answered the challenge, to admit newer ones\n", why, d->requests,
		d->srv ? dlrt_tcpserver_auth_shed(d->srv) : 0ul);
}

static void driver_teardown(void *ctx)
{
	struct driver *d = ctx;

	stop_barrier_timers(d);
	dlrt_hvd_round_free(&d->el.round);
	dlrt_hvd_store_destroy(d->store);
	d->store = NULL;
	if (d->have_plan)
		dlrt_hvd_plan_free(&d->plan);
	d->have_plan = false;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "hosts", required_argument, NULL, O_HOSTS },
		{ "max-body", required_argument, NULL, O_MAXBODY },
		{ "max-store", required_argument, NULL, O_MAXSTORE },
		{ "max-conns", required_argument, NULL, O_MAXCONNS },
		{ "idle-timeout-ms", required_argument, NULL, O_IDLE },
		{ "elastic", no_argument, NULL, O_ELASTIC },
		{ "step", required_argument, NULL, O_STEP },
		{ "min-np", required_argument, NULL, O_MINNP },
		{ "max-np", required_argument, NULL, O_MAXNP },
		{ "elastic-timeout-ms", required_argument, NULL, O_ETIMEOUT },
		{ NULL, 0, NULL, 0 },
	};
	static const struct dlrt_service_protocol proto = {
		.prog = PROG,
		.what = "the driver",
		.bind = "0.0.0.0",
		/* Without --lifetime-fd or --parent-pid, die with the process that started us. */
		.watch_parent = true,
		.options = opts,
		.usage = usage,
		.option = driver_option,
		.init = driver_init,
		.listening = driver_listening,
		.stopped = driver_stopped,
		.teardown = driver_teardown,
	};
	struct driver d = {
		.lim = {
			.max_head = DLRT_HTTP_DEFAULT_MAX_HEAD,
			.max_headers = DLRT_HTTP_DEFAULT_MAX_HEADERS,
			.max_body = 16u << 20,
		},
		.max_store = 512ull << 20,
		.max_conns = 1024,
		.idle_ms = 3000,
		.el = { .min_np = 1, .timeout_ms = 60000, .poll_ms = 1000 },
	};

	return dlrt_service_main(argc, argv, &proto, &d);
}
