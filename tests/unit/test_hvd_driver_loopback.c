/* test_hvd_driver_loopback.c - the real dlrt-hvd-driver on 127.0.0.1, request by request.
 *
 * Forks $(BUILD)/libexec/dlrt-hvd-driver (DLRT_HVD_DRIVER, else DLRT_BUILD,
 * else next to DLRT_PLUGIN as `make unit` sets it, else relative to this
 * test), waits for its readiness line, then drives it over real sockets:
 * status codes, bodies, Content-Length, close after each response, the gloo
 * rendezvous sequence with scope clearing, hostile input (huge
 * Content-Length, a slow client, garbage) not stalling other clients, and its
 * lifetime (exit when the lifetime fd closes or the parent pid is gone).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buildpath.h"
#include "tap.h"

static char driver_path[PATH_MAX];
static uint16_t port;

struct resp {
	int status;
	long content_length; /* -1 if absent */
	char body[4096];
	size_t body_len;
	int closed;          /* the server closed after the response */
};

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int find_driver(void)
{
	const char *e = getenv("DLRT_HVD_DRIVER");

	if (e && *e) {
		snprintf(driver_path, sizeof(driver_path), "%s", e);
		return access(driver_path, X_OK);
	}
	return test_build_program("libexec/dlrt-hvd-driver", driver_path, sizeof(driver_path));
}

/* Starts the driver; returns its pid, *life_w is the write end of its lifetime pipe. */
static pid_t start_driver(int *life_w, const char *extra1, const char *extra2)
{
	int life[2], ready[2];
	pid_t pid;
	char lfd[16], rfd[16], line[32] = "";
	struct pollfd p;
	ssize_t n = 0;

	if (pipe(life) < 0 || pipe(ready) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(life[1]);
		close(ready[0]);
		snprintf(lfd, sizeof(lfd), "%d", life[0]);
		snprintf(rfd, sizeof(rfd), "%d", ready[1]);
		execl(driver_path, driver_path, "--bind", "127.0.0.1", "--port", "0",
		      "--hosts", "n1:3,n2:1,n3:2", "--max-body", "65536",
		      "--idle-timeout-ms", "400", "--lifetime-fd", lfd, "--ready-fd", rfd,
		      extra1, extra2, (char *)NULL);
		_exit(127);
	}
	close(life[0]);
	close(ready[1]);
	*life_w = life[1];
	/* The readiness handshake: one decimal line, then EOF. Bounded. */
	p = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	if (poll(&p, 1, 5000) == 1)
		n = read(ready[0], line, sizeof(line) - 1);
	close(ready[0]);
	if (n > 0) {
		line[n] = '\0';
		port = (uint16_t)atoi(line);
	}
	if (n <= 0 || !port) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

static int connect_driver(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { 5, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);

		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads a response until the server closes; parses status, Content-Length, body. */
static int read_resp(int fd, struct resp *r)
{
	char buf[8192];
	size_t len = 0;
	char *end, *cl;

	memset(r, 0, sizeof(*r));
	r->content_length = -1;
	for (;;) {
		ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);

		if (n == 0) {
			r->closed = 1;
			break;
		}
		if (n < 0)
			break; /* timeout or reset: closed stays 0 */
		len += (size_t)n;
		if (len == sizeof(buf) - 1)
			break;
	}
	buf[len] = '\0';
	end = strstr(buf, "\r\n\r\n");
	if (!end || sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1)
		return -1;
	*end = '\0';
	cl = strcasestr(buf, "\r\nContent-Length:");
	if (cl)
		r->content_length = strtol(cl + 17, NULL, 10);
	r->body_len = len - (size_t)(end + 4 - buf);
	if (r->body_len > sizeof(r->body) - 1)
		r->body_len = sizeof(r->body) - 1; /* a large body: its start */
	memcpy(r->body, end + 4, r->body_len);
	r->body[r->body_len] = '\0';
	return 0;
}

static int raw(const void *data, size_t n, struct resp *r)
{
	int fd = connect_driver(), rc;

	if (fd < 0)
		return -1;
	if (send_all(fd, data, n) < 0) {
		close(fd);
		return -1;
	}
	rc = read_resp(fd, r);
	close(fd);
	return rc < 0 ? -1 : r->status;
}

/* A request as Horovod's HTTPRequest.hpp sends it. */
static int http(const char *method, const char *path, const char *body, struct resp *r)
{
	char req[8192];
	size_t blen = body ? strlen(body) : 0;
	int n = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
			 "Content-Length: %zu\r\n\r\n%s", method, path, port, blen, body ? body : "");

	return raw(req, (size_t)n, r);
}

