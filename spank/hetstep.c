/* hetstep.c - a step over the components of a heterogeneous job as one dlrt
 * world (hetstep.h, docs/hetjob.md).
 *
 * What Slurm 22.05 to 26.05 give each side (read in their sources and seen on
 * the test cluster): srun runs init_post_opt once per component and
 * local_user_init once, for whichever component's launch thread came first,
 * with that component's step only (S_JOB_ID, S_JOB_TOTAL_TASK_COUNT); it
 * copies its environment into every component's launch environment between
 * the two. Each component's slurmstepd runs as for a step of its own: S_JOB_ID
 * is the component's job id, S_JOB_NODEID, S_JOB_NNODES, S_TASK_GLOBAL_ID and
 * S_JOB_TOTAL_TASK_COUNT count within the component; only the environment
 * speaks of the whole step (SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE
 * over every component, sorted by node name; SLURM_PROCID global in the task;
 * SLURM_JOB_ID the leader's; SLURM_JOB_NODELIST_HET_GROUP_<g> and
 * SLURM_JOB_ID_HET_GROUP_<g> from the allocation).
 */
#include "hetstep.h"

#include <fcntl.h>
#include <slurm/slurm.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hetlayout.h"
#include "common/slurm_compat.h"
#include "common/srunargs.h"
#include "exchange/rdvclient.h"
#include "common/env.h"
#include "plugin.h"

#define HET_ENV_MAX 16384

/* slurmstepd: this component in the whole step; tasks inherit it by fork. */
static bool het_step;
static uint32_t het_comp_first; /* the component's first task id */
static uint32_t het_leader;     /* the het job's id (SLURM_JOB_ID) */

static int step_env_u32(spank_t sp, const char *name, uint32_t lo, uint32_t hi, uint32_t *v)
{
	char buf[32];

	if (dlrt_task_getenv(sp, name, buf, sizeof(buf)) < 0)
		return -1;
	return dlrt_parse_u32(buf, lo, hi, v);
}

/* This slurmstepd's het group: the one whose SLURM_JOB_ID_HET_GROUP_<g> is
 * its job, else its job's distance from the leader (Slurm numbers the
 * components' jobs from the leader's id on). */
static uint32_t own_group(spank_t sp, uint32_t ngroups)
{
	uint32_t job = 0, id;
	char name[64];

	spank_get_item(sp, S_JOB_ID, &job);
	for (uint32_t g = 0; g < ngroups; g++) {
		snprintf(name, sizeof(name), "SLURM_JOB_ID_HET_GROUP_%u", g);
		if (step_env_u32(sp, name, 1, UINT32_MAX - 1, &id) == 0 && id == job)
			return g;
	}
	return job >= het_leader && job - het_leader < ngroups ? job - het_leader : UINT32_MAX;
}

/* Slurm's own view of this component must be the one dlrt rebuilt. */
static int check_comp(spank_t sp, const struct dlrt_layout *l, int comp, uint32_t group,
		      uint32_t *node_id, struct dlrt_err *err)
{
	uint32_t nodeid = 0, nnodes = 0, ntasks = 0;
	uint32_t n0, nn, nt;

	if (comp < 0)
		return dlrt_err_set(err, "this component (het group %u) has no node in the step's "
				    "node list (SLURM_STEP_NODELIST): start the step with srun "
				    "--het-group inside the job", group);
	n0 = l->comp_node_first[comp];
	nn = l->comp_node_first[comp + 1] - n0;
	nt = l->comp_first[comp + 1] - l->comp_first[comp];
	spank_get_item(sp, S_JOB_NODEID, &nodeid);
	spank_get_item(sp, S_JOB_NNODES, &nnodes);
	spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks);
	if (nodeid >= nn || (nnodes && nnodes != nn) || (ntasks && ntasks != nt))
		return dlrt_err_set(err, "het group %u of this step has %u tasks on %u nodes, but "
				    "dlrt rebuilt %u tasks on %u nodes from SLURM_STEP_NODELIST and "
				    "SLURM_JOB_NODELIST_HET_GROUP_%u: leave those variables as Slurm "
				    "set them", group, ntasks, nnodes, nt, nn, group);
	*node_id = n0 + nodeid;
	return 0;
}

