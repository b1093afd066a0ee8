/* test_rdvclient - a task's side of srun's rendezvous (exchange/rdvclient.h),
 * against the real store program srun starts (dlrt-c10d-store with the
 * rendezvous secret, as spank/service.c runs it). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "exchange/rdvclient.h"
#include "services/service.h"
#include "buildpath.h"
#include "tap.h"

static pid_t store_pid;
static int store_life = -1;

/* Starts the store with `secret`; returns its port (0 on failure). */
static uint16_t start_store(const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN])
{
	char path[4096], life_s[16], ready_s[16], secret_s[16], buf[16];
	int life[2], ready[2], sec[2];
	uint16_t port = 0;
	ssize_t n;

	if (test_build_program("libexec/dlrt-c10d-store", path, sizeof(path)) < 0) {
		printf("# no store at %s: build it first (make unit builds it)\n", path);
		return 0;
	}
	if (pipe(life) < 0 || pipe(ready) < 0 || pipe(sec) < 0)
		return 0;
	if (write(sec[1], secret, DLRT_SVCAUTH_SECRET_LEN) != DLRT_SVCAUTH_SECRET_LEN)
		return 0;
	close(sec[1]);
	snprintf(life_s, sizeof(life_s), "%d", life[0]);
	snprintf(ready_s, sizeof(ready_s), "%d", ready[1]);
	snprintf(secret_s, sizeof(secret_s), "%d", sec[0]);
	store_pid = fork();
	if (store_pid == 0) {
		close(life[1]);
		close(ready[0]);
		execl(path, path, "--bind", "127.0.0.1", "--port", "0", "--allow-any", "--secret-fd",
		      secret_s, "--lifetime-fd", life_s, "--ready-fd", ready_s, "--max-value", "9216",
		      "--max-key", "128", (char *)NULL);
		_exit(127);
	}
	close(life[0]);
	close(ready[1]);
	close(sec[0]);
	store_life = life[1];
	n = read(ready[0], buf, sizeof(buf) - 1);
	close(ready[0]);
	if (n > 0) {
		buf[n] = '\0';
		port = (uint16_t)atoi(buf);
	}
	return port;
}

static void stop_store(void)
{
	close(store_life);
	waitpid(store_pid, NULL, 0);
}

static void test_env(void)
{
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN], back[DLRT_SVCAUTH_SECRET_LEN];
	char s[DLRT_RDV_ENV_MAX];
	uint16_t port = 0;

	for (size_t i = 0; i < sizeof(secret); i++)
		secret[i] = (uint8_t)(i * 7 + 1);
	dlrt_rdv_env_format(s, 40123, secret);
	TAP_OK(dlrt_rdv_env_parse(s, &port, back) == 0 && port == 40123 &&
	       !memcmp(back, secret, sizeof(back)), "PORT#HEX round trip (%s)", s);
	TAP_OK(dlrt_rdv_env_parse("40123", &port, back) < 0, "no secret: refused");
	TAP_OK(dlrt_rdv_env_parse("0#0000000000000000000000000000000000000000000000000000000000000000",
			       &port, back) == 0 && port == 0,
	       "port 0 (Slurm's PMIx carries the exchange, srun hosts nothing): the secret alone");
	TAP_OK(dlrt_rdv_env_parse("70000#0000000000000000000000000000000000000000000000000000000000000000",
				  &port, back) < 0, "port 70000: refused");
	TAP_OK(dlrt_rdv_env_parse("1#00", &port, back) < 0, "a short secret: refused");
	TAP_OK(dlrt_rdv_env_parse("1#G000000000000000000000000000000000000000000000000000000000000000",
				  &port, back) < 0, "not hex: refused");
	TAP_OK(dlrt_rdv_env_parse("#0000000000000000000000000000000000000000000000000000000000000000",
				  &port, back) < 0, "no port: refused");
}