static int well_formed(const struct resp *r)
{
	return r->closed && r->content_length == (long)r->body_len;
}

static void test_basic(void)
{
	struct resp r;

	TAP_IS_INT(http("PUT", "/global/rank_0", "n1", &r), 200, "PUT /global/rank_0: 200");
	TAP_OK(well_formed(&r) && r.content_length == 0, "... Content-Length: 0 and closed");
	TAP_IS_INT(http("GET", "/global/rank_0", NULL, &r), 200, "GET it back: 200");
	TAP_OK(well_formed(&r) && strcmp(r.body, "n1") == 0, "... body n1, Content-Length 2, closed");
	TAP_IS_INT(http("GET", "/global/rank_9", NULL, &r), 404, "GET absent: 404");
	TAP_OK(well_formed(&r) && r.content_length == 0, "... Content-Length: 0");
	TAP_IS_INT(http("GET", "/rank_and_size/n3:1", NULL, &r), 200, "GET rank_and_size n3:1");
	TAP_IS_STR(r.body, "5,6,1,2,1,2", "... rank,size,local_rank,local_size,cross_rank,cross_size");
	TAP_IS_INT(http("GET", "/rank_and_size/gone:0", NULL, &r), 200, "unknown slot: 200");
	TAP_IS_STR(r.body, "-1,-1,-1,-1,-1,-1", "... removed-host answer");
	TAP_IS_INT(http("GET", "/global", NULL, &r), 400, "path with 2 parts: 400");
	TAP_OK(well_formed(&r), "... with Content-Length and closed");
	TAP_IS_INT(http("PUT", "/global/a/b", "x", &r), 400, "key with '/': 400");
	TAP_IS_INT(http("POST", "/global/a", "x", &r), 501, "POST: 501");
	TAP_IS_INT(raw("PUT /a/b HTTP/1.1\r\n\r\n", 21, &r), 411, "PUT without length: 411");
	TAP_IS_INT(raw("PUT /a/b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		       59, &r), 411, "chunked PUT: 411");
	TAP_IS_INT(raw("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 11, &r), 400,
		   "garbage (a TLS hello): 400");
	TAP_OK(well_formed(&r), "... answered and closed");
	TAP_IS_INT(raw("GET /a/b HTTP/1.1\r\n\r\nGET /c/d HTTP/1.1\r\n\r\n", 42, &r), 404,
		   "pipelined requests: the first is answered");
	TAP_OK(r.closed && strstr(r.body, "HTTP/") == NULL, "... then the connection closes");
}

/* Byte by byte with pauses: the parser must cope with any split. */
/* A PUT of an `obj`-byte object as Horovod's Python client sends it
 * (base64, padded), or of `obj` raw bytes; returns the status. */
static int put_object(const char *path, size_t obj, int base64, struct resp *r)
{
	size_t blen = base64 ? (obj + 2) / 3 * 4 : obj, pad = base64 ? (3 - obj % 3) % 3 : 0;
	char *req = malloc(blen + 256);
	int h, rc;

	if (!req)
		return -1;
	h = snprintf(req, 256, "PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nContent-Length: %zu\r\n\r\n",
		     path, port, blen);
	memset(req + h, base64 ? 'Q' : '\x01', blen);
	memset(req + h + blen - pad, '=', pad);
	rc = raw(req, (size_t)h + blen, r);
	free(req);
	return rc;
}

/* --max-body bounds the object, not its base64 encoding (65536 here). */
static void test_decoded_bound(void)
{
	struct resp r;

	TAP_IS_INT(put_object("/big/b64", 65536, 1, &r), 200,
		   "a 64 KiB object in base64 (87384 bytes on the wire) is stored");
	TAP_IS_INT(http("GET", "/big/b64", NULL, &r), 200, "... and read back");
	TAP_IS_INT(r.content_length, 87384, "... as sent (still encoded, as Horovod keeps it)");
	TAP_IS_INT(put_object("/big/b64x", 65537, 1, &r), 413,
		   "a 64 KiB + 1 object in base64: 413");
	TAP_IS_INT(put_object("/big/raw", 65536, 0, &r), 200, "64 KiB of raw bytes: stored");
	TAP_IS_INT(put_object("/big/rawx", 65537, 0, &r), 413, "64 KiB + 1 raw bytes: 413");
	TAP_IS_INT(http("GET", "/big/rawx", NULL, &r), 404, "... not stored");
	TAP_IS_INT(http("PUT", "/worker_addresses/n1:0", "not base64 at all", &r), 400,
		   "a raw worker_addresses PUT: 400");
	TAP_IS_INT(http("GET", "/worker_addresses/n1:0", NULL, &r), 404, "... not stored");
}

static void test_bytewise(void)
{
	const char *req = "PUT /bytes/k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
	struct resp r;
	int fd = connect_driver(), ok = fd >= 0;

	for (size_t i = 0; ok && req[i]; i++) {
		ok = send_all(fd, req + i, 1) == 0;
		usleep(500);
	}
	TAP_OK(ok && read_resp(fd, &r) == 0 && r.status == 200, "PUT sent byte by byte: 200");
	close(fd);
	TAP_IS_INT(http("GET", "/bytes/k", NULL, &r), 200, "GET it");
	TAP_IS_STR(r.body, "hello", "... hello");
}

/* The gloo sequence for the uneven plan 3,1,2 over real sockets. */
static void gloo_scope(const char *scope, int n)
{
	char path[128], body[64];
	struct resp r;
	int bad = 0;

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/%s/rank_%d", scope, i);
		bad += http("PUT", path, "host", &r) != 200;
		snprintf(path, sizeof(path), "/%s/%d", scope, i);
		snprintf(body, sizeof(body), "addr-%d", i);
		bad += http("PUT", path, body, &r) != 200;
	}
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/%s/%d", scope, i);
		snprintf(body, sizeof(body), "addr-%d", i);
		bad += http("GET", path, NULL, &r) != 200 || strcmp(r.body, body) != 0;
	}
	for (int i = 0; i < n - 1; i++) {
		snprintf(path, sizeof(path), "/%s/%d", scope, i);
		bad += http("DELETE", path, NULL, &r) != 200;
	}
	snprintf(path, sizeof(path), "/%s/0", scope);
	bad += http("GET", path, NULL, &r) != 200;
	TAP_IS_INT(bad, 0, "%s: %d ranks PUT, GET, %d DELETE; keys still there", scope, n, n - 1);
	snprintf(path, sizeof(path), "/%s/%d", scope, n - 1);
	TAP_IS_INT(http("DELETE", path, NULL, &r), 200, "%s: last DELETE: 200", scope);
	snprintf(path, sizeof(path), "/%s/0", scope);
	TAP_IS_INT(http("GET", path, NULL, &r), 404, "%s: cleared after the last DELETE", scope);
}

static void test_gloo_sequence(void)
{
	gloo_scope("global", 6);
	gloo_scope("local_n1", 3);
	gloo_scope("local_n2", 1);
	gloo_scope("local_n3", 2);
	gloo_scope("cross_0", 3);
	gloo_scope("cross_1", 2);
	gloo_scope("cross_2", 1);
}

static void test_hostile(void)
{
	const char *half = "PUT /global/slow HTTP/1.1\r\nContent-Le";
	const char *huge = "PUT /a/b HTTP/1.1\r\nContent-Length: 1000000000000\r\n\r\n";
	struct resp r;
	int slow = connect_driver(), hog, bad = 0;
	int64_t t0, worst = 0;
	char buf[64];
	ssize_t n;

	/* A slow client holds half a request; everyone else is still served. */
	TAP_OK(slow >= 0 && send_all(slow, half, strlen(half)) == 0, "slow client sends half a request");
	t0 = now_ms();
	for (int i = 0; i < 50; i++) {
		int64_t t = now_ms();

		bad += http("PUT", "/global/other", "v", &r) != 200;
		if (now_ms() - t > worst)
			worst = now_ms() - t;
	}
	TAP_IS_INT(bad, 0, "50 other requests served meanwhile");
	/* Each answered before the slow client's idle timeout (400 ms) could have
	 * unblocked a driver stuck on it: an ordering, not a speed. */
	TAP_OK(worst < 400, "none waited on the slow client (worst %lld ms)", (long long)worst);
	/* The idle timeout (400 ms) hangs up on it. */
	n = recv(slow, buf, sizeof(buf), 0);
	TAP_OK(n <= 0 && now_ms() - t0 < 3000,
	       "the slow client is closed by the idle timeout (after %lld ms)",
	       (long long)(now_ms() - t0));
	close(slow);

	/* A huge Content-Length is refused from the head alone. */
	hog = connect_driver();
	t0 = now_ms();
	TAP_OK(hog >= 0 && send_all(hog, huge, strlen(huge)) == 0, "huge Content-Length sent");
	TAP_OK(read_resp(hog, &r) == 0 && r.status == 413 && well_formed(&r),
	       "413 at once, with Content-Length, closed (%lld ms)", (long long)(now_ms() - t0));
	close(hog);
	TAP_IS_INT(http("GET", "/global/other", NULL, &r), 200, "still serving after the 413");

	/* A body over the base64 length of --max-body (65536 -> 87384). */
	{
		static char big[90000];
		char head[128];
		int fd = connect_driver();
		int hn = snprintf(head, sizeof(head), "PUT /a/big HTTP/1.1\r\nContent-Length: %zu\r\n\r\n",
				  sizeof(big));

		memset(big, 'x', sizeof(big));
		TAP_OK(fd >= 0 && send_all(fd, head, (size_t)hn) == 0 && read_resp(fd, &r) == 0 &&
		       r.status == 413, "body of 90000 > base64 of --max-body: 413 before the body");
		close(fd);
	}
	/* Many connections at once, answered in any order. */
	{
		int fds[32], okc = 0;

		for (int i = 0; i < 32; i++)
			fds[i] = connect_driver();
		for (int i = 31; i >= 0; i--) {
			char req[128];
			int rn = snprintf(req, sizeof(req),
					  "PUT /many/%d HTTP/1.1\r\nContent-Length: 1\r\n\r\nx", i);

			if (fds[i] >= 0 && send_all(fds[i], req, (size_t)rn) == 0 &&
			    read_resp(fds[i], &r) == 0 && r.status == 200)
				okc++;
		}
		for (int i = 0; i < 32; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		TAP_IS_INT(okc, 32, "32 simultaneous connections, answered out of order");
	}
}

static int wait_exit(pid_t pid, int ms, int *status)
{
	for (int i = 0; i < ms / 10; i++) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return 0;
		usleep(10000);
	}
	return -1;
}

/* A failed check must not leave a driver holding prove's stdout open. */
static void reap(pid_t pid)
{
	if (kill(pid, 0) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static void test_command_line(void)
{
	char out[1024] = "";
	int p[2], status = -1;
	pid_t pid;
	ssize_t n;

	/* Bad arguments: exit 2 with one line on stderr. */
	if (pipe(p) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 2);
		execl(driver_path, driver_path, "--hosts", "n1:0", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	n = read(p[0], out, sizeof(out) - 1);
	close(p[0]);
	out[n > 0 ? n : 0] = '\0';
	wait_exit(pid, 5000, &status);
	reap(pid);
	TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 2, "--hosts n1:0: exit 2");
	TAP_OK(n > 0 && strchr(out, '\n') == out + n - 1, "... one line: %.*s", (int)(n > 0 ? n - 1 : 0), out);

	/* An address that is not ours: exit 3. */
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 2);
		execl(driver_path, driver_path, "--bind", "192.0.2.1", (char *)NULL);
		_exit(127);
	}
	wait_exit(pid, 5000, &status);
	reap(pid);
	TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 3, "--bind 192.0.2.1 (not local): exit 3");
}

