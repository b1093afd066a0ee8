#include "pool.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "services/evloop.h"

int dlrt_pool_dir(const char *given, char *out, size_t len, struct dlrt_err *err)
{
	const char *env = getenv("DLRT_INFER_POOL"), *home = getenv("HOME");
	int n;

	if (given && *given)
		n = snprintf(out, len, "%s", given);
	else if (env && *env)
		n = snprintf(out, len, "%s", env);
	else if (home && *home)
		n = snprintf(out, len, "%s/.dlrt-infer", home);
	else
		return dlrt_err_set(err, "no pool directory: give --pool DIR or set "
				    "DLRT_INFER_POOL");
	if (n < 0 || (size_t)n >= len)
		return dlrt_err_set(err, "pool directory path too long");
	return 0;
}

int dlrt_pool_check_private(const char *path, const struct stat *st, struct dlrt_err *err)
{
	if (st->st_uid != getuid())
		return dlrt_err_set(err, "%s belongs to uid %u, not to you (uid %u): use your own "
				    "pool directory", path, st->st_uid, getuid());
	if (st->st_mode & 077)
		return dlrt_err_set(err, "%s is open to other users (mode %03o): chmod go= %s",
				    path, st->st_mode & 0777, path);
	return 0;
}

int dlrt_pool_prepare(const char *dir, struct dlrt_err *err)
{
	struct stat st;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return dlrt_err_errno(err, errno, "cannot create the pool directory %s", dir);
	if (stat(dir, &st) < 0)
		return dlrt_err_errno(err, errno, "cannot use the pool directory %s", dir);
	if (!S_ISDIR(st.st_mode))
		return dlrt_err_set(err, "%s is not a directory: give another --pool", dir);
	return dlrt_pool_check_private(dir, &st, err);
}

int dlrt_pool_read_access(const char *dir, struct dlrt_pool_access *a, struct dlrt_err *err)
{
	char path[4200], line[256];
	struct stat st;
	FILE *f;
	int fields = 0;

	memset(a, 0, sizeof(*a));
	snprintf(path, sizeof(path), "%s/access", dir);
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return 1;
		return dlrt_err_errno(err, errno, "cannot read the access record %s", path);
	}
	if (fstat(fileno(f), &st) < 0 || dlrt_pool_check_private(path, &st, err) < 0) {
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *v = strchr(line, '=');
		unsigned long long u;

		if (!v)
			continue;
		*v++ = '\0';
		v[strcspn(v, "\n")] = '\0';
		if (!strcmp(line, "epoch") && sscanf(v, "%llu", &u) == 1) {
			a->epoch = u;
			fields |= 1;
		} else if (!strcmp(line, "address") && strlen(v) < sizeof(a->address)) {
			strcpy(a->address, v);
			fields |= 2;
		} else if (!strcmp(line, "port") && sscanf(v, "%llu", &u) == 1 && u && u < 65536) {
			a->port = (uint16_t)u;
			fields |= 4;
		} else if (!strcmp(line, "secret") && strlen(v) == DLRT_POOL_SECRET_LEN) {
			strcpy(a->secret, v);
			fields |= 8;
		} else if (!strcmp(line, "host")) {
			snprintf(a->host, sizeof(a->host), "%s", v);
		} else if (!strcmp(line, "pid") && sscanf(v, "%llu", &u) == 1) {
			a->pid = (uint32_t)u;
		}
	}
	fclose(f);
	if (fields != 15)
		return dlrt_err_set(err, "the access record %s is incomplete: remove it and restart "
				    "the pool", path);
	return 0;
}

