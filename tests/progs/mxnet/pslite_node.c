/* pslite_node.c - servers and workers of the ps-lite contract test.
 *
 * Start-up as ps-lite's Van::Start: bind DMLC_NODE_HOST:PORT, register
 * ADD_NODE{role, ip, port} with the scheduler, wait for the node table, then
 * connect to the nodes of the other role only (zmq_van.h Connect: workers do
 * not connect to workers, servers not to servers) and enter the start barrier.
 *
 * Then a synchronous data-parallel step as MXNet's dist_sync kvstore does it:
 * each worker pushes a vector split in contiguous key ranges over the servers
 * (ps-lite's range partition), each server sums the pushes of all workers for
 * the round and answers pulls once every worker has pushed, and each worker
 * checks every pulled element. Values depend on the worker, the round and the
 * key, so a lost, stale or misplaced slice is caught:
 *   value(w, r, k) = (w + 1)(r + 1) + k r      (round 0: w + 1 everywhere)
 *   sum(r, k)      = (r + 1) NW(NW + 1)/2 + NW k r
 * Finally every node enters the final barrier (ps::Finalize(…, true)).
 *
 * Replies travel on the server's own connection to the worker, as ps-lite
 * routes every message through the sender's DEALER to the receiver's ROUTER:
 * both sides' advertised addresses are therefore exercised.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/evloop.h"
#include "pslite_contract.h"

/* How long a lost server/worker waits for the scheduler's loss to show. */
#define PEER_GRACE_MS 500

static uint8_t other_role(const struct psc *p)
{
	return p->role == DLRT_PSLITE_SERVER ? DLRT_PSLITE_WORKER : DLRT_PSLITE_SERVER;
}

static void range_of(const struct psc *p, uint32_t s, uint64_t *lo, uint32_t *cnt)
{
	uint64_t a = (uint64_t)p->o.vlen * s / p->ns, b = (uint64_t)p->o.vlen * (s + 1) / p->ns;

	*lo = a;
	*cnt = (uint32_t)(b - a);
}

static int64_t want_sum(const struct psc *p, uint32_t r, uint64_t k)
{
	return (int64_t)(r + 1) * p->nw * (p->nw + 1) / 2 + (int64_t)p->nw * (int64_t)k * r;
}

static void peer_describe(const struct psc *p, uint32_t rank, char *out, size_t len)
{
	const struct dlrt_pslite_node *t = other_role(p) == DLRT_PSLITE_SERVER ? p->servers
									      : p->workers;

	psc_describe(out, len, &t[rank], rank);
}

static int on_table(struct psc *p, struct pnet_conn *c, const struct dlrt_pslite_msg *m,
		    struct dlrt_err *err)
{
	struct dlrt_pslite_node n;
	size_t off = 0;
	char rank[16];

	if (p->have_table || c->outgoing)
		return dlrt_err_set(err, "unexpected NODE_TABLE from %s", c->what);
	if (m->nservers != p->ns || m->nworkers != p->nw)
		return dlrt_err_set(err, "the scheduler's table has %u servers and %u workers but "
				    "here DMLC_NUM_SERVER=%u DMLC_NUM_WORKER=%u", m->nservers,
				    m->nworkers, p->ns, p->nw);
	while (dlrt_pslite_table_next(m, &off, &n)) {
		uint32_t r = (uint32_t)(n.id - (n.role == DLRT_PSLITE_SERVER ? 8 : 9)) / 2;

		if (n.role == DLRT_PSLITE_SERVER)
			p->servers[r] = n;
		else
			p->workers[r] = n;
		if (n.id == m->your_id &&
		    (n.role != p->role || strcmp(n.ip, p->ip) || n.port != p->port))
			return dlrt_err_set(err, "the scheduler gave id %d to %s %s:%u, but this "
					    "is %s %s:%u", (int)n.id, dlrt_pslite_role_name(n.role),
					    n.ip, n.port, dlrt_pslite_role_name(p->role), p->ip,
					    p->port);
		if (n.id == m->your_id)
			p->rank = r;
	}
	p->my_id = m->your_id;
	p->have_table = true;
	c->peer_id = DLRT_PSLITE_SCHED_ID;
	snprintf(c->what, sizeof(c->what), "the scheduler at %s:%u", p->root_ip, p->root_port);
	p->sched_in = c;
	/* ps-lite exports the rank the scheduler chose (van.cc UpdateLocalID). */
	snprintf(rank, sizeof(rank), "%u", p->rank);
	setenv("DMLC_RANK", rank, 1);
	snprintf(p->net.who, sizeof(p->net.who), "%s %u", dlrt_pslite_role_name(p->role), p->rank);
	return 0;
}

