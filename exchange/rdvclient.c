/* rdvclient.c - a task's side of the step's rendezvous (rdvclient.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crypto.h"
#include "rdvclient.h"

/* torch 1.x TCPStore query bytes (launchers/torch/tcpstore.h). */
enum { Q_SET = 0, Q_GET = 2, Q_WAIT = 5 };

static const char seal_label[] = "dlrt rendezvous value v1";

void dlrt_rdv_env_format(char *out, uint16_t port, const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN])
{
	char h[DLRT_SVCAUTH_HEX_LEN + 1];

	dlrt_svcauth_hex(secret, DLRT_SVCAUTH_SECRET_LEN, h);
	snprintf(out, DLRT_RDV_ENV_MAX, "%u#%s", port, h);
	memset(h, 0, sizeof(h));
}

int dlrt_rdv_env_parse(const char *s, uint16_t *port, uint8_t secret[DLRT_SVCAUTH_SECRET_LEN])
{
	const char *hash = strchr(s, '#');
	unsigned long p = 0;

	if (!hash || hash == s || hash - s > 5 || strlen(hash + 1) != DLRT_SVCAUTH_HEX_LEN)
		return -1;
	for (const char *c = s; c < hash; c++) {
		if (*c < '0' || *c > '9')
			return -1;
		p = p * 10 + (unsigned long)(*c - '0');
	}
	if (p > 65535 || dlrt_svcauth_unhex(hash + 1, DLRT_SVCAUTH_SECRET_LEN, secret) < 0)
		return -1;
	*port = (uint16_t)p;
	return 0;
}

/* HMAC(secret, label || 0 || key || 0 || value): the key is bound in, so a
 * value signed for one key cannot be replayed under another. */
static void tag_of(const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN], const char *key,
		   const uint8_t *value, size_t vlen, uint8_t tag[DLRT_HMAC_LEN])
{
	size_t klen = strlen(key), n = sizeof(seal_label) + klen + 1 + vlen;
	uint8_t stackbuf[512], *msg = n <= sizeof(stackbuf) ? stackbuf : malloc(n);

	if (!msg) {
		memset(tag, 0, DLRT_HMAC_LEN); /* never matches a real tag's check below */
		return;
	}
	memcpy(msg, seal_label, sizeof(seal_label));
	memcpy(msg + sizeof(seal_label), key, klen + 1);
	memcpy(msg + sizeof(seal_label) + klen + 1, value, vlen);
	dlrt_crypto_hmac_sha256(secret, DLRT_SVCAUTH_SECRET_LEN, msg, n, tag);
	if (msg != stackbuf)
		free(msg);
}

void dlrt_rdv_seal(const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN], const char *key,
		   const char *value, char *out)
{
	uint8_t tag[DLRT_HMAC_LEN];
	size_t vlen = strlen(value);

	tag_of(secret, key, (const uint8_t *)value, vlen, tag);
	dlrt_svcauth_hex(tag, sizeof(tag), out);
	out[DLRT_SVCAUTH_HEX_LEN] = ' ';
	memcpy(out + DLRT_SVCAUTH_HEX_LEN + 1, value, vlen + 1);
}

int dlrt_rdv_open(const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN], const char *key,
		  const uint8_t *stored, size_t len, const uint8_t **value, size_t *vlen)
{
	uint8_t want[DLRT_HMAC_LEN], got[DLRT_HMAC_LEN];
	static const uint8_t zero[DLRT_HMAC_LEN];

	if (len < DLRT_SVCAUTH_HEX_LEN + 1 || stored[DLRT_SVCAUTH_HEX_LEN] != ' ' ||
	    dlrt_svcauth_unhex((const char *)stored, sizeof(got), got) < 0)
		return -1;
	*value = stored + DLRT_SVCAUTH_HEX_LEN + 1;
	*vlen = len - DLRT_SVCAUTH_HEX_LEN - 1;
	tag_of(secret, key, *value, *vlen, want);
	if (dlrt_crypto_equal(want, zero, sizeof(want)) || !dlrt_crypto_equal(want, got, sizeof(got)))
		return -1;
	return 0;
}

