#include "opts.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "gpubind/gpuplan.h"
#include "jobpolicy/warnsig.h"
#include "runtime.h"

const char *dlrt_exchange_via_name(enum dlrt_exchange_via via)
{
	switch (via) {
	case DLRT_EXCHANGE_PMIX:
		return "pmix";
	case DLRT_EXCHANGE_SRUN:
		return "srun";
	case DLRT_EXCHANGE_AUTO:
		break;
	}
	return "auto";
}

/* "auto", "pmix" or "srun"; -1 otherwise. */
static int parse_exchange_via(const char *v, enum dlrt_exchange_via *via)
{
	static const enum dlrt_exchange_via all[] = { DLRT_EXCHANGE_AUTO, DLRT_EXCHANGE_PMIX,
						      DLRT_EXCHANGE_SRUN };

	for (size_t i = 0; v && i < sizeof(all) / sizeof(*all); i++)
		if (!strcmp(v, dlrt_exchange_via_name(all[i]))) {
			*via = all[i];
			return 0;
		}
	return -1;
}

static int rt_slot(const struct dlrt_runtime *rt)
{
	for (int i = 0; dlrt_runtimes[i] && i < DLRT_RUNTIME_MAX; i++)
		if (dlrt_runtimes[i] == rt)
			return i;
	return -1;
}

void *dlrt_rt_opts(struct dlrt_opts *o, const struct dlrt_runtime *rt)
{
	int i = rt_slot(rt);

	return i < 0 ? NULL : o->rt[i].b;
}

const void *dlrt_rt_opts_c(const struct dlrt_opts *o, const struct dlrt_runtime *rt)
{
	int i = rt_slot(rt);

	return i < 0 ? NULL : o->rt[i].b;
}

const void *dlrt_rt_config(const struct dlrt_config *cfg, const struct dlrt_runtime *rt)
{
	int i = rt_slot(rt);

	return i < 0 ? NULL : cfg->rt[i].b;
}

/* Flat id -> (runtime slot, index in its options); -1 for a generic id or none. */
static int rt_opt_of(int id, int *slot, int *k)
{
	int n = DLRT_OPT_GENERIC_COUNT;

	for (int i = 0; dlrt_runtimes[i] && i < DLRT_RUNTIME_MAX; i++) {
		const struct dlrt_rt_option *ro = dlrt_runtimes[i]->options;

		for (int j = 0; ro && ro[j].name; j++, n++) {
			if (n == id) {
				*slot = i;
				*k = j;
				return 0;
			}
		}
	}
	return -1;
}

/* --dl-gpu-bind and gpu_bind=: closest, none or a well-formed map:LIST. */
static int check_gpu_bind(const char *v, char *out, size_t len, struct dlrt_err *err)
{
	struct dlrt_gpuplan_bind *b = malloc(sizeof(*b));
	int rv;

	if (!b)
		return dlrt_err_set(err, "out of memory checking --dl-gpu-bind");
	rv = dlrt_gpuplan_bind_parse(b, v ? v : "", err);
	free(b);
	if (rv < 0)
		return -1;
	if (strlen(v) >= len)
		return dlrt_err_set(err, "--dl-gpu-bind value is longer than %zu characters: use "
				    "map:G*N to repeat entries", len - 1);
	snprintf(out, len, "%s", v);
	return 0;
}

/* A topology path: non-empty, fits, no control characters (it goes into error lines). */
static int check_path(const char *what, const char *v, char *out, size_t len,
		      struct dlrt_err *err)
{
	if (!v || !*v || strlen(v) >= len)
		return dlrt_err_set(err, "%s: give the path of an hwloc XML file (lstopo --of xml)",
				    what);
	for (const char *c = v; *c; c++)
		if ((unsigned char)*c < 0x20)
			return dlrt_err_set(err, "%s: the path has control characters", what);
	snprintf(out, len, "%s", v);
	return 0;
}