int dlrt_hetstep_layout(spank_t sp, const char *nodelist, const char *tpn, enum dlrt_dist dist,
			uint32_t plane, struct dlrt_layout *l, uint32_t *node_id,
			struct dlrt_err *err)
{
	struct dlrt_het_input in = { .step_nodes = nodelist, .step_tpn = tpn, .dist = dist,
				     .plane_size = plane };
	char **groups = NULL, name[64];
	uint32_t group;
	int rc = -1;

	if (step_env_u32(sp, "SLURM_HET_SIZE", 2, DLRT_HET_GROUPS_MAX, &in.ngroups) < 0 ||
	    step_env_u32(sp, "SLURM_JOB_ID", 1, UINT32_MAX - 1, &het_leader) < 0)
		return 0; /* a plain job, or a component alone */
	groups = calloc(in.ngroups, sizeof(*groups));
	if (!groups)
		return dlrt_err_set(err, "out of memory building the task layout");
	/* Read whole: a component's node list has no length Slurm bounds. One
	 * that is missing stays NULL, and dlrt_layout_init_het says so. */
	for (uint32_t g = 0; g < in.ngroups; g++) {
		snprintf(name, sizeof(name), "SLURM_JOB_NODELIST_HET_GROUP_%u", g);
		dlrt_task_getenv_whole(sp, name, &groups[g]);
	}
	in.group_nodes = (const char *const *)groups;
	if (dlrt_layout_init_het(l, &in, err) < 0)
		goto out;
	if (l->ncomps < 2) {
		/* One component of a heterogeneous job: a plain step. */
		dlrt_layout_free(l);
		rc = 0;
		goto out;
	}
	group = own_group(sp, in.ngroups);
	if (check_comp(sp, l, dlrt_layout_comp_of_group(l, group), group, node_id, err) < 0) {
		dlrt_layout_free(l);
		goto out;
	}
	het_comp_first = l->comp_first[dlrt_layout_comp_of_group(l, group)];
	het_step = true;
	rc = 1;
out:
	for (uint32_t g = 0; g < in.ngroups; g++)
		free(groups[g]);
	free(groups);
	return rc;
}

uint32_t dlrt_hetstep_job_id(spank_t sp)
{
	uint32_t job = 0;

	if (het_step)
		return het_leader;
	spank_get_item(sp, S_JOB_ID, &job);
	return job;
}

int dlrt_task_rank(spank_t sp, uint32_t *rank)
{
	if (spank_get_item(sp, S_TASK_GLOBAL_ID, rank) != ESPANK_SUCCESS)
		return -1;
	*rank += het_comp_first;
	return 0;
}

void dlrt_hetstep_step_ids(char *out, size_t len, char **job_env, uint32_t job_id,
			   uint32_t step_id)
{
	const struct dlrt_layout *l = &dlrt_plugin.layout;
	size_t off = 0;

	snprintf(out, len, "%u.%u", job_id, step_id);
	if (!het_step)
		return;
	for (uint32_t c = 0; c < l->ncomps && off < len; c++) {
		char name[64], id[16];
		const char *v;
		uint32_t job;

		/* The component's own job: its variable, else its place after the leader's. */
		snprintf(name, sizeof(name), "SLURM_JOB_ID_HET_GROUP_%u", l->comp_group[c]);
		v = dlrt_envp_get(job_env, name);
		if (!v || dlrt_parse_u32(v, 1, UINT32_MAX - 1, &job) < 0)
			job = het_leader + l->comp_group[c];
		snprintf(id, sizeof(id), "%u", job);
		off += (size_t)snprintf(out + off, len - off, "%s%s.%u", off ? " " : "", id,
					step_id);
	}
}

const char *dlrt_hetstep_comp_of(uint32_t rank, char *buf, size_t len)
{
	const struct dlrt_layout *l = &dlrt_plugin.layout;

	if (!het_step || rank >= l->ntasks)
		return "";
	snprintf(buf, len, " (component %u)", l->comp_group[dlrt_layout_task_comp(l, rank)]);
	return buf;
}

