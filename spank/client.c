/* client.c - srun (local context) and sbatch/salloc (allocator context).
 *
 * Catch what can be caught before anything runs: option values after the
 * command line is parsed, and in srun the values against the step's size once
 * the allocation exists but before any task is launched.
 *
 * Before the step exists (init_post_opt) an error is one line and exit(1):
 * dlrt is installed as an `optional` plugin (a broken dlrt must never block
 * non-dlrt jobs), Slurm ignores the return codes of optional plugins, and srun
 * releases an allocation it created from its exit handler. Once the step
 * exists (local_user_init) exiting would leave it behind: see refuse_step().
 */
#include <errno.h>
#include <fcntl.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crypto.h"
#include "exchange.h"
#include "hetstep.h"
#include "exchange/rdvclient.h"
#include "plugin.h"

/* srun is exiting: end of file on the lifetime pipe ends the rendezvous (and
 * PR_SET_PDEATHSIG would). srun does not wait for it: that would add the
 * store's exit to every step's end, and the store holds nothing to save. */
void dlrt_client_exit(void)
{
	dlrt_preflight_exit();
	if (dlrt_plugin.rendezvous.life_fd >= 0 && dlrt_plugin.rendezvous.pid > 0)
		close(dlrt_plugin.rendezvous.life_fd);
	dlrt_plugin.rendezvous.life_fd = -1;
}

/* Whether the step's --dl-signal watchers share the job's times at srun's
 * rendezvous (tools/lcshare.h): then srun keeps it for every step, also one
 * whose exchange Slurm's PMIx carries, so that slurmctld is asked by one node
 * of the step, not by each. */
static bool times_shared(void)
{
	return dlrt_plugin.opts.warn_sig != 0;
}

/* The rendezvous' port for the step's --dl-signal watchers (DLRT_TIMES_ENV),
 * where it runs and they share the job's times; -1 if it cannot be set. */
static int times_env(void)
{
	char port[8];

	if (dlrt_plugin.rendezvous.pid <= 0 || !times_shared())
		return 0;
	snprintf(port, sizeof(port), "%u", dlrt_plugin.rendezvous.port);
	return setenv(DLRT_TIMES_ENV, port, 1);
}

/* srun, before it asks for its allocation or the step: the step secret and,
 * unless PMIx is forced and the step has no watchers to share the job's times
 * (times_shared), srun's rendezvous, so that it is up while srun waits
 * for the allocation (and a step that comes late still finds it). Whether the
 * step uses it is decided once the step exists (start_exchange); a rendezvous
 * the step does not use then ends before the tasks start. */
static void prepare_exchange(void)
{
	const struct dlrt_runtime *rt = dlrt_plugin.opts.runtime;
	struct dlrt_err err;

	if (!rt || !(rt->needs_root_addr || rt->needs_task_ports || rt->service ||
		     dlrt_plugin.opts.dry_run))
		return;
	if (dlrt_crypto_random(dlrt_plugin.step_secret, sizeof(dlrt_plugin.step_secret)) < 0) {
		dlrt_err_errno(&err, errno, "cannot make the step secret");
		slurm_error("dlrt: %s", err.msg);
		exit(1);
	}
	dlrt_plugin.has_step_secret = true;
	if (!times_shared() && dlrt_plugin.opts.exchange == DLRT_EXCHANGE_PMIX)
		return;
	if (dlrt_rendezvous_start(&dlrt_plugin.rendezvous, dlrt_plugin.step_secret, &err) < 0) {
		slurm_error("dlrt: %s", err.msg);
		exit(1);
	}
}

/* What carries a heterogeneous step's exchange, chosen once, in the second
 * component's init_post_opt (exchange.c: the same rule as a plain step's, which
 * knows a heterogeneous step by dlrt_hetstep_client_het): srun copies its
 * environment into each component's launch environment before local_user_init,
 * which it runs for one component only, so the carrier must be known then.
 * Kept, with whether it was forced onto nodes others may share and why, for
 * the warning, --dl-verbose and the dry run (het_local_user_init). Chosen
 * here, by srun's side, so that exchange.c, which asks hetstep.c about the
 * step, is not asked back by it. */
static struct {
	bool chosen, risky;
	enum dlrt_exchange_via via;
	char why[512];
} het_carrier;

static enum dlrt_exchange_via het_choose(spank_t sp)
{
	if (!het_carrier.chosen)
		het_carrier.via = dlrt_exchange_choose(sp, dlrt_plugin.opts.exchange,
						       het_carrier.why, sizeof(het_carrier.why),
						       &het_carrier.risky);
	het_carrier.chosen = true;
	return het_carrier.via;
}