/* "a,b" (runtime names) -> bitmask of runtime table indices. */
static int parse_runtime_set(const char *list, uint32_t *mask, struct dlrt_err *err)
{
	char names[256];
	const char *s = list;

	*mask = 0;
	while (*s) {
		size_t n = strcspn(s, ",");
		char one[64];
		int idx;

		if (n == 0 || n >= sizeof(one))
			return dlrt_err_set(err, "plugstack.conf: runtimes='%s' is not a comma list", list);
		memcpy(one, s, n);
		one[n] = '\0';
		idx = dlrt_runtime_index(one);
		if (idx < 0) {
			dlrt_runtime_list(names, sizeof(names), ~0u);
			return dlrt_err_set(err, "plugstack.conf: runtimes= names unknown runtime '%s' "
					    "(valid: %s)", one, names);
		}
		*mask |= 1u << idx;
		s += n + (s[n] == ',');
	}
	return 0;
}

static int key_runtimes(struct dlrt_config *cfg, const char *v, struct dlrt_err *err)
{
	return parse_runtime_set(v, &cfg->allowed, err);
}

static int key_verbose(struct dlrt_config *cfg, const char *v, struct dlrt_err *err)
{
	if (dlrt_parse_bool(v, &cfg->verbose) < 0)
		return dlrt_err_set(err, "plugstack.conf: verbose='%s' is not yes or no", v);
	return 0;
}

static int key_exchange_timeout(struct dlrt_config *cfg, const char *v, struct dlrt_err *err)
{
	if (dlrt_parse_u32(v, 1, 3600, &cfg->exchange_timeout) < 0)
		return dlrt_err_set(err, "plugstack.conf: exchange_timeout='%s' is not seconds from "
				    "1 to 3600", v);
	return 0;
}

static int key_exchange(struct dlrt_config *cfg, const char *v, struct dlrt_err *err)
{
	if (parse_exchange_via(v, &cfg->exchange) < 0)
		return dlrt_err_set(err, "plugstack.conf: exchange='%s' is not auto, pmix or srun", v);
	return 0;
}

static int key_gpu_bind(struct dlrt_config *cfg, const char *v, struct dlrt_err *err)
{
	char why[sizeof(err->msg)];

	if (check_gpu_bind(v, cfg->gpu_bind, sizeof(cfg->gpu_bind), err) == 0)
		return 0;
	snprintf(why, sizeof(why), "%s", err->msg);
	return dlrt_err_set(err, "plugstack.conf: gpu_bind: %s", why);
}

static int key_topology_xml(struct dlrt_config *cfg, const char *v, struct dlrt_err *err)
{
	return check_path("plugstack.conf: topology_xml=", v, cfg->topology_xml,
			  sizeof(cfg->topology_xml), err);
}

static int key_service_timeout(struct dlrt_config *cfg, const char *v, struct dlrt_err *err)
{
	if (dlrt_parse_u32(v, 1, 600, &cfg->service_timeout) < 0)
		return dlrt_err_set(err, "plugstack.conf: service_timeout='%s' is not seconds from "
				    "1 to 600", v);
	return 0;
}

static int key_service_max_lifetime(struct dlrt_config *cfg, const char *v, struct dlrt_err *err)
{
	if (dlrt_parse_u32(v, 60, 1u << 30, &cfg->service_max_lifetime) < 0)
		return dlrt_err_set(err, "plugstack.conf: service_max_lifetime='%s' is not seconds, "
				    "at least 60", v);
	return 0;
}

static int key_signal(struct dlrt_config *cfg, const char *v, struct dlrt_err *err)
{
	if (dlrt_warnsig_parse(v, &cfg->warn_sig, &cfg->warn_secs, err) < 0)
		return dlrt_err_set(err, "plugstack.conf: signal='%s' is not SIG@SECS (e.g. "
				    "USR1@120) or none", v);
	return 0;
}