static void test_seal(void)
{
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN] = { 1, 2, 3 }, other[DLRT_SVCAUTH_SECRET_LEN] = { 9 };
	char sealed[DLRT_SVCAUTH_HEX_LEN + 64];
	const uint8_t *v;
	size_t vlen;

	dlrt_rdv_seal(secret, "dlrt/0/root", "10.0.0.1:4000", sealed);
	TAP_OK(dlrt_rdv_open(secret, "dlrt/0/root", (uint8_t *)sealed, strlen(sealed), &v, &vlen) ==
	       0 && vlen == 13 && !memcmp(v, "10.0.0.1:4000", 13), "a sealed value opens");
	TAP_OK(dlrt_rdv_open(other, "dlrt/0/root", (uint8_t *)sealed, strlen(sealed), &v, &vlen) < 0,
	       "another secret: refused");
	TAP_OK(dlrt_rdv_open(secret, "dlrt/1/root", (uint8_t *)sealed, strlen(sealed), &v, &vlen) < 0,
	       "the same value under another key: refused");
	sealed[strlen(sealed) - 1] ^= 1;
	TAP_OK(dlrt_rdv_open(secret, "dlrt/0/root", (uint8_t *)sealed, strlen(sealed), &v, &vlen) < 0,
	       "a changed value: refused");
	TAP_OK(dlrt_rdv_open(secret, "dlrt/0/root", (uint8_t *)"abc", 3, &v, &vlen) < 0,
	       "too short to hold a tag: refused");
}

static void test_live(void)
{
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN], wrong[DLRT_SVCAUTH_SECRET_LEN];
	struct dlrt_rdv a, b;
	struct dlrt_err err;
	const char *keys[2] = { "dlrt/3/root", "dlrt/3/tports/0" };
	char *values[2] = { NULL, NULL };
	uint16_t port;
	int64_t t0;
	pid_t child;
	int status = -1;

	for (size_t i = 0; i < sizeof(secret); i++) {
		secret[i] = (uint8_t)(0xa0 + i);
		wrong[i] = (uint8_t)(0xa0 + i);
	}
	wrong[5] ^= 0x10;
	port = start_store(secret);
	TAP_OK(port != 0, "the store started (port %u)", port);
	if (!port)
		return;

	/* A reader that comes first waits for a writer that comes later. */
	child = fork();
	if (child == 0) {
		struct dlrt_rdv w;

		usleep(200 * 1000);
		if (dlrt_rdv_connect(&w, "127.0.0.1", port, secret, dlrt_now_ms() + 5000, &err) < 0 ||
		    dlrt_rdv_set(&w, keys[0], "10.1.2.3:555", &err) < 0 ||
		    dlrt_rdv_set(&w, keys[1], "10.1.2.3:0=6000", &err) < 0)
			_exit(1);
		dlrt_rdv_close(&w);
		_exit(0);
	}
	t0 = dlrt_now_ms();
	TAP_OK(dlrt_rdv_connect(&a, "127.0.0.1", port, secret, t0 + 5000, &err) == 0,
	       "the reader is admitted with the secret");
	TAP_OK(dlrt_rdv_get(&a, keys, 2, values, &err) == 0, "it waits for and reads 2 keys");
	TAP_OK(values[0] && !strcmp(values[0], "10.1.2.3:555") && values[1] &&
	       !strcmp(values[1], "10.1.2.3:0=6000"), "the values are the writer's (%s, %s)",
	       values[0] ? values[0] : "-", values[1] ? values[1] : "-");
	TAP_OK(dlrt_now_ms() - t0 >= 150, "it waited for the writer");
	free(values[0]);
	free(values[1]);
	dlrt_rdv_close(&a);
	waitpid(child, &status, 0);
	TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer set both keys");

	/* A key nobody sets: the wait ends at the deadline, with the key named. */
	t0 = dlrt_now_ms();
	TAP_OK(dlrt_rdv_connect(&b, "127.0.0.1", port, secret, t0 + 500, &err) == 0,
	       "a second reader is admitted");
	keys[0] = "dlrt/3/never";
	TAP_OK(dlrt_rdv_get(&b, keys, 1, values, &err) < 0 && strstr(err.msg, "dlrt/3/never") &&
	       strstr(err.msg, "did not arrive"), "a missing key fails at the deadline: %s",
	       err.msg);
	TAP_OK(dlrt_now_ms() - t0 < 3000, "bounded (%lld ms)", (long long)(dlrt_now_ms() - t0));
	dlrt_rdv_close(&b);

	/* The wrong secret: the store hangs up, nothing is read or written. */
	keys[0] = "dlrt/3/root";
	TAP_OK(dlrt_rdv_connect(&b, "127.0.0.1", port, wrong, dlrt_now_ms() + 3000, &err) == 0,
	       "a client with the wrong secret connects");
	/* Its SET may already meet the hang-up; either way nothing is stored. */
	if (dlrt_rdv_set(&b, "dlrt/3/root", "6.6.6.6:666", &err) < 0)
		TAP_OK(strstr(err.msg, "closed the connection"), "its SET fails: %s", err.msg);
	else
		TAP_OK(dlrt_rdv_get(&b, keys, 1, values, &err) < 0 &&
		       strstr(err.msg, "closed the connection"), "its read fails: %s", err.msg);
	dlrt_rdv_close(&b);
	TAP_OK(dlrt_rdv_connect(&b, "127.0.0.1", port, secret, dlrt_now_ms() + 3000, &err) == 0 &&
	       dlrt_rdv_get(&b, keys, 1, values, &err) == 0 && values[0] &&
	       !strcmp(values[0], "10.1.2.3:555"), "the root's value is unchanged (%s)",
	       values[0] ? values[0] : err.msg);
	free(values[0]);
	dlrt_rdv_close(&b);

	/* Nobody listening: a clear error, bounded. */
	stop_store();
	t0 = dlrt_now_ms();
	TAP_OK(dlrt_rdv_connect(&b, "127.0.0.1", port, secret, t0 + 1000, &err) < 0 &&
	       strstr(err.msg, "nothing listens"), "no store: %s", err.msg);
	TAP_OK(dlrt_now_ms() - t0 < 2000, "bounded");
}

