/* preflight.c - --dl-preflight in srun (docs/preflight.md).
 *
 * In srun's init_post_opt, inside an allocation and before srun asks for the
 * step, srun runs a helper step of its own: one dlrt-preflight per node of
 * the allocation (tools/dlrt_preflight_main.c), with a rendezvous of its own
 * (spank/service.c, the same store and secret scheme as the step's address
 * exchange) for the nodes to find each other, bounded by the spec's timeout.
 * Each node prints one line (preflight/pfline.h); srun judges them all
 * (preflight/pfdecide.h). A node that fails gets one line on srun's stderr
 * naming the node, the check and the figure, and a line in the job's retry
 * record like a --dl-retries failure (spank/requeue.c), so that a job with
 * --dl-retries that fails on it is requeued without it. Then srun runs
 * again as itself with --exclude=<failed nodes> (exec of the same command
 * line): the step starts on the allocation's other nodes when there are
 * enough of them; when there are not, srun says so and the record makes the
 * requeue leave the node out.
 *
 * Why a helper step before the step rather than checks inside it: only
 * before the step exists can srun still choose other nodes, and a helper
 * step costs one launch (bench/RESULTS.md) while a failed step would cost
 * the whole framework's start and a requeue.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crypto.h"
#include "common/hostlist.h"
#include "common/proc.h"
#include "exchange/rdvclient.h"
#include "plugin.h"
#include "preflight/pfdecide.h"
#include "preflight/pfline.h"

/* srun runs again with --exclude: this marks the second run, which checks
 * nothing again (the nodes it runs on passed), and names the nodes left out
 * with their checks ("n2:shm,n3:net"). */
#define PF_DONE_ENV "DLRT_PREFLIGHT_DONE"
#define PF_OUT_MAX (1u << 20)
#define PF_LAUNCH_MARGIN_MS 10000
#define PF_LIST_MAX 8192 /* the failed nodes' names, with their checks */
#define PF_CMDLINE_MAX (256u << 10)

extern char **environ;

/* The second run: the nodes left out, and whether its step was made. */
static char pf_left_out[PF_LIST_MAX];
static bool pf_step_made;

/* The environment of the helper srun: srun's own, without dlrt's options and
 * variables (the helper is no dlrt step), with the check's. NULL-ended,
 * malloc'ed (the strings are srun's or `add`'s). */
static char **helper_env(char *const *add, size_t nadd)
{
	size_t n = 0, k = 0;
	char **e;

	while (environ[n])
		n++;
	e = calloc(n + nadd + 1, sizeof(*e));
	if (!e)
		return NULL;
	for (size_t i = 0; i < n; i++)
		/* srun's own options travel as _SLURM_SPANK_OPTION_dlrt_*,
		 * sbatch's as SLURM_SPANK__SLURM_SPANK_OPTION_dlrt_* */
		if (!strstr(environ[i], "SPANK_OPTION_dlrt_") &&
		    strncmp(environ[i], "SLURM_DLRT_", 11) && strncmp(environ[i], "DLRT_PREFLIGHT_", 15))
			e[k++] = environ[i];
	for (size_t i = 0; i < nadd; i++)
		e[k++] = add[i];
	return e;
}

/* The folder the nodes must share: the step's checkpoint folder when the job
 * or the site named one (--dl-checkpoint-dir, checkpoint_dir=), its job
 * folder when it exists already; "" when there is none to check. */
static void ckpt_folder(const char *job, char *out, size_t len)
{
	const struct dlrt_opts *o = &dlrt_plugin.opts;
	char base[1400];
	const char *pwd = getenv("PWD");
	struct stat st;

	out[0] = '\0';
	if (!o->checkpoint_dir[0])
		return;
	if (!o->checkpoint_dir_given)
		snprintf(base, sizeof(base), "%s/uid-%u", o->checkpoint_dir, (unsigned)getuid());
	else if (o->checkpoint_dir[0] == '/')
		snprintf(base, sizeof(base), "%s", o->checkpoint_dir);
	else if (pwd && pwd[0] == '/')
		snprintf(base, sizeof(base), "%s/%s", pwd, o->checkpoint_dir);
	else
		return;
	if (stat(base, &st) < 0 || !S_ISDIR(st.st_mode))
		return; /* made by the step itself later: nothing to compare yet */
	snprintf(out, len, "%s/%s", base, job);
	if (stat(out, &st) < 0 || !S_ISDIR(st.st_mode))
		snprintf(out, len, "%s", base);
}

