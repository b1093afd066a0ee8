/* Unit tests of the GPU/NIC planner's edges: the assignment solver against
 * brute force, every fixture against the optimal overlap, the parsers of
 * Slurm's strings, hwloc's refusals and dlrt-topo's own messages (the plans
 * of real machines' shapes are in test_gpuplan.c).
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuplan_fixture.h"
#include "buildpath.h"
#include "tap.h"

/* nogpu.xml's text with `from` replaced by `to` (first occurrence). */
static char *nogpu_with(const char *from, const char *to, size_t *len)
{
	FILE *f = fopen(fixture_path("nogpu.xml"), "r");
	char *in = calloc(1, 1 << 16), *out = calloc(1, (1 << 16) + 256), *at;
	size_t n = f ? fread(in, 1, (1 << 16) - 1, f) : 0;

	if (f)
		fclose(f);
	at = n ? strstr(in, from) : NULL;
	if (!at) {
		free(in);
		free(out);
		return NULL;
	}
	snprintf(out, (1 << 16) + 256, "%.*s%s%s", (int)(at - in), in, to, at + strlen(from));
	free(in);
	*len = strlen(out);
	return out;
}

/* XML version 3.0 (hwloc 3's export): hwloc 2.9 (Debian 12) refuses it,
 * 2.12 (Debian 13) loads it. Either is sound, as long as a refusal says why
 * and a load is the machine the file describes. */
static void test_xml_v3(void)
{
	struct dlrt_err err = { "" };
	size_t len = 0;
	char *x = nogpu_with("<topology version=\"2.0\">", "<topology version=\"3.0\">", &len);
	struct dlrt_gpuplan_topo *t = x ? dlrt_gpuplan_topology_load_xml(x, len, "job.xml", &err)
					: NULL;
	unsigned api = hwloc_get_api_version();

	if (t)
		TAP_OK(hwloc_bitmap_weight(dlrt_gpuplan_topology_cpus(t)) > 0, "hwloc (API %u.%u) loads XML version 3.0: "
		       "a machine with CPUs", api >> 16, (api >> 8) & 0xff);
	else
		TAP_OK(x && strstr(err.msg, "hwloc XML version 3.0, newer than this hwloc") &&
		       err_is_one_line(&err), "hwloc (API %u.%u) refuses XML version 3.0 and says "
		       "why: %s", api >> 16, (api >> 8) & 0xff, err.msg);
	dlrt_gpuplan_topology_free(t);
	free(x);
}

/* hwloc refuses these files with "Invalid argument" or errno 0 ("Success")
 * and says why only on stderr: the error must name the cause itself. */