/* Waits for `events` on r->fd until the deadline: 1 ready, 0 timed out, -1 error. */
static int await_fd(struct dlrt_rdv *r, short events)
{
	for (;;) {
		int64_t left = r->deadline_ms - dlrt_now_ms();
		struct pollfd p = { .fd = r->fd, .events = events };
		int rc;

		if (left <= 0)
			return 0;
		rc = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -1;
		if (rc > 0)
			return 1;
	}
}

static int send_all(struct dlrt_rdv *r, const void *buf, size_t n, struct dlrt_err *err)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t w = send(r->fd, p, n, MSG_NOSIGNAL);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int rc = await_fd(r, POLLOUT);

			if (rc > 0)
				continue;
			if (rc == 0)
				return dlrt_err_set(err, "srun's rendezvous took longer than the exchange "
						    "timeout to take a request (is srun's host "
						    "overloaded?)");
		}
		if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
			return dlrt_err_set(err, "srun's rendezvous closed the connection (did srun "
					    "exit, or refuse this task's secret?)");
		return dlrt_err_errno(err, errno, "cannot send to srun's rendezvous");
	}
	return 0;
}

static int recv_all(struct dlrt_rdv *r, void *buf, size_t n, const char *waiting_for,
		    struct dlrt_err *err)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t got = recv(r->fd, p, n, 0);

		if (got > 0) {
			p += got;
			n -= (size_t)got;
			continue;
		}
		if (got == 0)
			return dlrt_err_set(err, "srun's rendezvous closed the connection while this "
					    "task waited for %s (did srun exit, or refuse this "
					    "task's secret?)", waiting_for);
		if (errno == EINTR)
			continue;
		if (errno == ECONNRESET)
			return dlrt_err_set(err, "srun's rendezvous closed the connection while this "
					    "task waited for %s (did srun exit, or refuse this "
					    "task's secret?)", waiting_for);
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int rc = await_fd(r, POLLIN);

			if (rc > 0)
				continue;
			if (rc == 0)
				return dlrt_err_set(err, "%s did not arrive at srun's rendezvous within "
						    "the exchange timeout (did the task that "
						    "publishes it start? see its node's slurmd log)",
						    waiting_for);
		}
		return dlrt_err_errno(err, errno, "cannot read from srun's rendezvous");
	}
	return 0;
}

/* How long a task waits before connecting again when the rendezvous hung up
 * before its answer could count: it closes the oldest connection still to
 * answer when a flood fills its room (services/tcpserver.h), or each new one
 * when out of descriptors. Short at first (a flood leaves a newer slot free at
 * once), doubling up to RETRY_MAX_MS so that the step's tasks do not hammer
 * a rendezvous that closes every connection; the exchange's deadline bounds
 * the tries. */
#define RETRY_MS 10
#define RETRY_MAX_MS 500

enum { TRY_OK = 0, TRY_HUNG_UP = 1, TRY_FAILED = -1 };

/* One connection and its challenge answered: TRY_OK, TRY_HUNG_UP (closed
 * before the challenge came: try again), TRY_FAILED (err says why). */
