/* Unit tests: node service descriptions (services/service.c) and the Horovod
 * runtime's service and gloo-mode environment. */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "services/evloop.h"
#include "common/hostlist.h"
#include "common/layout.h"
#include "runtime/runtime.h"
#include "services/service.h"
#include "tap.h"
#include "services/tcpserver.h"

static int argv_has(char **argv, const char *a, const char *b)
{
	for (int i = 0; argv[i]; i++)
		if (!strcmp(argv[i], a) && (!b || (argv[i + 1] && !strcmp(argv[i + 1], b))))
			return 1;
	return 0;
}

/* Closes the write end of the lifetime pipe: the step ends. */
static int64_t stop_after(struct dlrt_evloop *loop, void *arg)
{
	(void)loop;
	close(*(int *)arg);
	return -1;
}

static int64_t give_up(struct dlrt_evloop *loop, void *arg)
{
	*(const char **)arg = "timeout: the watch did not end the loop";
	dlrt_evloop_stop(loop);
	return -1;
}

/* The common command line of the service programs, parsed once. */
static void test_args(void)
{
	struct dlrt_service_args a;
	struct dlrt_tcpserver_cfg cfg = { 0 };
	struct dlrt_err err = { "" };
	uint8_t key[DLRT_SVCAUTH_SECRET_LEN];
	uint64_t v = 0;
	char buf[16], num[16];
	int p[2], r[2];
	pid_t kid;

	TAP_IS_INT(dlrt_service_parse_u64("--x", "42", 1, 100, &v, &err), 0, "a number in range");
	TAP_IS_INT((int)v, 42, "its value");
	TAP_IS_INT(dlrt_service_parse_u64("--x", "0", 1, 100, &v, &err), -1, "below the minimum");
	TAP_OK(strstr(err.msg, "--x '0' is not a number between 1 and 100: pass a plain decimal number") != NULL,
	       "one line naming the option and the range: %s", err.msg);
	TAP_IS_INT(dlrt_service_parse_u64("--x", "-1", 0, 100, &v, &err), -1, "a negative number");
	TAP_IS_INT(dlrt_service_parse_u64("--x", "", 0, 100, &v, &err), -1, "nothing");
	TAP_IS_INT(dlrt_service_parse_u64("--x", "7k", 0, 100, &v, &err), -1, "junk after it");

	dlrt_service_args_init(&a, "127.0.0.1");
	TAP_OK(a.lifetime_fd == -1 && a.ready_fd == -1 && a.parent_pid == 0 && !a.has_secret,
	       "defaults: nothing watched, no secret");
	TAP_IS_INT(dlrt_service_args_option(&a, 256, "x", &err), 0, "a program's own option is not ours");
	TAP_IS_INT(dlrt_service_args_option(&a, DLRT_SERVICE_O_PORT, "65536", &err), -1, "--port 65536");
	TAP_OK(strstr(err.msg, "--port '65536'") != NULL, "names the port: %s", err.msg);
	TAP_IS_INT(dlrt_service_args_option(&a, DLRT_SERVICE_O_PORT, "4242", &err), 1, "--port 4242");
	TAP_IS_INT(dlrt_service_args_option(&a, DLRT_SERVICE_O_PARENT_PID, "0", &err), -1,
		   "--parent-pid 0 is refused");
	TAP_IS_INT(dlrt_service_args_option(&a, DLRT_SERVICE_O_BIND, "10.0.0.1", &err), 1, "--bind");
	TAP_IS_INT(dlrt_service_args_option(&a, DLRT_SERVICE_O_VERBOSE, NULL, &err), 1, "--verbose");
	TAP_IS_INT(dlrt_service_args_option(&a, DLRT_SERVICE_O_ALLOW, "10.0.0.9,bad", &err), -1,
		   "--allow with a name is refused");
	TAP_IS_INT(dlrt_service_args_option(&a, DLRT_SERVICE_O_ALLOW, "10.0.0.2,10.0.0.3", &err), 1,
		   "--allow");
	TAP_IS_INT(dlrt_service_args_option(&a, DLRT_SERVICE_O_ALLOW, "10.0.0.4", &err), 1,
		   "a second --allow");
	dlrt_service_args_server(&a, &cfg);
	TAP_OK(cfg.nallow == 2 && cfg.allow[0] == htonl(INADDR_LOOPBACK) &&
	       cfg.allow[1] == inet_addr("10.0.0.4"), "the last --allow counts, loopback first");
	TAP_OK(cfg.port == 4242 && !strcmp(cfg.bind_addr, "10.0.0.1") && !cfg.secret && a.verbose,
	       "address, port, no secret, verbose");
	TAP_IS_INT(dlrt_service_args_option(&a, DLRT_SERVICE_O_ALLOW_ANY, NULL, &err), 1, "--allow-any");
	dlrt_service_args_server(&a, &cfg);
	TAP_IS_INT((int)cfg.nallow, 0, "--allow-any: everyone");
	dlrt_service_args_free(&a);

	dlrt_service_args_init(&a, "0.0.0.0");
	dlrt_service_args_server(&a, &cfg);
	TAP_OK(cfg.nallow == 1 && cfg.allow[0] == htonl(INADDR_LOOPBACK),
	       "without --allow: loopback only, never an empty list");

	/* the secret is read while parsing */
	memset(key, 0x5a, sizeof(key));
	TAP_OK(pipe(p) == 0 && write(p[1], key, sizeof(key)) == (ssize_t)sizeof(key), "a secret pipe");
	close(p[1]);
	snprintf(num, sizeof(num), "%d", p[0]);
	TAP_IS_INT(dlrt_service_args_option(&a, DLRT_SERVICE_O_SECRET_FD, num, &err), 1,
		   "--secret-fd: read at once");
	close(p[0]);
	dlrt_service_args_server(&a, &cfg);
	TAP_OK(a.has_secret && cfg.secret && !memcmp(cfg.secret, key, sizeof(key)),
	       "the secret reaches the server configuration");
	TAP_IS_INT(dlrt_service_args_option(&a, DLRT_SERVICE_O_SECRET_FD, num, &err), -1,
		   "--secret-fd of a closed descriptor: %s", err.msg);

	/* the checks after parsing */
	TAP_IS_INT(dlrt_service_args_check(&a, "the store", &err), 0, "nothing to check");
	TAP_IS_INT(dlrt_service_args_option(&a, DLRT_SERVICE_O_READY_FD, num, &err), 1, "--ready-fd N");
	TAP_IS_INT(dlrt_service_args_check(&a, "the store", &err), -1, "--ready-fd closed");
	TAP_OK(strstr(err.msg, "--ready-fd") && strstr(err.msg, "not an open file descriptor"),
	       "names it: %s", err.msg);
	a.ready_fd = -1;
	TAP_IS_INT(dlrt_service_args_option(&a, DLRT_SERVICE_O_LIFETIME_FD, num, &err), 1,
		   "--lifetime-fd N");
	TAP_IS_INT(dlrt_service_args_check(&a, "the store", &err), -1, "--lifetime-fd closed");
	a.lifetime_fd = -1;
	kid = fork();
	if (kid == 0)
		_exit(0);
	waitpid(kid, NULL, 0);
	a.parent_pid = kid;
	TAP_IS_INT(dlrt_service_args_check(&a, "the store", &err), -1, "--parent-pid of a process gone");
	TAP_OK(strstr(err.msg, "should stop the store") != NULL, "names the program: %s", err.msg);
	a.parent_pid = getpid();
	TAP_IS_INT(dlrt_service_args_check(&a, "the store", &err), 0, "--parent-pid of a live process");
	a.parent_pid = 0;

	/* readiness */
	TAP_IS_INT(dlrt_service_args_ready(&a, 4242, "the store", &err), 0, "no --ready-fd: nothing to do");
	TAP_OK(pipe(r) == 0, "a ready pipe");
	a.ready_fd = r[1];
	TAP_IS_INT(dlrt_service_args_ready(&a, 4242, "the store", &err), 0, "ready written");
	TAP_OK(read(r[0], buf, sizeof(buf)) == 5 && !memcmp(buf, "4242\n", 5), "the port line");
	close(r[0]);
	TAP_OK(pipe(r) == 0, "another ready pipe");
	close(r[0]);
	signal(SIGPIPE, SIG_IGN);
	a.ready_fd = r[1];
	TAP_IS_INT(dlrt_service_args_ready(&a, 4242, "the store", &err), -1, "the launcher is gone");
	TAP_OK(strstr(err.msg, "before the store was ready") != NULL, "says so: %s", err.msg);
	dlrt_service_args_free(&a);
	TAP_OK(!a.has_secret && a.secret[0] == 0 && !a.allow, "freed: the secret forgotten");
}

