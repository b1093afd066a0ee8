/* pslite_sched.c - the scheduler of the ps-lite contract test.
 *
 * As ps-lite's scheduler (van.cc ProcessAddNodeCommandAtScheduler): bind
 * DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT once (no retry), collect exactly
 * DMLC_NUM_SERVER + DMLC_NUM_WORKER ADD_NODE registrations, sort them by
 * (host, port), give ids (server 8+2r, worker 9+2r), connect to every node
 * and send it the table, then coordinate the global barriers. It exits only
 * after every node has entered the final barrier (ps::Finalize(…, true)).
 *
 * Unlike ps-lite, every wait is bounded and a node that goes away before it
 * finalized ends the scheduler at once, so the step fails instead of hanging.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/evloop.h"
#include "pslite_contract.h"

#define LINGER_MS 5000

static struct psc_reg *reg_of(struct psc *p, struct pnet_conn *c)
{
	return (c->tag >= 0 && (uint32_t)c->tag < p->nregs) ? &p->regs[c->tag] : NULL;
}

static int on_add_node(struct psc *p, struct pnet_conn *c, const struct dlrt_pslite_msg *m,
		       struct dlrt_err *err)
{
	uint8_t r = m->node.role;
	uint32_t want = r == DLRT_PSLITE_SERVER ? p->ns : p->nw;
	struct psc_reg *g;

	if (c->outgoing || c->tag >= 0)
		return dlrt_err_set(err, "ADD_NODE twice from %s", c->what);
	if (p->table_sent || p->nreg_role[r] >= want)
		return dlrt_err_set(err, "one %s too many registered (from %s:%u) but "
				    "DMLC_NUM_%s=%u: every task must get the same, exact counts",
				    dlrt_pslite_role_name(r), m->node.ip, m->node.port,
				    r == DLRT_PSLITE_SERVER ? "SERVER" : "WORKER", want);
	for (uint32_t i = 0; i < p->nregs; i++)
		if (!strcmp(p->regs[i].node.ip, m->node.ip) && p->regs[i].node.port == m->node.port)
			return dlrt_err_set(err, "two nodes registered the same address %s:%u",
					    m->node.ip, m->node.port);
	g = &p->regs[p->nregs];
	memset(g, 0, sizeof(*g));
	g->node = m->node;
	g->in = c;
	c->tag = p->nregs++;
	p->nreg_role[r]++;
	snprintf(c->what, sizeof(c->what), "the %s registered from %s:%u",
		 dlrt_pslite_role_name(r), m->node.ip, m->node.port);
	if (p->verbose)
		fprintf(stderr, "pslite_contract[scheduler]: ADD_NODE %s %s:%u (%u of %u servers, "
			"%u of %u workers)\n", dlrt_pslite_role_name(r), m->node.ip, m->node.port,
			p->nreg_role[0], p->ns, p->nreg_role[1], p->nw);
	return 0;
}

static int on_barrier(struct psc *p, struct psc_reg *g, const struct dlrt_pslite_msg *m,
		      struct dlrt_err *err)
{
	uint32_t seq = m->arg;
	char who[128];

	psc_describe(who, sizeof(who), &g->node, g->rank);
	if (seq != g->next_barrier)
		return dlrt_err_set(err, "%s entered barrier %u, expected %u", who, seq,
				    g->next_barrier);
	g->next_barrier++;
	if (++p->barrier_count[seq] < p->nregs)
		return 0;
	/* Everyone is in: release the barrier (ps-lite's Control::BARRIER reply). */
	for (uint32_t i = 0; i < p->nregs; i++)
		if (dlrt_pslite_put_ctl(&p->regs[i].out->out, DLRT_PSLITE_BARRIER_DONE,
					DLRT_PSLITE_SCHED_ID, seq, err) < 0)
			return -1;
	p->released[seq] = true;
	if (p->verbose)
		fprintf(stderr, "pslite_contract[scheduler]: %s barrier released\n",
			seq == DLRT_PSLITE_BARRIER_START ? "start" : "finalize");
	return 0;
}