/* Runs the helper step; its output into out. */
static int run_helper(const char *job, const struct dlrt_hostlist *hl, const char *nodelist,
		      struct dlrt_buf *out, struct dlrt_svc *rdv, char *why, size_t wlen)
{
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN], tagb[6];
	char rdv_s[DLRT_RDV_ENV_MAX + 32], spec_s[DLRT_PF_SPEC_MAX + 32], ckpt_s[1600], iface_s[64],
		tag_s[64], tag[16], prog[4096], nn[16], nodes_arg[4200];
	char *add[] = { "DLRT_PREFLIGHT_HELPER=1", rdv_s, spec_s, ckpt_s, iface_s, tag_s };
	struct dlrt_proc_result res;
	struct dlrt_err err;
	char **envp;
	int rc;

	if (dlrt_crypto_random(secret, sizeof(secret)) < 0 || dlrt_crypto_random(tagb, sizeof(tagb)) < 0)
		return snprintf(why, wlen, "no random bytes"), -1;
	if (dlrt_service_program_path("dlrt-preflight", prog, sizeof(prog), &err) < 0 ||
	    dlrt_rendezvous_start(rdv, secret, &err) < 0)
		return snprintf(why, wlen, "%s", err.msg), -1;
	dlrt_svcauth_hex(tagb, sizeof(tagb), tag);
	snprintf(rdv_s, sizeof(rdv_s), "DLRT_PREFLIGHT_RDV=");
	dlrt_rdv_env_format(rdv_s + strlen(rdv_s), rdv->port, secret);
	memcpy(spec_s, "DLRT_PREFLIGHT_SPEC=", 20);
	dlrt_pf_spec_format(&dlrt_plugin.opts.preflight, spec_s + 20, sizeof(spec_s) - 20);
	memcpy(ckpt_s, "DLRT_PREFLIGHT_CKPT=", 20);
	ckpt_folder(job, ckpt_s + 20, sizeof(ckpt_s) - 20);
	snprintf(iface_s, sizeof(iface_s), "DLRT_PREFLIGHT_IFACE=%s", dlrt_plugin.opts.iface);
	snprintf(tag_s, sizeof(tag_s), "DLRT_PREFLIGHT_TAG=%s.%s", job, tag);
	snprintf(nn, sizeof(nn), "%u", hl->n);
	snprintf(nodes_arg, sizeof(nodes_arg), "--nodelist=%s", nodelist);
	{
		char *argv[] = { "srun", "--overlap", "--mpi=none", "--quiet", "--kill-on-bad-exit=0",
				 "--cpus-per-task=1", "--ntasks-per-node=1", "--export=ALL", "-N", nn, "-n", nn,
				 nodes_arg, "--job-name=dlrt-preflight", prog, NULL };
		/* The nodes end their own checks by 85 % of the timeout after they
		 * start; the margin is the helper step's launch and end, so that a
		 * slow launch is not taken for a silent node. */
		struct dlrt_proc_spec spec = { .argv = argv, .timeout_ms =
						       (int)dlrt_plugin.opts.preflight.timeout_s * 1000 +
						       PF_LAUNCH_MARGIN_MS,
					       .out_max = PF_OUT_MAX, .with_stderr = true };

		envp = helper_env(add, sizeof(add) / sizeof(*add));
		if (!envp) {
			memset(rdv_s, 0, sizeof(rdv_s));
			return snprintf(why, wlen, "out of memory"), -1;
		}
		spec.envp = envp;
		rc = dlrt_proc_run(&spec, "the preflight step", out, &res, &err);
		free(envp);
	}
	memset(rdv_s, 0, sizeof(rdv_s));
	memset(secret, 0, sizeof(secret));
	if (rc < 0 && !res.timed_out)
		return snprintf(why, wlen, "%s", err.msg), -1;
	return 0;
}

/* Each node's line from the helper's output; the first other line into why
 * (the first says why, srun's own follow). */
