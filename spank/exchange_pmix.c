/* exchange_pmix.c - the address exchange carried by Slurm's PMIx (--dl-exchange=pmix).
 *
 * Slurm's mpi/pmix plugin runs a PMIx server in every node's slurmstepd; a
 * task of an `srun --mpi=pmix` step may be its client. The exchange uses it
 * through dlrt-kv, one fresh PMIx client process, started by the first task
 * of each node only (one PMIx client per node), never in a task whose program
 * does its own PMIx/MPI wire-up (spank/stepd.c skips those).
 *
 * Why a separate process: this code runs in the task, a fork of slurmstepd,
 * which has loaded libpmix as the step's PMIx server. PMIx_Init in that fork
 * "succeeds" at once with the server's identity, and the next blocking call
 * waits forever for a progress thread that did not survive fork(). dlrt-kv is
 * a clean client; common/proc.c runs it with a deadline and reads its answer.
 *
 * No fence: the root publishes its value and every node's first task waits for
 * just the values it needs (PMIx_Get, asked again until they appear), so a late
 * node delays only itself. But the values live in the PMIx server of the node
 * that published them, and Slurm 22.05 ends a node's step daemon as soon as
 * that node's tasks have ended: a root whose program ends at once (a short
 * job, a failing one) would take its address away before slower nodes read
 * it. So the nodes acknowledge up a binary tree (node i reads the "got" of
 * nodes 2i+1 and 2i+2 before publishing its own), the root's node leaves only
 * once its children said "got" (every node has the values), and each node
 * lingers, bounded, until its parent said so too, so that the parent can still
 * read its "got" (with task ports, until the root's "done": every node reads
 * every other node's ports, so each must stay until all have read). The root thus waits for two nodes, not for every node in
 * turn, and no node waits for a node outside its path in the tree.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/instpath.h"
#include "common/proc.h"
#include "exchange/exchange_reply.h"
#include "exchange/rdvclient.h"
#include "exchange_via.h"

/* Time dlrt-kv may take beyond its waits: its PMIx session's start and end. */
#define KV_SLACK_S 8
/* How long a node lingers for its parent's acknowledgement; never an error. */
#define LINGER_S "5"

/* dlrt-kv is in the compiled-in bindir, or in a moved tree at the same place
 * relative to the plugin (common/instpath.h). */
static int find_kv(char *out, size_t len, struct dlrt_err *err)
{
	Dl_info info;

	if (!dladdr((void *)dlrt_exchange_via_pmix, &info))
		info.dli_fname = NULL;
	if (dlrt_instpath_find(dlrt_instpath_bindir, info.dli_fname, dlrt_instpath_plugin_to_bin,
			       "dlrt-kv", out, len, err) < 0)
		return -1;
	if (access(out, X_OK) != 0)
		return dlrt_err_errno(err, errno, "%s is not executable: reinstall dlrt", out);
	return 0;
}

/* An argv and an environment that grow, freed as one. */
struct kv_cmd {
	char **argv, **env;
	size_t argc, envc, cap_argv, cap_env;
	char *pieces[256]; /* every string we made (some hold a step secret) */
	size_t npieces;
	bool oom;
};