static int key_checkpoint_dir(struct dlrt_config *cfg, const char *v, struct dlrt_err *err)
{
	if (!v || v[0] != '/' || strlen(v) >= sizeof(cfg->checkpoint_dir) - 64 ||
	    strpbrk(v, "\n\r"))
		return dlrt_err_set(err, "plugstack.conf: checkpoint_dir='%s' is not an absolute "
				    "folder path on a filesystem every node shares", v ? v : "");
	snprintf(cfg->checkpoint_dir, sizeof(cfg->checkpoint_dir), "%s", v);
	return 0;
}

static int key_preflight(struct dlrt_config *cfg, const char *v, struct dlrt_err *err)
{
	return dlrt_pf_spec_parse(&cfg->preflight, v, "plugstack.conf: preflight", err);
}

const char *dlrt_het_roles_name(enum dlrt_het_roles m)
{
	return m == DLRT_HET_FLAT ? "flat" : "split";
}

static int parse_het_roles(const char *v, enum dlrt_het_roles *m)
{
	if (v && !strcmp(v, "split"))
		*m = DLRT_HET_SPLIT;
	else if (v && !strcmp(v, "flat"))
		*m = DLRT_HET_FLAT;
	else
		return -1;
	return 0;
}

static int key_het_roles(struct dlrt_config *cfg, const char *v, struct dlrt_err *err)
{
	if (parse_het_roles(v, &cfg->het_roles) < 0)
		return dlrt_err_set(err, "plugstack.conf: het_roles='%s' is not split or flat", v);
	return 0;
}

/* The generic keys; runtimes declare theirs (struct dlrt_runtime.keys). */
static const struct {
	const char *name;
	int (*parse)(struct dlrt_config *cfg, const char *v, struct dlrt_err *err);
} generic_keys[] = {
	{ "runtimes", key_runtimes },
	{ "verbose", key_verbose },
	{ "exchange_timeout", key_exchange_timeout },
	{ "exchange", key_exchange },
	{ "gpu_bind", key_gpu_bind },
	{ "topology_xml", key_topology_xml },
	{ "service_timeout", key_service_timeout },
	{ "service_max_lifetime", key_service_max_lifetime },
	{ "signal", key_signal },
	{ "checkpoint_dir", key_checkpoint_dir },
	{ "preflight", key_preflight },
	{ "het_roles", key_het_roles },
};

#define NGENERIC_KEYS (sizeof(generic_keys) / sizeof(*generic_keys))

/* Appends ", word" (or "word" first); a list that does not fit stays cut. */
static void list_add(char *buf, size_t len, size_t *off, const char *word)
{
	int n;

	if (*off >= len)
		return;
	n = snprintf(buf + *off, len - *off, "%s%s", *off ? ", " : "", word);
	*off = n < 0 ? len : *off + (size_t)n;
}

void dlrt_config_keys(char *buf, size_t len)
{
	size_t off = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < NGENERIC_KEYS; i++)
		list_add(buf, len, &off, generic_keys[i].name);
	for (int i = 0; dlrt_runtimes[i] && i < DLRT_RUNTIME_MAX; i++)
		for (const struct dlrt_site_key *k = dlrt_runtimes[i]->keys; k && k->name; k++)
			list_add(buf, len, &off, k->name);
}

/* A runtime's key into its config block: a number in [lo, hi] or one of the choices. */
static int rt_key_parse(const struct dlrt_site_key *k, unsigned char *block, const char *v,
			struct dlrt_err *err)
{
	uint32_t val;

	if (k->type == DLRT_KEY_U32) {
		if (dlrt_parse_u32(v, k->lo, k->hi, &val) < 0)
			return dlrt_err_set(err, "plugstack.conf: %s='%s' %s", k->name, v, k->fix);
	} else {
		for (val = 0; k->choices[val] && strcmp(k->choices[val], v); val++)
			;
		if (!k->choices[val])
			return dlrt_err_set(err, "plugstack.conf: %s='%s' %s", k->name, v, k->fix);
	}
	memcpy(block + k->offset, &val, sizeof(val));
	return 0;
}

