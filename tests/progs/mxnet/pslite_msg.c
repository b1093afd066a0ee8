/* pslite_msg.c - encode and strictly decode pslite_contract's messages. */
#include "pslite_msg.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>

#define MAX_ID (9 + 2 * (DLRT_PSLITE_MAX_NODES - 1))

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

static uint8_t *wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return p + 2;
}

static uint8_t *wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

static uint8_t *wr64(uint8_t *p, uint64_t v)
{
	return wr32(wr32(p, (uint32_t)(v >> 32)), (uint32_t)v);
}

const char *dlrt_pslite_role_name(uint8_t role)
{
	switch (role) {
	case DLRT_PSLITE_SERVER: return "server";
	case DLRT_PSLITE_WORKER: return "worker";
	case DLRT_PSLITE_SCHEDULER: return "scheduler";
	}
	return "?";
}

const char *dlrt_pslite_type_name(uint16_t type)
{
	static const char *const names[] = {
		"?", "ADD_NODE", "NODE_TABLE", "HELLO", "BARRIER", "BARRIER_DONE",
		"HEARTBEAT", "PUSH", "PUSH_ACK", "PULL", "PULL_REPLY",
	};

	return type <= DLRT_PSLITE_TYPE_MAX ? names[type] : "?";
}

/* A server or worker id as ps-lite assigns them; sets *role and *rank. */
static int id_split(int32_t id, uint8_t *role, uint32_t *rank)
{
	if (id < 8 || id > MAX_ID)
		return -1;
	*role = (id & 1) ? DLRT_PSLITE_WORKER : DLRT_PSLITE_SERVER;
	*rank = (uint32_t)(id - ((id & 1) ? 9 : 8)) / 2;
	return 0;
}

/* role, ip, port as in ADD_NODE and a table entry. */
static int node_read(const uint8_t **pp, const uint8_t *end, struct dlrt_pslite_node *n,
		     struct dlrt_err *err)
{
	const uint8_t *p = *pp;
	struct in_addr a;
	uint8_t iplen;

	if (end - p < 2)
		return dlrt_err_set(err, "truncated node entry");
	n->role = p[0];
	iplen = p[1];
	p += 2;
	if (n->role != DLRT_PSLITE_SERVER && n->role != DLRT_PSLITE_WORKER)
		return dlrt_err_set(err, "node role %u is neither server (0) nor worker (1)", n->role);
	if (iplen == 0 || iplen >= DLRT_PSLITE_IP_MAX)
		return dlrt_err_set(err, "node address length %u is not 1..%u", iplen,
				    DLRT_PSLITE_IP_MAX - 1);
	if (end - p < iplen + 2)
		return dlrt_err_set(err, "truncated node entry");
	memcpy(n->ip, p, iplen);
	n->ip[iplen] = '\0';
	/* ZMQ binds numeric addresses only (docs/contracts.md, mxnet). */
	if (strlen(n->ip) != iplen || inet_pton(AF_INET, n->ip, &a) != 1)
		return dlrt_err_set(err, "node address is not a numeric IPv4 address");
	p += iplen;
	n->port = rd16(p);
	if (n->port == 0)
		return dlrt_err_set(err, "node port is 0");
	*pp = p + 2;
	return 0;
}

static int decode_table(const uint8_t *b, size_t blen, struct dlrt_pslite_msg *m,
			struct dlrt_err *err)
{
	/* One bit per possible id: the table must hold every rank once. */
	uint8_t seen[MAX_ID / 8 + 1];
	uint32_t max_rank[2] = { 0, 0 };
	const uint8_t *p = b + 6, *end = b + blen;
	bool found_self = false;
	uint8_t role;
	uint32_t rank;

