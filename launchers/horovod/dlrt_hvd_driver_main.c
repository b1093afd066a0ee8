/* dlrt-hvd-driver - Horovod's gloo rendezvous server, for one Slurm step.
 *
 * horovodrun starts horovod/runner/http/http_server.py before any worker and
 * registers the scope sizes of its host plan; this program does the same for
 * dlrt: one epoll loop (common/evloop.h), the shared TCP server core
 * (common/tcpserver.h) and the pure parser and store of this folder. It lives
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
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "dlrt_err.h"
#include "evloop.h"
#include "http.h"
#include "hvd_plan.h"
#include "rendezvous.h"
#include "service.h"
#include "svcauth.h"
#include "tcpserver.h"

#define PROG "dlrt-hvd-driver"

enum {
	EXIT_USAGE = 2,  /* bad command line */
	EXIT_LISTEN = 3, /* cannot bind or listen */
	EXIT_READY = 4,  /* cannot report readiness on --ready-fd */
};

struct driver {
	struct dlrt_evloop *loop;
	struct dlrt_hvd_store *store;
	struct dlrt_http_limits lim;
	struct dlrt_service_watch watch;
	bool verbose;
	const char *why_stop;
	unsigned long requests;
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
"  --hosts LIST         ordered host:slots list, e.g. n1:2,n2:1,n3:3; registers the\n"
"                       scopes global, local_<host>, cross_<local_rank> and answers\n"
"                       GET /rank_and_size/<host>:<local_rank>\n"
"  --allow LIST         IPv4 addresses allowed to connect besides loopback\n"
"  --max-body BYTES     largest request body (default 16777216); larger gets 413\n"
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
"exit status: 0 the step ended (lifetime fd EOF, parent gone, SIGTERM/SIGINT);\n"
"1 runtime failure; 2 bad arguments; 3 cannot listen; 4 cannot write --ready-fd\n");
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, PROG ": ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see " PROG " --help)\n");
	return EXIT_USAGE;
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

/* Forked from slurmstepd, the driver would otherwise keep the step's own
 * descriptors (task stdio pipes, slurmd sockets) open for its whole life. */
static void close_other_fds(int keep1, int keep2)
{
	int lo = 3;

	for (;;) {
		int hi = INT_MAX;

		if (keep1 >= lo && keep1 < hi)
			hi = keep1;
		if (keep2 >= lo && keep2 < hi)
			hi = keep2;
		if (hi > lo && close_range((unsigned)lo, (unsigned)hi - 1, 0) < 0)
			for (int fd = lo; fd < hi && fd < 65536; fd++)
				close(fd);
		if (hi == INT_MAX)
			return;
		lo = hi + 1;
	}
}

/* slurm_spank_user_init runs with only the effective ids switched to the
 * user: a child that kept real uid 0 could switch back. Make the switch
 * permanent before reading a byte from the network. */
