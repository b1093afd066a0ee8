/* gpuprint.c - the GPU plan as a table, for dlrt-topo and --dl-dry-run. */
#include "gpuplan.h"

#include <string.h>

struct env_line {
	FILE *f;
	const char *prefix;
};

static int print_env(void *ctx, const char *name, const char *value)
{
	struct env_line *e = ctx;

	fprintf(e->f, "%s    %s=%s\n", e->prefix, name, value);
	return 0;
}

/* Each GPU as its runtime numbers it: "0" for CUDA's device 0, "R0" for
 * ROCm's (ROCR_VISIBLE_DEVICES). */
static void format_visible(const struct dlrt_gpuplan_task *tk, const struct dlrt_gpuplan_topo *t,
			   char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int k = 0; k < tk->ngpus && off < len; k++) {
		int rocm = tk->gpus[k] >= 0 && tk->gpus[k] < t->ngpus &&
			   t->gpus[tk->gpus[k]].rt == DLRT_GPUPLAN_RT_ROCM;
		int w = snprintf(buf + off, len - off, "%s%s%d", k ? "," : "", rocm ? "R" : "",
				 tk->visible[k]);

		if (w < 0)
			break;
		off += (size_t)w;
	}
}

void dlrt_gpuplan_print(FILE *f, const char *prefix, const struct dlrt_gpuplan *p,
			const struct dlrt_gpuplan_topo *t, const struct dlrt_gpuplan_alloc *al,
			const uint32_t *ranks, int show_env)
{
	char buf[512], gl[256], vis[256], nics[256];
	static const char *const modes[] = { "closest", "none", "map" };

	dlrt_gpuplan_format_gpus(al->global, al->ngpus, gl, sizeof(gl));
	fprintf(f, "%sstep GPUs: %s (from %s), CUDA_VISIBLE_DEVICES numbering: %s, bind: %s\n",
		prefix, al->ngpus ? gl : "none", al->source ? al->source : "-",
		al->renumbered ? "renumbered 0..n-1" : "node-wide", modes[p->mode]);
	fprintf(f, "%s%-5s %s%-20s %-10s %-9s %-9s %-20s %s\n", prefix, "task",
		ranks ? "rank  " : "", "cpus", "visible", "node GPU", "overlap", "NICs", "netdev");
	for (int i = 0; i < p->ntasks; i++) {
		const struct dlrt_gpuplan_task *tk = &p->tasks[i];
		size_t off = 0;
		char ov[32], rk[16] = "";

		dlrt_gpuplan_format_cpus(tk->cpuset, buf, sizeof(buf));
		format_visible(tk, t, vis, sizeof(vis));
		dlrt_gpuplan_format_gpus(tk->gpus, tk->ngpus, gl, sizeof(gl));
		nics[0] = '\0';
		for (int k = 0; k < tk->nnics && off < sizeof(nics); k++)
			off += (size_t)snprintf(nics + off, sizeof(nics) - off, "%s%s:%d", k ? "," : "",
						t->nics[tk->nics[k]].name, t->nics[tk->nics[k]].port);
		snprintf(ov, sizeof(ov), "%d/%d", tk->overlap,
			 hwloc_bitmap_weight(tk->cpuset) * (tk->ngpus ? tk->ngpus : 1));
		if (ranks)
			snprintf(rk, sizeof(rk), "%-5u ", ranks[i]);
		fprintf(f, "%s%-5d %s%-20s %-10s %-9s %-9s %-20s %s\n", prefix, i, rk, buf,
			tk->ngpus ? vis : "-", tk->ngpus ? gl : "-", tk->ngpus ? ov : "-",
			nics[0] ? nics : "-", tk->netdev >= 0 ? t->nics[tk->netdev].name : "-");
		if (show_env) {
			struct env_line e = { f, prefix };
			struct dlrt_err err;

			if (dlrt_gpuplan_env(p, t, i, print_env, &e, &err) < 0)
				fprintf(f, "%s    error: %s\n", prefix, err.msg);
		}
	}
}