/* "2 scheduler/server, ..." counts of each role in tasks [a, b). */
static void comp_roles(const struct dlrt_plan *plan, uint32_t a, uint32_t b, char *out,
		       size_t len)
{
	uint32_t n[DLRT_ROLE_COUNT] = { 0 };
	size_t off = 0;

	out[0] = '\0';
	for (uint32_t t = a; t < b; t++)
		n[plan->task[t].role]++;
	for (int r = DLRT_ROLE_COUNT - 1; r >= 0 && off < len; r--)
		if (n[r])
			off += (size_t)snprintf(out + off, len - off, "%s%u %s%s", off ? ", " : "",
						n[r], dlrt_role_name((enum dlrt_role)r),
						n[r] == 1 ? "" : "s");
}

void dlrt_hetstep_print(spank_t sp, FILE *f, const struct dlrt_plan *plan)
{
	const struct dlrt_layout *l = plan->layout;

	if (!het_step)
		return;
	fprintf(f, "heterogeneous step: %u components, roles %s (--dl-het-roles=%s)\n",
		l->ncomps, dlrt_plan_het_split(plan) ? "by component" : "as one plain step",
		dlrt_het_roles_name(plan->opts->het_roles));
	for (uint32_t c = 0; c < l->ncomps; c++) {
		uint32_t g = l->comp_group[c], a = l->comp_first[c], b = l->comp_first[c + 1];
		char name[64], cpus[64] = "?", mem[32] = "", gpus[64] = "", roles[160];

		snprintf(name, sizeof(name), "SLURM_JOB_CPUS_PER_NODE_HET_GROUP_%u", g);
		if (dlrt_task_getenv(sp, name, cpus, sizeof(cpus)) < 0)
			snprintf(cpus, sizeof(cpus), "?");
		snprintf(name, sizeof(name), "SLURM_MEM_PER_NODE_HET_GROUP_%u", g);
		if (dlrt_task_getenv(sp, name, mem, sizeof(mem)) == 0)
			strncat(mem, "M", sizeof(mem) - strlen(mem) - 1);
		snprintf(name, sizeof(name), "SLURM_GPUS_PER_NODE_HET_GROUP_%u", g);
		dlrt_task_getenv(sp, name, gpus, sizeof(gpus));
		comp_roles(plan, a, b, roles, sizeof(roles));
		fprintf(f, "component %u: tasks %u-%u on", g, a, b - 1);
		for (uint32_t i = l->comp_node_first[c]; i < l->comp_node_first[c + 1]; i++)
			fprintf(f, " %s(%u)", l->nodes.names[i], l->node_ntasks[i]);
		fprintf(f, ", cpus/node %s%s%s%s%s: %s\n", cpus, mem[0] ? ", mem/node " : "", mem,
			gpus[0] ? ", gpus/node " : "", gpus, roles);
	}
}

void dlrt_hetstep_batch_jobs(spank_t sp, char *ids, size_t ilen, char *nodes, size_t nlen)
{
	uint32_t ngroups = 0;
	size_t io = 0, no = 0;
	char name[64], v[HET_ENV_MAX];

	if (step_env_u32(sp, "SLURM_HET_SIZE", 2, DLRT_HET_GROUPS_MAX, &ngroups) < 0)
		return;
	for (uint32_t g = 0; g < ngroups; g++) {
		snprintf(name, sizeof(name), "SLURM_JOB_ID_HET_GROUP_%u", g);
		if (dlrt_task_getenv(sp, name, v, 16) == 0 && io < ilen)
			io += (size_t)snprintf(ids + io, ilen - io, "%s%s", io ? " " : "", v);
		snprintf(name, sizeof(name), "SLURM_JOB_NODELIST_HET_GROUP_%u", g);
		if (dlrt_task_getenv(sp, name, v, sizeof(v)) == 0 && no < nlen)
			no += (size_t)snprintf(nodes + no, nlen - no, "%s%s", no ? "," : "", v);
	}
	if (io >= ilen)
		ids[0] = '\0'; /* cut: the leader alone, as in a plain job */
}