	if (blen < 6)
		return dlrt_err_set(err, "NODE_TABLE body of %zu bytes is too short", blen);
	m->your_id = (int32_t)rd32(b);
	m->nnodes = rd16(b + 4);
	m->nservers = m->nworkers = 0;
	if (m->nnodes == 0 || m->nnodes > DLRT_PSLITE_MAX_NODES)
		return dlrt_err_set(err, "NODE_TABLE with %u nodes (1..%u allowed)", m->nnodes,
				    DLRT_PSLITE_MAX_NODES);
	if (id_split(m->your_id, &role, &rank) < 0)
		return dlrt_err_set(err, "NODE_TABLE gives the invalid id %d", (int)m->your_id);
	memset(seen, 0, sizeof(seen));
	m->table = p;
	for (uint16_t i = 0; i < m->nnodes; i++) {
		struct dlrt_pslite_node n;

		if (end - p < 4)
			return dlrt_err_set(err, "NODE_TABLE truncated at entry %u", i);
		n.id = (int32_t)rd32(p);
		p += 4;
		if (node_read(&p, end, &n, err) < 0)
			return -1;
		if (id_split(n.id, &role, &rank) < 0 || role != n.role)
			return dlrt_err_set(err, "NODE_TABLE entry %u: id %d does not fit role %s",
					    i, (int)n.id, dlrt_pslite_role_name(n.role));
		if (seen[n.id / 8] & (1u << (n.id % 8)))
			return dlrt_err_set(err, "NODE_TABLE lists id %d twice", (int)n.id);
		seen[n.id / 8] |= (uint8_t)(1u << (n.id % 8));
		if (rank > max_rank[role])
			max_rank[role] = rank;
		if (role == DLRT_PSLITE_SERVER)
			m->nservers++;
		else
			m->nworkers++;
		if (n.id == m->your_id)
			found_self = true;
	}
	if (p != end)
		return dlrt_err_set(err, "NODE_TABLE has %td bytes after its last entry", end - p);
	/* Unique ids and the highest rank below the count: ranks are 0..n-1. */
	if ((m->nservers && max_rank[DLRT_PSLITE_SERVER] >= m->nservers) ||
	    (m->nworkers && max_rank[DLRT_PSLITE_WORKER] >= m->nworkers))
		return dlrt_err_set(err, "NODE_TABLE ranks are not contiguous from 0");
	if (!found_self)
		return dlrt_err_set(err, "NODE_TABLE does not list the receiver's id %d",
				    (int)m->your_id);
	m->table_len = (size_t)(end - m->table);
	return 0;
}

static int decode_kv(const uint8_t *b, size_t blen, struct dlrt_pslite_msg *m,
		     struct dlrt_err *err)
{
	bool has_values = m->type == DLRT_PSLITE_PUSH || m->type == DLRT_PSLITE_PULL_REPLY;
	bool from_worker = m->type == DLRT_PSLITE_PUSH || m->type == DLRT_PSLITE_PULL;
	uint8_t role;
	uint32_t rank;

	if (id_split(m->sender, &role, &rank) < 0 ||
	    role != (from_worker ? DLRT_PSLITE_WORKER : DLRT_PSLITE_SERVER))
		return dlrt_err_set(err, "%s from id %d, which is not a %s",
				    dlrt_pslite_type_name(m->type), (int)m->sender,
				    from_worker ? "worker" : "server");
	if (blen < DLRT_PSLITE_KV_HDR)
		return dlrt_err_set(err, "%s body of %zu bytes is too short",
				    dlrt_pslite_type_name(m->type), blen);
	m->round = rd32(b);
	m->key = rd64(b + 4);
	m->count = rd32(b + 12);
	if (m->count == 0 || m->count > DLRT_PSLITE_MAX_VALUES ||
	    m->key > DLRT_PSLITE_MAX_VALUES - m->count)
		return dlrt_err_set(err, "%s keys [%llu, +%u) are outside 0..%u",
				    dlrt_pslite_type_name(m->type), (unsigned long long)m->key,
				    m->count, DLRT_PSLITE_MAX_VALUES);
	if (blen != DLRT_PSLITE_KV_HDR + (has_values ? 8u * (size_t)m->count : 0))
		return dlrt_err_set(err, "%s of %u keys has a %zu-byte body",
				    dlrt_pslite_type_name(m->type), m->count, blen);
	m->values = has_values ? b + DLRT_PSLITE_KV_HDR : NULL;
	return 0;
}