/* A rendezvous that hangs up on its first `shed` connections before the
 * challenge, as a flooded one sheds its oldest unproven connections, then
 * checks the answer of the next. */
struct shedder {
	int lfd, shed;
	bool proven;
};

static const uint8_t shed_secret[DLRT_SVCAUTH_SECRET_LEN] = "0123456789abcdef0123456789abcde";

static void *shedder_run(void *arg)
{
	struct shedder *sh = arg;

	for (int i = 0; i <= sh->shed; i++) {
		uint8_t chal[DLRT_SVCAUTH_CHALLENGE_LEN] = { 9 }, ans[DLRT_SVCAUTH_ANSWER_LEN];
		int fd = accept(sh->lfd, NULL, NULL);

		if (fd < 0)
			return NULL;
		if (i == sh->shed && send(fd, chal, sizeof(chal), MSG_NOSIGNAL) == sizeof(chal) &&
		    recv(fd, ans, sizeof(ans), MSG_WAITALL) == sizeof(ans))
			sh->proven = dlrt_svcauth_check(shed_secret, chal, ans);
		close(fd);
	}
	return NULL;
}

/* Hung up on before the challenge, a task connects again within its deadline;
 * a rendezvous that always does is named overloaded, not a firewall. */
static void test_hung_up(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sa);
	struct shedder sh = { .lfd = socket(AF_INET, SOCK_STREAM, 0), .shed = 3 };
	struct dlrt_rdv r;
	struct dlrt_err err = { { 0 } };
	pthread_t th;
	int64_t t0;

	bind(sh.lfd, (struct sockaddr *)&sa, sizeof(sa));
	listen(sh.lfd, 64);
	getsockname(sh.lfd, (struct sockaddr *)&sa, &l);
	pthread_create(&th, NULL, shedder_run, &sh);
	TAP_OK(dlrt_rdv_connect(&r, "127.0.0.1", ntohs(sa.sin_port), shed_secret,
				dlrt_now_ms() + 5000, &err) == 0,
	       "hung up on 3 times before the challenge, a task connects again: %s",
	       err.msg[0] ? err.msg : "no error");
	pthread_join(th, NULL);
	TAP_OK(sh.proven, "and its 4th connection answers the challenge");
	dlrt_rdv_close(&r);
	sh.shed = 1000;
	pthread_create(&th, NULL, shedder_run, &sh);
	t0 = dlrt_now_ms();
	TAP_OK(dlrt_rdv_connect(&r, "127.0.0.1", ntohs(sa.sin_port), shed_secret, t0 + 500,
				&err) < 0 && strstr(err.msg, "overloaded"),
	       "always hung up on: %s", err.msg);
	TAP_OK(dlrt_now_ms() - t0 < 1500, "bounded by the deadline");
	shutdown(sh.lfd, SHUT_RDWR);
	pthread_join(th, NULL);
	close(sh.lfd);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_env();
	test_seal();
	test_live();
	test_hung_up();
	return tap_done();
}
