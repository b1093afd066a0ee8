/* Unit tests: the layout of a heterogeneous step (common/hetlayout.h) as Slurm
 * gives it (the merged, name-sorted node list and task counts, and each het
 * group's allocation), and the roles by component (--dl-het-roles). */
#include <stdio.h>
#include <string.h>

#include "common/hetlayout.h"
#include "runtime/runtime.h"
#include "tap.h"

static int het(struct dlrt_layout *l, const char *nodes, const char *tpn, const char *g0,
	       const char *g1, enum dlrt_dist d, struct dlrt_err *err)
{
	const char *groups[2] = { g0, g1 };
	struct dlrt_het_input in = { .step_nodes = nodes, .step_tpn = tpn, .ngroups = 2,
				     .group_nodes = groups, .dist = d };

	return dlrt_layout_init_het(l, &in, err);
}

static void tasks(const struct dlrt_layout *l, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (uint32_t t = 0; t < l->ntasks && off + 8 < len; t++)
		off += (size_t)snprintf(out + off, len - off, "%s%s/%u", t ? " " : "",
					l->nodes.names[l->task_node[t]], l->task_local[t]);
}

static void test_layouts(void)
{
	struct dlrt_layout l;
	struct dlrt_err err;
	char got[512];

	/* salloc -N1 -n2 : -N2 -n4 as seen on 22.05: n1 in group 0, n[2-3] in 1. */
	TAP_IS_INT(het(&l, "n[1-3]", "2,3,1", "n1", "n[2-3]", DLRT_DIST_BLOCK, &err), 0,
		   "two components");
	TAP_IS_INT(l.ncomps, 2, "two components found");
	tasks(&l, got, sizeof(got));
	TAP_IS_STR(got, "n1/0 n1/1 n2/0 n2/1 n2/2 n3/0", "tasks in component order");
	TAP_IS_INT(l.comp_first[1], 2, "component 1 starts at task 2");
	TAP_IS_INT(l.comp_node_first[1], 1, "component 1 starts at node 1");
	TAP_IS_INT(dlrt_layout_task_comp(&l, 5), 1, "task 5 is in component 1");
	TAP_IS_INT(dlrt_layout_check_local(&l, 1, 2, 4, &err), 0, "task 4 is local 2 of n2");
	dlrt_layout_free(&l);

	/* Group 0 on the later node: Slurm sorts the merged list by name, the
	 * task ids still follow the groups. */
	TAP_IS_INT(het(&l, "n[1-3]", "3,1,2", "n3", "n[1-2]", DLRT_DIST_BLOCK, &err), 0,
		   "the first component on the last node");
	tasks(&l, got, sizeof(got));
	TAP_IS_STR(got, "n3/0 n3/1 n1/0 n1/1 n1/2 n2/0", "group 0's tasks first, on n3");
	dlrt_layout_free(&l);

	/* Cyclic within each component. */
	TAP_IS_INT(het(&l, "n[1-3]", "1,2,2", "n1", "n[2-3]", DLRT_DIST_CYCLIC, &err), 0,
		   "cyclic components");
	tasks(&l, got, sizeof(got));
	TAP_IS_STR(got, "n1/0 n2/0 n3/0 n2/1 n3/1", "cyclic inside component 1");
	dlrt_layout_free(&l);

	/* A step over one group of a hetjob is a plain step. */
	TAP_IS_INT(het(&l, "n[2-3]", "2,2", "n1", "n[2-3]", DLRT_DIST_BLOCK, &err), 0,
		   "one component of a hetjob");
	TAP_IS_INT(l.ncomps, 1, "one component");
	dlrt_layout_free(&l);

	TAP_IS_INT(het(&l, "n[1-3]", "1,1,1", "n[1-2]", "n[2-3]", DLRT_DIST_BLOCK, &err), -1,
		   "a node in two groups is refused");
	TAP_OK(strstr(err.msg, "node n2 is in heterogeneous job components 0 and 1") != NULL,
	       "the line names the node: %s", err.msg);
	TAP_IS_INT(het(&l, "n[1-4]", "1,1,1,1", "n1", "n[2-3]", DLRT_DIST_BLOCK, &err), -1,
		   "a node in no group is refused");
	TAP_OK(strstr(err.msg, "node n4 of this heterogeneous step is in no component") != NULL,
	       "the line names the node: %s", err.msg);
	TAP_IS_INT(het(&l, "n[1-3]", "1,1", "n1", "n[2-3]", DLRT_DIST_BLOCK, &err), -1,
		   "counts that do not match the nodes are refused");
	/* Found by fuzz_slurmenv: a node twice in its own group's list was written
	 * twice into a buffer sized for each step node once. */
	TAP_IS_INT(het(&l, "n[1-3]", "2,3,1", "n1", "n[2-3,3]", DLRT_DIST_BLOCK, &err), -1,
		   "a node listed twice in its component's allocation is refused");
	TAP_OK(strstr(err.msg, "node n3 is listed twice in SLURM_JOB_NODELIST_HET_GROUP_1") != NULL,
	       "the line names the node and the variable: %s", err.msg);
}