int dlrt_pool_write_access(const char *dir, const struct dlrt_pool_access *a,
			   struct dlrt_err *err)
{
	char path[4200], tmp[4300];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/access", dir);
	snprintf(tmp, sizeof(tmp), "%s/.access.%d", dir, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "cannot write %s", tmp);
	fchmod(fd, 0600);
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return dlrt_err_errno(err, errno, "cannot write %s", tmp);
	}
	fprintf(f, "epoch=%llu\naddress=%s\nport=%u\nsecret=%s\nhost=%s\npid=%u\n",
		(unsigned long long)a->epoch, a->address, a->port, a->secret, a->host, a->pid);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		fclose(f);
		unlink(tmp);
		return dlrt_err_errno(err, errno, "cannot write %s", tmp);
	}
	fclose(f);
	if (rename(tmp, path) < 0) {
		unlink(tmp);
		return dlrt_err_errno(err, errno, "cannot install %s", path);
	}
	return 0;
}

int dlrt_pool_new_secret(char out[DLRT_POOL_SECRET_LEN + 1], struct dlrt_err *err)
{
	uint8_t r[DLRT_POOL_SECRET_LEN / 2];

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return dlrt_err_errno(err, errno, "cannot get random bytes for the pool secret");
	for (size_t i = 0; i < sizeof(r); i++)
		sprintf(out + 2 * i, "%02x", r[i]);
	return 0;
}

/* ---- blocking connection --------------------------------------------------------- */

static int wait_fd(int fd, short ev, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int rc;

	do
		rc = poll(&p, 1, timeout_ms);
	while (rc < 0 && errno == EINTR);
	return rc;
}

static int tcp_connect(const char *ip, uint16_t port, int timeout_ms, struct dlrt_err *err)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd, one = 1, soerr = 0;
	socklen_t sl = sizeof(soerr);

	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		return dlrt_err_set(err, "bad coordinator address '%s' in the access record", ip);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "cannot create a socket");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		dlrt_err_errno(err, errno, "cannot connect to the coordinator at %s:%u", ip, port);
		close(fd);
		return -1;
	}
	if (wait_fd(fd, POLLOUT, timeout_ms) <= 0) {
		dlrt_err_set(err, "no answer from the coordinator at %s:%u within %d ms: is the "
			     "pool running (dlrt-infer status)?", ip, port, timeout_ms);
		close(fd);
		return -1;
	}
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
	if (soerr) {
		dlrt_err_errno(err, soerr, "cannot connect to the coordinator at %s:%u", ip, port);
		close(fd);
		return -1;
	}
	return fd;
}