static int on_hello(struct psc *p, struct pnet_conn *c, const struct dlrt_pslite_msg *m,
		    struct dlrt_err *err)
{
	bool from_worker = m->sender & 1;
	uint32_t r = (uint32_t)(m->sender - (from_worker ? 9 : 8)) / 2;

	if (c->outgoing || c->peer_id != -1)
		return dlrt_err_set(err, "unexpected HELLO from %s", c->what);
	/* ps-lite connects servers to workers and workers to servers only. */
	if ((from_worker ? DLRT_PSLITE_WORKER : DLRT_PSLITE_SERVER) != other_role(p) ||
	    r >= p->npeers)
		return dlrt_err_set(err, "%s connected as id %d, not one of the %u %ss",
				    c->what, (int)m->sender, p->npeers,
				    dlrt_pslite_role_name(other_role(p)));
	if (p->peer_in[r])
		return dlrt_err_set(err, "id %d connected twice", (int)m->sender);
	p->peer_in[r] = c;
	c->peer_id = m->sender;
	c->tag = r;
	snprintf(c->what, sizeof(c->what), "%s %u (id %d)", dlrt_pslite_role_name(other_role(p)),
		 r, (int)m->sender);
	return 0;
}

static int serve_pull(struct psc *p, uint32_t w, struct dlrt_err *err)
{
	uint32_t r = p->pending_pull[w];
	struct psc_slot *s = &p->slot[r % 2];

	if (r == PSC_NONE || s->round != r || s->pushed < p->nw)
		return 0;
	if (dlrt_pslite_put_kv(&p->peer_out[w]->out, DLRT_PSLITE_PULL_REPLY, p->my_id, r,
			       p->key_lo, (uint32_t)(p->key_hi - p->key_lo), s->sum, err) < 0)
		return -1;
	p->pending_pull[w] = PSC_NONE;
	p->next_pull[w]++;
	p->served++;
	if (++s->pulled == p->nw)
		s->round = PSC_NONE;
	return 0;
}

static int server_kv(struct psc *p, uint32_t w, const struct dlrt_pslite_msg *m,
		     struct dlrt_err *err)
{
	uint32_t cnt = (uint32_t)(p->key_hi - p->key_lo);
	struct psc_slot *s = &p->slot[m->round % 2];
	char who[128];