static void test_load_errors(void)
{
	static const struct {
		const char *from, *to, *want, *desc;
	} cases[] = {
		{ "<topology version=\"2.0\">", "<topology version=\"4.0\">",
		  "hwloc XML version 4.0, newer than this hwloc", "newer XML version" },
		{ "allowed_cpuset=\"0x0000000f\"", "allowed_cpuset=\"0x000000f0\"",
		  "allowed_cpuset=\"0x000000f0\" holds none of the machine's CPUs",
		  "allowed_cpuset without the machine's CPUs" },
		{ "allowed_cpuset=\"0x0000000f\"", "allowed_cpuset=\"zz\"",
		  "allowed_cpuset=\"zz\", which is not an hwloc bitmap", "cpuset text" },
		{ "<object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\"",
		  "<object type=\"PU\" os_index=\"0\"", "object PU P#0 has no cpuset",
		  "object without cpuset" },
	};
	char tmp[] = "/tmp/dlrt-test-topo-XXXXXX";
	int fd = mkstemp(tmp);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dlrt_err err = { "" };
		size_t len = 0;
		char *x = nogpu_with(cases[i].from, cases[i].to, &len);
		struct dlrt_gpuplan_topo *t;

		if (!x || fd < 0) {
			TAP_OK(0, "%s: fixture text", cases[i].desc);
			free(x);
			continue;
		}
		t = dlrt_gpuplan_topology_load_xml(x, len, "job.xml", &err);
		TAP_OK(!t && strstr(err.msg, cases[i].want) && !strstr(err.msg, "Success") &&
		       !strstr(err.msg, "Invalid argument") && err_is_one_line(&err),
		       "%s, from memory: %s", cases[i].desc, err.msg);
		dlrt_gpuplan_topology_free(t);
		if (ftruncate(fd, 0) == 0 && pwrite(fd, x, len, 0) == (ssize_t)len) {
			t = dlrt_gpuplan_topology_load(tmp, 0, &err);
			TAP_OK(!t && strstr(err.msg, cases[i].want) && strstr(err.msg, tmp) &&
			       !strstr(err.msg, "Success") && err_is_one_line(&err),
			       "%s, from a file: %s", cases[i].desc, err.msg);
			dlrt_gpuplan_topology_free(t);
		}
		free(x);
	}
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	test_xml_v3();
	{
		char why[256] = "";
		static const char good[] = "<topology version=\"2.0\"><object type=\"Machine\" "
					   "cpuset=\"0x0000000f,0xf...f\" allowed_cpuset=\"0x1\">";

		TAP_IS_INT(dlrt_gpuplan_xml_why(good, sizeof(good) - 1, why, sizeof(why)), 0,
			   "a sound text has no reason: %s", why);
		TAP_IS_INT(dlrt_gpuplan_xml_why("<topology version=\"", 20, why, sizeof(why)), 0,
			   "a cut text has none either");
	}
}

/* dlrt-topo itself: its messages speak of its own options. */
static void test_topo_tool(void)
{
	char bin[1024], cmd[4096], out[4096];
	FILE *p;
	size_t n;
	int rc;

	if (test_build_program("bin/dlrt-topo", bin, sizeof(bin)) < 0) {
		TAP_OK(0, "dlrt-topo is not at %s: run through make unit", bin);
		return;
	}
	snprintf(cmd, sizeof(cmd), "env -u SLURM_STEP_GPUS -u SLURM_JOB_GPUS -u "
		 "CUDA_VISIBLE_DEVICES %s --xml %s --gpus 0,1 2>&1 >/dev/null", bin,
		 fixture_path("nogpu.xml"));
	p = popen(cmd, "r");
	n = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
	out[n] = '\0';
	rc = p ? pclose(p) : -1;
	TAP_OK(rc != 0 && strstr(out, "--gpus=0,1 names GPU 1 but") &&
	       strstr(out, "has no GPU: drop --gpus") && !strstr(out, "SLURM_STEP_GPUS") &&
	       !strstr(out, "--dl-"), "dlrt-topo --gpus on a GPU-less file: %s", out);
	snprintf(cmd, sizeof(cmd), "env -u SLURM_STEP_GPUS -u SLURM_JOB_GPUS -u "
		 "CUDA_VISIBLE_DEVICES %s --xml %s --tasks 8 2>&1", bin, fixture_path("dgx2-16g.xml"));
	p = popen(cmd, "r");
	n = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
	out[n] = '\0';
	rc = p ? pclose(p) : -1;
	TAP_OK(rc == 0 && strstr(out, "note: 8 tasks on 4 CPUs (oversubscribed)") &&
	       strstr(out, "\n7     0-3                  14,15 "),
	       "dlrt-topo --tasks 8 on 16 GPUs and 4 CPUs shows the plugin's plan");
}

