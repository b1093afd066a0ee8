#include "service_run.h"
#include "svchold.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define O_HELP 512

/* Forked from slurmstepd, a service would otherwise keep the step's own
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

/* The connection cap follows the descriptor limit (tcpserver.h). */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* The program's options, then the common ones, --allow-any if it takes it,
 * --help; one allocation. */
static struct option *options(const struct dlrt_service_protocol *p)
{
	static const struct option common[] = { DLRT_SERVICE_OPTIONS };
	static const struct option any = DLRT_SERVICE_OPTION_ALLOW_ANY;
	static const struct option help = { "help", no_argument, NULL, O_HELP };
	size_t own = 0, ncommon = sizeof(common) / sizeof(*common), k = 0;
	struct option *o;

	while (p->options && p->options[own].name)
		own++;
	o = calloc(own + ncommon + 3, sizeof(*o));
	if (!o)
		return NULL;
	for (size_t i = 0; i < own; i++)
		o[k++] = p->options[i];
	for (size_t i = 0; i < ncommon; i++)
		o[k++] = common[i];
	if (p->allow_any)
		o[k++] = any;
	o[k++] = help;
	return o;
}

/* A service the step's nodes hold (--step-nodes, svchold.h): when task 0's
 * node is done it serves on until the other nodes are, then ends the loop. */
struct linger {
	struct dlrt_evloop *loop;
	bool begun;
	int sigfd;              /* DLRT_SERVICE_LINGER_SIGNAL, -1: none */
	struct dlrt_holds *holds;
	const char **why;
	const char *prog;
	bool verbose;
};

static void linger_done(void *arg)
{
	struct linger *l = arg;

	*l->why = "the step ended (every node's tasks are done)";
	dlrt_evloop_stop(l->loop);
}

static void linger_begin(void *arg)
{
	struct linger *l = arg;

	if (l->begun)
		return;
	l->begun = true;
	if (l->verbose)
		fprintf(stderr, "%s: task 0's node is done; serving on while %u node(s) hold "
			"the service (%u of the step's nodes held it)\n", l->prog,
			dlrt_holds_held(l->holds), dlrt_holds_seen(l->holds));
	dlrt_holds_linger(l->holds, DLRT_HOLD_GRACE_MS, linger_done, l);
}

/* DLRT_SERVICE_LINGER_SIGNAL means what the end of the lifetime fd means:
 * the plugin sends it where it cannot close the pipe's last write end (its
 * callback runs in a child of slurmstepd: SlurmdParameters=contain_spank). */
static void linger_signal(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct signalfd_siginfo si;

	(void)loop;
	(void)events;
	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		linger_begin(arg);
}