	peer_describe(p, w, who, sizeof(who));
	if (m->key != p->key_lo || m->count != cnt)
		return dlrt_err_set(err, "%s sent keys [%llu, %llu) but this server holds [%llu, "
				    "%llu): use the same --vector-len and DMLC_NUM_SERVER everywhere",
				    who, (unsigned long long)m->key,
				    (unsigned long long)m->key + m->count,
				    (unsigned long long)p->key_lo, (unsigned long long)p->key_hi);
	if (m->type == DLRT_PSLITE_PULL) {
		if (m->round != p->next_pull[w] || m->round >= p->next_push[w])
			return dlrt_err_set(err, "%s pulled round %u out of order", who, m->round);
		p->pending_pull[w] = m->round;
		return serve_pull(p, w, err);
	}
	if (m->round != p->next_push[w] || m->round >= p->o.rounds)
		return dlrt_err_set(err, "%s pushed round %u, expected round %u of %u", who,
				    m->round, p->next_push[w], p->o.rounds);
	if (s->round == PSC_NONE) {
		s->round = m->round;
		s->pushed = s->pulled = 0;
		memset(s->sum, 0, cnt * sizeof(*s->sum));
	} else if (s->round != m->round) {
		return dlrt_err_set(err, "%s pushed round %u while round %u is still open", who,
				    m->round, s->round);
	}
	for (uint32_t i = 0; i < cnt; i++)
		s->sum[i] += dlrt_pslite_value(m, i);
	p->next_push[w]++;
	if (dlrt_pslite_put_kv(&p->peer_out[w]->out, DLRT_PSLITE_PUSH_ACK, p->my_id, m->round,
			       p->key_lo, cnt, NULL, err) < 0)
		return -1;
	if (++s->pushed < p->nw)
		return 0;
	/* The round is complete: answer the pulls that waited for it. */
	for (uint32_t i = 0; i < p->nw; i++)
		if (serve_pull(p, i, err) < 0)
			return -1;
	return 0;
}

static int worker_kv(struct psc *p, uint32_t s, const struct dlrt_pslite_msg *m,
		     struct dlrt_err *err)
{
	bool reply = m->type == DLRT_PSLITE_PULL_REPLY;
	uint64_t lo;
	uint32_t cnt;
	char who[128];

	peer_describe(p, s, who, sizeof(who));
	range_of(p, s, &lo, &cnt);
	if (m->round != p->cur_round || p->got[s] || m->key != lo || m->count != cnt ||
	    reply != (p->acks == p->ns))
		return dlrt_err_set(err, "unexpected %s from %s (round %u keys [%llu, +%u))",
				    dlrt_pslite_type_name(m->type), who, m->round,
				    (unsigned long long)m->key, m->count);
	p->got[s] = true;
	if (!reply) {
		p->acks++;
		return 0;
	}
	for (uint32_t i = 0; i < cnt; i++) {
		int64_t v = dlrt_pslite_value(m, i), want = want_sum(p, m->round, lo + i);

		if (v != want) {
			p->bad_sum = true;
			return dlrt_err_set(err, "round %u key %llu from %s is %lld, expected %lld "
					    "(the sum over %u workers)", m->round,
					    (unsigned long long)(lo + i), who, (long long)v,
					    (long long)want, p->nw);
		}
	}
	p->replies++;
	return 0;
}

static int node_msg(struct pnet *n, struct pnet_conn *c, const struct dlrt_pslite_msg *m,
		    void *ctx, struct dlrt_err *err)
{
	struct psc *p = ctx;

	(void)n;
	switch (m->type) {
	case DLRT_PSLITE_NODE_TABLE:
		return on_table(p, c, m, err);
	case DLRT_PSLITE_BARRIER_DONE:
		if (c != p->sched_in || m->arg != p->barriers_done)
			return dlrt_err_set(err, "unexpected release of barrier %u from %s", m->arg,
					    c->what);
		p->barriers_done++;
		return 0;
	case DLRT_PSLITE_HELLO:
		return on_hello(p, c, m, err);
	case DLRT_PSLITE_PUSH:
	case DLRT_PSLITE_PULL:
	case DLRT_PSLITE_PUSH_ACK:
	case DLRT_PSLITE_PULL_REPLY:
		if (c->outgoing || c->tag < 0 || c->peer_id != m->sender || !p->have_table)
			break;
		return p->role == DLRT_PSLITE_SERVER ? server_kv(p, (uint32_t)c->tag, m, err)
						     : worker_kv(p, (uint32_t)c->tag, m, err);
	default:
		break;
	}
	return dlrt_err_set(err, "unexpected %s from %s", dlrt_pslite_type_name(m->type), c->what);
}