int dlrt_config_parse(struct dlrt_config *cfg, int ac, char **av, struct dlrt_err *err)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->exchange_timeout = 30;
	cfg->service_timeout = 10;
	cfg->service_max_lifetime = 7 * 24 * 3600;
	cfg->allowed = ~0u;
	cfg->warn_sig = SIGUSR1;
	cfg->warn_secs = 120;
	snprintf(cfg->gpu_bind, sizeof(cfg->gpu_bind), "closest");
	dlrt_pf_spec_default(&cfg->preflight);
	for (int i = 0; dlrt_runtimes[i] && i < DLRT_RUNTIME_MAX; i++)
		for (const struct dlrt_site_key *k = dlrt_runtimes[i]->keys; k && k->name; k++)
			memcpy(cfg->rt[i].b + k->offset, &k->def, sizeof(k->def));
	for (int i = 0; i < ac; i++) {
		const char *kv = av[i], *eq = strchr(kv, '=');
		const char *v = eq ? eq + 1 : "";
		size_t klen = eq ? (size_t)(eq - kv) : strlen(kv);
		bool known = false;
		char keys[512];

#define KEY(k) (strlen(k) == klen && !strncmp(kv, k, klen))
		for (size_t g = 0; g < NGENERIC_KEYS && !known; g++) {
			if (!KEY(generic_keys[g].name))
				continue;
			if (generic_keys[g].parse(cfg, v, err) < 0)
				return -1;
			known = true;
		}
		for (int r = 0; dlrt_runtimes[r] && r < DLRT_RUNTIME_MAX && !known; r++) {
			for (const struct dlrt_site_key *k = dlrt_runtimes[r]->keys; k && k->name;
			     k++) {
				if (!KEY(k->name))
					continue;
				if (rt_key_parse(k, cfg->rt[r].b, v, err) < 0)
					return -1;
				known = true;
				break;
			}
		}
#undef KEY
		if (!known) {
			dlrt_config_keys(keys, sizeof(keys));
			return dlrt_err_set(err, "plugstack.conf: unknown key '%.*s' (valid: %s)",
					    (int)klen, kv, keys);
		}
	}
	return 0;
}

void dlrt_opts_init(struct dlrt_opts *o, const struct dlrt_config *cfg)
{
	memset(o, 0, sizeof(*o));
	o->verbose = cfg->verbose;
	o->exchange = cfg->exchange;
	o->het_roles = cfg->het_roles;
	o->warn_sig = cfg->warn_sig;
	o->warn_secs = cfg->warn_secs;
	snprintf(o->checkpoint_dir, sizeof(o->checkpoint_dir), "%s", cfg->checkpoint_dir);
	o->preflight = cfg->preflight;
	snprintf(o->gpu_bind, sizeof(o->gpu_bind), "%s", cfg->gpu_bind);
	for (int i = 0; dlrt_runtimes[i] && i < DLRT_RUNTIME_MAX; i++)
		if (dlrt_runtimes[i]->opts_init)
			dlrt_runtimes[i]->opts_init(o->rt[i].b, cfg->rt[i].b);
}

static int set_runtime(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
		       struct dlrt_err *err)
{
	int idx = arg ? dlrt_runtime_index(arg) : -1;
	char names[256];

	if (idx < 0 || !(cfg->allowed & (1u << idx))) {
		dlrt_runtime_list(names, sizeof(names), cfg->allowed);
		return dlrt_err_set(err, "--dl-runtime=%s: %s; valid runtimes: %s", arg ? arg : "",
				    idx < 0 ? "unknown runtime" : "not enabled at this site", names);
	}
	o->runtime = dlrt_runtimes[idx];
	return 0;
}

static int set_verbose(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
		       struct dlrt_err *err)
{
	(void)cfg, (void)arg, (void)err;
	o->verbose = true;
	return 0;
}

static int set_dry_run(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
		       struct dlrt_err *err)
{
	(void)cfg, (void)arg, (void)err;
	o->dry_run = true;
	return 0;
}

