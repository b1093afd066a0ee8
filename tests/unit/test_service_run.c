/* test_service_run.c - the one start sequence of the service programs
 * (services/service_run.c): a tiny echo protocol run by dlrt_service_main in a
 * child, as slurmstepd's launcher runs a service: its exit codes, its
 * readiness line, the lifetime pipe, the protocol's own option and teardown. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "services/service_run.h"
#include "tap.h"

struct echo {
	char suffix[16];
	bool inited;
};

static enum dlrt_proto_result echo_data(struct dlrt_conn *conn, void *ctx)
{
	struct echo *e = ctx;

	if (dlrt_buf_append(&conn->out, dlrt_buf_head(&conn->in), conn->in.len) < 0 ||
	    dlrt_buf_append(&conn->out, e->suffix, strlen(e->suffix)) < 0)
		return DLRT_PROTO_CLOSE;
	dlrt_buf_consume(&conn->in, conn->in.len);
	return DLRT_PROTO_OK;
}

static const struct dlrt_proto echo_proto = { .on_data = echo_data };

static void echo_usage(FILE *f)
{
	fprintf(f, "usage: echo [--suffix S]\n");
}

static int echo_option(void *ctx, int opt, const char *arg, struct dlrt_err *err)
{
	struct echo *e = ctx;

	if (opt != 256 || strlen(arg) >= sizeof(e->suffix))
		return dlrt_err_set(err, "--suffix '%s' is too long: use at most 15 bytes", arg);
	snprintf(e->suffix, sizeof(e->suffix), "%s", arg);
	return 0;
}

static int echo_init(void *ctx, struct dlrt_evloop *loop, const struct dlrt_service_args *args,
		     struct dlrt_tcpserver_cfg *cfg, const struct dlrt_proto **proto,
		     struct dlrt_err *err)
{
	struct echo *e = ctx;

	(void)loop;
	(void)args;
	(void)err;
	cfg->max_request = 4096;
	cfg->max_reply = 4096;
	cfg->max_conns = 8;
	*proto = &echo_proto;
	e->inited = true;
	return 0;
}

/* stderr is the only descriptor the skeleton keeps besides its own two. */
static void echo_teardown(void *ctx)
{
	struct echo *e = ctx;

	fprintf(stderr, "teardown%s\n", e->inited ? " after init" : "");
}

static const struct option echo_opts[] = {
	{ "suffix", required_argument, NULL, 256 },
	{ NULL, 0, NULL, 0 },
};

static const struct dlrt_service_protocol echo_service = {
	.prog = "echo",
	.what = "the echo service",
	.bind = "127.0.0.1",
	.options = echo_opts,
	.usage = echo_usage,
	.option = echo_option,
	.init = echo_init,
	.teardown = echo_teardown,
};

/* Runs the service in a child with argv (NULL-terminated); its stderr goes to
 * err_fd (or /dev/null), its stdout to /dev/null. */
static pid_t start(char **argv, int err_fd)
{
	pid_t kid = fork();

	if (kid == 0) {
		struct echo e = { .inited = false };
		int argc = 0, null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(err_fd >= 0 ? err_fd : null, 2);
		while (argv[argc])
			argc++;
		_exit(dlrt_service_main(argc, argv, &echo_service, &e));
	}
	return kid;
}

/* The child's exit code, waiting 20 s at most (then killed: -1). */
static int finish(pid_t kid)
{
	struct timespec d = { 0, 10 * 1000 * 1000 };
	int st;

	for (int i = 0; i < 2000; i++) {
		if (waitpid(kid, &st, WNOHANG) == kid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		nanosleep(&d, NULL);
	}
	kill(kid, SIGKILL);
	waitpid(kid, &st, 0);
	return -1;
}

static int run(char **argv)
{
	return finish(start(argv, -1));
}

static ssize_t read_timeout(int fd, char *buf, size_t len, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, ms) <= 0)
		return -1;
	return read(fd, buf, len);
}

