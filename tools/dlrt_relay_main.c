/* dlrt-relay - the node relay of a step with a service (services/relay.h).
 *
 * Started by the plugin in slurmstepd, as the job user, on every node of a
 * step whose runtime has a node service: listens on 127.0.0.1, reports its
 * port on --ready-fd, learns the service's "IP:PORT#SECRET" from one line on
 * --config-fd (written by the node's first task after the address exchange),
 * and exits when --lifetime-fd reaches end of file. With --node it holds the
 * service meanwhile, so that the service outlives task 0's node until this
 * node is done too (services/svchold.h). See dlrt-relay(8).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/parse.h"
#include "services/relay.h"
#include "services/service.h"
#include "services/svcauth.h"
#include "services/svchold.h"

#define PROG "dlrt-relay"

struct app {
	struct dlrt_relay *relay;
	struct dlrt_hold_client *hold;
	int64_t node;           /* --node, -1: no hold */
	int config_fd;
	char line[DLRT_SVCADDR_MAX + 1];
	size_t len;
	bool verbose;
	int64_t finish_ms;      /* finish_hold's deadline */
};

/* How long a relay whose node is done may still take to establish its hold,
 * so that the service counts this node as one that came (svchold.h). */
#define HOLD_FINISH_MS 2000

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " --ready-fd FD --lifetime-fd FD --config-fd FD [options]\n"
"Relays the job user's loopback connections to the step's service.\n"
"\n"
"  --port N             port on 127.0.0.1 and [::1] (default 0: any port free on both)\n"
"  --config-fd FD       one line \"IP:PORT#HEX\": the service and the step secret\n"
"  --lifetime-fd FD     exit when FD reaches end of file (the step ended)\n"
"  --ready-fd FD        once listening, write the port and a newline to FD, close it\n"
"  --max-conns N        clients at once (default 1024)\n"
"  --spares N           connections to the service kept connected and\n"
"                       authenticated for the next clients (default 8, 0: none)\n"
"  --node K             hold the service for node K of the step (its index, from 0)\n"
"                       until this relay exits, so the service serves on until\n"
"                       every node of the step is done\n"
"  --no-challenge       the service sends no challenge (a benchmark's redis-server):\n"
"                       forward at once; the secret in the line is not used\n"
"  --verbose            log to stderr\n"
"  --help               this text\n"
"Only sockets owned by this process's user are admitted.\n");
}

/* --verbose: the relay's notes (refused clients, failed service connections). */
static void note_line(const char *line, void *arg)
{
	(void)arg;
	fprintf(stderr, PROG ": %s\n", line);
}

static void config_done(struct app *a, struct dlrt_evloop *loop)
{
	dlrt_evloop_del_fd(loop, a->config_fd);
	close(a->config_fd);
	a->config_fd = -1;
	memset(a->line, 0, sizeof(a->line));
}

/* One line, then the relay stops listening to the pipe (slurmstepd keeps its
 * end open; anything after the line is ignored). */
static void config_event(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct app *a = arg;
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN];
	char ip[16], *nl;
	uint16_t port;
	ssize_t n;

	(void)events;
	n = read(fd, a->line + a->len, sizeof(a->line) - 1 - a->len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		if (a->verbose)
			fprintf(stderr, PROG ": the step's first task gave no service address\n");
		config_done(a, loop);
		return;
	}
	a->len += (size_t)n;
	nl = memchr(a->line, '\n', a->len);
	if (!nl) {
		if (a->len == sizeof(a->line) - 1) {
			fprintf(stderr, PROG ": --config-fd: line too long\n");
			config_done(a, loop);
		}
		return;
	}
	if (dlrt_svcaddr_parse(a->line, (size_t)(nl - a->line), ip, &port, secret) < 0) {
		fprintf(stderr, PROG ": --config-fd: not \"IP:PORT#HEX\"\n");
	} else {
		struct dlrt_err err = { { 0 } };

		dlrt_relay_set_target(a->relay, ip, port, secret);
		if (a->verbose)
			fprintf(stderr, PROG ": relaying to %s:%u\n", ip, port);
		if (a->node >= 0 && dlrt_hold_client_start(&a->hold, loop, ip, port, secret,
							   (uint32_t)a->node, &err) < 0)
			fprintf(stderr, PROG ": %s\n", err.msg);
	}
	memset(secret, 0, sizeof(secret));
	config_done(a, loop);
}

static int64_t finish_tick(struct dlrt_evloop *loop, void *arg)
{
	struct app *a = arg;

	if (dlrt_now_ms() < a->finish_ms &&
	    (a->config_fd >= 0 || (a->hold && !dlrt_hold_client_held(a->hold))))
		return 10;
	dlrt_evloop_stop(loop);
	return -1;
}

/* This node is done, maybe before its hold on the service was established
 * (a task that ended at once): it is established first, so that the
 * service knows this node came and went, and waits the grace time only for
 * nodes that never came (svchold.h). The config line may still wait in its
 * pipe; an empty, closed pipe ends this at once. Bounded by HOLD_FINISH_MS. */
static void finish_hold(struct dlrt_evloop *loop, struct app *a)
{
	struct pollfd p = { .fd = a->config_fd, .events = POLLIN };
	bool pending_line = a->config_fd >= 0 && poll(&p, 1, 0) > 0;

	if (a->node < 0 || (!pending_line && (!a->hold || dlrt_hold_client_held(a->hold))))
		return;
	a->finish_ms = dlrt_now_ms() + HOLD_FINISH_MS;
	if (dlrt_evloop_add_timer(loop, 10, finish_tick, a) > 0)
		dlrt_evloop_run(loop);
}