static char *kv_str(struct kv_cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *kv_str(struct kv_cmd *c, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (c->npieces == sizeof(c->pieces) / sizeof(*c->pieces) || vasprintf(&s, fmt, ap) < 0) {
		s = NULL;
		c->oom = true;
	}
	va_end(ap);
	if (s)
		c->pieces[c->npieces++] = s;
	return s;
}

static void kv_push(char ***v, size_t *n, size_t *cap, bool *oom, char *s)
{
	if (*n + 2 > *cap) {
		size_t ncap = *cap ? 2 * *cap : 32;
		char **nv = realloc(*v, ncap * sizeof(*nv));

		if (!nv) {
			*oom = true;
			return;
		}
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
}

static void kv_arg(struct kv_cmd *c, const char *s)
{
	kv_push(&c->argv, &c->argc, &c->cap_argv, &c->oom, (char *)s);
}

static void kv_free(struct kv_cmd *c)
{
	for (size_t i = 0; i < c->npieces; i++) {
		memset(c->pieces[i], 0, strlen(c->pieces[i])); /* may hold a step secret */
		free(c->pieces[i]);
	}
	free(c->argv);
	free(c->env);
}

/* The tree of acknowledgements over the nodes (see the top of this file):
 * node 0 is the root's, then the nodes in the order of req->reps. Fills
 * `kids` ("R,R" or "") and returns the parent's rank (the root's for itself). */
static uint32_t tree_links(const struct dlrt_exchange_req *req, char *kids, size_t len)
{
	uint32_t idx = 0, me = 0, parent = req->root, nkids = 0;
	size_t off = 0;

	kids[0] = '\0';
	if (req->rank != req->root)
		for (const char *r = req->reps; *r; idx++) {
			if (strtoul(r, NULL, 10) == req->rank)
				me = idx + 1;
			r += strcspn(r, ",");
			r += *r == ',';
		}
	idx = 0;
	for (const char *r = req->reps; *r; idx++) {
		uint32_t rank = (uint32_t)strtoul(r, NULL, 10), pos = idx + 1;

		if (pos == 2 * me + 1 || pos == 2 * me + 2) {
			off += (size_t)snprintf(kids + off, len - off, "%s%u", nkids++ ? "," : "",
						rank);
			if (off >= len)
				off = len - 1;
		}
		if (me && pos == (me - 1) / 2)
			parent = rank;
		r += strcspn(r, ",");
		r += *r == ',';
	}
	return parent;
}

/* Appends ",RANK" (or "RANK" first) to a list of ranks for dlrt-kv. */
static void list_add(struct kv_cmd *c, struct dlrt_buf *list, long rank)
{
	char one[24];
	int n = snprintf(one, sizeof(one), "%s%ld", list->len ? "," : "", rank);

	if (dlrt_buf_append(list, one, (size_t)n) < 0)
		c->oom = true;
}

/* "OP WHAT LIST" with the list's text (nothing for an empty list). */
static void kv_list_op(struct kv_cmd *c, const char *op, const char *what,
		       const struct dlrt_buf *list)
{
	if (!list->len)
		return;
	kv_arg(c, op);
	kv_arg(c, what);
	kv_arg(c, kv_str(c, "%.*s", (int)list->len, (const char *)dlrt_buf_head(list)));
}

/* "await ROOT root" for the root's value, "awaitlist WHAT R,R,..." for a run
 * of one kind: dlrt-kv prints the same lines as srun's rendezvous gives. */
static void kv_wants(struct kv_cmd *c, const struct dlrt_exchange_req *req,
		     const struct dlrt_xlist *want)
{
	for (size_t i = 0; i < want->n;) {
		const struct dlrt_xvalue *v = &want->v[i];
		struct dlrt_buf list;
		size_t j = i;

		if (v->rank < 0) {
			kv_arg(c, "await");
			kv_arg(c, kv_str(c, "%u", req->root));
			kv_arg(c, v->what);
			i++;
			continue;
		}
		dlrt_buf_init(&list, 16 * (size_t)req->ntasks + 64);
		for (; j < want->n && want->v[j].rank >= 0 && !strcmp(want->v[j].what, v->what); j++)
			list_add(c, &list, want->v[j].rank);
		kv_list_op(c, "awaitlist", v->what, &list);
		dlrt_buf_free(&list);
		i = j;
	}
}

/* The acknowledgements: per node, up the tree; in the dry run (every task
 * exchanges, and the root reads every task's value), every task to the root,
 * and each lingers until the root said "done": its node must stay in the step
 * while the root still reads from it. */
static void kv_acks(struct kv_cmd *c, const struct dlrt_exchange_req *req, bool per_node)
{
	struct dlrt_buf kids;
	uint32_t wait_for = req->root;

	dlrt_buf_init(&kids, 16 * (size_t)req->ntasks + 64);
	if (per_node) {
		char tree_kids[24];

		wait_for = tree_links(req, tree_kids, sizeof(tree_kids));
		if (dlrt_buf_append(&kids, tree_kids, strlen(tree_kids)) < 0)
			c->oom = true;
		/* With task ports every node reads every other node's value, not
		 * only its children's: a node then stays until the root's "done",
		 * which says every node has read everything. */
		if (req->nlocal)
			wait_for = req->root;
	} else if (req->rank == req->root) {
		for (uint32_t t = 0; t < req->ntasks; t++)
			if (t != req->root)
				list_add(c, &kids, t);
	}
	kv_list_op(c, "awaitlist", "got", &kids);
	dlrt_buf_free(&kids);
	if (req->rank == req->root) {
		kv_arg(c, "put");
		kv_arg(c, "done");
		kv_arg(c, "1");
		return;
	}
	kv_arg(c, "put");
	kv_arg(c, "got");
	kv_arg(c, "1");
	kv_arg(c, "linger");
	kv_arg(c, kv_str(c, "%u", wait_for));
	kv_arg(c, wait_for == req->root ? "done" : "got");
	kv_arg(c, LINGER_S);
}

/* Keeps the first `n` lines of `text`: one per wanted value, in want's
 * order; the acknowledgements dlrt-kv printed after them are no answers. */
static void keep_lines(struct dlrt_buf *text, size_t n)
{
	const char *p = (const char *)dlrt_buf_head(text), *end = p + text->len;

	for (size_t i = 0; i < n && p < end; i++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		p = nl ? nl + 1 : end;
	}
	text->len = (size_t)(p - (const char *)dlrt_buf_head(text));
}

/* The line dlrt-kv ended with ("dlrt-kv: why"), for the error. */
static void kv_error(const struct dlrt_buf *text, int status, struct dlrt_err *err)
{
	const char *p = (const char *)dlrt_buf_head(text), *end = p + text->len, *why = NULL;
	size_t why_len = 0;
	char st[64];

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (n > 9 && !strncmp(p, "dlrt-kv: ", 9)) {
			why = p + 9;
			why_len = n - 9;
		}
		p += n + (nl != NULL);
	}
	if (why)
		dlrt_err_set(err, "the PMIx exchange failed: %.*s", (int)why_len, why);
	else
		dlrt_err_set(err, "dlrt-kv ended (%s) during the PMIx exchange without saying why",
			     dlrt_proc_status_text(status, st, sizeof(st)));
}

/* A value as published: signed with the step secret, bound to its name
 * ("TAG VALUE", exchange/rdvclient.h): Slurm's PMIx admits anyone on a node
 * who states the job owner's uid, who could then publish as a task that has
 * not connected yet. A reader takes only what the step signed. */
static char *sealed_value(struct kv_cmd *c, const struct dlrt_exchange_req *req,
			  const struct dlrt_xvalue *v)
{
	char *out = malloc(DLRT_SVCAUTH_HEX_LEN + 2 + strlen(v->value));

	if (!out || c->npieces == sizeof(c->pieces) / sizeof(*c->pieces)) {
		free(out);
		c->oom = true;
		return NULL;
	}
	dlrt_rdv_seal(req->rdv->secret, v->key, v->value, out);
	c->pieces[c->npieces++] = out;
	return out;
}

/* The answers without their tags, each signature checked
 * (exchange/exchange_reply.h: the one fuzzed reader of what came over the
 * network). */
static int open_lines(const struct dlrt_exchange_req *req, const struct dlrt_xlist *want,
		      struct dlrt_buf *text, struct dlrt_err *err)
{
	struct dlrt_reply_want *w = calloc(want->n ? want->n : 1, sizeof(*w));
	size_t len = text->len;
	int rc;

	if (!w)
		return dlrt_err_set(err, "out of memory reading the PMIx exchange");
	for (size_t i = 0; i < want->n; i++) {
		w[i].key = want->v[i].key;
		w[i].rank = want->v[i].rank;
	}
	rc = dlrt_exchange_reply_unseal(req->rdv->secret, w, want->n, (char *)dlrt_buf_head(text),
					&len, err);
	if (rc == 0)
		text->len = len;
	free(w);
	return rc;
}

int dlrt_exchange_via_pmix(const struct dlrt_exchange_req *req, bool per_node,
			   const struct dlrt_xlist *pub, const struct dlrt_xlist *want,
			   struct dlrt_buf *text, struct dlrt_err *err)
{
	struct kv_cmd c = { 0 };
	struct dlrt_proc_result res;
	char kv[4096];
	int rc = -1;

	if (find_kv(kv, sizeof(kv), err) < 0)
		return -1;
	kv_arg(&c, kv);
	kv_arg(&c, "--timeout");
	kv_arg(&c, kv_str(&c, "%d", req->timeout_s));
	for (char **e = req->env; e && *e; e++)
		kv_push(&c.env, &c.envc, &c.cap_env, &c.oom, *e);
	/* Values go signed (see sealed_value), and in the environment rather
	 * than the argv: /proc/PID/cmdline is world-readable. */
	for (size_t i = 0; i < pub->n; i++) {
		char *sealed = sealed_value(&c, req, &pub->v[i]);

		kv_push(&c.env, &c.envc, &c.cap_env, &c.oom,
			sealed ? kv_str(&c, "DLRT_KV_VALUE%zu=%s", i, sealed) : NULL);
		kv_arg(&c, "putenv");
		kv_arg(&c, pub->v[i].what);
		kv_arg(&c, kv_str(&c, "DLRT_KV_VALUE%zu", i));
	}
	kv_wants(&c, req, want);
	kv_acks(&c, req, per_node);
	if (c.oom) {
		dlrt_err_set(err, "out of memory preparing the PMIx exchange");
		goto out;
	}
	{
		struct dlrt_proc_spec spec = {
			.argv = c.argv,
			.envp = c.env,
			.timeout_ms = (2 * req->timeout_s + KV_SLACK_S) * 1000,
			.out_max = (size_t)req->ntasks * 48 + 65536,
			.with_stderr = true,
		};

		if (dlrt_proc_run(&spec, "dlrt-kv (the PMIx exchange)", text, &res, err) < 0) {
			if (res.timed_out)
				dlrt_err_set(err, "the PMIx exchange did not finish within %d s and was "
					     "stopped: is Slurm's PMIx working? (try srun --mpi=pmix "
					     "-n2 dlrt-kv put a b fence), or use --dl-exchange=srun",
					     spec.timeout_ms / 1000);
			goto out;
		}
	}
	if (!WIFEXITED(res.status) || WEXITSTATUS(res.status) != 0) {
		kv_error(text, res.status, err);
		goto out;
	}
	keep_lines(text, want->n);
	rc = open_lines(req, want, text, err);
out:
	kv_free(&c);
	return rc;
}