int dlrt_pslite_msg_decode(const uint8_t *p, size_t len, struct dlrt_pslite_msg *m,
			   size_t *used, struct dlrt_err *err)
{
	uint32_t magic, blen;
	uint16_t version;
	const uint8_t *b;
	uint8_t role;
	uint32_t rank;

	if (len < DLRT_PSLITE_HDR_LEN)
		return 0;
	memset(m, 0, sizeof(*m));
	magic = rd32(p);
	version = rd16(p + 4);
	m->type = rd16(p + 6);
	m->sender = (int32_t)rd32(p + 8);
	blen = rd32(p + 12);
	if (magic != DLRT_PSLITE_MAGIC)
		return dlrt_err_set(err, "bad magic 0x%08x (not a pslite_contract peer)", magic);
	if (version != DLRT_PSLITE_VERSION)
		return dlrt_err_set(err, "protocol version %u, expected %u", version,
				    DLRT_PSLITE_VERSION);
	if (m->type == 0 || m->type > DLRT_PSLITE_TYPE_MAX)
		return dlrt_err_set(err, "unknown message type %u", m->type);
	if (blen > DLRT_PSLITE_MAX_BODY)
		return dlrt_err_set(err, "%s body of %u bytes is over the %u-byte limit",
				    dlrt_pslite_type_name(m->type), blen, DLRT_PSLITE_MAX_BODY);
	if (len - DLRT_PSLITE_HDR_LEN < blen)
		return 0;
	b = p + DLRT_PSLITE_HDR_LEN;
	switch (m->type) {
	case DLRT_PSLITE_ADD_NODE: {
		const uint8_t *q = b;

		if (m->sender != 0)
			return dlrt_err_set(err, "ADD_NODE from id %d: a new node has no id yet",
					    (int)m->sender);
		if (node_read(&q, b + blen, &m->node, err) < 0)
			return -1;
		if (q != b + blen)
			return dlrt_err_set(err, "ADD_NODE has trailing bytes");
		break;
	}
	case DLRT_PSLITE_NODE_TABLE:
		if (m->sender != DLRT_PSLITE_SCHED_ID)
			return dlrt_err_set(err, "NODE_TABLE from id %d, not the scheduler",
					    (int)m->sender);
		if (decode_table(b, blen, m, err) < 0)
			return -1;
		break;
	case DLRT_PSLITE_BARRIER_DONE:
	case DLRT_PSLITE_HELLO:
	case DLRT_PSLITE_BARRIER:
	case DLRT_PSLITE_HEARTBEAT:
		if (m->type == DLRT_PSLITE_BARRIER_DONE ? m->sender != DLRT_PSLITE_SCHED_ID
		    : id_split(m->sender, &role, &rank) < 0)
			return dlrt_err_set(err, "%s from the unexpected id %d",
					    dlrt_pslite_type_name(m->type), (int)m->sender);
		if (blen != 4)
			return dlrt_err_set(err, "%s body of %u bytes, expected 4",
					    dlrt_pslite_type_name(m->type), blen);
		m->arg = rd32(b);
		if (m->arg > ((m->type == DLRT_PSLITE_BARRIER || m->type == DLRT_PSLITE_BARRIER_DONE)
			      ? DLRT_PSLITE_BARRIER_FINALIZE : 0))
			return dlrt_err_set(err, "%s with the invalid argument %u",
					    dlrt_pslite_type_name(m->type), m->arg);
		break;
	default:
		if (decode_kv(b, blen, m, err) < 0)
			return -1;
		break;
	}
	*used = DLRT_PSLITE_HDR_LEN + (size_t)blen;
	return 1;
}

int dlrt_pslite_table_next(const struct dlrt_pslite_msg *m, size_t *off,
			   struct dlrt_pslite_node *out)
{
	const uint8_t *p = m->table + *off, *end = m->table + m->table_len;

	/* The table was validated by the decoder, so this cannot fail. */
	if (*off >= m->table_len || end - p < 4)
		return 0;
	out->id = (int32_t)rd32(p);
	p += 4;
	if (node_read(&p, end, out, NULL) < 0)
		return 0;
	*off = (size_t)(p - m->table);
	return 1;
}

int64_t dlrt_pslite_value(const struct dlrt_pslite_msg *m, uint32_t i)
{
	return (int64_t)rd64(m->values + 8u * (size_t)i);
}

/* Appends the header and returns where the body goes (reserved). */
static uint8_t *put_hdr(struct dlrt_buf *out, uint16_t type, int32_t sender, size_t blen,
			struct dlrt_err *err)
{
	uint8_t *p;

	if (blen > DLRT_PSLITE_MAX_BODY) {
		dlrt_err_set(err, "%s body of %zu bytes is over the limit",
			     dlrt_pslite_type_name(type), blen);
		return NULL;
	}
	if (dlrt_buf_reserve(out, DLRT_PSLITE_HDR_LEN + blen) < 0) {
		dlrt_err_set(err, "output buffer full (%zu bytes queued): the peer does not read",
			     out->len);
		return NULL;
	}
	p = dlrt_buf_head(out) + out->len;
	p = wr32(p, DLRT_PSLITE_MAGIC);
	p = wr16(p, DLRT_PSLITE_VERSION);
	p = wr16(p, type);
	p = wr32(p, (uint32_t)sender);
	p = wr32(p, (uint32_t)blen);
	return p;
}