static void test_parsers(void)
{
	static const char *const bad_gpus[] = { "", "0,,1", "a", "1-0", "0,0", "64", "0-",
						"-1", "1 2", "GPU-5f3c", "NoDevFiles", "0,",
						"9999999999" };
	static const char *const bad_binds[] = { "closer", "map:", "map:a", "map:1*0",
						 "map:99", "map:0,", "map:1+", "Closest" };
	static const char *const bad_cpus[] = { "", "0-", "5-2", "99999999", "0,,1", "x" };
	struct dlrt_err err;
	uint64_t set;
	struct dlrt_gpuplan_bind *b = malloc(sizeof(*b));
	struct dlrt_gpuplan_alloc al;
	hwloc_bitmap_t cs = hwloc_bitmap_alloc();

	TAP_OK(dlrt_gpuplan_parse_gpuset("0,2-4,7", "X", &set, &err) == 0 && set == 0x9d,
	       "gpuset 0,2-4,7");
	for (size_t i = 0; i < sizeof(bad_gpus) / sizeof(*bad_gpus); i++) {
		err.msg[0] = '\0';
		TAP_OK(dlrt_gpuplan_parse_gpuset(bad_gpus[i], "SLURM_STEP_GPUS", &set, &err) < 0 &&
		       err_is_one_line(&err) && strstr(err.msg, "SLURM_STEP_GPUS"),
		       "bad GPU list '%s': %s", bad_gpus[i], err.msg);
	}
	for (size_t i = 0; i < sizeof(bad_binds) / sizeof(*bad_binds); i++) {
		err.msg[0] = '\0';
		TAP_OK(dlrt_gpuplan_bind_parse(b, bad_binds[i], &err) < 0 && err_is_one_line(&err) &&
		       strstr(err.msg, "--dl-gpu-bind"), "bad bind '%s': %s", bad_binds[i], err.msg);
	}
	for (size_t i = 0; i < sizeof(bad_cpus) / sizeof(*bad_cpus); i++) {
		err.msg[0] = '\0';
		TAP_OK(dlrt_gpuplan_parse_cpulist(bad_cpus[i], cs, &err) < 0 && err_is_one_line(&err),
		       "bad CPU list '%s': %s", bad_cpus[i], err.msg);
	}
	TAP_OK(dlrt_gpuplan_parse_cpulist("0-3,8", cs, &err) == 0 && hwloc_bitmap_weight(cs) == 5,
	       "CPU list 0-3,8");
	TAP_OK(dlrt_gpuplan_bind_parse(b, "map_gpu:1*3,0", &err) == 0 && b->nmap == 4 &&
	       b->map[2] == 2 && b->map[3] == 1, "map_gpu:1*3,0 (Slurm spelling)");
	TAP_OK(dlrt_gpuplan_bind_parse(b, "none", &err) == 0 && b->mode == DLRT_GPUPLAN_NONE,
	       "none");
	TAP_OK(dlrt_gpuplan_dist_from_slurm("block:block") == DLRT_GPUPLAN_BLOCK &&
	       dlrt_gpuplan_dist_from_slurm("cyclic:block:cyclic") == DLRT_GPUPLAN_BLOCK &&
	       dlrt_gpuplan_dist_from_slurm("block") == DLRT_GPUPLAN_CYCLIC &&
	       dlrt_gpuplan_dist_from_slurm("block:blockx") == DLRT_GPUPLAN_CYCLIC &&
	       dlrt_gpuplan_dist_from_slurm("block:cyclic") == DLRT_GPUPLAN_CYCLIC &&
	       dlrt_gpuplan_dist_from_slurm(NULL) == DLRT_GPUPLAN_CYCLIC,
	       "SLURM_DISTRIBUTION socket level");
	/* Renumbering detection without a topology. */
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, NULL, "0-3", "4-7", NULL, &err) == 0 &&
	       al.renumbered == 1, "4-7 seen as 0-3: renumbered");
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, NULL, "0-3", "0-3", NULL, &err) == 0 &&
	       al.renumbered == 0, "0-3 seen as 0-3: node-wide");
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, NULL, "1", "2,5", NULL, &err) == 0 &&
	       al.renumbered == 1, "2,5 with CUDA_VISIBLE_DEVICES=1 (Slurm --gpu-bind): renumbered");
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, NULL, "5", "2,5", NULL, &err) == 0 &&
	       al.renumbered == 0, "2,5 with CUDA_VISIBLE_DEVICES=5: node-wide");
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, NULL, "7", "2,5", NULL, &err) < 0 && err_is_one_line(&err),
	       "CUDA_VISIBLE_DEVICES=7 vs 2,5 rejected: %s", err.msg);
	TAP_OK(dlrt_gpuplan_alloc_parse(&al, NULL, NULL, NULL, "3,1", &err) == 0 &&
	       al.ngpus == 2 && al.global[0] == 1 && al.global[1] == 3, "SLURM_JOB_GPUS sorted");
	hwloc_bitmap_free(cs);
	free(b);
}