static int set_iface(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
		     struct dlrt_err *err)
{
	(void)cfg;
	/* Interface names: at most 15 bytes, no '/', no spaces (net/core/dev.c). */
	if (!arg || !*arg || strlen(arg) > 15 || strpbrk(arg, "/ \t:"))
		return dlrt_err_set(err, "--dl-iface=%s: not an interface name (see ip link)",
				    arg ? arg : "");
	snprintf(o->iface, sizeof(o->iface), "%s", arg);
	return 0;
}

static int set_gpu_bind(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
			struct dlrt_err *err)
{
	(void)cfg;
	if (check_gpu_bind(arg, o->gpu_bind, sizeof(o->gpu_bind), err) < 0)
		return -1;
	o->gpu_bind_set = true;
	return 0;
}

static int set_cpu_bind(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
			struct dlrt_err *err)
{
	(void)cfg;
	/* One value today; "none" undoes an inherited sbatch --dl-cpu-bind=gpu. */
	if (arg && !strcmp(arg, "gpu"))
		o->cpu_bind_gpu = true;
	else if (arg && !strcmp(arg, "none"))
		o->cpu_bind_gpu = false;
	else
		return dlrt_err_set(err, "--dl-cpu-bind=%.64s is unknown: use gpu (cores next to "
				    "the task's GPU) or none", arg ? arg : "");
	return 0;
}

static int set_topology(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
			struct dlrt_err *err)
{
	(void)cfg;
	return check_path("--dl-topology", arg, o->topology, sizeof(o->topology), err);
}

static int set_log_dir(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
		       struct dlrt_err *err)
{
	(void)cfg;
	/* Created later as the user, in each task (spank/logs.c); here only
	 * what can never work: nothing, a newline, or no room for the ids. */
	if (!arg || !*arg || strchr(arg, '\n') || strlen(arg) > sizeof(o->log_dir) - 64)
		return dlrt_err_set(err, "--dl-log-dir=%s: give a folder path of at most %zu bytes, "
				    "e.g. --dl-log-dir=$HOME/dl-logs", arg ? arg : "",
				    sizeof(o->log_dir) - 64);
	snprintf(o->log_dir, sizeof(o->log_dir), "%s", arg);
	return 0;
}

static int set_retries(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
		       struct dlrt_err *err)
{
	(void)cfg;
	if (dlrt_parse_u32(arg, 0, 100, &o->retries) < 0)
		return dlrt_err_set(err, "--dl-retries=%s: must be a number from 0 to 100",
				    arg ? arg : "");
	return 0;
}

static int set_exchange(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
			struct dlrt_err *err)
{
	(void)cfg;
	if (parse_exchange_via(arg, &o->exchange) < 0)
		return dlrt_err_set(err, "--dl-exchange=%.64s is unknown: use pmix (Slurm's PMIx, "
				    "with --mpi=pmix), srun (srun's rendezvous) or auto",
				    arg ? arg : "");
	return 0;
}

static int set_signal(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
		      struct dlrt_err *err)
{
	(void)cfg;
	return dlrt_warnsig_parse(arg, &o->warn_sig, &o->warn_secs, err);
}

static int set_requeue(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
		       struct dlrt_err *err)
{
	(void)cfg;
	if (dlrt_parse_u32(arg, 0, 100, &o->requeue) < 0)
		return dlrt_err_set(err, "--dl-requeue=%s: must be a number from 0 to 100",
				    arg ? arg : "");
	return 0;
}

static int set_checkpoint_dir(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
			      struct dlrt_err *err)
{
	(void)cfg;
	/* Created as the user in each task (spank/lifecycle.c). */
	if (!arg || !*arg || strpbrk(arg, "\n\r") || strlen(arg) > sizeof(o->checkpoint_dir) - 64)
		return dlrt_err_set(err, "--dl-checkpoint-dir=%s: give a folder path of at most %zu "
				    "bytes on a filesystem every node shares", arg ? arg : "",
				    sizeof(o->checkpoint_dir) - 64);
	snprintf(o->checkpoint_dir, sizeof(o->checkpoint_dir), "%s", arg);
	o->checkpoint_dir_given = true;
	return 0;
}