static void roles(const char *runtime, const char *args, const char *tpn, const char *want,
		  const char *what)
{
	struct dlrt_config cfg;
	struct dlrt_opts o;
	struct dlrt_layout l;
	struct dlrt_plan p;
	struct dlrt_err err;
	char got[600] = "";
	size_t off = 0;

	dlrt_config_parse(&cfg, 0, NULL, &err);
	dlrt_opts_init(&o, &cfg);
	dlrt_opts_set(&o, &cfg, DLRT_OPT_RUNTIME, runtime, &err);
	for (const char *a = args; a && *a;) {
		char name[64], val[64];
		int n = 0;

		if (sscanf(a, "%63[^=]=%63s%n", name, val, &n) != 2)
			break;
		dlrt_opts_set_name(&o, &cfg, name, val, &err);
		a += n + (a[n] == ' ');
	}
	if (het(&l, "n[1-3]", tpn, "n1", "n[2-3]", DLRT_DIST_BLOCK, &err) < 0) {
		TAP_OK(0, "%s: layout: %s", what, err.msg);
		return;
	}
	if (dlrt_plan_build(&p, o.runtime, &l, &o, &cfg, &err) < 0) {
		snprintf(got, sizeof(got), "refused: %s", err.msg);
	} else {
		/* S scheduler, s server, m master (chief), w worker */
		for (uint32_t t = 0; t < l.ntasks; t++)
			off += (size_t)snprintf(got + off, sizeof(got) - off, "%c",
						"wsSm"[p.task[t].role]);
		dlrt_plan_free(&p);
	}
	if (!strncmp(want, "refused: ", 9))
		TAP_OK(strstr(got, want + 9) != NULL, "%s: %s", what, got);
	else
		TAP_IS_STR(got, want, "%s", what);
	dlrt_layout_free(&l);
}

int main(void)
{
	test_layouts();
	roles("mxnet", "", "2,3,1", "Sswwww", "mxnet split: scheduler and server in component 0");
	roles("mxnet", "", "3,3,1", "Ssswwww", "mxnet split: 2 servers in a 3-task component 0");
	roles("mxnet", "dl-mxnet-sched=extra", "2,3,1", "sswwww",
	      "mxnet split, extra scheduler: component 0 all servers");
	roles("mxnet", "dl-het-roles=flat", "2,3,1", "Sswwss", "mxnet flat: servers spread per node");
	roles("mxnet", "", "1,3,1", "refused: first component, which has 1 task: give it at least 2",
	      "mxnet split: a one-task component 0 is refused");
	roles("mxnet", "dl-servers=3", "2,3,1", "refused: give the first component 4 tasks",
	      "mxnet split: --dl-servers that does not fit is refused");
	roles("tensorflow", "", "3,3,1", "msswwww", "tensorflow split: chief and 2 ps, then workers");
	roles("tensorflow", "dl-het-roles=flat", "3,3,1", "wwwwwww", "tensorflow flat: all workers");
	roles("tensorflow", "", "1,3,1", "refused: chief and the ps tasks in the first component",
	      "tensorflow split: a one-task component 0 is refused");
	roles("horovod", "", "2,3,1", "wwwwww", "horovod: one world in component order");
	roles("torch", "", "2,3,1", "wwwwww", "torch: one world in component order");
	return tap_done();
}