static void test_parent_pid(void)
{
	pid_t parent, pid;
	int ready[2], status = -1;
	char pidarg[16], rfd[16], line[16];
	struct pollfd p;

	parent = fork();
	if (parent == 0) {
		pause();
		_exit(0);
	}
	if (pipe(ready) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		snprintf(pidarg, sizeof(pidarg), "%d", (int)parent);
		snprintf(rfd, sizeof(rfd), "%d", ready[1]);
		execl(driver_path, driver_path, "--bind", "127.0.0.1", "--parent-pid", pidarg,
		      "--ready-fd", rfd, (char *)NULL);
		_exit(127);
	}
	close(ready[1]);
	p = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	TAP_OK(poll(&p, 1, 5000) == 1 && read(ready[0], line, sizeof(line)) > 0,
	       "--parent-pid driver ready");
	close(ready[0]);
	TAP_OK(wait_exit(pid, 300, &status) < 0, "it runs while the parent lives");
	kill(parent, SIGKILL);
	waitpid(parent, NULL, 0);
	TAP_OK(wait_exit(pid, 2000, &status) == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "it exits 0 once the parent is gone");
	reap(pid);
}

/* The case Horovod's own server handles: a 13 MiB object through Horovod's
 * Python client is a 17.3 MiB base64 body, under the default 16 MiB bound. */