static int set_hang_timeout(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
			    struct dlrt_err *err)
{
	uint32_t v;

	(void)cfg;
	if (dlrt_parse_u32(arg, 0, 30 * 24 * 3600, &v) < 0 || (v > 0 && v < 10))
		return dlrt_err_set(err, "--dl-hang-timeout=%s: give seconds, at least 10 (0: no "
				    "hang detection)", arg ? arg : "");
	o->hang_timeout = v;
	return 0;
}

static int set_preflight(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
			 struct dlrt_err *err)
{
	/* Over the site's spec, so that Slurm's second call (environment, then
	 * command line) gives the same result as one. */
	o->preflight = cfg->preflight;
	if (dlrt_pf_spec_parse(&o->preflight, arg, "--dl-preflight", err) < 0)
		return -1;
	o->preflight_given = true;
	return 0;
}

static int set_het_roles(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
			 struct dlrt_err *err)
{
	(void)cfg;
	if (parse_het_roles(arg, &o->het_roles) < 0)
		return dlrt_err_set(err, "--dl-het-roles=%.64s is unknown: use split (the "
				    "scheduler, servers or ps in the first component, the workers "
				    "in the others) or flat (one world, placed as in a plain step)",
				    arg ? arg : "");
	return 0;
}

/* The generic options, one row each; runtimes declare theirs (struct
 * dlrt_runtime.options) with the same shape. */
static const struct {
	struct dlrt_opt_desc desc;
	int (*set)(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *arg,
		   struct dlrt_err *err);
} generic_opts[DLRT_OPT_GENERIC_COUNT] = {
	[DLRT_OPT_RUNTIME] = { { "dl-runtime", "NAME",
				 "[dlrt] DL runtime of the step's tasks (man dlrt)", NULL },
			       set_runtime },
	[DLRT_OPT_VERBOSE] = { { "dl-verbose", NULL,
				 "[dlrt] log exchanges and services with timings", NULL },
			       set_verbose },
	[DLRT_OPT_DRY_RUN] = { { "dl-dry-run", NULL,
				 "[dlrt] print each task's plan, run nothing", NULL },
			       set_dry_run },
	[DLRT_OPT_IFACE] = { { "dl-iface", "IF",
			       "[dlrt] network interface the frameworks use", NULL },
			     set_iface },
	[DLRT_OPT_GPU_BIND] = { { "dl-gpu-bind", "MODE",
				  "[dlrt] GPUs per task: closest, none, map:LIST", NULL },
				set_gpu_bind },
	[DLRT_OPT_CPU_BIND] = { { "dl-cpu-bind", "gpu",
				  "[dlrt] gpu: bind each task next to its GPUs", NULL },
				set_cpu_bind },
	[DLRT_OPT_TOPOLOGY] = { { "dl-topology", "FILE",
				  "[dlrt] plan GPUs on this hwloc XML file", NULL },
				set_topology },
	[DLRT_OPT_LOG_DIR] = { { "dl-log-dir", "DIR",
				 "[dlrt] task output to DIR/job/step/role-N.log", NULL },
			       set_log_dir },
	[DLRT_OPT_RETRIES] = { { "dl-retries", "N",
				 "[dlrt] requeue up to N times if a node fails", NULL },
			       set_retries },
	[DLRT_OPT_EXCHANGE] = { { "dl-exchange", "VIA",
				  "[dlrt] address exchange: auto, pmix or srun", NULL },
				set_exchange },
	[DLRT_OPT_SIGNAL] = { { "dl-signal", "SIG@SECS",
				"[dlrt] tasks get SIG SECS before the limit", NULL },
			      set_signal },
	[DLRT_OPT_REQUEUE] = { { "dl-requeue", "N",
				 "[dlrt] requeue after the warning, N times", NULL },
			       set_requeue },
	[DLRT_OPT_CHECKPOINT_DIR] = { { "dl-checkpoint-dir", "DIR",
					"[dlrt] DLRT_CHECKPOINT_DIR is DIR/<job>", NULL },
				      set_checkpoint_dir },
	[DLRT_OPT_HANG_TIMEOUT] = { { "dl-hang-timeout", "SECS",
				      "[dlrt] end a step without progress for SECS", NULL },
				    set_hang_timeout },
	[DLRT_OPT_PREFLIGHT] = { { "dl-preflight", "SPEC",
				   "[dlrt] check the nodes first: off, quick, full", NULL },
				 set_preflight },
	[DLRT_OPT_HET_ROLES] = { { "dl-het-roles", "MODE",
				   "[dlrt] hetjob roles: split by component, or flat", NULL },
				 set_het_roles },
};