/* init_post_opt of a heterogeneous step's second and later components:
 * local_user_init runs for one component only, after srun copied its
 * environment into every component's, so the secret and the carrier go
 * there now: srun's rendezvous, or Slurm's PMIx where the choice (the same
 * as a plain step's, exchange.c) takes it. */
static int het_post_opt(spank_t sp)
{
	enum dlrt_exchange_via via;
	struct dlrt_err err;
	uint16_t port;

	/* --dl-runtime given after the first ':' only: the secret is made now. */
	if (!dlrt_plugin.has_step_secret)
		prepare_exchange();
	if (!dlrt_plugin.has_step_secret)
		return 0;
	via = het_choose(sp);
	/* As in a plain step (start_exchange): a rendezvous the step will not use
	 * ends before the tasks start. */
	if (via == DLRT_EXCHANGE_PMIX && !times_shared())
		dlrt_service_stop(&dlrt_plugin.rendezvous);
	port = via == DLRT_EXCHANGE_PMIX ? 0 : dlrt_plugin.rendezvous.port;
	if (port == 0 && via != DLRT_EXCHANGE_PMIX) {
		slurm_error("dlrt: srun's rendezvous did not start for this heterogeneous step; "
			    "run it again, or use --dl-exchange=pmix");
		exit(1);
	}
	if (dlrt_hetstep_client_env(port, dlrt_plugin.step_secret, &err) < 0) {
		slurm_error("dlrt: %s", err.msg);
		exit(1);
	}
	if (times_env() < 0) {
		slurm_error("dlrt: cannot pass the rendezvous' port to the step: out of memory");
		exit(1);
	}
	return 0;
}

int dlrt_client_post_opt(spank_t sp)
{
	struct dlrt_err err;

	if (dlrt_plugin.opt_failed) {
		slurm_error("dlrt: %s", dlrt_plugin.opt_err.msg);
		exit(1);
	}
	if (dlrt_plugin.opts.cpu_bind_gpu && !strcmp(dlrt_plugin.opts.gpu_bind, "none")) {
		slurm_error("dlrt: --dl-cpu-bind=gpu needs a GPU per task, but --dl-gpu-bind=none "
			    "gives each task all of them: drop one of the two options");
		exit(1);
	}
	if (dlrt_plugin.opts.runtime && !dlrt_plugin.config_ok) {
		slurm_error("dlrt: plugstack.conf has an error (see above); ask your admin to fix it");
		exit(1);
	}
	/* Checks that need no step size run here, before srun asks for the step. */
	if (dlrt_plugin.opts.runtime && dlrt_opts_check_runtime(&dlrt_plugin.opts, &err) < 0) {
		slurm_error("dlrt: %s", err.msg);
		exit(1);
	}
	if (spank_context() == S_CTX_LOCAL) {
		/* A heterogeneous step: srun runs this once per component; the
		 * first made the secret, the others hand it to every component
		 * (hetstep.h). */
		if (dlrt_hetstep_client_count() > 1)
			return het_post_opt(sp);
		/* Only this srun may refuse its own step (refuse_step) or give it
		 * its secret (start_exchange). */
		unsetenv(DLRT_REFUSED_ENV);
		unsetenv(DLRT_RDV_ENV);
		unsetenv(DLRT_TIMES_ENV);
		/* Before anything of the step's: a failed node makes srun run
		 * again without it (exec). */
		dlrt_preflight_srun();
		prepare_exchange();
	}
	return 0;
}

/* srun refuses a step that already exists. Exiting would leave it behind:
 * Slurm frees a step when its tasks end, or when srun reports a launch that
 * failed, and a step that was never launched has neither. srun's own exit
 * path (its shepherd's kill of the step) does not free it either, so the step
 * stays RUNNING with no process until the job ends, and the allocation's next
 * srun waits for its CPUs ("Requested nodes are busy"; the same on 22.05 and
 * 24.11: stepmgr signals the step's nodes, which hold nothing to end). There
 * is no call a plugin can make to complete a step. So the step is launched
 * and ends at once: DLRT_REFUSED_ENV names it, and every task exits 1 in
 * task_init before the program (spank/stepd.c), which frees the step the
 * usual way. The refusal stays the one line the user reads: srun's own lines
 * about those exits ("task N: Exited with exit code 1") go to /dev/null. */
static int refuse_step(spank_t sp, const char *msg)
{
	uint32_t job = 0, step = 0;
	char id[32];
	int null_fd;

	slurm_error("dlrt: %s", msg);
	dlrt_client_exit(); /* no rendezvous for a step that exchanges nothing */
	unsetenv(DLRT_RDV_ENV);
	unsetenv(DLRT_TIMES_ENV);
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		exit(1); /* nothing to name; cannot happen once the step exists */
	snprintf(id, sizeof(id), "%u.%u", job, step);
	if (setenv(DLRT_REFUSED_ENV, id, 1) < 0)
		exit(1);
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null_fd >= 0) {
		dup2(null_fd, STDERR_FILENO);
		close(null_fd);
	}
	return 0;
}

