/* dlrt-hvd-driver - Horovod's gloo rendezvous server, for one Slurm step.
 *
 * horovodrun starts horovod/runner/http/http_server.py before any worker and
 * registers the scope sizes of its host plan; this program does the same for
 * dlrt: one epoll loop (services/evloop.h), the shared TCP server core
 * (services/tcpserver.h) and the pure parser and store of this folder. It lives
 * exactly as long as the step: it exits when its lifetime fd reaches EOF or
 * its parent process is gone. See docs/man/dlrt-hvd-driver.1.
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

#include "common/dlrt_err.h"
#include "services/evloop.h"
#include "http.h"
#include "hvd_plan.h"
#include "rendezvous.h"
#include "services/service.h"
#include "services/service_run.h"
#include "services/svcauth.h"
#include "services/tcpserver.h"

#define PROG "dlrt-hvd-driver"

struct driver {
	struct dlrt_evloop *loop;
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

static void on_close(struct dlrt_conn *conn, void *ctx)
{
	(void)ctx;
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
			r->cleared ? " (scope complete: cleared)" : "");
	else
		fprintf(stderr, PROG ": %s (malformed request) -> %d %lld.%03lld ms\n", ip,
			r->status, (long long)(us / 1000), (long long)(us % 1000));
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

enum { O_HOSTS = 256, O_MAXBODY, O_MAXSTORE, O_MAXCONNS, O_IDLE };

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
	};

	return dlrt_service_main(argc, argv, &proto, &d);
}