static int node_close(struct pnet *n, struct pnet_conn *c, void *ctx, struct dlrt_err *err)
{
	struct psc *p = ctx;
	char who[128];

	(void)n;
	if (c == p->sched_out || c == p->sched_in) {
		if (p->barriers_done > DLRT_PSLITE_BARRIER_FINALIZE)
			return 0;
		return dlrt_err_set(err, "scheduler at %s:%u went away%s", p->root_ip, p->root_port,
				    p->have_table ? "" : " before sending the node table (its own "
				    "error says why)");
	}
	if (c->tag < 0 || p->rounds_done || p->peer_gone_ms)
		return 0;
	/* Not fatal yet: if the scheduler died, every node loses its peers and
	 * the scheduler at about the same moment, and the scheduler is the cause
	 * to report. node_tick decides after PEER_GRACE_MS. */
	peer_describe(p, (uint32_t)c->tag, who, sizeof(who));
	snprintf(p->peer_gone, sizeof(p->peer_gone), "%s went away in the middle of the rounds",
		 who);
	p->peer_gone_ms = dlrt_now_ms();
	return 0;
}

static int node_tick(struct pnet *n, void *ctx, struct dlrt_err *err)
{
	struct psc *p = ctx;

	(void)n;
	if (!p->peer_gone_ms || p->rounds_done)
		return 0;
	if (dlrt_now_ms() - p->peer_gone_ms < PEER_GRACE_MS)
		return 0;
	return dlrt_err_set(err, "%s", p->peer_gone);
}

static bool table_here(void *ctx)
{
	return ((struct psc *)ctx)->have_table;
}

static bool start_released(void *ctx)
{
	return ((struct psc *)ctx)->barriers_done > DLRT_PSLITE_BARRIER_START;
}

static bool final_released(void *ctx)
{
	return ((struct psc *)ctx)->barriers_done > DLRT_PSLITE_BARRIER_FINALIZE;
}

static bool acks_in(void *ctx)
{
	struct psc *p = ctx;

	psc_maybe_crash(p);
	return p->acks == p->ns;
}

static bool replies_in(void *ctx)
{
	struct psc *p = ctx;

	psc_maybe_crash(p);
	return p->replies == p->ns;
}

static bool all_served(void *ctx)
{
	struct psc *p = ctx;

	psc_maybe_crash(p);
	return p->served == (uint64_t)p->o.rounds * p->nw;
}

static int64_t sleep_until;

static bool slept(void *ctx)
{
	psc_maybe_crash(ctx);
	return dlrt_now_ms() >= sleep_until;
}

/* Waits for done() for `scale` timeouts; on a timeout fills err with what was awaited. */
static int wait_long(struct psc *p, bool (*done)(void *), uint32_t scale, const char *what,
		     struct dlrt_err *err)
{
	int rc = pnet_wait(&p->net, done, (int64_t)p->o.timeout_s * 1000 * scale, err);

	if (rc == -2)
		dlrt_err_set(err, "timed out after %u s without a message while waiting for %s",
			     p->o.timeout_s * scale, what);
	return rc;
}

static int wait_for(struct psc *p, bool (*done)(void *), const char *what, struct dlrt_err *err)
{
	return wait_long(p, done, 1, what, err);
}