int main(void)
{
	char life[16], ready[16], buf[256];
	int lp[2], rp[2], ep[2];
	ssize_t n;
	pid_t kid;

	signal(SIGPIPE, SIG_IGN);
	TAP_IS_INT(run((char *[]){ "echo", "--help", NULL }), DLRT_SERVICE_EXIT_OK, "--help: exit 0");
	TAP_IS_INT(run((char *[]){ "echo", "--bogus", NULL }), DLRT_SERVICE_EXIT_USAGE,
		   "an unknown option: exit 2");
	TAP_IS_INT(run((char *[]){ "echo", "--suffix", "0123456789abcdefgh", NULL }),
		   DLRT_SERVICE_EXIT_USAGE, "the protocol refuses its own option: exit 2");
	TAP_IS_INT(run((char *[]){ "echo", "--port", "x", NULL }), DLRT_SERVICE_EXIT_USAGE,
		   "a bad common option: exit 2");
	TAP_IS_INT(run((char *[]){ "echo", "stray", NULL }), DLRT_SERVICE_EXIT_USAGE,
		   "a stray argument: exit 2");
	TAP_IS_INT(run((char *[]){ "echo", "--ready-fd", "987", NULL }), DLRT_SERVICE_EXIT_USAGE,
		   "--ready-fd not open: exit 2");
	TAP_IS_INT(run((char *[]){ "echo", "--bind", "192.0.2.1", NULL }), DLRT_SERVICE_EXIT_LISTEN,
		   "an address not of this host: exit 3");

	/* The launcher is gone before the service is ready. */
	if (pipe(rp) < 0)
		return 1;
	snprintf(ready, sizeof(ready), "%d", rp[1]);
	close(rp[0]);
	TAP_IS_INT(run((char *[]){ "echo", "--ready-fd", ready, NULL }), DLRT_SERVICE_EXIT_READY,
		   "nobody reads --ready-fd: exit 4");
	close(rp[1]);

	/* A whole life: ready line, the protocol with its option, the end of
	 * the lifetime pipe, teardown. */
	if (pipe(lp) < 0 || pipe(rp) < 0 || pipe(ep) < 0)
		return 1;
	snprintf(life, sizeof(life), "%d", lp[0]);
	snprintf(ready, sizeof(ready), "%d", rp[1]);
	kid = start((char *[]){ "echo", "--suffix", "!", "--lifetime-fd", life, "--ready-fd",
				ready, NULL }, ep[1]);
	close(lp[0]);
	close(rp[1]);
	close(ep[1]);
	n = read_timeout(rp[0], buf, sizeof(buf) - 1, 20000);
	TAP_OK(n > 1 && buf[n - 1] == '\n', "the readiness line");
	if (n > 1) {
		struct sockaddr_in a = { .sin_family = AF_INET };
		int s = socket(AF_INET, SOCK_STREAM, 0);
		uint16_t port = 0;

		buf[n] = '\0';
		TAP_IS_INT(dlrt_service_parse_ready(buf, (size_t)n, &port), 0, "names a port: %s", buf);
		a.sin_port = htons(port);
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		TAP_OK(connect(s, (struct sockaddr *)&a, sizeof(a)) == 0, "a client connects");
		TAP_IS_INT(write(s, "hi", 2), 2, "and sends");
		n = read_timeout(s, buf, sizeof(buf) - 1, 20000);
		buf[n > 0 ? n : 0] = '\0';
		TAP_IS_STR(buf, "hi!", "the protocol answers, with its own option applied");
		close(s);
	}
	close(lp[1]); /* the step ended */
	TAP_IS_INT(finish(kid), DLRT_SERVICE_EXIT_OK, "the end of the lifetime pipe: exit 0");
	n = read_timeout(ep[0], buf, sizeof(buf) - 1, 20000);
	buf[n > 0 ? n : 0] = '\0';
	TAP_IS_STR(buf, "teardown after init\n", "the protocol's teardown ran, nothing else printed");
	close(ep[0]);
	close(rp[0]);
	return tap_done();
}