static int connect_once(struct dlrt_rdv *r, const struct sockaddr_in *sa, const char *ip,
			uint16_t port, struct dlrt_err *err)
{
	uint8_t challenge[DLRT_SVCAUTH_CHALLENGE_LEN], answer[DLRT_SVCAUTH_ANSWER_LEN];
	size_t got = 0;
	int one = 1, soerr = 0, rc;
	socklen_t len = sizeof(soerr);

	r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (r->fd < 0)
		return dlrt_err_errno(err, errno, "cannot open a socket to srun's rendezvous");
	setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(r->fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 && errno != EINPROGRESS)
		soerr = errno;
	else if ((rc = await_fd(r, POLLOUT)) == 0)
		return dlrt_err_set(err, "connecting to srun's rendezvous at %s:%u timed out: no "
				    "answer within the exchange timeout (is srun's host reachable "
				    "from this node?)", ip, port);
	else if (rc < 0 || getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		soerr = errno;
	if (soerr == ECONNREFUSED)
		return dlrt_err_set(err, "nothing listens at srun's rendezvous at %s:%u (connection "
				    "refused: did srun exit?)", ip, port);
	if (soerr)
		return dlrt_err_errno(err, soerr, "cannot connect to srun's rendezvous at %s:%u",
				      ip, port);
	while (got < sizeof(challenge)) {
		ssize_t n = recv(r->fd, challenge + got, sizeof(challenge) - got, 0);

		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n == 0 || errno == ECONNRESET)
			return TRY_HUNG_UP;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return dlrt_err_errno(err, errno, "cannot read from srun's rendezvous");
		rc = await_fd(r, POLLIN);
		if (rc == 0)
			return dlrt_err_set(err, "srun's rendezvous at %s:%u took the connection but "
					    "sent no challenge within the exchange timeout (is "
					    "srun's host overloaded?)", ip, port);
		if (rc < 0)
			return dlrt_err_errno(err, errno, "cannot read from srun's rendezvous");
	}
	/* The challenge with the end of file behind it: closed before our
	 * answer could count, as if before the challenge. */
	{
		uint8_t b;
		ssize_t n = recv(r->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return TRY_HUNG_UP;
	}
	dlrt_svcauth_answer(r->secret, challenge, answer);
	return send_all(r, answer, sizeof(answer), err);
}

int dlrt_rdv_connect(struct dlrt_rdv *r, const char *ip, uint16_t port,
		     const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN], int64_t deadline_ms,
		     struct dlrt_err *err)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	unsigned hangups = 0;
	int wait_ms = RETRY_MS;

	r->fd = -1;
	r->deadline_ms = deadline_ms;
	memcpy(r->secret, secret, sizeof(r->secret));
	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		return dlrt_err_set(err, "srun's address '%s' (SLURM_LAUNCH_NODE_IPADDR) is not an "
				    "IPv4 address", ip);
	for (;;) {
		int rc = connect_once(r, &sa, ip, port, err);

		if (rc == TRY_OK)
			return 0;
		close(r->fd);
		r->fd = -1;
		if (rc != TRY_HUNG_UP)
			break;
		hangups++;
		if (dlrt_now_ms() + wait_ms >= deadline_ms) {
			dlrt_err_set(err, "srun's rendezvous at %s:%u hung up before this task "
				     "could answer its challenge, %u times within the exchange "
				     "timeout: it is overloaded (another process flooding it with "
				     "connections, or out of descriptors?)", ip, port, hangups);
			break;
		}
		poll(NULL, 0, wait_ms);
		wait_ms = wait_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : wait_ms * 2;
	}
	dlrt_rdv_close(r);
	return -1;
}

/* A string as torch's TCPStore sends it: its 64-bit length, then its bytes. */
static size_t put_str(uint8_t *out, const void *s, size_t n)
{
	uint64_t len = n;

	memcpy(out, &len, sizeof(len));
	memcpy(out + sizeof(len), s, n);
	return sizeof(len) + n;
}

int dlrt_rdv_set(struct dlrt_rdv *r, const char *key, const char *value, struct dlrt_err *err)
{
	size_t klen = strlen(key), vlen = strlen(value), slen = DLRT_SVCAUTH_HEX_LEN + 1 + vlen;
	uint8_t *msg = malloc(1 + 8 + klen + 8 + slen + 1);
	char *sealed = malloc(slen + 1);
	size_t n = 0;
	int rc;

	if (!msg || !sealed) {
		free(msg);
		free(sealed);
		return dlrt_err_set(err, "out of memory");
	}
	if (vlen > DLRT_RDV_VALUE_MAX) {
		free(msg);
		free(sealed);
		return dlrt_err_set(err, "the value of %s is %zu bytes, more than the rendezvous "
				    "takes (%d)", key, vlen, DLRT_RDV_VALUE_MAX);
	}
	dlrt_rdv_seal(r->secret, key, value, sealed);
	msg[n++] = Q_SET;
	n += put_str(msg + n, key, klen);
	n += put_str(msg + n, sealed, slen);
	rc = send_all(r, msg, n, err);
	free(msg);
	free(sealed);
	return rc;
}