static int run_worker(struct psc *p, struct dlrt_err *err)
{
	char what[128];
	int rc;

	for (uint32_t r = 0; r < p->o.rounds; r++) {
		if (r && p->o.delay_ms) {
			sleep_until = dlrt_now_ms() + p->o.delay_ms;
			if ((rc = wait_for(p, slept, "the round delay", err)) < 0)
				return rc;
		}
		for (uint64_t k = 0; k < p->o.vlen; k++)
			p->vals[k] = (int64_t)(p->rank + 1) * (r + 1) + (int64_t)k * r;
		p->cur_round = r;
		p->acks = p->replies = 0;
		memset(p->got, 0, p->ns * sizeof(*p->got));
		for (uint32_t s = 0; s < p->ns; s++) {
			uint64_t lo;
			uint32_t cnt;

			range_of(p, s, &lo, &cnt);
			if (dlrt_pslite_put_kv(&p->peer_out[s]->out, DLRT_PSLITE_PUSH, p->my_id, r, lo,
					       cnt, p->vals + lo, err) < 0)
				return -1;
		}
		snprintf(what, sizeof(what), "the servers' push acks of round %u", r);
		if ((rc = wait_for(p, acks_in, what, err)) < 0)
			return rc;
		memset(p->got, 0, p->ns * sizeof(*p->got));
		for (uint32_t s = 0; s < p->ns; s++) {
			uint64_t lo;
			uint32_t cnt;

			range_of(p, s, &lo, &cnt);
			if (dlrt_pslite_put_kv(&p->peer_out[s]->out, DLRT_PSLITE_PULL, p->my_id, r, lo,
					       cnt, NULL, err) < 0)
				return -1;
		}
		snprintf(what, sizeof(what), "the servers' pull replies of round %u", r);
		if ((rc = wait_for(p, replies_in, what, err)) < 0)
			return rc;
	}
	return 0;
}

static int alloc_state(struct psc *p)
{
	uint32_t cnt;

	p->npeers = p->role == DLRT_PSLITE_SERVER ? p->nw : p->ns;
	p->servers = calloc(p->ns, sizeof(*p->servers));
	p->workers = calloc(p->nw, sizeof(*p->workers));
	p->peer_out = calloc(p->npeers, sizeof(*p->peer_out));
	p->peer_in = calloc(p->npeers, sizeof(*p->peer_in));
	if (!p->servers || !p->workers || !p->peer_out || !p->peer_in)
		return -1;
	if (p->role == DLRT_PSLITE_WORKER) {
		p->got = calloc(p->ns, sizeof(*p->got));
		p->vals = calloc(p->o.vlen, sizeof(*p->vals));
		return p->got && p->vals ? 0 : -1;
	}
	p->next_push = calloc(p->nw, sizeof(*p->next_push));
	p->next_pull = calloc(p->nw, sizeof(*p->next_pull));
	p->pending_pull = malloc(p->nw * sizeof(*p->pending_pull));
	/* The range is known once the rank is; size the slots for the largest. */
	cnt = (p->o.vlen + p->ns - 1) / p->ns;
	for (int i = 0; i < 2; i++) {
		p->slot[i].round = PSC_NONE;
		p->slot[i].sum = calloc(cnt, sizeof(int64_t));
		if (!p->slot[i].sum)
			return -1;
	}
	if (!p->next_push || !p->next_pull || !p->pending_pull)
		return -1;
	for (uint32_t w = 0; w < p->nw; w++)
		p->pending_pull[w] = PSC_NONE;
	return 0;
}

static void free_state(struct psc *p)
{
	free(p->servers);
	free(p->workers);
	free(p->peer_out);
	free(p->peer_in);
	free(p->got);
	free(p->vals);
	free(p->next_push);
	free(p->next_pull);
	free(p->pending_pull);
	free(p->slot[0].sum);
	free(p->slot[1].sum);
}