/* SrunPortRange: read from slurm.conf as srun reads it, and the rendezvous
 * (any service given --port-range) listens on a free port inside it. */
/* Two consecutive loopback ports free right now, below the ephemeral range
 * (32768-60999), so no outgoing connection of another process takes one
 * meanwhile; random, so that tests running at once (the plain and the
 * sanitized build, other clusters' services) do not pick the same pair. */
static uint16_t free_port_pair(void)
{
	srand((unsigned)getpid() ^ (unsigned)time(NULL));
	for (int tries = 0; tries < 500; tries++) {
		uint16_t lo = (uint16_t)(20000 + rand() % 12000);
		int fds[2] = { -1, -1 }, ok = 1;

		for (int i = 0; i < 2; i++) {
			struct sockaddr_in a = { .sin_family = AF_INET,
						 .sin_port = htons((uint16_t)(lo + i)),
						 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

			fds[i] = socket(AF_INET, SOCK_STREAM, 0);
			if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof(a)) < 0)
				ok = 0;
		}
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		if (ok)
			return lo;
	}
	return 0;
}

static void test_port_range(void)
{
	char path[] = "/tmp/test_service.slurmconf.XXXXXX";
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct dlrt_proto proto = { .on_data = NULL };
	struct dlrt_tcpserver *srv = NULL, *srv2 = NULL, *srv3 = NULL;
	struct dlrt_tcpserver_cfg cfg = { .bind_addr = "127.0.0.1", .max_request = 64,
					  .max_reply = 64 };
	struct dlrt_err err = { "" };
	uint16_t lo = 0, hi = 0;
	char range[16];
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	TAP_OK(dlrt_service_parse_port_range("60001-63000", &lo, &hi) == 0 && lo == 60001 &&
	       hi == 63000, "60001-63000 is a range");
	TAP_OK(dlrt_service_parse_port_range("7-7", &lo, &hi) == 0 && lo == 7 && hi == 7,
	       "7-7: one port");
	TAP_OK(dlrt_service_parse_port_range("9-8", &lo, &hi) < 0 &&
	       dlrt_service_parse_port_range("0-8", &lo, &hi) < 0 &&
	       dlrt_service_parse_port_range("1-65536", &lo, &hi) < 0 &&
	       dlrt_service_parse_port_range("1-", &lo, &hi) < 0 &&
	       dlrt_service_parse_port_range("-5", &lo, &hi) < 0 &&
	       dlrt_service_parse_port_range("5", &lo, &hi) < 0 &&
	       dlrt_service_parse_port_range("1-2x", &lo, &hi) < 0,
	       "backwards, 0, past 65535, half or trailing junk: refused");
	fputs("# SrunPortRange=1-2 (a comment)\nClusterName=x\n  srunportrange=40000-40001 "
	      "# the site's\n", f);
	fclose(f);
	TAP_OK(dlrt_service_srun_port_range(path, &lo, &hi, &err) == 1 && lo == 40000 &&
	       hi == 40001, "slurm.conf: the key in any case, after blanks, before a comment");
	TAP_IS_INT(dlrt_service_srun_port_range("/nonexistent/slurm.conf", &lo, &hi, &err), 0,
		   "no slurm.conf (configless): no range");
	f = fopen(path, "w");
	fputs("SrunPortRange=40000:40001\n", f);
	fclose(f);
	TAP_OK(dlrt_service_srun_port_range(path, &lo, &hi, &err) < 0 &&
	       strstr(err.msg, "SrunPortRange=40000:40001"), "a bad value: %s", err.msg);
	f = fopen(path, "w");
	fputs("ClusterName=x\n", f);
	fclose(f);
	TAP_IS_INT(dlrt_service_srun_port_range(path, &lo, &hi, &err), 0, "not set: no range");
	unlink(path);

	/* Two ports: the first two servers get one each, the third none. */
	cfg.port_lo = free_port_pair();
	cfg.port_hi = (uint16_t)(cfg.port_lo + 1);
	snprintf(range, sizeof(range), "%u-%u", cfg.port_lo, cfg.port_hi);
	TAP_OK(dlrt_tcpserver_start(&srv, loop, &cfg, &proto, NULL, &err) == 0 &&
	       dlrt_tcpserver_port(srv) >= cfg.port_lo && dlrt_tcpserver_port(srv) <= cfg.port_hi,
	       "a server listens inside its range (%u)", srv ? dlrt_tcpserver_port(srv) : 0);
	TAP_OK(dlrt_tcpserver_start(&srv2, loop, &cfg, &proto, NULL, &err) == 0 &&
	       dlrt_tcpserver_port(srv2) >= cfg.port_lo && dlrt_tcpserver_port(srv2) <= cfg.port_hi &&
	       dlrt_tcpserver_port(srv2) != dlrt_tcpserver_port(srv),
	       "a second one takes the other port (%u)", srv2 ? dlrt_tcpserver_port(srv2) : 0);
	TAP_OK(dlrt_tcpserver_start(&srv3, loop, &cfg, &proto, NULL, &err) < 0 &&
	       strstr(err.msg, range), "a full range: %s", err.msg);
	dlrt_tcpserver_stop(srv);
	dlrt_tcpserver_stop(srv2);
	dlrt_evloop_destroy(loop);
}