static int node_check(const struct dlrt_pslite_node *n, struct dlrt_err *err)
{
	struct in_addr a;
	size_t l = strnlen(n->ip, DLRT_PSLITE_IP_MAX);

	if ((n->role != DLRT_PSLITE_SERVER && n->role != DLRT_PSLITE_WORKER) || l == 0 ||
	    l >= DLRT_PSLITE_IP_MAX || inet_pton(AF_INET, n->ip, &a) != 1 || n->port == 0)
		return dlrt_err_set(err, "invalid node (role %u, %.16s:%u)", n->role, n->ip,
				    n->port);
	return 0;
}

static uint8_t *node_write(uint8_t *p, const struct dlrt_pslite_node *n)
{
	size_t l = strlen(n->ip);

	*p++ = n->role;
	*p++ = (uint8_t)l;
	memcpy(p, n->ip, l);
	return wr16(p + l, n->port);
}

int dlrt_pslite_put_add_node(struct dlrt_buf *out, const struct dlrt_pslite_node *self,
			     struct dlrt_err *err)
{
	uint8_t *p;

	if (node_check(self, err) < 0)
		return -1;
	p = put_hdr(out, DLRT_PSLITE_ADD_NODE, 0, 4 + strlen(self->ip), err);
	if (!p)
		return -1;
	p = node_write(p, self);
	out->len = (size_t)(p - dlrt_buf_head(out));
	return 0;
}

int dlrt_pslite_put_table(struct dlrt_buf *out, int32_t your_id,
			  const struct dlrt_pslite_node *nodes, size_t n, struct dlrt_err *err)
{
	size_t blen = 6;
	uint8_t *p;

	if (n == 0 || n > DLRT_PSLITE_MAX_NODES)
		return dlrt_err_set(err, "a node table of %zu nodes (1..%u allowed)", n,
				    DLRT_PSLITE_MAX_NODES);
	for (size_t i = 0; i < n; i++) {
		if (node_check(&nodes[i], err) < 0)
			return -1;
		blen += 8 + strlen(nodes[i].ip);
	}
	p = put_hdr(out, DLRT_PSLITE_NODE_TABLE, DLRT_PSLITE_SCHED_ID, blen, err);
	if (!p)
		return -1;
	p = wr32(p, (uint32_t)your_id);
	p = wr16(p, (uint16_t)n);
	for (size_t i = 0; i < n; i++)
		p = node_write(wr32(p, (uint32_t)nodes[i].id), &nodes[i]);
	out->len = (size_t)(p - dlrt_buf_head(out));
	return 0;
}

int dlrt_pslite_put_ctl(struct dlrt_buf *out, uint16_t type, int32_t sender, uint32_t arg,
			struct dlrt_err *err)
{
	uint8_t *p;

	if (type != DLRT_PSLITE_HELLO && type != DLRT_PSLITE_BARRIER &&
	    type != DLRT_PSLITE_BARRIER_DONE && type != DLRT_PSLITE_HEARTBEAT)
		return dlrt_err_set(err, "%s is not a control message", dlrt_pslite_type_name(type));
	p = put_hdr(out, type, sender, 4, err);
	if (!p)
		return -1;
	p = wr32(p, arg);
	out->len = (size_t)(p - dlrt_buf_head(out));
	return 0;
}

int dlrt_pslite_put_kv(struct dlrt_buf *out, uint16_t type, int32_t sender, uint32_t round,
		       uint64_t key, uint32_t count, const int64_t *values,
		       struct dlrt_err *err)
{
	bool has_values = type == DLRT_PSLITE_PUSH || type == DLRT_PSLITE_PULL_REPLY;
	uint8_t *p;

	if (type < DLRT_PSLITE_PUSH || type > DLRT_PSLITE_PULL_REPLY)
		return dlrt_err_set(err, "%s is not a key/value message",
				    dlrt_pslite_type_name(type));
	if (has_values != (values != NULL) || count == 0 || count > DLRT_PSLITE_MAX_VALUES)
		return dlrt_err_set(err, "%s of %u values: invalid", dlrt_pslite_type_name(type),
				    count);
	p = put_hdr(out, type, sender, DLRT_PSLITE_KV_HDR + (has_values ? 8u * (size_t)count : 0),
		    err);
	if (!p)
		return -1;
	p = wr32(p, round);
	p = wr64(p, key);
	p = wr32(p, count);
	for (uint32_t i = 0; has_values && i < count; i++)
		p = wr64(p, (uint64_t)values[i]);
	out->len = (size_t)(p - dlrt_buf_head(out));
	return 0;
}