static int drop_privileges(void)
{
	gid_t g = getegid();
	uid_t u = geteuid();

	if (getgid() != g && setresgid(g, g, g) < 0)
		return -1;
	if (getuid() != u && setresuid(u, u, u) < 0)
		return -1;
	return 0;
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "hosts", required_argument, NULL, 'H' },
		{ "max-body", required_argument, NULL, 'B' },
		{ "max-store", required_argument, NULL, 'S' },
		{ "max-conns", required_argument, NULL, 'C' },
		{ "idle-timeout-ms", required_argument, NULL, 'i' },
		DLRT_SERVICE_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct driver d = { .watch = DLRT_SERVICE_WATCH_NONE };
	struct dlrt_tcpserver_cfg cfg = {
		.idle_timeout_ms = 3000,
		.max_conns = 1024,
	};
	struct dlrt_proto proto = { .on_data = on_data, .on_open = on_open, .on_close = on_close };
	struct dlrt_hvd_plan plan = { 0 };
	struct dlrt_tcpserver *srv = NULL;
	struct dlrt_err err = { { 0 } };
	unsigned long long v, max_store = 512ull << 20;
	struct dlrt_service_args args;
	const char *hosts = NULL;
	int sfd = -1, rv = 1, c;
	bool have_plan = false;

	d.lim.max_head = DLRT_HTTP_DEFAULT_MAX_HEAD;
	d.lim.max_headers = DLRT_HTTP_DEFAULT_MAX_HEADERS;
	d.lim.max_body = 16u << 20;
	dlrt_service_args_init(&args, "0.0.0.0");
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (dlrt_service_args_option(&args, c, optarg, &err)) {
		case 1:
			continue;
		case -1:
			fprintf(stderr, PROG ": %s\n", err.msg);
			return EXIT_USAGE;
		}
		switch (c) {
		case 'H':
			hosts = optarg;
			break;
		case 'B':
			if (parse_num(optarg, 1ull << 32, &v))
				return usage_error("--max-body '%s' is not a byte count up to 4 GiB", optarg);
			d.lim.max_body = (size_t)v;
			break;
		case 'S':
			if (parse_num(optarg, ULLONG_MAX, &v))
				return usage_error("--max-store '%s' is not a byte count", optarg);
			max_store = v;
			break;
		case 'C':
			if (parse_num(optarg, 1u << 20, &v) || v == 0)
				return usage_error("--max-conns '%s' is not a count from 1 to 1048576", optarg);
			cfg.max_conns = (unsigned)v;
			break;
		case 'i':
			if (parse_num(optarg, 86400000, &v))
				return usage_error("--idle-timeout-ms '%s' is not a number of milliseconds", optarg);
			cfg.idle_timeout_ms = (int64_t)v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, PROG ": see " PROG " --help\n");
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	/* Without --lifetime-fd or --parent-pid, die with the process that started us. */
	if (args.lifetime_fd < 0 && args.parent_pid == 0)
		args.parent_pid = getppid();
	if (dlrt_service_args_check(&args, "the driver", &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		dlrt_service_args_free(&args);
		return EXIT_USAGE;
	}
	d.verbose = args.verbose;
	if (drop_privileges() < 0) {
		fprintf(stderr, PROG ": cannot drop to uid %d: %s\n", (int)geteuid(), strerror(errno));
		return 1;
	}
	close_other_fds(args.lifetime_fd, args.ready_fd);
	if (hosts) {
		if (dlrt_hvd_plan_parse(&plan, hosts, &err) < 0) {
			fprintf(stderr, PROG ": --hosts: %s\n", err.msg);
			return EXIT_USAGE;
		}
		have_plan = true;
	}
	raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	if (dlrt_hvd_store_create(&d.store, have_plan ? &plan : NULL, (size_t)max_store, &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		goto out;
	}
	d.loop = dlrt_evloop_create();
	if (!d.loop || (sfd = dlrt_service_stop_on_signals(d.loop, &d.why_stop)) < 0) {
		fprintf(stderr, PROG ": cannot set up the event loop: %s\n", strerror(errno));
		goto out;
	}
	if (dlrt_service_args_watch(&args, &d.watch, d.loop, &d.why_stop, &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		goto out;
	}
	cfg.max_request = d.lim.max_head + d.lim.max_body + 4096;
	cfg.max_reply = d.lim.max_body + 512;
	dlrt_service_args_server(&args, &cfg);
	if (dlrt_tcpserver_start(&srv, d.loop, &cfg, &proto, &d, &err) < 0) {
		fprintf(stderr, PROG ": %s: pass a local address to --bind and a free port (or 0) to --port\n",
			err.msg);
		rv = EXIT_LISTEN;
		goto out;
	}
	if (d.verbose)
		fprintf(stderr, PROG ": listening on %s:%u, %zu ranks on %zu hosts, %zu allowed peers besides loopback\n",
			cfg.bind_addr, dlrt_tcpserver_port(srv), plan.nslots, plan.nhosts,
			cfg.nallow - 1);
	if (d.verbose)
		fprintf(stderr, PROG ": at most %u connections (descriptor limit %lu)\n",
			dlrt_tcpserver_max_conns(srv), dlrt_tcpserver_nofile(srv));
	if (dlrt_service_args_ready(&args, dlrt_tcpserver_port(srv), "the driver", &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		rv = EXIT_READY;
		goto out;
	}
	if (dlrt_evloop_run(d.loop) < 0) {
		fprintf(stderr, PROG ": the event loop failed: %s\n", strerror(errno));
		goto out;
	}
	if (d.verbose)
		fprintf(stderr, PROG ": exiting (%s) after %lu requests\n",
			d.why_stop ? d.why_stop : "stopped", d.requests);
	rv = 0;
out:
	dlrt_tcpserver_stop(srv);
	dlrt_evloop_destroy(d.loop);
	dlrt_hvd_store_destroy(d.store);
	if (have_plan)
		dlrt_hvd_plan_free(&plan);
	dlrt_service_args_free(&args);
	if (sfd >= 0)
		close(sfd);
	dlrt_service_watch_end(&d.watch);
	return rv;
}