/* The job's environment for check_step: HOROVOD_ELASTIC only. */
static char hvd_elastic_env[8];

static int fake_getenv(void *sp, const char *name, char *buf, size_t len)
{
	if (strcmp(name, "HOROVOD_ELASTIC"))
		return -1;
	snprintf(buf, len, "%s", (const char *)sp);
	return 0;
}

int main(void)
{
	struct dlrt_service_spec s;
	struct dlrt_service_common c = {
		.path = "/p/libexec/dlrt/svc", .bind_ip = "10.0.0.1", .allow = "10.0.0.1,10.0.0.2",
		.lifetime_fd = 11, .ready_fd = 12,
	};
	struct dlrt_err err = { "" };
	char **argv;
	uint16_t port = 0;

	/* the readiness line */
	TAP_IS_INT(dlrt_service_parse_ready("4242\n", 5, &port), 0, "ready line parsed");
	TAP_IS_INT(port, 4242, "port");
	TAP_IS_INT(dlrt_service_parse_ready("65535\n", 6, &port), 0, "highest port");
	TAP_IS_INT(dlrt_service_parse_ready("65536\n", 6, &port), -1, "port out of range");
	TAP_IS_INT(dlrt_service_parse_ready("0\n", 2, &port), -1, "port 0 refused");
	TAP_IS_INT(dlrt_service_parse_ready("4242", 4, &port), -1, "no newline (service died mid-line)");
	TAP_IS_INT(dlrt_service_parse_ready("", 0, &port), -1, "nothing (service died)");
	TAP_IS_INT(dlrt_service_parse_ready("42x\n", 4, &port), -1, "junk");
	TAP_IS_INT(dlrt_service_parse_ready("42\n7", 4, &port), -1, "bytes after the line");
	TAP_IS_INT(dlrt_service_parse_ready("1234567\n", 8, &port), -1, "too many digits");

	/* the command line */
	dlrt_service_spec_init(&s, "svc", "the test service");
	dlrt_service_spec_add(&s, "--hosts=%s:%d", "n1", 3);
	argv = dlrt_service_argv(&s, &c, &err);
	TAP_OK(argv != NULL, "argv built");
	if (argv) {
		TAP_IS_STR(argv[0], "/p/libexec/dlrt/svc", "argv[0] is the path");
		TAP_OK(argv_has(argv, "--bind", "10.0.0.1"), "--bind");
		TAP_OK(argv_has(argv, "--port", "0"), "--port 0");
		TAP_OK(argv_has(argv, "--allow", "10.0.0.1,10.0.0.2"), "--allow");
		TAP_OK(argv_has(argv, "--lifetime-fd", "11"), "--lifetime-fd");
		TAP_OK(argv_has(argv, "--ready-fd", "12"), "--ready-fd");
		TAP_OK(!argv_has(argv, "--verbose", NULL), "no --verbose unless asked");
		TAP_OK(!argv_has(argv, "--secret-fd", NULL), "no --secret-fd unless given");
		TAP_OK(argv_has(argv, "--hosts=n1:3", NULL), "the runtime's own argument");
		free(argv);
	}
	c.secret_fd = 13;
	argv = dlrt_service_argv(&s, &c, &err);
	TAP_OK(argv && argv_has(argv, "--secret-fd", "13"), "--secret-fd: the secret is passed "
	       "on a pipe, never in argv");
	free(argv);
	c.secret_fd = 0;
	c.verbose = true;
	argv = dlrt_service_argv(&s, &c, &err);
	TAP_OK(argv && argv_has(argv, "--verbose", NULL), "--verbose with --dl-verbose");
	free(argv);
	dlrt_service_spec_free(&s);
	dlrt_service_spec_init(&s, "svc", "the test service");
	for (int i = 0; i < DLRT_SERVICE_MAX_ARGS + 1; i++)
		dlrt_service_spec_add(&s, "-x");
	TAP_OK(s.failed, "too many arguments is sticky");
	TAP_OK(dlrt_service_argv(&s, &c, &err) == NULL && strstr(err.msg, "the test service"),
	       "and reported: %s", err.msg);
	dlrt_service_spec_free(&s);

	/* Horovod: gloo mode has a driver with the host plan, MPI mode none. */
	{
		struct dlrt_config cfg;
		struct dlrt_opts o;
		struct dlrt_layout l;
		struct dlrt_plan p;
		struct dlrt_step_info step = { .job_id = 1 };
		struct dlrt_addrs a = { .valid = true, .root_ip = "10.0.0.1", .root_port = 4242,
					.node_ip = "10.0.0.2", .iface = "ib0" };
		struct dlrt_env env;
		const struct dlrt_runtime *rt = dlrt_runtimes[dlrt_runtime_index("horovod")];

		dlrt_config_parse(&cfg, 0, NULL, &err);
		dlrt_opts_init(&o, &cfg);

		TAP_IS_INT(dlrt_layout_init(&l, "n[1-3]", "3,1,2", DLRT_DIST_BLOCK, 0, &err), 0,
			   "layout 3,1,2");
		TAP_IS_INT(dlrt_plan_build(&p, rt, &l, &o, &cfg, &err), 0, "horovod plan");
		TAP_OK(rt->service && rt->service(&p, &s), "gloo (the default mode) needs a service");
		TAP_IS_STR(s.program, "dlrt-hvd-driver", "the rendezvous driver");
		TAP_IS_INT((int)s.nargs, 1, "one runtime argument");
		TAP_IS_STR(s.nargs ? s.args[0] : "", "--hosts=n1:3,n2:1,n3:2",
			   "the host plan: step order, tasks per node");
		dlrt_service_spec_free(&s);

		dlrt_env_init(&env);
		TAP_IS_INT(dlrt_plan_task_env(&p, 4, &step, &a, &env, &err), 0, "env of task 4");
		TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_GLOO_RENDEZVOUS_ADDR"), "10.0.0.1", "driver address");
		TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_GLOO_RENDEZVOUS_PORT"), "4242", "driver port");
		TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_CONTROLLER"), "gloo", "controller");
		TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_CPU_OPERATIONS"), "gloo", "cpu operations");
		TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_GLOO_IFACE"), "ib0", "gloo iface = --dl-iface");
		TAP_IS_STR(dlrt_env_get(&env, "NCCL_SOCKET_IFNAME"), "ib0", "NCCL iface");
		TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_GLOO_TIMEOUT_SECONDS"), "120", "gloo timeout");
		TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_HOSTNAME"), "n3", "hostname of task 4");
		TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_CROSS_RANK"), "2", "cross rank of task 4 (n3, lr 0: third node with one)");
		TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_CROSS_SIZE"), "3", "cross size of local rank 0");
		dlrt_env_free(&env);
		dlrt_env_init(&env);
		dlrt_plan_task_env(&p, 5, &step, &a, &env, &err);
		TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_CROSS_RANK"), "1", "task 5 (n3, lr 1): cross rank");
		TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_CROSS_SIZE"), "2", "local rank 1 exists on 2 nodes");
		dlrt_env_free(&env);
		dlrt_plan_free(&p);

		/* Elastic Horovod: the driver gets --step and the bounds; what cannot
		 * work is refused by check_step. */
		{
			struct dlrt_step_info st = { .job_id = 77, .step_id = 3 };
			struct dlrt_step_ctx ctx = { .getenv = fake_getenv, .sp = hvd_elastic_env };

			snprintf(hvd_elastic_env, sizeof(hvd_elastic_env), "1");
			TAP_IS_INT(dlrt_opts_set(&o, &cfg, dlrt_opt_find("dl-hvd-min-np"), "4", &err), 0,
				   "--dl-hvd-min-np=4");
			TAP_IS_INT(dlrt_opts_set(&o, &cfg, dlrt_opt_find("dl-hvd-min-np"), "0", &err), -1,
				   "--dl-hvd-min-np=0 refused: %s", err.msg);
			TAP_IS_INT(dlrt_opts_set(&o, &cfg, dlrt_opt_find("dl-hvd-max-np"), "x", &err), -1,
				   "--dl-hvd-max-np=x refused: %s", err.msg);
			TAP_IS_INT(dlrt_plan_build(&p, rt, &l, &o, &cfg, &err), 0, "elastic plan");
			p.step = &st;
			p.step_ctx = &ctx;
			TAP_OK(rt->service(&p, &s) && s.nargs == 3 && !strcmp(s.args[1], "--step=77.3") &&
			       !strcmp(s.args[2], "--min-np=4"),
			       "HOROVOD_ELASTIC=1: the driver gets --step=77.3 --min-np=4");
			dlrt_service_spec_free(&s);
			TAP_IS_INT(rt->check_step(&p, &ctx, &err), 0, "6 tasks, min 4: accepted");
			snprintf(hvd_elastic_env, sizeof(hvd_elastic_env), "0");
			TAP_OK(rt->service(&p, &s) && s.nargs == 1, "HOROVOD_ELASTIC=0: only --hosts");
			dlrt_service_spec_free(&s);
			TAP_IS_INT(rt->check_step(&p, &ctx, &err), -1, "--dl-hvd-min-np without HOROVOD_ELASTIC: %s",
				   err.msg);
			dlrt_plan_free(&p);
			snprintf(hvd_elastic_env, sizeof(hvd_elastic_env), "1");
			TAP_IS_INT(dlrt_opts_set(&o, &cfg, dlrt_opt_find("dl-hvd-max-np"), "5", &err), 0,
				   "--dl-hvd-max-np=5");
			TAP_IS_INT(dlrt_plan_build(&p, rt, &l, &o, &cfg, &err), 0, "elastic plan, max 5");
			TAP_IS_INT(rt->check_step(&p, &ctx, &err), -1, "6 tasks above --dl-hvd-max-np=5: %s",
				   err.msg);
			dlrt_plan_free(&p);
			dlrt_opts_init(&o, &cfg);
			TAP_IS_INT(dlrt_opts_set(&o, &cfg, dlrt_opt_find("dl-horovod"), "mpi", &err), 0,
				   "--dl-horovod=mpi");
			TAP_IS_INT(dlrt_plan_build(&p, rt, &l, &o, &cfg, &err), 0, "MPI-mode plan");
			TAP_IS_INT(rt->check_step(&p, &ctx, &err), -1, "HOROVOD_ELASTIC=1 in MPI mode: %s",
				   err.msg);
			dlrt_plan_free(&p);
			dlrt_opts_init(&o, &cfg);
		}

		TAP_IS_INT(dlrt_opts_set(&o, &cfg, dlrt_opt_find("dl-horovod"), "mpi", &err), 0, "--dl-horovod=mpi");
		TAP_IS_INT(dlrt_plan_build(&p, rt, &l, &o, &cfg, &err), 0, "MPI-mode plan");
		TAP_OK(!rt->service(&p, &s), "MPI mode starts no service");
		TAP_OK(!rt->needs_root_addr, "and needs no exchange (no PMIx session in the task)");
		dlrt_env_init(&env);
		dlrt_plan_task_env(&p, 0, &step, NULL, &env, &err);
		TAP_OK(!dlrt_env_get(&env, "HOROVOD_CONTROLLER") &&
		       !dlrt_env_get(&env, "HOROVOD_GLOO_RENDEZVOUS_ADDR"), "no gloo variables in MPI mode");
		TAP_IS_STR(dlrt_env_get(&env, "HOROVOD_RANK"), "0", "slot variables still set");
		dlrt_env_free(&env);
		dlrt_plan_free(&p);
		TAP_IS_INT(dlrt_opts_set(&o, &cfg, dlrt_opt_find("dl-horovod"), "nccl", &err), -1, "bad mode refused");
		TAP_OK(strstr(err.msg, "gloo") && strstr(err.msg, "mpi"), "names the choices: %s", err.msg);
		dlrt_layout_free(&l);
	}
	{
		struct dlrt_config cfg;
		char *mpi[] = { "horovod=mpi", "service_timeout=5", "service_max_lifetime=3600" };
		char *bad[] = { "horovod=tcp" };

		TAP_IS_INT(dlrt_config_parse(&cfg, 3, mpi, &err), 0, "site keys horovod, service_*");
		{
			struct dlrt_opts o;
			struct dlrt_layout l;
			struct dlrt_plan p;
			const struct dlrt_runtime *rt = dlrt_runtimes[dlrt_runtime_index("horovod")];

			dlrt_opts_init(&o, &cfg);
			dlrt_layout_init(&l, "n1", "2", DLRT_DIST_BLOCK, 0, &err);
			TAP_IS_INT(dlrt_plan_build(&p, rt, &l, &o, &cfg, &err), 0, "horovod plan");
			TAP_OK(!rt->service(&p, &s), "site default mpi: no driver");
			dlrt_plan_free(&p);
			dlrt_layout_free(&l);
		}
		TAP_IS_INT((int)cfg.service_timeout, 5, "service_timeout");
		TAP_IS_INT((int)cfg.service_max_lifetime, 3600, "service_max_lifetime");
		TAP_IS_INT(dlrt_config_parse(&cfg, 1, bad, &err), -1, "horovod=tcp refused");
	}
	/* --allow on the service side: loopback first, never an empty list. */
	{
		uint32_t *ips = NULL;
		size_t n = 0;

		TAP_IS_INT(dlrt_service_parse_allow("10.77.0.11,10.77.0.12", &ips, &n, &err), 0,
			   "allow list parsed");
		TAP_OK(n == 3 && ips[0] == htonl(INADDR_LOOPBACK) && ips[1] == inet_addr("10.77.0.11") &&
		       ips[2] == inet_addr("10.77.0.12"), "loopback first, then the nodes in order");
		free(ips);
		ips = NULL;
		TAP_IS_INT(dlrt_service_parse_allow("", &ips, &n, &err), 0, "empty allow list");
		TAP_OK(n == 1 && ips[0] == htonl(INADDR_LOOPBACK), "empty means loopback only, never everyone");
		free(ips);
		ips = NULL;
		TAP_IS_INT(dlrt_service_parse_allow("10.77.0.11,n2", &ips, &n, &err), -1, "a name is refused");
		TAP_OK(strstr(err.msg, "'n2'") && !strchr(err.msg, '\n'), "one line naming it: %s", err.msg);
		TAP_OK(ips == NULL, "nothing returned on error");
		TAP_IS_INT(dlrt_service_parse_allow("10.77.0.11,,", &ips, &n, &err), 0, "empty entries skipped");
		TAP_OK(n == 2, "two entries");
		free(ips);
	}
	/* The service side of the ready line is the inverse of parse_ready. */
	{
		int fds[2];
		char buf[16];
		ssize_t got;
		uint16_t p = 0;

		TAP_OK(pipe(fds) == 0, "pipe");
		TAP_IS_INT(dlrt_service_write_ready(fds[1], 40123), 0, "ready line written (fd closed)");
		got = read(fds[0], buf, sizeof(buf));
		TAP_OK(got > 0 && dlrt_service_parse_ready(buf, (size_t)got, &p) == 0 && p == 40123,
		       "what write_ready writes, parse_ready reads back: %u", p);
		close(fds[0]);
		TAP_OK(pipe(fds) == 0, "pipe");
		close(fds[0]);
		signal(SIGPIPE, SIG_IGN);
		TAP_IS_INT(dlrt_service_write_ready(fds[1], 40123), -1, "a launcher that went away: -1");
	}
	/* The lifetime watch every service program shares: the loop ends at EOF
	 * on the lifetime fd (not before, whatever is written to it), and when
	 * the watched process is gone. A 3 s timer bounds each run. */
	{
		struct dlrt_service_watch w = DLRT_SERVICE_WATCH_NONE;
		struct dlrt_evloop *loop = dlrt_evloop_create();
		const char *why = NULL;
		int fds[2], rc;
		int64_t t0;
		pid_t kid;

		dlrt_service_watch_end(&w); /* safe before start */
		TAP_OK(loop && pipe(fds) == 0, "loop and lifetime pipe");
		TAP_IS_INT(dlrt_service_watch_start(&w, loop, fds[0], 0, &why), 0, "watch the pipe");
		TAP_OK(write(fds[1], "x", 1) == 1, "bytes on the pipe");
		dlrt_evloop_add_timer(loop, 50, stop_after, &fds[1]);
		dlrt_evloop_add_timer(loop, 3000, give_up, &why);
		t0 = dlrt_now_ms();
		rc = dlrt_evloop_run(loop);
		TAP_OK(rc == 0 && why && strstr(why, "lifetime fd closed"),
		       "EOF ends the loop, bytes before it do not: %s", why ? why : "(nothing)");
		TAP_OK(dlrt_now_ms() - t0 < 1000, "at once, not at a tick");
		dlrt_service_watch_end(&w);
		dlrt_evloop_destroy(loop);
		close(fds[0]);

		loop = dlrt_evloop_create();
		why = NULL;
		kid = fork();
		if (kid == 0) {
			pause();
			_exit(0);
		}
		TAP_OK(kid > 0, "a process to watch");
		TAP_IS_INT(dlrt_service_watch_start(&w, loop, -1, kid, &why), 0, "watch it");
		kill(kid, SIGKILL);
		waitpid(kid, NULL, 0);
		dlrt_evloop_add_timer(loop, 3000, give_up, &why);
		rc = dlrt_evloop_run(loop);
		TAP_OK(rc == 0 && why && strstr(why, "parent process is gone"),
		       "a vanished parent ends the loop: %s", why ? why : "(nothing)");
		dlrt_service_watch_end(&w);
		TAP_IS_INT(w.parent_pidfd, -1, "pidfd closed");
		dlrt_evloop_destroy(loop);
	}
	test_args();
	test_port_range();
	return tap_done();
}