static int fd_arg(const char *name, const char *s, int *fd)
{
	uint32_t v;

	if (dlrt_parse_u32(s, 0, INT32_MAX, &v) < 0 || fcntl((int)v, F_GETFD) < 0) {
		fprintf(stderr, PROG ": %s '%s' is not an open file descriptor\n", name, s);
		return -1;
	}
	*fd = (int)v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "config-fd", required_argument, NULL, 'c' },
		{ "lifetime-fd", required_argument, NULL, 'l' },
		{ "ready-fd", required_argument, NULL, 'r' },
		{ "max-conns", required_argument, NULL, 'm' },
		{ "spares", required_argument, NULL, 's' },
		{ "no-challenge", no_argument, NULL, 'n' },
		{ "node", required_argument, NULL, 'k' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct app a = { .config_fd = -1, .node = -1 };
	struct dlrt_relay_cfg cfg = { .uid = getuid() };
	struct dlrt_service_watch watch = DLRT_SERVICE_WATCH_NONE;
	struct dlrt_evloop *loop = NULL;
	struct dlrt_err err = { { 0 } };
	struct dlrt_relay_stats st;
	const char *why = NULL;
	int life_fd = -1, ready_fd = -1, sfd = -1, rc = 1, c, fl;
	uint32_t v;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (dlrt_parse_u32(optarg, 0, 65535, &v) < 0) {
				fprintf(stderr, PROG ": --port '%s' is not a port (0-65535)\n", optarg);
				return 2;
			}
			cfg.port = (uint16_t)v;
			break;
		case 'c':
			if (fd_arg("--config-fd", optarg, &a.config_fd) < 0)
				return 2;
			break;
		case 'l':
			if (fd_arg("--lifetime-fd", optarg, &life_fd) < 0)
				return 2;
			break;
		case 'r':
			if (fd_arg("--ready-fd", optarg, &ready_fd) < 0)
				return 2;
			break;
		case 'm':
			if (dlrt_parse_u32(optarg, 1, 1u << 20, &v) < 0) {
				fprintf(stderr, PROG ": --max-conns '%s' is not a count from 1\n", optarg);
				return 2;
			}
			cfg.max_conns = v;
			break;
		case 's':
			if (dlrt_parse_u32(optarg, 0, 256, &v) < 0) {
				fprintf(stderr, PROG ": --spares '%s' is not a count from 0 to 256\n",
					optarg);
				return 2;
			}
			cfg.spares = v ? (int)v : -1;
			break;
		case 'n':
			cfg.no_challenge = true;
			break;
		case 'k':
			if (dlrt_parse_u32(optarg, 0, 1u << 20, &v) < 0) {
				fprintf(stderr, PROG ": --node '%s' is not a node index\n", optarg);
				return 2;
			}
			a.node = v;
			break;
		case 'v':
			a.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (a.verbose)
		cfg.note = note_line;
	if (cfg.no_challenge)
		a.node = -1; /* a server without dlrt's challenge takes no hold */
	if (optind < argc || a.config_fd < 0) {
		fprintf(stderr, PROG ": --config-fd is required (see " PROG " --help)\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	loop = dlrt_evloop_create();
	if (!loop || (sfd = dlrt_service_stop_on_signals(loop, &why)) < 0 ||
	    dlrt_service_watch_start(&watch, loop, life_fd, 0, &why) < 0 ||
	    (fl = fcntl(a.config_fd, F_GETFL)) < 0 ||
	    fcntl(a.config_fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    dlrt_evloop_add_fd(loop, a.config_fd, DLRT_EV_READ, config_event, &a) < 0) {
		fprintf(stderr, PROG ": cannot set up the event loop: %s\n", strerror(errno));
		goto out;
	}
	if (dlrt_relay_start(&a.relay, loop, &cfg, &err) < 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		rc = 3;
		goto out;
	}
	if (a.verbose)
		fprintf(stderr, PROG ": listening on 127.0.0.1:%u for uid %u\n",
			dlrt_relay_port(a.relay), (unsigned)cfg.uid);
	if (ready_fd >= 0 && dlrt_service_write_ready(ready_fd, dlrt_relay_port(a.relay)) < 0) {
		fprintf(stderr, PROG ": cannot write the port to --ready-fd %d\n", ready_fd);
		rc = 4;
		goto out;
	}
	if (dlrt_evloop_run(loop) < 0) {
		fprintf(stderr, PROG ": the event loop failed: %s\n", strerror(errno));
		goto out;
	}
	finish_hold(loop, &a);
	dlrt_relay_stats(a.relay, &st);
	if (a.verbose)
		fprintf(stderr, PROG ": exiting (%s): %llu admitted (%llu on a spare), %llu "
			"refused, %llu could not reach the service\n", why ? why : "stopped",
			(unsigned long long)st.admitted, (unsigned long long)st.spare_used,
			(unsigned long long)st.refused, (unsigned long long)st.upstream_failed);
	rc = 0;
out:
	dlrt_hold_client_stop(a.hold); /* lets go: this node is done */
	dlrt_relay_stop(a.relay);
	if (a.config_fd >= 0)
		close(a.config_fd);
	dlrt_service_watch_end(&watch);
	dlrt_evloop_destroy(loop);
	if (sfd >= 0)
		close(sfd);
	return rc;
}
