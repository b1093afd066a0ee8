#include "peeruid.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

struct diag_req {
	struct nlmsghdr nlh;
	struct inet_diag_req_v2 r;
};

static int read_reply(int nl, const struct diag_req *q, uid_t *uid, struct dlrt_err *err);

/* The exact socket: the peer's address is its source, ours its destination.
 * A client may have connected from an IPv6 socket to the IPv4-mapped address
 * (torch's c10d client does, for "127.0.0.1"): the kernel files that socket
 * under AF_INET6 with ::ffff:a.b.c.d addresses, so that is asked second. */
static void fill_req(struct diag_req *q, int family, const struct sockaddr_in *peer,
		     const struct sockaddr_in *me)
{
	memset(q, 0, sizeof(*q));
	q->nlh.nlmsg_len = sizeof(*q);
	q->nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q->nlh.nlmsg_flags = NLM_F_REQUEST;
	q->r.sdiag_family = (uint8_t)family;
	q->r.sdiag_protocol = IPPROTO_TCP;
	q->r.idiag_states = ~0u;
	q->r.id.idiag_if = 0;
	if (!peer) /* an IPv6 connection: the caller fills in its addresses */
		goto cookie;
	q->r.id.idiag_sport = peer->sin_port;
	q->r.id.idiag_dport = me->sin_port;
	if (family == AF_INET6) {
		q->r.id.idiag_src[2] = q->r.id.idiag_dst[2] = htonl(0xffff);
		q->r.id.idiag_src[3] = peer->sin_addr.s_addr;
		q->r.id.idiag_dst[3] = me->sin_addr.s_addr;
	} else {
		q->r.id.idiag_src[0] = peer->sin_addr.s_addr;
		q->r.id.idiag_dst[0] = me->sin_addr.s_addr;
	}
cookie:
	q->r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	q->r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
}

/* Sends q and reads its answer. */
static int ask(int nl, struct diag_req *q, uid_t *uid, struct dlrt_err *err)
{
	static __thread uint32_t seq;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	q->nlh.nlmsg_seq = ++seq;
	if (sendto(nl, q, sizeof(*q), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return dlrt_err_errno(err, errno, "cannot ask the kernel who owns a socket");
	return read_reply(nl, q, uid, err);
}

/* Reads the answer to request `seq`: the socket's owner, after checking it
 * is that socket. A late answer to an earlier request (one whose wait timed
 * out) is skipped by its sequence number; a few reads at most. */
static int read_reply(int nl, const struct diag_req *q, uid_t *uid, struct dlrt_err *err)
{
	union {
		char buf[8192];
		struct nlmsghdr align;
	} u;

	for (int tries = 0; tries < 4; tries++) {
		ssize_t n;

		do
			n = recv(nl, u.buf, sizeof(u.buf), 0);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return dlrt_err_errno(err, errno, "no answer from the kernel's socket "
					      "diagnostics");
		for (struct nlmsghdr *h = &u.align; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			const struct inet_diag_msg *m;

			if (h->nlmsg_seq != q->nlh.nlmsg_seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error)
					return dlrt_err_errno(err, -e->error, "the peer's socket is "
							      "not known to the kernel");
				continue;
			}
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
				continue;
			m = NLMSG_DATA(h);
			if (m->idiag_family != q->r.sdiag_family ||
			    m->id.idiag_sport != q->r.id.idiag_sport ||
			    m->id.idiag_dport != q->r.id.idiag_dport ||
			    memcmp(m->id.idiag_src, q->r.id.idiag_src, sizeof(m->id.idiag_src)) ||
			    memcmp(m->id.idiag_dst, q->r.id.idiag_dst, sizeof(m->id.idiag_dst)))
				continue;
			*uid = (uid_t)m->idiag_uid;
			return 0;
		}
	}
	return dlrt_err_set(err, "the kernel's socket diagnostics did not name the peer's socket");
}

int dlrt_peeruid_open(struct dlrt_err *err)
{
	struct timeval tv = { .tv_sec = 1 };
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (nl < 0)
		return dlrt_err_errno(err, errno, "cannot open the kernel's socket diagnostics "
				      "(NETLINK_SOCK_DIAG)");
	/* The kernel answers within sendto(); the timeout only bounds the
	 * impossible. */
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return nl;
}

int dlrt_peeruid_lookup(int nl, const struct sockaddr_in *peer, const struct sockaddr_in *me,
			uid_t *uid, struct dlrt_err *err)
{
	struct diag_req q;
	int rc = -1;

	if (peer->sin_family != AF_INET || me->sin_family != AF_INET)
		return dlrt_err_set(err, "not a TCP/IPv4 connection");
	/* An IPv4 socket first (most clients), then an IPv6 one on the
	 * IPv4-mapped address. */
	for (int i = 0; i < 2 && rc < 0; i++) {
		fill_req(&q, i ? AF_INET6 : AF_INET, peer, me);
		rc = ask(nl, &q, uid, err);
	}
	return rc;
}

int dlrt_peeruid_lookup6(int nl, const struct sockaddr_in6 *peer, const struct sockaddr_in6 *me,
			 uid_t *uid, struct dlrt_err *err)
{
	struct diag_req q;

	if (peer->sin6_family != AF_INET6 || me->sin6_family != AF_INET6)
		return dlrt_err_set(err, "not a TCP/IPv6 connection");
	fill_req(&q, AF_INET6, NULL, NULL);
	q.r.id.idiag_sport = peer->sin6_port;
	q.r.id.idiag_dport = me->sin6_port;
	memcpy(q.r.id.idiag_src, &peer->sin6_addr, sizeof(q.r.id.idiag_src));
	memcpy(q.r.id.idiag_dst, &me->sin6_addr, sizeof(q.r.id.idiag_dst));
	return ask(nl, &q, uid, err);
}

int dlrt_peeruid_of(int fd, uid_t *uid, struct dlrt_err *err)
{
	struct sockaddr_in peer, me;
	socklen_t pl = sizeof(peer), ml = sizeof(me);
	int nl, rc;

	if (getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 ||
	    getsockname(fd, (struct sockaddr *)&me, &ml) < 0)
		return dlrt_err_errno(err, errno, "cannot read the connection's addresses");
	nl = dlrt_peeruid_open(err);
	if (nl < 0)
		return -1;
	rc = dlrt_peeruid_lookup(nl, &peer, &me, uid, err);
	close(nl);
	return rc;
}