/* The solver against brute force on random small instances. */
static int64_t brute(int n, int m, const int64_t *cost)
{
	int64_t best = INT64_MAX;
	long total = 1;
	int a[8];

	for (int i = 0; i < n; i++)
		total *= m;
	for (long code = 0; code < total; code++) {
		int load[8] = { 0 }, ok = 1;
		long c = code;
		int64_t sum = 0;

		for (int i = 0; i < n; i++, c /= m) {
			a[i] = (int)(c % m);
			load[a[i]]++;
			sum += cost[i * m + a[i]];
		}
		for (int b = 0; b < m; b++)
			ok &= load[b] == n / m || load[b] == n / m + (n % m > 0);
		if (ok && sum < best)
			best = sum;
	}
	return best;
}

static void test_solver(void)
{
	/* Greedy row by row takes bin 0 for item 0 and pays 100 for item 1. */
	int64_t c1[] = { 1, 2, 1, 100 };
	int out[8], bad = 0, trials = 300;
	unsigned seed = 12345;

	TAP_OK(dlrt_gpuplan_solve(2, 2, c1, out) == 0 && out[0] == 1 && out[1] == 0,
	       "solver beats greedy");
	TAP_OK(dlrt_gpuplan_solve(1, 2, c1, out) < 0, "solver rejects fewer items than bins");
	for (int tr = 0; tr < trials; tr++) {
		int m = 1 + (int)(rand_r(&seed) % 4), n = m + (int)(rand_r(&seed) % (8 - m));
		int64_t cost[64], sum = 0;
		int load[8] = { 0 }, ok = 1;

		for (int i = 0; i < n * m; i++)
			cost[i] = (int64_t)(rand_r(&seed) % 21) - 10;
		if (dlrt_gpuplan_solve(n, m, cost, out) < 0) {
			bad++;
			continue;
		}
		for (int i = 0; i < n; i++) {
			load[out[i]]++;
			sum += cost[i * m + out[i]];
		}
		for (int b = 0; b < m; b++)
			ok &= load[b] == n / m || load[b] == n / m + (n % m > 0);
		if (!ok || sum != brute(n, m, cost)) {
			if (!bad)
				printf("# trial %d n=%d m=%d: got %lld want %lld balanced=%d\n", tr, n,
				       m, (long long)sum, (long long)brute(n, m, cost), ok);
			bad++;
		}
	}
	TAP_IS_INT(bad, 0, "solver optimal and balanced on %d random instances", trials);
}

/* Every fixture, random task CPU sets and allocations: the plan's total
 * overlap (the primary objective) equals the best of all balanced
 * assignments, found by brute force. */
static int brute_overlap(int nt, int ng, const int *ov)
{
	int n = nt >= ng ? nt : ng, m = nt >= ng ? ng : nt, best = -1, a[10];
	long total = 1;

	for (int i = 0; i < n; i++)
		total *= m;
	for (long code = 0; code < total; code++) {
		int load[10] = { 0 }, ok = 1, sum = 0;
		long c = code;

		for (int i = 0; i < n; i++, c /= m) {
			a[i] = (int)(c % m);
			load[a[i]]++;
			/* items are tasks when nt >= ng, else GPUs */
			sum += nt >= ng ? ov[i * ng + a[i]] : ov[a[i] * ng + i];
		}
		for (int b = 0; b < m; b++)
			ok &= load[b] == n / m || load[b] == n / m + (n % m > 0);
		if (ok && sum > best)
			best = sum;
	}
	return best;
}