static int sched_msg(struct pnet *n, struct pnet_conn *c, const struct dlrt_pslite_msg *m,
		     void *ctx, struct dlrt_err *err)
{
	struct psc *p = ctx;
	struct psc_reg *g = reg_of(p, c);

	(void)n;
	if (m->type == DLRT_PSLITE_ADD_NODE)
		return on_add_node(p, c, m, err);
	if (!g || c != g->in || !p->table_sent)
		return dlrt_err_set(err, "unexpected %s from %s", dlrt_pslite_type_name(m->type),
				    c->what);
	if (m->sender != g->node.id)
		return dlrt_err_set(err, "%s claims id %d but was given id %d", c->what,
				    (int)m->sender, (int)g->node.id);
	if (m->type == DLRT_PSLITE_BARRIER)
		return on_barrier(p, g, m, err);
	if (m->type == DLRT_PSLITE_HEARTBEAT)
		return 0;
	return dlrt_err_set(err, "unexpected %s from %s", dlrt_pslite_type_name(m->type),
			    c->what);
}

static int sched_close(struct pnet *n, struct pnet_conn *c, void *ctx, struct dlrt_err *err)
{
	struct psc *p = ctx;
	struct psc_reg *g = reg_of(p, c);
	char who[128];

	(void)n;
	if (!g || g->next_barrier > DLRT_PSLITE_BARRIER_FINALIZE)
		return 0;   /* not a node, or one that has finalized */
	if (!p->table_sent)
		return dlrt_err_set(err, "%s went away before all nodes registered", c->what);
	psc_describe(who, sizeof(who), &g->node, g->rank);
	return dlrt_err_set(err, "%s went away before it finalized", who);
}

static bool all_registered(void *ctx)
{
	struct psc *p = ctx;

	psc_maybe_crash(p);
	return p->nregs == p->ns + p->nw;
}

static bool start_released(void *ctx)
{
	struct psc *p = ctx;

	psc_maybe_crash(p);
	return p->released[DLRT_PSLITE_BARRIER_START];
}

static bool final_released(void *ctx)
{
	struct psc *p = ctx;

	psc_maybe_crash(p);
	return p->released[DLRT_PSLITE_BARRIER_FINALIZE];
}

static bool nodes_gone(void *ctx)
{
	struct psc *p = ctx;

	for (uint32_t i = 0; i < p->nregs; i++)
		if (p->regs[i].in->state != PNET_CLOSED)
			return false;
	return true;
}

/* ps-lite sorts by hostname, then port (std::string comparison), and gives
 * ids in that order within each role. */
static int reg_cmp(const void *a, const void *b)
{
	const struct psc_reg *x = a, *y = b;
	int c = strcmp(x->node.ip, y->node.ip);

	return c ? c : (int)x->node.port - (int)y->node.port;
}

static int send_tables(struct psc *p, struct dlrt_err *err)
{
	struct dlrt_pslite_node *tbl = calloc(p->nregs, sizeof(*tbl));
	uint32_t next[2] = { 0, 0 };
	int64_t give_up = dlrt_now_ms() + (int64_t)p->o.timeout_s * 1000;
	int rc = -1;

	if (!tbl)
		return dlrt_err_set(err, "out of memory");
	qsort(p->regs, p->nregs, sizeof(*p->regs), reg_cmp);
	for (uint32_t i = 0; i < p->nregs; i++) {
		struct psc_reg *g = &p->regs[i];

		g->rank = next[g->node.role]++;
		g->node.id = dlrt_pslite_id(g->node.role, g->rank);
		g->in->tag = i;
		tbl[i] = g->node;
	}
	/* ps-lite's scheduler connects to every node it was told about; this is
	 * where an unreachable DMLC_NODE_HOST shows up. */
	for (uint32_t i = 0; i < p->nregs; i++) {
		struct psc_reg *g = &p->regs[i];
		char what[160];

		psc_describe(what, sizeof(what), &g->node, g->rank);
		strncat(what, " (its DMLC_NODE_HOST and port)", sizeof(what) - strlen(what) - 1);
		g->out = pnet_connect(&p->net, g->node.ip, g->node.port, g->node.id, what,
				      give_up, err);
		if (!g->out)
			goto out;
		g->out->tag = i;
		psc_describe(g->in->what, sizeof(g->in->what), &g->node, g->rank);
		if (dlrt_pslite_put_table(&g->out->out, g->node.id, tbl, p->nregs, err) < 0)
			goto out;
	}
	p->table_sent = true;
	rc = 0;
out:
	free(tbl);
	return rc;
}

