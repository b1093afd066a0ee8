/* horovod_runtime.c - Horovod: every task is a worker.
 *
 * Contract (docs/contracts.md, Horovod): HOROVOD_RANK/SIZE, LOCAL_RANK/SIZE and
 * CROSS_RANK/SIZE with the semantics of horovodrun's get_host_assignments (the
 * role model computes cross ranks that way, also for unequal tasks per node),
 * and HOROVOD_HOSTNAME equal within a node and distinct across nodes: the
 * Slurm node name is exactly that.
 *
 * --dl-horovod=gloo (default): as TonY and horovodrun's gloo mode do, a
 * rendezvous driver (dlrt-hvd-driver, this folder) runs on the first node
 * before any worker, with the host plan registered; every worker gets its
 * address and HOROVOD_CONTROLLER=gloo, so no MPI and no ssh are involved.
 * --dl-horovod=mpi: Horovod calls MPI_Init itself (srun --mpi=pmix does the
 * wire-up); dlrt starts nothing and opens no PMIx session in the task.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/netaddr.h"
#include "common/parse.h"
#include "runtime/runtime.h"

/* A worker waits this long for its peers at each rendezvous. Horovod's default
 * is 30 s (TonY sets 2000 for YARN's slow starts); srun starts every task at
 * once, but a loaded node can take longer than 30 s to exec Python. */
#define HVD_GLOO_TIMEOUT_S 120

/* --dl-horovod: who wires up Horovod's workers. */
enum hvd_mode {
	HVD_GLOO, /* dlrt's rendezvous driver, HOROVOD_CONTROLLER=gloo (TonY's way, no MPI) */
	HVD_MPI,  /* MPI_Init under srun --mpi=pmix; dlrt opens no PMIx session in the task */
};

static const char *const mode_names[] = { "gloo", "mpi", NULL };

struct hvd_config {
	uint32_t mode; /* horovod=: default of --dl-horovod (enum hvd_mode) */
};

struct hvd_opts {
	uint32_t mode;   /* --dl-horovod (enum hvd_mode) */
	uint32_t min_np; /* --dl-hvd-min-np (0: not given, 1) */
	uint32_t max_np; /* --dl-hvd-max-np (0: not given, no bound) */
};

/* As the driver's bound on a plan (hvd_plan.c). */
#define HVD_NP_MAX (1u << 20)

_Static_assert(sizeof(struct hvd_config) <= DLRT_RT_CONFIG_SIZE, "horovod site keys fit");
_Static_assert(sizeof(struct hvd_opts) <= DLRT_RT_OPTS_SIZE, "horovod options fit");

extern const struct dlrt_runtime dlrt_runtime_horovod;

static uint32_t hvd_mode(const struct dlrt_plan *plan)
{
	return ((const struct hvd_opts *)dlrt_rt_opts_c(plan->opts, &dlrt_runtime_horovod))->mode;
}

static const struct dlrt_site_key horovod_keys[] = {
	{ .name = "horovod", .type = DLRT_KEY_CHOICE, .offset = offsetof(struct hvd_config, mode),
	  .def = HVD_GLOO, .choices = mode_names, .fix = "is not gloo or mpi" },
	{ .name = NULL },
};

static void horovod_opts_init(void *opts, const void *cfg)
{
	((struct hvd_opts *)opts)->mode = ((const struct hvd_config *)cfg)->mode;
}

static int set_mode(void *opts, const void *cfg, const char *arg, struct dlrt_err *err)
{
	(void)cfg;
	for (uint32_t i = 0; arg && mode_names[i]; i++) {
		if (!strcmp(arg, mode_names[i])) {
			((struct hvd_opts *)opts)->mode = i;
			return 0;
		}
	}
	return dlrt_err_set(err, "--dl-horovod=%.64s: must be gloo (dlrt's rendezvous driver) or "
			    "mpi (MPI_Init under srun --mpi=pmix)", arg ? arg : "");
}

static int set_np(uint32_t *dst, const char *name, const char *arg, struct dlrt_err *err)
{
	if (arg && dlrt_parse_u32(arg, 1, HVD_NP_MAX, dst) == 0)
		return 0;
	return dlrt_err_set(err, "--%s=%.64s: must be a number of Horovod processes from 1 to %u, "
			    "as horovodrun's --%s (elastic Horovod, HOROVOD_ELASTIC=1)", name,
			    arg ? arg : "", HVD_NP_MAX, name + 7);
}