static int node_main(struct psc *p, struct dlrt_err *err)
{
	struct dlrt_pslite_node self = { .role = p->role, .port = p->port };
	int64_t idle = (int64_t)p->o.timeout_s * 1000;
	char what[128];
	int rc;

	snprintf(self.ip, sizeof(self.ip), "%s", p->ip);
	snprintf(what, sizeof(what), "the scheduler at %s:%u (DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT)",
		 p->root_ip, p->root_port);
	p->sched_out = pnet_connect(&p->net, p->root_ip, p->root_port, DLRT_PSLITE_SCHED_ID, what,
				    dlrt_now_ms() + idle, err);
	if (!p->sched_out || dlrt_pslite_put_add_node(&p->sched_out->out, &self, err) < 0)
		return -1;
	snprintf(what, sizeof(what), "the node table from the scheduler at %s:%u (are "
		 "DMLC_NUM_SERVER/DMLC_NUM_WORKER right and every task started?)", p->root_ip,
		 p->root_port);
	/* Twice the scheduler's registration timeout: when registrations are
	 * missing, the scheduler reports which, exits, and we see it go away. */
	if ((rc = wait_long(p, table_here, 2, what, err)) < 0)
		return rc;
	/* Connect to the other role's nodes and say who we are (ZMQ_IDENTITY). */
	for (uint32_t r = 0; r < p->npeers; r++) {
		const struct dlrt_pslite_node *t = other_role(p) == DLRT_PSLITE_SERVER ?
						   &p->servers[r] : &p->workers[r];

		peer_describe(p, r, what, sizeof(what));
		p->peer_out[r] = pnet_connect(&p->net, t->ip, t->port, t->id, what,
					      dlrt_now_ms() + idle, err);
		if (!p->peer_out[r] ||
		    dlrt_pslite_put_ctl(&p->peer_out[r]->out, DLRT_PSLITE_HELLO, p->my_id, 0, err) < 0)
			return -1;
		p->peer_out[r]->tag = r;
	}
	if (p->role == DLRT_PSLITE_SERVER) {
		uint32_t cnt;

		range_of(p, p->rank, &p->key_lo, &cnt);
		p->key_hi = p->key_lo + cnt;
	}
	/* Heartbeats keep the scheduler's bounded wait alive during long rounds. */
	p->net.hb_conn = p->sched_out;
	p->net.hb_sender = p->my_id;
	p->net.hb_every_ms = idle / 4 < 1000 ? (idle / 4 > 100 ? idle / 4 : 100) : 1000;
	p->net.hb_next_ms = dlrt_now_ms() + p->net.hb_every_ms;
	if (dlrt_pslite_put_ctl(&p->sched_out->out, DLRT_PSLITE_BARRIER, p->my_id,
				DLRT_PSLITE_BARRIER_START, err) < 0)
		return -1;
	if ((rc = wait_for(p, start_released, "the start barrier", err)) < 0)
		return rc;
	psc_arm_crash(p);
	if (p->role == DLRT_PSLITE_WORKER)
		rc = run_worker(p, err);
	else
		rc = wait_for(p, all_served, "the workers' pushes and pulls", err);
	if (rc < 0)
		return rc;
	p->rounds_done = true;
	if (dlrt_pslite_put_ctl(&p->sched_out->out, DLRT_PSLITE_BARRIER, p->my_id,
				DLRT_PSLITE_BARRIER_FINALIZE, err) < 0)
		return -1;
	return wait_for(p, final_released, "the final barrier", err);
}

int psc_run_node(struct psc *p)
{
	struct dlrt_err err = { "" };
	int rc;

	p->net.on_msg = node_msg;
	p->net.on_close = node_close;
	p->net.on_tick = node_tick;
	if (alloc_state(p) < 0) {
		free_state(p);
		psc_fail(p, "out of memory");
		return PSC_FAIL;
	}
	rc = node_main(p, &err);
	if (rc == 0)
		pnet_flush(&p->net, 1000, &err);
	free_state(p);
	if (rc == 0) {
		if (p->role == DLRT_PSLITE_WORKER)
			printf("pslite_contract: worker %u of %u on %s (%s:%u): %u rounds ok, sum=%u\n",
			       p->rank, p->nw, p->host, p->ip, p->port, p->o.rounds,
			       p->nw * (p->nw + 1) / 2);
		else
			printf("pslite_contract: server %u of %u on %s (%s:%u): summed %u rounds from "
			       "%u worker%s, keys [%llu, %llu)\n", p->rank, p->ns, p->host, p->ip,
			       p->port, p->o.rounds, p->nw, p->nw == 1 ? "" : "s",
			       (unsigned long long)p->key_lo,
			       (unsigned long long)p->key_hi);
		fflush(stdout);
		return PSC_OK;
	}
	psc_fail(p, err.msg);
	return rc == -2 ? PSC_TIMEOUT : p->bad_sum ? PSC_BADSUM : PSC_FAIL;
}