static void test_optimal(void)
{
	static const char *const fx[] = { "dgx-2s4g.xml", "2s2g.xml", "onesocket-4g.xml",
					  "switch-4g.xml", "dgxa100-8g.xml", "cluster-2s4g.xml",
					  "osdev-2g.xml", "mixed-nv-amd.xml" };
	unsigned seed = 777;
	int bad = 0, trials = 0, unbalanced = 0;

	for (size_t f = 0; f < sizeof(fx) / sizeof(*fx); f++) {
		struct dlrt_gpuplan_topo *t = fixture_load(fx[f]);
		int npu;

		if (!t)
			continue;
		npu = hwloc_bitmap_weight(dlrt_gpuplan_topology_cpus(t));
		for (int tr = 0; tr < 120; tr++) {
			struct dlrt_gpuplan_alloc al = { .source = "test" };
			struct dlrt_gpuplan_bind b = { .mode = DLRT_GPUPLAN_CLOSEST };
			hwloc_bitmap_t set[10];
			int nt, ng, ov[100], got = 0, cnt[64] = { 0 };
			uint64_t gs = 0;
			struct dlrt_err err;
			struct dlrt_gpuplan *p;

			/* T >= G with G <= 4 and T <= 8, or G > T with T <= 3, G <= 8 */
			if (tr % 2) {
				ng = 1 + (int)(rand_r(&seed) % (t->ngpus < 4 ? t->ngpus : 4));
				nt = ng + (int)(rand_r(&seed) % (9 - ng));
			} else {
				nt = 1 + (int)(rand_r(&seed) % (unsigned)(t->ngpus - 1 < 3 ?
									    t->ngpus - 1 : 3));
				ng = nt + 1 + (int)(rand_r(&seed) % (t->ngpus - nt));
				if (ng > t->ngpus)
					ng = t->ngpus;
			}
			while (__builtin_popcountll(gs) < ng)
				gs |= UINT64_C(1) << (rand_r(&seed) % (unsigned)t->ngpus);
			for (int i = 0, j = 0; i < t->ngpus; i++)
				if (gs & (UINT64_C(1) << i))
					al.global[j++] = i;
			al.ngpus = ng;
			for (int i = 0; i < nt; i++) {
				/* a random contiguous run of PUs in logical order, some
				 * spanning two locality domains */
				int len = 1 + (int)(rand_r(&seed) % (unsigned)(npu / 2));
				int st = (int)(rand_r(&seed) % (unsigned)(npu - len + 1));

				set[i] = hwloc_bitmap_alloc();
				/* or PUs scattered over the node, one in `len` */
				for (int k = st; tr % 4 < 2 && k < st + len; k++) {
					hwloc_obj_t pu = hwloc_get_obj_by_type(t->topo, HWLOC_OBJ_PU,
									       (unsigned)k);
					hwloc_bitmap_set(set[i], pu->os_index);
				}
				for (int k = 0; tr % 4 >= 2 && k < npu; k++) {
					hwloc_obj_t pu = hwloc_get_obj_by_type(t->topo, HWLOC_OBJ_PU,
									       (unsigned)k);

					if (rand_r(&seed) % (unsigned)len == 0)
						hwloc_bitmap_set(set[i], pu->os_index);
				}
				for (int j = 0; j < ng; j++) {
					hwloc_bitmap_t x = hwloc_bitmap_alloc();

					hwloc_bitmap_and(x, set[i], t->gpus[al.global[j]].cpuset);
					ov[i * ng + j] = hwloc_bitmap_weight(x);
					hwloc_bitmap_free(x);
				}
			}
			p = dlrt_gpuplan_compute(t, &al, &b, (hwloc_const_cpuset_t const *)set, nt,
						 &err);
			trials++;
			for (int i = 0; p && i < nt; i++) {
				got += p->tasks[i].overlap;
				for (int k = 0; k < p->tasks[i].ngpus; k++)
					cnt[p->tasks[i].gpus[k]]++;
			}
			for (int j = 0; p && j < ng; j++) {
				int c = cnt[al.global[j]];
				int lo = nt >= ng ? nt / ng : 1, hi = nt >= ng ? (nt + ng - 1) / ng : 1;

				if (c < lo || c > hi)
					unbalanced++;
			}
			if (!p || got != brute_overlap(nt, ng, ov)) {
				if (!bad)
					printf("# %s trial %d: %d tasks %d GPUs: overlap %d, best %d\n",
					       fx[f], tr, nt, ng, got, brute_overlap(nt, ng, ov));
				bad++;
			}
			dlrt_gpuplan_free(p);
			for (int i = 0; i < nt; i++)
				hwloc_bitmap_free(set[i]);
		}
		dlrt_gpuplan_topology_free(t);
	}
	TAP_IS_INT(bad, 0, "closest is optimal (brute force) in %d random fixture plans", trials);
	TAP_IS_INT(unbalanced, 0, "and balanced");
}