static int set_min_np(void *opts, const void *cfg, const char *arg, struct dlrt_err *err)
{
	(void)cfg;
	return set_np(&((struct hvd_opts *)opts)->min_np, "dl-hvd-min-np", arg, err);
}

static int set_max_np(void *opts, const void *cfg, const char *arg, struct dlrt_err *err)
{
	(void)cfg;
	return set_np(&((struct hvd_opts *)opts)->max_np, "dl-hvd-max-np", arg, err);
}

static const struct dlrt_rt_option horovod_options[] = {
	{ "dl-horovod", "MODE", "[dlrt] horovod: gloo (default) or mpi", set_mode, false },
	{ "dl-hvd-min-np", "N", "[dlrt] elastic horovod: horovodrun --min-np", set_min_np, true },
	{ "dl-hvd-max-np", "N", "[dlrt] elastic horovod: horovodrun --max-np", set_max_np, true },
	{ NULL, NULL, NULL, NULL, false },
};

static void horovod_assign(struct dlrt_plan *plan, const struct dlrt_config *cfg)
{
	(void)cfg;
	for (uint32_t t = 0; t < plan->layout->ntasks; t++)
		plan->task[t].role = DLRT_ROLE_WORKER;
}

/* HOROVOD_ELASTIC as Horovod's GetBoolEnvOrDefault reads it: a non-zero
 * integer. The value is copied into v (if given). */
static bool hvd_elastic(const struct dlrt_step_ctx *ctx, char *v, size_t n)
{
	char buf[64] = "";

	if (!v) {
		v = buf;
		n = sizeof(buf);
	}
	v[0] = '\0';
	return ctx->getenv(ctx->sp, "HOROVOD_ELASTIC", v, n) == 0 && strtol(v, NULL, 10) != 0;
}

/* The driver registers the scopes of the same plan the workers get: hosts in
 * step order, slots = the node's task count, names = HOROVOD_HOSTNAME. */
static bool horovod_service(const struct dlrt_plan *plan, struct dlrt_service_spec *spec)
{
	const struct dlrt_layout *l = plan->layout;
	struct dlrt_buf hosts;

	if (hvd_mode(plan) != HVD_GLOO)
		return false;
	dlrt_service_spec_init(spec, "dlrt-hvd-driver", "the Horovod rendezvous driver");
	dlrt_buf_init(&hosts, 1u << 26);
	for (uint32_t i = 0; i < l->nnodes; i++)
		dlrt_buf_printf(&hosts, "%s%s:%u", i ? "," : "", l->nodes.names[i], l->node_ntasks[i]);
	if (dlrt_buf_append(&hosts, "", 1) < 0)
		spec->failed = true;
	else
		dlrt_service_spec_add(spec, "--hosts=%s", (const char *)dlrt_buf_head(&hosts));
	dlrt_buf_free(&hosts);
	/* Elastic Horovod: the driver holds rank_and_size at the round's barrier
	 * and asks Slurm which nodes of this step still run tasks. */
	if (plan->step && plan->step_ctx && hvd_elastic(plan->step_ctx, NULL, 0)) {
		const struct hvd_opts *o = dlrt_rt_opts_c(plan->opts, &dlrt_runtime_horovod);

		dlrt_service_spec_add(spec, "--step=%u.%u", plan->step->job_id, plan->step->step_id);
		if (o->min_np)
			dlrt_service_spec_add(spec, "--min-np=%u", o->min_np);
		if (o->max_np)
			dlrt_service_spec_add(spec, "--max-np=%u", o->max_np);
	}
	return true;
}

static void horovod_task_env(const struct dlrt_plan *plan, uint32_t rank,
			     const struct dlrt_step_info *step, const struct dlrt_addrs *addrs,
			     struct dlrt_env *env)
{
	const struct dlrt_layout *l = plan->layout;
	uint32_t node = l->task_node[rank];
	char iface[32] = "";