static void test_13mib_object(void)
{
	struct resp r;
	int life = -1, status = -1;
	pid_t pid = start_driver(&life, "--max-body", "16777216");

	TAP_OK(pid > 0, "a driver with the default --max-body (16 MiB)");
	if (pid <= 0)
		return;
	TAP_IS_INT(put_object("/big/obj13", (size_t)13 << 20, 1, &r), 200,
		   "a 13 MiB object in base64 (18175320 bytes on the wire) is stored, as by Horovod");
	TAP_IS_INT(http("GET", "/big/obj13", NULL, &r), 200, "... and read back");
	TAP_IS_INT(r.content_length, 18175320, "... all of it");
	close(life);
	TAP_OK(wait_exit(pid, 3000, &status) == 0, "that driver exits too");
	reap(pid);
}

int main(void)
{
	pid_t pid;
	int life = -1, status = -1;
	int64_t t0;

	signal(SIGPIPE, SIG_IGN);
	if (find_driver() < 0) {
		TAP_OK(0, "dlrt-hvd-driver not found (tried %s): build it or set DLRT_HVD_DRIVER",
		       driver_path);
		return tap_done();
	}
	pid = start_driver(&life, getenv("HVD_VERBOSE") ? "--verbose" : NULL, NULL);
	TAP_OK(pid > 0, "driver %s ready on port %u", driver_path, port);
	if (pid <= 0)
		return tap_done();
	test_basic();
	test_bytewise();
	test_decoded_bound();
	test_gloo_sequence();
	test_hostile();

	/* The step ends: the lifetime pipe closes, the driver must go, bounded. */
	t0 = now_ms();
	close(life);
	TAP_OK(wait_exit(pid, 3000, &status) == 0, "driver exits when its lifetime fd closes (%lld ms)",
	       (long long)(now_ms() - t0));
	TAP_OK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "... with status 0");
	reap(pid);

	test_command_line();
	test_parent_pid();
	test_13mib_object();
	return tap_done();
}