static int linger_watch_signal(struct linger *l)
{
	sigset_t sigs;

	sigemptyset(&sigs);
	sigaddset(&sigs, DLRT_SERVICE_LINGER_SIGNAL);
	if (sigprocmask(SIG_BLOCK, &sigs, NULL) < 0 ||
	    (l->sigfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
		return -1;
	return dlrt_evloop_add_fd(l->loop, l->sigfd, DLRT_EV_READ, linger_signal, l);
}

/* PARSE_GO: run the service; else the exit code (--help: DLRT_SERVICE_EXIT_OK). */
#define PARSE_GO (-1)

static int parse(int argc, char **argv, const struct dlrt_service_protocol *p, void *app,
		 struct dlrt_service_args *args)
{
	struct option *opts = options(p);
	struct dlrt_err err = { { 0 } };
	int o, rc = PARSE_GO;

	if (!opts) {
		fprintf(stderr, "%s: out of memory reading the command line\n", p->prog);
		return DLRT_SERVICE_EXIT_FAIL;
	}
	while (rc == PARSE_GO && (o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (dlrt_service_args_option(args, o, optarg, &err)) {
		case 1:
			continue;
		case -1:
			fprintf(stderr, "%s: %s\n", p->prog, err.msg);
			rc = DLRT_SERVICE_EXIT_USAGE;
			continue;
		}
		if (o == O_HELP) {
			p->usage(stdout);
			rc = DLRT_SERVICE_EXIT_OK;
		} else if (o == '?' || o == ':' || p->option(app, o, optarg, &err) < 0) {
			if (o == '?' || o == ':')
				fprintf(stderr, "%s: see %s --help\n", p->prog, p->prog);
			else
				fprintf(stderr, "%s: %s\n", p->prog, err.msg);
			rc = DLRT_SERVICE_EXIT_USAGE;
		}
	}
	free(opts);
	if (rc == PARSE_GO && optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s': see %s --help\n", p->prog,
			argv[optind], p->prog);
		rc = DLRT_SERVICE_EXIT_USAGE;
	}
	return rc;
}

int dlrt_service_main(int argc, char **argv, const struct dlrt_service_protocol *p, void *app)
{
	struct dlrt_tcpserver_cfg cfg = { 0 };
	struct dlrt_service_watch watch = DLRT_SERVICE_WATCH_NONE;
	struct dlrt_service_args args;
	struct dlrt_evloop *loop = NULL;
	struct dlrt_tcpserver *srv = NULL;
	const struct dlrt_proto *proto = NULL;
	struct linger linger = { .sigfd = -1 };
	struct dlrt_err err = { { 0 } };
	const char *why = NULL;
	int sfd = -1, rc;

	dlrt_service_args_init(&args, p->bind);
	rc = parse(argc, argv, p, app, &args);
	if (rc != PARSE_GO)
		goto out;
	if (p->watch_parent && args.lifetime_fd < 0 && args.parent_pid == 0)
		args.parent_pid = getppid();
	rc = DLRT_SERVICE_EXIT_USAGE;
	if (dlrt_service_args_check(&args, p->what, &err) < 0) {
		fprintf(stderr, "%s: %s\n", p->prog, err.msg);
		goto out;
	}
	rc = DLRT_SERVICE_EXIT_FAIL;
	if (drop_privileges() < 0) {
		fprintf(stderr, "%s: cannot drop to uid %d: %s\n", p->prog, (int)geteuid(),
			strerror(errno));
		goto out;
	}
	close_other_fds(args.lifetime_fd, args.ready_fd);
	raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	loop = dlrt_evloop_create();
	if (!loop || (sfd = dlrt_service_stop_on_signals(loop, &why)) < 0) {
		fprintf(stderr, "%s: cannot set up the event loop: out of memory or file "
			"descriptors\n", p->prog);
		goto out;
	}
	if (p->init(app, loop, &args, &cfg, &proto, &err) < 0) {
		fprintf(stderr, "%s: %s\n", p->prog, err.msg);
		goto out;
	}
	dlrt_service_args_server(&args, &cfg);
	if (args.step_nodes && args.has_secret) {
		linger = (struct linger){ .loop = loop, .why = &why, .prog = p->prog,
					  .verbose = args.verbose, .sigfd = -1 };
		linger.holds = dlrt_holds_create(loop, args.step_nodes);
		if (!linger.holds || linger_watch_signal(&linger) < 0) {
			fprintf(stderr, "%s: out of memory\n", p->prog);
			goto out;
		}
		cfg.on_hold = dlrt_holds_adopt;
		cfg.hold_arg = linger.holds;
	}
	if (dlrt_tcpserver_start(&srv, loop, &cfg, proto, app, &err) < 0) {
		fprintf(stderr, "%s: %s: pass --bind an address of this node and a free --port "
			"(0 picks one)\n", p->prog, err.msg);
		rc = DLRT_SERVICE_EXIT_LISTEN;
		goto out;
	}
	if (dlrt_service_args_watch(&args, &watch, loop, &why, &err) < 0) {
		fprintf(stderr, "%s: %s\n", p->prog, err.msg);
		goto out;
	}
	if (linger.holds) {
		watch.lifetime_end = linger_begin;
		watch.lifetime_end_arg = &linger;
	}
	if (args.verbose && p->listening)
		p->listening(app, srv, &cfg);
	if (dlrt_service_args_ready(&args, dlrt_tcpserver_port(srv), p->what, &err) < 0) {
		fprintf(stderr, "%s: %s\n", p->prog, err.msg);
		rc = DLRT_SERVICE_EXIT_READY;
		goto out;
	}
	if (dlrt_evloop_run(loop) < 0) {
		fprintf(stderr, "%s: the event loop failed: %s\n", p->prog, strerror(errno));
		goto out;
	}
	if (args.verbose && p->stopped)
		p->stopped(app, why ? why : "stopped");
	rc = DLRT_SERVICE_EXIT_OK;
out:
	/* The server first: closing its connections runs the protocol's
	 * on_close, which may still use the protocol's state. */
	dlrt_tcpserver_stop(srv);
	dlrt_holds_destroy(linger.holds);
	if (linger.sigfd >= 0)
		close(linger.sigfd);
	p->teardown(app);
	dlrt_evloop_destroy(loop);
	dlrt_service_watch_end(&watch);
	if (sfd >= 0)
		close(sfd);
	dlrt_service_args_free(&args);
	return rc;
}