	(void)step;
	dlrt_env_set(env, "HOROVOD_RANK", "%u", rank);
	dlrt_env_set(env, "HOROVOD_SIZE", "%u", l->ntasks);
	dlrt_env_set(env, "HOROVOD_LOCAL_RANK", "%u", l->task_local[rank]);
	dlrt_env_set(env, "HOROVOD_LOCAL_SIZE", "%u", l->node_ntasks[node]);
	dlrt_env_set(env, "HOROVOD_CROSS_RANK", "%u", plan->task[rank].cross_rank);
	dlrt_env_set(env, "HOROVOD_CROSS_SIZE", "%u", plan->task[rank].cross_size);
	dlrt_env_set(env, "HOROVOD_HOSTNAME", "%s", l->nodes.names[node]);
	if (hvd_mode(plan) != HVD_GLOO || !addrs || !addrs->valid)
		return;
	dlrt_env_set(env, "HOROVOD_GLOO_RENDEZVOUS_ADDR", "%s", addrs->root_ip);
	dlrt_env_set(env, "HOROVOD_GLOO_RENDEZVOUS_PORT", "%u", addrs->root_port);
	dlrt_env_set(env, "HOROVOD_CONTROLLER", "gloo");
	dlrt_env_set(env, "HOROVOD_CPU_OPERATIONS", "gloo");
	/* The NIC of the address the other nodes reach this one at (--dl-iface if
	 * given): gloo's pairs and NCCL's sockets then use the same network. */
	if (addrs->iface[0])
		snprintf(iface, sizeof(iface), "%s", addrs->iface);
	else
		dlrt_net_iface_of(addrs->node_ip, iface, sizeof(iface));
	if (iface[0]) {
		dlrt_env_set(env, "HOROVOD_GLOO_IFACE", "%s", iface);
		dlrt_env_set_default(env, "NCCL_SOCKET_IFNAME", "%s", iface);
	}
	dlrt_env_set_default(env, "HOROVOD_GLOO_TIMEOUT_SECONDS", "%d", HVD_GLOO_TIMEOUT_S);
}

/* Elastic Horovod re-initialises after every reset: its workers ask the
 * driver's GET /rank_and_size for their slot in the next round, which the
 * driver gives once every slot of the round asked or its node is gone
 * (docs/horovod.md, "Elastic Horovod"). What cannot work is refused here,
 * before anything starts, with one line. */
static int horovod_check_step(const struct dlrt_plan *plan, const struct dlrt_step_ctx *ctx,
			      struct dlrt_err *err)
{
	const struct hvd_opts *o = dlrt_rt_opts_c(plan->opts, &dlrt_runtime_horovod);
	uint32_t n = plan->layout->ntasks;
	char v[64];

	if (!hvd_elastic(ctx, v, sizeof(v))) {
		if (o->min_np || o->max_np)
			return dlrt_err_set(err, "--dl-hvd-%s-np is for elastic Horovod: export "
					    "HOROVOD_ELASTIC=1 (and run srun --no-kill) or drop the option",
					    o->min_np ? "min" : "max");
		return 0;
	}
	if (hvd_mode(plan) != HVD_GLOO)
		return dlrt_err_set(err, "HOROVOD_ELASTIC=%s: elastic Horovod re-initialises through "
				    "its gloo rendezvous, not MPI: use --dl-horovod=gloo (the default) "
				    "or unset HOROVOD_ELASTIC", v);
	if (o->max_np && o->min_np > o->max_np)
		return dlrt_err_set(err, "--dl-hvd-min-np=%u is above --dl-hvd-max-np=%u: give "
				    "min <= max", o->min_np, o->max_np);
	if (o->min_np > n || (o->max_np && o->max_np < n))
		return dlrt_err_set(err, "HOROVOD_ELASTIC=%s: the step has %u tasks, outside "
				    "--dl-hvd-min-np=%u..--dl-hvd-max-np=%u: every task of a step is "
				    "a Horovod process from the start, so give min <= %u <= max", v, n,
				    o->min_np ? o->min_np : 1, o->max_np ? o->max_np : n, n);
	return 0;
}

const struct dlrt_runtime dlrt_runtime_horovod = {
	.name = "horovod",
	.summary = "Horovod: every task a worker; gloo mode with dlrt's rendezvous driver, or MPI",
	/* MPI mode: Horovod calls MPI_Init itself. Gloo mode needs the root's address,
	 * which the service (horovod_service) turns on through the exchange. */
	.program_uses_pmix = true,
	.needs_root_addr = false,
	.options = horovod_options,
	.opts_init = horovod_opts_init,
	.keys = horovod_keys,
	.service = horovod_service,
	.assign = horovod_assign,
	.check_step = horovod_check_step,
	.mpi_option = "--dl-horovod=mpi",
	.task_env = horovod_task_env,
};