static void read_lines(const struct dlrt_buf *out, struct dlrt_pf_result *res, bool *have,
		       uint32_t n, char *why, size_t wlen)
{
	const char *p = (const char *)dlrt_buf_head(out), *end = p + out->len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);
		struct dlrt_pf_result r;

		if (dlrt_pf_line_parse(p, len, &r) == 0 && r.idx < n && !have[r.idx]) {
			res[r.idx] = r;
			have[r.idx] = true;
			if (dlrt_plugin.opts.verbose)
				slurm_info("dlrt: --dl-preflight: %.*s", (int)len, p);
		} else if (len > 0 && !why[0]) {
			snprintf(why, wlen, "%.*s", (int)(len < 300 ? len : 300), p);
		}
		p += len + 1;
	}
}

/* srun runs again, as itself, with --exclude=BAD first: the same command
 * line otherwise (so a later --exclude of the user's own still wins). */
static void rerun_without(const char *bad, const char *done)
{
	char *buf = malloc(PF_CMDLINE_MAX), **argv, excl[PF_LIST_MAX + 16];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = 0, k;
	size_t argc = 0, j = 0;

	if (!buf || fd < 0)
		goto fail;
	while ((k = read(fd, buf + n, PF_CMDLINE_MAX - 1 - (size_t)n)) > 0)
		n += k;
	close(fd);
	buf[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		argc += buf[i] == '\0';
	argv = calloc(argc + 2, sizeof(*argv));
	if (!argv || !argc)
		goto fail;
	snprintf(excl, sizeof(excl), "--exclude=%s", bad);
	for (char *a = buf; a < buf + n; a += strlen(a) + 1) {
		argv[j++] = a;
		if (j == 1)
			argv[j++] = excl;
	}
	argv[j] = NULL;
	if (setenv(PF_DONE_ENV, done, 1) == 0)
		execv("/proc/self/exe", argv);
fail:
	slurm_error("dlrt: --dl-preflight: cannot run srun again without %s: %s; run it again "
		    "with --exclude=%s", bad, strerror(errno), bad);
	exit(1);
}

/* Judges the lines: one line per failed node, recorded; the failed nodes
 * into bad. */
static size_t judge(const char *job, const struct dlrt_hostlist *hl, struct dlrt_pf_result *res,
		    bool *have, char *bad, size_t blen, char *done, size_t dlen)
{
	struct dlrt_pf_verdict *v = calloc(hl->n, sizeof(*v));
	const char *att = getenv("SLURM_RESTART_COUNT");
	size_t nv;

	if (!v)
		return 0;
	nv = dlrt_pf_decide(&dlrt_plugin.opts.preflight, res, have, (const char *const *)hl->names,
			    hl->n, v);
	bad[0] = done[0] = '\0';
	for (size_t i = 0; i < nv; i++) {
		const char *node = hl->names[v[i].idx];
		char rec[512];
		size_t l = strlen(bad), d = strlen(done);

		slurm_error("dlrt: --dl-preflight: node %s failed %s: %s", node, v[i].check,
			    v[i].figure);
		if (l + strlen(node) + 2 > blen || d + strlen(node) + strlen(v[i].check) + 3 > dlen) {
			slurm_error("dlrt: --dl-preflight: too many nodes failed to name them all in "
				    "--exclude; the step does not start");
			exit(1);
		}
		snprintf(bad + l, blen - l, "%s%s", l ? "," : "", node);
		snprintf(done + d, dlen - d, "%s%s:%s", d ? "," : "", node, v[i].check);
		/* Not yet a failed node of the attempt (that form, "attempt=A
		 * node=X", makes --dl-retries requeue the job): the step may
		 * well run on the others. dlrt_preflight_exit records that form
		 * when it could not. */
		snprintf(rec, sizeof(rec), "attempt=%s preflight node=%s check=%s left out of the "
			 "step", att && *att ? att : "0", node, v[i].check);
		dlrt_requeue_note_client((uint32_t)strtoul(job, NULL, 10), rec);
	}
	free(v);
	return nv;
}

void dlrt_preflight_srun(void)
{
	const char *job = getenv("SLURM_JOB_ID"), *nodelist = getenv("SLURM_JOB_NODELIST");
	struct dlrt_hostlist hl = { 0 };
	struct dlrt_svc rdv = { .pid = 0, .life_fd = -1 };
	struct dlrt_pf_result *res = NULL;
	struct dlrt_buf out;
	struct dlrt_err err;
	char why[512] = "", bad[PF_LIST_MAX], done[PF_LIST_MAX];
	bool *have = NULL;
	size_t nv;

	if (!dlrt_plugin.opts.runtime || dlrt_plugin.opts.preflight.mode == DLRT_PF_OFF ||
	    getenv("DLRT_PREFLIGHT_HELPER"))
		return;
	if (getenv(PF_DONE_ENV)) { /* the second run: its nodes passed */
		snprintf(pf_left_out, sizeof(pf_left_out), "%s", getenv(PF_DONE_ENV));
		unsetenv(PF_DONE_ENV);
		/* srun exits at once, without slurm_spank_exit, when the
		 * allocation has too few nodes left for the step. */
		atexit(dlrt_preflight_exit);
		return;
	}
	if (!job || !*job || !nodelist || !*nodelist) {
		if (!dlrt_plugin.opts.preflight_given)
			return; /* the site's default: an srun that makes its own allocation */
		slurm_error("dlrt: --dl-preflight needs an allocation to check before the step: "
			    "run srun inside sbatch or salloc, or drop --dl-preflight");
		exit(1);
	}
	if (dlrt_hostlist_expand(&hl, nodelist, &err) < 0) {
		slurm_error("dlrt: --dl-preflight: SLURM_JOB_NODELIST: %s", err.msg);
		exit(1);
	}
	dlrt_buf_init(&out, PF_OUT_MAX);
	res = calloc(hl.n, sizeof(*res));
	have = calloc(hl.n, sizeof(*have));
	if (!res || !have || run_helper(job, &hl, nodelist, &out, &rdv, why, sizeof(why)) < 0) {
		slurm_error("dlrt: --dl-preflight: the check could not run (%s); the step starts "
			    "unchecked", res && have ? why : "out of memory");
		goto out;
	}
	read_lines(&out, res, have, hl.n, why, sizeof(why));
	for (nv = 0; nv < hl.n && !have[nv]; nv++)
		;
	if (nv == hl.n) { /* not one line: the helper step itself did not run */
		slurm_error("dlrt: --dl-preflight: the check step gave no result (%s); the step "
			    "starts unchecked", why[0] ? why : "no output");
		goto out;
	}
	nv = judge(job, &hl, res, have, bad, sizeof(bad), done, sizeof(done));
	if (nv == hl.n) {
		slurm_error("dlrt: --dl-preflight: every node of the allocation failed (%s); the "
			    "step does not start", why[0] ? why : "see above");
		exit(1);
	}
	if (nv) {
		dlrt_service_stop(&rdv);
		rerun_without(bad, done);
	}
out:
	if (rdv.pid > 0)
		dlrt_service_stop(&rdv);
	dlrt_buf_free(&out);
	free(res);
	free(have);
	dlrt_hostlist_free(&hl);
}

void dlrt_preflight_step_made(void)
{
	pf_step_made = true;
}

/* srun's exit (slurm_spank_exit, or exit() when srun gives up before it has
 * a step): a second run whose step was never made (too few nodes without
 * the ones left out) records them as failed nodes of the attempt, so that
 * --dl-retries requeues the job without them (spank/requeue.c). */
void dlrt_preflight_exit(void)
{
	const char *job = getenv("SLURM_JOB_ID"), *att = getenv("SLURM_RESTART_COUNT");

	if (!pf_left_out[0] || pf_step_made || !job)
		return;
	for (char *p = pf_left_out; *p;) {
		size_t k = strcspn(p, ",");
		char one[300], rec[400], *colon;

		snprintf(one, sizeof(one), "%.*s", (int)(k < sizeof(one) ? k : sizeof(one) - 1), p);
		colon = strchr(one, ':');
		if (colon)
			*colon = '\0';
		snprintf(rec, sizeof(rec), "attempt=%s node=%s step=preflight check=%s",
			 att && *att ? att : "0", one, colon ? colon + 1 : "?");
		dlrt_requeue_note_client((uint32_t)strtoul(job, NULL, 10), rec);
		p += k + (p[k] == ',');
	}
	/* stderr itself: from exit(), srun's log may be closed already */
	fprintf(stderr, "srun: error: dlrt: --dl-preflight: the step did not start without %s%s\n",
		pf_left_out, dlrt_plugin.opts.retries ? "; --dl-retries requeues the job without them" :
		"; sbatch --dl-retries=N would requeue the job without them");
	pf_left_out[0] = '\0';
}