/* The exchange's lines on srun's stderr: the warning when `risky` (the reason
 * Slurm's PMIx is open to another user's process there), and with --dl-verbose
 * or --dl-dry-run which carrier the step takes and why. */
static void report_exchange(enum dlrt_exchange_via via, const char *risky, const char *why)
{
	if (risky)
		slurm_error("dlrt: warning: %s: another user's process there can connect to "
			    "Slurm's PMIx as a task of this step and fail its address exchange "
			    "(nothing secret travels there, and values are signed); "
			    "--dl-exchange=srun avoids it", risky);
	if (dlrt_plugin.opts.verbose || dlrt_plugin.opts.dry_run)
		slurm_info("dlrt: address exchange through %s: %s", via == DLRT_EXCHANGE_PMIX ?
			   "Slurm's PMIx" : "srun's rendezvous", why);
}

/* srun, once Slurm made the step and before it launches it: what carries the
 * step's address exchange (exchange.c decides; it may ask slurmctld whether
 * the job holds its nodes alone, which is known only now). Every task gets
 * the step secret srun made (prepare_exchange) in DLRT_RDV_ENV, with the
 * rendezvous' port, or port 0 when Slurm's PMIx carries the exchange: the
 * launch environment is the one channel to the tasks that no other user can
 * read or write (Slurm's PMIx can be, docs/SECURITY.md). The nodes derive
 * their service key from the secret and sign what they publish with it; the
 * tasks take it out of the program's environment (spank/exchange.c). */
static int start_exchange(spank_t sp)
{
	char value[DLRT_RDV_ENV_MAX], why[512];
	enum dlrt_exchange_via via;
	bool risky;
	struct dlrt_err err;
	int rc = 0;

	if (!dlrt_plugin.has_step_secret)
		return 0;
	via = dlrt_exchange_choose(sp, dlrt_plugin.opts.exchange, why, sizeof(why), &risky);
	report_exchange(via, risky ? why : NULL, why);
	/* A rendezvous started in advance that the step will not use (a PMIx step
	 * whose watchers share nothing: --dl-signal=none) ends now, reaped
	 * (bounded), so that nothing of dlrt runs on srun's host during it. */
	if (via == DLRT_EXCHANGE_PMIX && !times_shared())
		dlrt_service_stop(&dlrt_plugin.rendezvous);
	else if (dlrt_plugin.rendezvous.pid <= 0 &&
		 dlrt_rendezvous_start(&dlrt_plugin.rendezvous, dlrt_plugin.step_secret, &err) < 0)
		return refuse_step(sp, err.msg);
	if (times_env() < 0)
		return refuse_step(sp, "cannot pass the rendezvous' port to the step: out of memory");
	dlrt_rdv_env_format(value, via == DLRT_EXCHANGE_SRUN ? dlrt_plugin.rendezvous.port : 0,
			    dlrt_plugin.step_secret);
	if (setenv(DLRT_RDV_ENV, value, 1) < 0)
		rc = refuse_step(sp, "cannot pass the step secret to the step: out of memory");
	memset(value, 0, sizeof(value));
	return rc;
}

/* A heterogeneous step: the components against the runtime's roles, and
 * the carrier chosen in het_post_opt, which every component has already. */
static int het_local_user_init(spank_t sp)
{
	struct dlrt_err err;

	if (dlrt_hetstep_client_check(sp, &err) < 0)
		return refuse_step(sp, err.msg);
	if (!dlrt_plugin.has_step_secret)
		return 0;
	report_exchange(het_carrier.via, het_carrier.risky ? het_carrier.why : NULL,
			het_carrier.why);
	return 0;
}

int dlrt_client_local_user_init(spank_t sp)
{
	const struct dlrt_runtime *rt = dlrt_plugin.opts.runtime;
	uint32_t ntasks = 0, nnodes = 0;
	struct dlrt_err err;

	if (!rt)
		return 0;
	dlrt_preflight_step_made();
	if (dlrt_hetstep_client_het())
		return het_local_user_init(sp);
	/* Without the counts the step side checks again with the full layout. */
	if (rt->validate &&
	    spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks) == ESPANK_SUCCESS &&
	    spank_get_item(sp, S_JOB_NNODES, &nnodes) == ESPANK_SUCCESS &&
	    rt->validate(&dlrt_plugin.opts, &dlrt_plugin.cfg, ntasks, nnodes, &err) < 0)
		return refuse_step(sp, err.msg);
	return start_exchange(sp);
}