static int timed_out(struct psc *p, const char *what)
{
	char msg[2 * (DLRT_ERR_MAX + 512)];

	snprintf(msg, sizeof(msg), "timed out after %u s without a message %s", p->o.timeout_s,
		 what);
	psc_fail(p, msg);
	return PSC_TIMEOUT;
}

static void missing_nodes(struct psc *p, uint32_t seq, char *out, size_t len)
{
	size_t off = 0;
	uint32_t shown = 0;

	out[0] = '\0';
	for (uint32_t i = 0; i < p->nregs && off < len; i++) {
		char who[128];

		if (p->regs[i].next_barrier > seq)
			continue;
		if (shown++ == 8) {
			snprintf(out + off, len - off, ", ...");
			break;
		}
		psc_describe(who, sizeof(who), &p->regs[i].node, p->regs[i].rank);
		off += (size_t)snprintf(out + off, len - off, "%s%s", shown > 1 ? ", " : "", who);
	}
}

int psc_run_scheduler(struct psc *p)
{
	struct dlrt_err err = { "" };
	char msg[DLRT_ERR_MAX + 512], miss[512];
	int64_t idle = (int64_t)p->o.timeout_s * 1000;
	int rc;

	snprintf(p->net.who, sizeof(p->net.who), "scheduler");
	p->net.on_msg = sched_msg;
	p->net.on_close = sched_close;
	p->regs = calloc(p->ns + p->nw, sizeof(*p->regs));
	if (!p->regs) {
		psc_fail(p, "out of memory");
		return PSC_FAIL;
	}
	/* ps-lite binds the scheduler with max_retry = 0: a busy port is fatal. */
	if (pnet_listen(&p->net, p->ip, p->root_port, &err) < 0) {
		snprintf(msg, sizeof(msg), "%s (DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT; ps-lite does not "
			 "retry the scheduler's bind: choose a free DMLC_PS_ROOT_PORT)", err.msg);
		psc_fail(p, msg);
		return PSC_FAIL;
	}
	rc = pnet_wait(&p->net, all_registered, idle, &err);
	if (rc == -2) {
		uint32_t ms = p->ns - p->nreg_role[0], mw = p->nw - p->nreg_role[1];

		snprintf(msg, sizeof(msg), "timed out after %u s waiting for registrations: %u of %u "
			 "servers and %u of %u workers registered (%u server%s and %u worker%s "
			 "missing): check DMLC_NUM_SERVER/DMLC_NUM_WORKER and that every task started",
			 p->o.timeout_s, p->nreg_role[0], p->ns, p->nreg_role[1], p->nw,
			 ms, ms == 1 ? "" : "s", mw, mw == 1 ? "" : "s");
		psc_fail(p, msg);
		return PSC_TIMEOUT;
	}
	if (rc < 0 || send_tables(p, &err) < 0)
		goto fail;
	rc = pnet_wait(&p->net, start_released, idle, &err);
	if (rc == -2) {
		missing_nodes(p, DLRT_PSLITE_BARRIER_START, miss, sizeof(miss));
		snprintf(msg, sizeof(msg), "in the start barrier; not arrived: %s", miss);
		return timed_out(p, msg);
	}
	if (rc < 0)
		goto fail;
	psc_arm_crash(p);
	/* Nodes heartbeat while they work, so silence here means a hung node. */
	rc = pnet_wait(&p->net, final_released, idle, &err);
	if (rc == -2) {
		missing_nodes(p, DLRT_PSLITE_BARRIER_FINALIZE, miss, sizeof(miss));
		snprintf(msg, sizeof(msg), "while waiting for the final barrier; not arrived: %s",
			 miss);
		return timed_out(p, msg);
	}
	if (rc < 0 || pnet_flush(&p->net, idle, &err) < 0)
		goto fail;
	/* Outlive everyone: let the nodes read the release and hang up first. */
	pnet_wait(&p->net, nodes_gone, LINGER_MS, &err);
	printf("pslite_contract: scheduler on %s (%s:%u): %u nodes registered (%u server%s, "
	       "%u worker%s), all finalized\n", p->host, p->ip, p->root_port, p->nregs, p->ns,
	       p->ns == 1 ? "" : "s", p->nw, p->nw == 1 ? "" : "s");
	fflush(stdout);
	return PSC_OK;
fail:
	psc_fail(p, err.msg);
	return PSC_FAIL;
}
