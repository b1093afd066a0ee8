#include "svcauth.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crypto.h"
#include "common/netaddr.h"

/* Bind an answer to its use, so an HMAC made for anything else with the
 * same key can never pass, and a node's hold on the service (svchold.h) can
 * never be taken for a client's connection, nor the other way round. */
#define LABEL_MAX 32
static const char *const labels[] = {
	[DLRT_SVCAUTH_CLIENT] = "dlrt step service v1",
	[DLRT_SVCAUTH_HOLD] = "dlrt step hold v1",
};

static void mac(enum dlrt_svcauth_use use, const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
		const uint8_t challenge[DLRT_SVCAUTH_CHALLENGE_LEN], uint8_t out[DLRT_HMAC_LEN])
{
	uint8_t msg[LABEL_MAX + DLRT_SVCAUTH_CHALLENGE_LEN];
	size_t len = strlen(labels[use]) + 1; /* with its NUL, as before there were two */

	memcpy(msg, labels[use], len);
	memcpy(msg + len, challenge, DLRT_SVCAUTH_CHALLENGE_LEN);
	dlrt_crypto_hmac_sha256(secret, DLRT_SVCAUTH_SECRET_LEN, msg,
				len + DLRT_SVCAUTH_CHALLENGE_LEN, out);
}

void dlrt_svcauth_answer_for(enum dlrt_svcauth_use use,
			     const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			     const uint8_t challenge[DLRT_SVCAUTH_CHALLENGE_LEN],
			     uint8_t out[DLRT_SVCAUTH_ANSWER_LEN])
{
	mac(use, secret, challenge, out);
}

bool dlrt_svcauth_check_for(enum dlrt_svcauth_use use,
			    const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			    const uint8_t challenge[DLRT_SVCAUTH_CHALLENGE_LEN],
			    const uint8_t answer[DLRT_SVCAUTH_ANSWER_LEN])
{
	uint8_t want[DLRT_HMAC_LEN];

	mac(use, secret, challenge, want);
	return dlrt_crypto_equal(want, answer, DLRT_SVCAUTH_ANSWER_LEN);
}

void dlrt_svcauth_answer(const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			 const uint8_t challenge[DLRT_SVCAUTH_CHALLENGE_LEN],
			 uint8_t out[DLRT_SVCAUTH_ANSWER_LEN])
{
	mac(DLRT_SVCAUTH_CLIENT, secret, challenge, out);
}

bool dlrt_svcauth_check(const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			const uint8_t challenge[DLRT_SVCAUTH_CHALLENGE_LEN],
			const uint8_t answer[DLRT_SVCAUTH_ANSWER_LEN])
{
	return dlrt_svcauth_check_for(DLRT_SVCAUTH_CLIENT, secret, challenge, answer);
}

void dlrt_svcauth_hex(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int dlrt_svcauth_unhex(const char *in, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(in[2 * i]), lo = hi < 0 ? -1 : hexval(in[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

void dlrt_svcaddr_format(char *out, const char *ip, uint16_t port,
			 const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN])
{
	int n = snprintf(out, DLRT_SVCADDR_MAX, "%s:%u#", ip, port);

	if (n > 0 && (size_t)n + DLRT_SVCAUTH_HEX_LEN < DLRT_SVCADDR_MAX)
		dlrt_svcauth_hex(secret, DLRT_SVCAUTH_SECRET_LEN, out + n);
}

int dlrt_svcaddr_parse(const char *s, size_t len, char ip[16], uint16_t *port,
		       uint8_t secret[DLRT_SVCAUTH_SECRET_LEN])
{
	const char *hash = memchr(s, '#', len);
	char hp[32];
	size_t hplen;

	if (!hash || (size_t)(s + len - hash - 1) != DLRT_SVCAUTH_HEX_LEN)
		return -1;
	hplen = (size_t)(hash - s);
	if (hplen == 0 || hplen >= sizeof(hp) || memchr(s, '\0', hplen))
		return -1;
	memcpy(hp, s, hplen);
	hp[hplen] = '\0';
	if (dlrt_net_parse_hostport(hp, ip, port) < 0 || !*port)
		return -1;
	return dlrt_svcauth_unhex(hash + 1, DLRT_SVCAUTH_SECRET_LEN, secret);
}

int dlrt_svcauth_read_secret(int fd, int timeout_ms, uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
			     struct dlrt_err *err)
{
	int64_t end = dlrt_now_ms() + timeout_ms;
	uint8_t buf[DLRT_SVCAUTH_SECRET_LEN + 1];
	size_t n = 0;
	int rc = -1;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = end - dlrt_now_ms();
		ssize_t r;

		if (left <= 0) {
			dlrt_err_set(err, "--secret-fd %d: no secret within %d ms: the launcher must "
				     "write %d bytes and close the pipe", fd, timeout_ms,
				     DLRT_SVCAUTH_SECRET_LEN);
			break;
		}
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR) {
			dlrt_err_errno(err, errno, "--secret-fd %d: cannot wait for the secret", fd);
			break;
		}
		r = read(fd, buf + n, sizeof(buf) - n);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0) {
			dlrt_err_errno(err, errno, "--secret-fd %d: cannot read the secret: pass "
				       "the read end of a pipe", fd);
			break;
		}
		if (r == 0) {
			if (n == DLRT_SVCAUTH_SECRET_LEN) {
				memcpy(secret, buf, n);
				rc = 0;
			} else {
				dlrt_err_set(err, "--secret-fd %d: got %zu bytes, want exactly %d "
					     "then end of file", fd, n, DLRT_SVCAUTH_SECRET_LEN);
			}
			break;
		}
		n += (size_t)r;
		if (n > DLRT_SVCAUTH_SECRET_LEN) {
			dlrt_err_set(err, "--secret-fd %d: more than %d bytes: write exactly the "
				     "secret", fd, DLRT_SVCAUTH_SECRET_LEN);
			break;
		}
	}
	memset(buf, 0, sizeof(buf));
	close(fd);
	return rc;
}