int dlrt_ipc_flush(struct dlrt_ipc *c, int timeout_ms, struct dlrt_err *err)
{
	int64_t deadline = dlrt_now_ms() + timeout_ms;

	while (c->out.len) {
		ssize_t n = send(c->fd, dlrt_buf_head(&c->out), c->out.len, MSG_NOSIGNAL);

		if (n > 0) {
			dlrt_buf_consume(&c->out, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int64_t left = deadline - dlrt_now_ms();

			if (left <= 0 || wait_fd(c->fd, POLLOUT, (int)left) <= 0)
				return dlrt_err_set(err, "the coordinator does not read (timed out "
						    "after %d ms)", timeout_ms);
			continue;
		}
		return dlrt_err_errno(err, errno, "lost the connection to the coordinator");
	}
	return 0;
}

int dlrt_ipc_recv(struct dlrt_ipc *c, struct dlrt_ip_frame *f, int timeout_ms,
		  struct dlrt_err *err)
{
	int64_t deadline = dlrt_now_ms() + timeout_ms;

	dlrt_buf_consume(&c->in, c->pending);
	c->pending = 0;
	for (;;) {
		int rc = dlrt_ip_frame_peek(dlrt_buf_head(&c->in), c->in.len, f, err);
		int64_t left;
		ssize_t n;

		if (rc < 0)
			return -1;
		if (rc == 1) {
			c->pending = f->frame_len;
			return 1;
		}
		if (dlrt_buf_reserve(&c->in, 65536) < 0)
			return dlrt_err_set(err, "a message from the coordinator is too large");
		n = recv(c->fd, c->in.data + c->in.off + c->in.len, 65536, 0);
		if (n > 0) {
			c->in.len += (size_t)n;
			continue;
		}
		if (n == 0)
			return dlrt_err_set(err, "the coordinator closed the connection");
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return dlrt_err_errno(err, errno, "lost the connection to the coordinator");
		left = deadline - dlrt_now_ms();
		if (left <= 0)
			return 0;
		if (wait_fd(c->fd, POLLIN, (int)left) == 0)
			return 0;
	}
}

int dlrt_ipc_open(struct dlrt_ipc *c, const char *dir, uint8_t role, const char *name,
		  int timeout_ms, struct dlrt_err *err)
{
	struct dlrt_pool_access a;
	struct dlrt_ip_hello h = { .role = role };
	struct dlrt_ip_frame f;
	int rc;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	dlrt_buf_init(&c->in, DLRT_IP_MAX_FRAME + 65536 + DLRT_IP_HDR);
	dlrt_buf_init(&c->out, (size_t)DLRT_IP_MAX_FRAME + DLRT_IP_HDR);
	rc = dlrt_pool_read_access(dir, &a, err);
	if (rc > 0)
		dlrt_err_set(err, "no coordinator has started in %s yet: start a pool with "
			     "dlrt-infer pool start, or wait for it", dir);
	if (rc != 0)
		return -1;
	c->fd = tcp_connect(a.address, a.port, timeout_ms, err);
	if (c->fd < 0)
		return -1;
	h.epoch = a.epoch;
	snprintf(h.name, sizeof(h.name), "%s", name);
	if (dlrt_ip_put_hello(&c->out, &h) < 0 || dlrt_ipc_flush(c, timeout_ms, err) < 0)
		goto fail;
	rc = dlrt_ipc_recv(c, &f, timeout_ms, err);
	if (rc < 0 && strstr(err->msg, "closed the connection"))
		/* What an older coordinator does with a newer peer's HELLO. */
		dlrt_err_set(err, "the coordinator of %s closed the connection after HELLO: a dlrt "
			     "of another protocol version? run the same dlrt version everywhere "
			     "(the coordinator's log says why)", dir);
	if (rc == 1 && f.type == DLRT_IP_CHALLENGE) {
		/* Prove we are the pool owner (auth.h): never the secret itself. */
		struct dlrt_ip_challenge ch;
		struct dlrt_ip_auth au;

		if (dlrt_ip_get_challenge(f.payload, f.len, &ch, err) < 0)
			goto fail;
		au.mode = ch.mode;
		if (dlrt_auth_prove(ch.mode, ch.nonce, a.secret, role, a.epoch, au.nonce, au.proof,
				    err) < 0)
			goto fail;
		if (dlrt_ip_put_auth(&c->out, &au) < 0 || dlrt_ipc_flush(c, timeout_ms, err) < 0)
			goto fail;
		rc = dlrt_ipc_recv(c, &f, timeout_ms, err);
	} else if (rc == 1 && f.type == DLRT_IP_WELCOME) {
		dlrt_err_set(err, "the coordinator accepted a connection without authentication: "
			     "run the same dlrt version everywhere");
		goto fail;
	}
	if (rc == 0)
		dlrt_err_set(err, "the coordinator did not answer within %d ms", timeout_ms);
	if (rc <= 0)
		goto fail;
	if (f.type == DLRT_IP_ERROR) {
		struct dlrt_ip_text t;

		if (dlrt_ip_get_error(f.payload, f.len, &t, err) == 0)
			dlrt_err_set(err, "%s", t.text);
		goto fail;
	}
	{
		struct dlrt_ip_welcome w;

		if (f.type != DLRT_IP_WELCOME) {
			dlrt_err_set(err, "the coordinator answered %s to HELLO",
				     dlrt_ip_type_name(f.type));
			goto fail;
		}
		if (dlrt_ip_get_welcome(f.payload, f.len, &w, err) < 0)
			goto fail;
		c->epoch = w.epoch;
		c->id = w.id;
		c->heartbeat_ms = w.heartbeat_ms;
	}
	return 0;
fail:
	dlrt_ipc_close(c);
	return -1;
}

void dlrt_ipc_close(struct dlrt_ipc *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	dlrt_buf_free(&c->in);
	dlrt_buf_free(&c->out);
}