int dlrt_rdv_get_send(struct dlrt_rdv *r, const char *const *keys, size_t n,
		      struct dlrt_err *err)
{
	size_t len = 1 + 8, off = 0;
	uint8_t *msg;
	int rc;

	for (size_t i = 0; i < n; i++)
		len += 2 * (1 + 8 + strlen(keys[i]));
	msg = malloc(len);
	if (!msg)
		return dlrt_err_set(err, "out of memory");
	/* One WAIT for all the keys, then one GET per key, in one write: the
	 * store parks the WAIT and reads the GETs only after answering it. */
	msg[off++] = Q_WAIT;
	{
		uint64_t count = n;

		memcpy(msg + off, &count, sizeof(count));
		off += sizeof(count);
	}
	for (size_t i = 0; i < n; i++)
		off += put_str(msg + off, keys[i], strlen(keys[i]));
	for (size_t i = 0; i < n; i++) {
		msg[off++] = Q_GET;
		off += put_str(msg + off, keys[i], strlen(keys[i]));
	}
	rc = send_all(r, msg, off, err);
	free(msg);
	return rc;
}

int dlrt_rdv_get_recv(struct dlrt_rdv *r, const char *const *keys, size_t n, char **values,
		      struct dlrt_err *err)
{
	uint8_t ok = 1;
	int rc = -1;

	for (size_t i = 0; i < n; i++)
		values[i] = NULL;
	if (recv_all(r, &ok, 1, n == 1 ? keys[0] : "the keys of every node", err) < 0)
		goto out;
	if (ok != 0) {
		dlrt_err_set(err, "srun's rendezvous answered a wait with %u: not dlrt's store?", ok);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t vlen;
		const uint8_t *v;
		size_t plen;
		uint8_t *stored;

		if (recv_all(r, &vlen, sizeof(vlen), keys[i], err) < 0)
			goto out;
		if (vlen > DLRT_SVCAUTH_HEX_LEN + 1 + DLRT_RDV_VALUE_MAX) {
			dlrt_err_set(err, "srun's rendezvous sent %llu bytes for %s, more than any "
				     "task sets", (unsigned long long)vlen, keys[i]);
			goto out;
		}
		stored = malloc(vlen + 1);
		if (!stored) {
			dlrt_err_set(err, "out of memory");
			goto out;
		}
		if (recv_all(r, stored, vlen, keys[i], err) < 0) {
			free(stored);
			goto out;
		}
		if (dlrt_rdv_open(r->secret, keys[i], stored, vlen, &v, &plen) < 0 ||
		    memchr(v, '\0', plen)) {
			free(stored);
			dlrt_err_set(err, "the value of %s at srun's rendezvous is not signed with "
				     "this step's secret: someone else's process answered? (see "
				     "docs/SECURITY.md)", keys[i]);
			goto out;
		}
		memmove(stored, v, plen);
		stored[plen] = '\0';
		values[i] = (char *)stored;
	}
	rc = 0;
out:
	if (rc < 0)
		for (size_t i = 0; i < n; i++) {
			free(values[i]);
			values[i] = NULL;
		}
	return rc;
}

int dlrt_rdv_get(struct dlrt_rdv *r, const char *const *keys, size_t n, char **values,
		 struct dlrt_err *err)
{
	for (size_t i = 0; i < n; i++)
		values[i] = NULL;
	if (dlrt_rdv_get_send(r, keys, n, err) < 0)
		return -1;
	return dlrt_rdv_get_recv(r, keys, n, values, err);
}

void dlrt_rdv_close(struct dlrt_rdv *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	memset(r->secret, 0, sizeof(r->secret));
}