/* ---- srun ---- */

static uint32_t client_components;

uint32_t dlrt_hetstep_client_count(void)
{
	return ++client_components;
}

bool dlrt_hetstep_client_het(void)
{
	return client_components > 1;
}

/* srun's own rule for the step's MPI plugin (its opt.c and mpi.c): --mpi
 * (Slurm takes it from the first component only), else SLURM_MPI_TYPE from
 * the environment, else MpiDefault. */
int dlrt_hetstep_client_mpi(char *out, size_t len)
{
	static char cmd[65536];
	const char *env = getenv("SLURM_MPI_TYPE");
	slurm_conf_t *conf = NULL;
	ssize_t n;
	int fd;

	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, cmd, sizeof(cmd));
	if (fd >= 0)
		close(fd);
	if (n > 0 && dlrt_srunargs_mpi(cmd, (size_t)n, out, len))
		return 0;
	if (env) {
		snprintf(out, len, "%s", env);
		return 0;
	}
	if (slurm_load_ctl_conf((time_t)0, &conf) != SLURM_SUCCESS || !conf)
		return -1;
	snprintf(out, len, "%s", conf->mpi_default ? conf->mpi_default : "none");
	dlrt_slurm_free_conf(conf);
	return 0;
}

int dlrt_hetstep_client_env(uint16_t rdv_port, const uint8_t secret[32], struct dlrt_err *err)
{
	char value[DLRT_RDV_ENV_MAX];
	int rc;

	dlrt_rdv_env_format(value, rdv_port, secret);
	rc = setenv(DLRT_RDV_ENV, value, 1);
	memset(value, 0, sizeof(value));
	if (rc < 0)
		return dlrt_err_set(err, "cannot pass the step secret to the step: out of memory");
	return 0;
}

int dlrt_hetstep_client_check(spank_t sp, struct dlrt_err *err)
{
	const struct dlrt_runtime *rt = dlrt_plugin.opts.runtime;
	uint32_t ngroups = 0, step = 0, n = 0, ntasks = 0, nnodes = 0;
	uint32_t counts[DLRT_HET_GROUPS_MAX];
	const char *s = getenv("SLURM_HET_SIZE");

	if (!rt)
		return 0;
	/* srun's ':' inside a job that is not heterogeneous, or srun making the
	 * heterogeneous allocation itself: Slurm gives the tasks no allocation of
	 * each component (SLURM_JOB_NODELIST_HET_GROUP_<g>, seen on 22.05), from
	 * which dlrt rebuilds the step. */
	if (!s || !getenv("SLURM_JOB_NODELIST_HET_GROUP_0"))
		return dlrt_err_set(err, "a step over several components runs only inside a "
				    "heterogeneous job's allocation: ask for the components with "
				    "salloc or sbatch (-n2 : -n4, or #SBATCH hetjob) and run srun "
				    "--het-group=0,1 there, or drop the ':' from this srun");
	if (dlrt_parse_u32(s, 2, DLRT_HET_GROUPS_MAX, &ngroups) < 0 ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return 0;
	for (uint32_t g = 0; g < ngroups; g++) {
		char name[64];
		uint32_t job;
		slurm_step_id_t id = { .step_id = step, .step_het_comp = NO_VAL };
		slurm_step_layout_t *sl;

		snprintf(name, sizeof(name), "SLURM_JOB_ID_HET_GROUP_%u", g);
		s = getenv(name);
		if (!s || dlrt_parse_u32(s, 1, UINT32_MAX - 1, &job) < 0)
			continue;
		id.job_id = job;
		sl = slurm_job_step_layout_get(&id);
		if (!sl)
			continue; /* not in this step (or slurmctld does not say) */
		counts[n++] = sl->task_cnt;
		ntasks += sl->task_cnt;
		nnodes += sl->node_cnt;
		slurm_job_step_layout_free(sl);
	}
	if (n < 2)
		return 0;
	return dlrt_plan_validate(rt, &dlrt_plugin.opts, &dlrt_plugin.cfg, n, counts, ntasks,
				  nnodes, err);
}