int dlrt_opt_count(void)
{
	int slot, k, n = DLRT_OPT_GENERIC_COUNT;

	while (rt_opt_of(n, &slot, &k) == 0)
		n++;
	return n;
}

int dlrt_opt_describe(int id, struct dlrt_opt_desc *d)
{
	int slot, k;

	if (id >= 0 && id < DLRT_OPT_GENERIC_COUNT) {
		*d = generic_opts[id].desc;
		return 0;
	}
	if (id < 0 || rt_opt_of(id, &slot, &k) < 0)
		return -1;
	*d = (struct dlrt_opt_desc){
		.name = dlrt_runtimes[slot]->options[k].name,
		.arginfo = dlrt_runtimes[slot]->options[k].arginfo,
		.usage = dlrt_runtimes[slot]->options[k].usage,
		.runtime = dlrt_runtimes[slot],
	};
	return 0;
}

int dlrt_opt_find(const char *name)
{
	struct dlrt_opt_desc d;

	for (int id = 0; dlrt_opt_describe(id, &d) == 0; id++)
		if (!strcmp(d.name, name))
			return id;
	return -1;
}

int dlrt_opts_set(struct dlrt_opts *o, const struct dlrt_config *cfg, int id, const char *arg,
		  struct dlrt_err *err)
{
	int slot, k;

	if (id >= 0 && id < DLRT_OPT_GENERIC_COUNT)
		return generic_opts[id].set(o, cfg, arg, err);
	if (rt_opt_of(id, &slot, &k) < 0)
		return dlrt_err_set(err, "internal error: unknown option id %d", id);
	if (dlrt_runtimes[slot]->options[k].set(o->rt[slot].b, cfg->rt[slot].b, arg, err) < 0)
		return -1;
	o->rt_given[slot] |= 1u << k;
	return 0;
}

int dlrt_opts_set_name(struct dlrt_opts *o, const struct dlrt_config *cfg, const char *name,
		       const char *arg, struct dlrt_err *err)
{
	int id = dlrt_opt_find(name);

	if (id < 0)
		return dlrt_err_set(err, "internal error: no option --%s", name);
	return dlrt_opts_set(o, cfg, id, arg, err);
}

int dlrt_opts_check_runtime(const struct dlrt_opts *o, struct dlrt_err *err)
{
	if (!o->runtime)
		return 0;
	for (int i = 0; dlrt_runtimes[i] && i < DLRT_RUNTIME_MAX; i++) {
		const struct dlrt_rt_option *ro = dlrt_runtimes[i]->options;

		if (dlrt_runtimes[i] == o->runtime)
			continue;
		for (int k = 0; ro && ro[k].name && k < 32; k++)
			if (ro[k].only_this_runtime && (o->rt_given[i] & (1u << k)))
				return dlrt_err_set(err, "--%s applies to --dl-runtime=%s only; drop "
						    "it for --dl-runtime=%s", ro[k].name,
						    dlrt_runtimes[i]->name, o->runtime->name);
	}
	return 0;
}
