#include "failfast.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

bool dlrt_failfast_is_failure(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status) != 0;
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		return sig != SIGTERM && sig != SIGINT && sig != SIGHUP;
	}
	return false; /* stopped/continued: not an end */
}

void dlrt_failfast_describe(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}

void dlrt_failfast_message(const struct dlrt_plan *plan, uint32_t rank, bool extra, int status,
			   char *buf, size_t len)
{
	const struct dlrt_layout *l = plan->layout;
	const char *node = rank < l->ntasks ? l->nodes.names[l->task_node[rank]] : "?";
	struct dlrt_companion comp;
	/* The companion's role is the runtime's (struct dlrt_companion). */
	bool has_comp = extra && dlrt_plan_companion(plan, rank, &comp);
	enum dlrt_role role = extra ? (has_comp ? comp.role : DLRT_ROLE_SCHEDULER)
			      : rank < l->ntasks ? plan->task[rank].role : DLRT_ROLE_WORKER;
	char how[96], who[192], where[96];

	dlrt_failfast_describe(status, how, sizeof(how));
	/* A heterogeneous step's component (common/hetlayout.h) with the node. */
	if (l->ncomps >= 2 && rank < l->ntasks)
		snprintf(where, sizeof(where), "%s, component %u", node,
			 l->comp_group[dlrt_layout_task_comp(l, rank)]);
	else
		snprintf(where, sizeof(where), "%s", node);
	node = where;
	if (extra)
		snprintf(who, sizeof(who), "%s (the extra process on %s, next to task %u)",
			 dlrt_role_name(role), node, rank);
	else if (role == DLRT_ROLE_SCHEDULER)
		snprintf(who, sizeof(who), "scheduler (task %u on %s)", rank, node);
	else
		snprintf(who, sizeof(who), "%s %u (task %u on %s)", dlrt_role_name(role),
			 plan->task[rank].role_index, rank, node);
	snprintf(buf, len, "%s %s %s: ending the step, since %s would wait for it forever",
		 plan->runtime->name, who, how,
		 role == DLRT_ROLE_SCHEDULER ? "the servers and workers" : "the other roles");
}
