/* gpuplan_fixture.c - what the GPU planner's unit tests share: the hwloc XML
 * fixtures (tests/fixtures/topo/), a plan made from a step's strings as the
 * plugin gets them, and a plan written out as text to compare by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuplan_fixture.h"

static char path_buf[1024];

const char *fixture_path(const char *name)
{
	const char *src = getenv("DLRT_SRCDIR");

	snprintf(path_buf, sizeof(path_buf), "%s/tests/fixtures/topo/%s", src ? src : ".", name);
	return path_buf;
}

struct dlrt_gpuplan_topo *fixture_load(const char *name)
{
	struct dlrt_err err = { "" };
	struct dlrt_gpuplan_topo *t = dlrt_gpuplan_topology_load(fixture_path(name), 0, &err);

	if (!t)
		printf("# load %s: %s\n", name, err.msg);
	return t;
}

/* Plans `n` tasks with the given CPU lists; NULL and a diagnostic on error
 * (the error text is left in *err for the tests that expect failure). */
struct dlrt_gpuplan *fixture_plan(const struct dlrt_gpuplan_topo *t, const char *step,
				 const char *cvd, const char *bindspec, const char *const *cpus,
				 int n, struct dlrt_err *err)
{
	struct dlrt_gpuplan_alloc al;
	struct dlrt_gpuplan_bind *b = malloc(sizeof(*b));
	hwloc_bitmap_t set[64];
	struct dlrt_gpuplan *p = NULL;

	err->msg[0] = '\0';
	for (int i = 0; i < n; i++)
		set[i] = hwloc_bitmap_alloc();
	if (!b || dlrt_gpuplan_bind_parse(b, bindspec, err) < 0)
		goto out;
	if (dlrt_gpuplan_alloc_parse(&al, t, cvd, step, NULL, err) < 0)
		goto out;
	for (int i = 0; i < n; i++)
		if (dlrt_gpuplan_parse_cpulist(cpus[i], set[i], err) < 0)
			goto out;
	p = dlrt_gpuplan_compute(t, &al, b, (hwloc_const_cpuset_t const *)set, n, err);
out:
	for (int i = 0; i < n; i++)
		hwloc_bitmap_free(set[i]);
	free(b);
	return p;
}

/* "6|7|4,5" : each task's visible (or node-wide) GPU list. */
const char *plan_gpus(const struct dlrt_gpuplan *p, int nodewide)
{
	static char buf[1024];
	size_t off = 0;

	if (!p)
		return "(no plan)";
	buf[0] = '\0';
	for (int i = 0; i < p->ntasks; i++) {
		char g[256];

		dlrt_gpuplan_format_gpus(nodewide ? p->tasks[i].gpus : p->tasks[i].visible,
					 p->tasks[i].ngpus, g, sizeof(g));
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? "|" : "", g);
	}
	return buf;
}

const char *plan_nics(const struct dlrt_gpuplan *p, const struct dlrt_gpuplan_topo *t)
{
	static char buf[1024];
	size_t off = 0;

	if (!p)
		return "(no plan)";
	buf[0] = '\0';
	for (int i = 0; i < p->ntasks; i++) {
		const struct dlrt_gpuplan_task *tk = &p->tasks[i];

		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s", i ? "|" : "");
		for (int k = 0; k < tk->nnics; k++)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", k ? "," : "",
						t->nics[tk->nics[k]].name);
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "/%s",
					tk->netdev >= 0 ? t->nics[tk->netdev].name : "-");
	}
	return buf;
}

struct envrec {
	char text[1024];
	int calls;
};

static int rec_env(void *ctx, const char *name, const char *value)
{
	struct envrec *r = ctx;
	size_t len = strlen(r->text);

	snprintf(r->text + len, sizeof(r->text) - len, "%s=%s;", name, value);
	r->calls++;
	return 0;
}

const char *plan_env(const struct dlrt_gpuplan *p, const struct dlrt_gpuplan_topo *t, int i)
{
	static struct envrec r;
	static struct dlrt_err err;

	memset(&r, 0, sizeof(r));
	if (!p)
		return "(no plan)";
	if (dlrt_gpuplan_env(p, t, i, rec_env, &r, &err) < 0)
		return err.msg;
	return r.text;
}

int err_is_one_line(const struct dlrt_err *e)
{
	return e->msg[0] != '\0' && !strchr(e->msg, '\n');
}