/* srun --cpu-bind lists as Slurm exports them, and %n in topology paths. */
static void test_cpu_bind_and_path(void)
{
	hwloc_bitmap_t c[3];
	struct dlrt_err err;
	char buf[64];

	for (int i = 0; i < 3; i++)
		c[i] = hwloc_bitmap_alloc();
	TAP_IS_INT(dlrt_gpuplan_parse_cpu_bind("mask_cpu:", "0x3,0xC00", c, 3, &err), 1,
		   "mask_cpu list");
	dlrt_gpuplan_format_cpus(c[1], buf, sizeof(buf));
	TAP_IS_STR(buf, "10-11", "mask 0xC00 -> CPUs 10-11");
	dlrt_gpuplan_format_cpus(c[2], buf, sizeof(buf));
	TAP_IS_STR(buf, "0-1", "task 2 reuses the first mask");
	TAP_IS_INT(dlrt_gpuplan_parse_cpu_bind("verbose,map_cpu:", "5,0x7", c, 2, &err), 1,
		   "map_cpu list (decimal and hex)");
	dlrt_gpuplan_format_cpus(c[1], buf, sizeof(buf));
	TAP_IS_STR(buf, "7", "map 0x7 -> CPU 7");
	TAP_IS_INT(dlrt_gpuplan_parse_cpu_bind("cores", "0x3", c, 2, &err), 0,
		   "cores: Slurm computes the masks");
	TAP_IS_INT(dlrt_gpuplan_parse_cpu_bind("mask_cpu:", NULL, c, 2, &err), 0, "no list");
	TAP_OK(dlrt_gpuplan_parse_cpu_bind("mask_cpu:", "0x3,zz", c, 2, &err) < 0 && err_is_one_line(&err),
	       "bad mask: %s", err.msg);
	TAP_OK(dlrt_gpuplan_parse_cpu_bind("mask_cpu:", "0x0", c, 1, &err) < 0, "empty mask");
	TAP_OK(dlrt_gpuplan_parse_cpu_bind("map_cpu:", "99999", c, 1, &err) < 0, "CPU too large");
	TAP_OK(dlrt_gpuplan_parse_cpu_bind("map_cpu:", "1,,2", c, 2, &err) < 0, "empty entry");
	for (int i = 0; i < 3; i++)
		hwloc_bitmap_free(c[i]);
	TAP_OK(dlrt_gpuplan_path_expand("/t/%n-%%.xml", "n12", buf, sizeof(buf), &err) == 0 &&
	       !strcmp(buf, "/t/n12-%.xml"), "%%n and %%%% in a path: %s", buf);
	TAP_OK(dlrt_gpuplan_path_expand("/very/long/%n/%n/%n", "nodename", buf, 16, &err) < 0 &&
	       err_is_one_line(&err), "too long: %s", err.msg);
}


int main(void)
{
	test_load_errors();
	test_topo_tool();
	test_parsers();
	test_solver();
	test_optimal();
	test_cpu_bind_and_path();
	return tap_done();
}
