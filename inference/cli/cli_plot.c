/* cli_plot.c - dlrt-infer plot: query rate and workers per job over time, as the
 * figure of IDunno's paper, from the coordinator's timeline (POOL/timeline.tsv), drawn
 * by gnuplot (Debian's gnuplot-nox) into a PNG.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/parse.h"
#include "cli.h"
#include "inference/pool/pool.h"

#define MAX_PLOT_JOBS 16
#define MAX_MARKS 64

/* A change of coordinator (a standby's takeover or a restart from the
 * journal), from POOL/events.tsv: drawn as a dashed line at its pool time. */
struct mark {
	double t;
	char what[16];
	unsigned long long epoch;
};

static int read_marks(const char *dir, struct mark *m, int max)
{
	char path[4200], line[256];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "%s/events.tsv", dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		double t;
		unsigned job;
		char what[16];
		unsigned long long epoch;

		if (sscanf(line, "%lf %u %15[a-z]:%llu", &t, &job, what, &epoch) == 4 &&
		    (!strcmp(what, "takeover") || !strcmp(what, "restart")) && t >= 0 && t < 1e9) {
			m[n].t = t;
			snprintf(m[n].what, sizeof(m[n].what), "%s", what);
			m[n].epoch = epoch;
			n++;
		}
	}
	fclose(f);
	return n;
}

/* Its --pool stays its own (not pool_opt): plot reads the pool's files and
 * never connects to the coordinator. */
int cmd_plot(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "out", required_argument, NULL, 'o' }, { "pool", required_argument, NULL, 'p' },
		{ "title", required_argument, NULL, 't' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = "dlrt-infer.png", *title = "dlrt-infer";
	uint32_t jobs[MAX_PLOT_JOBS];
	int njobs = 0, opt, rc = 1;
	char dir[4096], path[4200], tmpdir[] = "/tmp/dlrt-plot.XXXXXX", line[256];
	FILE *in = NULL, *data[MAX_PLOT_JOBS] = { NULL }, *gp = NULL;
	struct dlrt_err err;
	long rows = 0;
	struct mark marks[MAX_MARKS];
	int nmarks;
	const char *pool = NULL;

	while ((opt = getopt_long(argc, argv, "o:p:t:h", lo, NULL)) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 'p': pool = optarg; break;
		case 't': title = optarg; break;
		case 'h':
			printf("usage: dlrt-infer plot JOB... [--out PNG] [--title T] [--pool DIR]\n"
			       "Draws the query rate (queries/s over the rate window) and the workers\n"
			       "held by each job over the pool's time, from POOL/timeline.tsv, with\n"
			       "gnuplot. Default output: dlrt-infer.png. Dashed lines mark where a\n"
			       "new coordinator took over (a standby, or pool restart), from\n"
			       "POOL/events.tsv.\n");
			return 0;
		default: return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (njobs == MAX_PLOT_JOBS || dlrt_parse_u32(argv[i], 1, UINT32_MAX, &jobs[njobs]) < 0) {
			fprintf(stderr, "dlrt-infer: plot: '%s' is not a job id (at most %d jobs)\n",
				argv[i], MAX_PLOT_JOBS);
			return 2;
		}
		njobs++;
	}
	if (!njobs) {
		fprintf(stderr, "dlrt-infer: plot needs at least one JOB id\n");
		return 2;
	}
	if (dlrt_pool_dir(pool, dir, sizeof(dir), &err) < 0) {
		fprintf(stderr, "dlrt-infer: %s\n", err.msg);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/timeline.tsv", dir);
	in = fopen(path, "r");
	if (!in) {
		fprintf(stderr, "dlrt-infer: cannot read %s: %s (has the pool run a job?)\n", path,
			strerror(errno));
		return 1;
	}
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "dlrt-infer: cannot create a temporary folder: %s\n", strerror(errno));
		goto out;
	}
	for (int k = 0; k < njobs; k++) {
		snprintf(path, sizeof(path), "%s/%d.dat", tmpdir, k);
		data[k] = fopen(path, "w");
		if (!data[k])
			goto out;
	}
	while (fgets(line, sizeof(line), in)) {
		double t, rate, held;
		unsigned job;

		if (sscanf(line, "%lf %u %lf %lf", &t, &job, &rate, &held) != 4)
			continue;
		for (int k = 0; k < njobs; k++)
			if (jobs[k] == job) {
				fprintf(data[k], "%.3f %.1f %.2f\n", t, rate, held);
				rows++;
			}
	}
	for (int k = 0; k < njobs; k++) {
		fclose(data[k]);
		data[k] = NULL;
	}
	if (!rows) {
		fprintf(stderr, "dlrt-infer: the timeline has no rows for these jobs\n");
		goto out;
	}
	gp = popen("gnuplot", "w");
	if (!gp) {
		fprintf(stderr, "dlrt-infer: cannot run gnuplot (apt-get install gnuplot-nox)\n");
		goto out;
	}
	fprintf(gp, "set terminal pngcairo size 900,700\nset output '%s'\n", out);
	fprintf(gp, "set multiplot layout 2,1 title '%s'\nset grid\nset key outside right\n", title);
	nmarks = read_marks(dir, marks, MAX_MARKS);
	for (int k = 0; k < nmarks; k++)
		fprintf(gp, "set arrow from %.3f, graph 0 to %.3f, graph 1 nohead dashtype 2 "
			"lc rgb 'gray40'\nset label '%s (epoch %llu)' at %.3f, graph 0.95 offset -0.8,0 "
			"rotate by 90 right font ',8' tc rgb 'gray40'\n", marks[k].t, marks[k].t,
			marks[k].what, marks[k].epoch, marks[k].t);
	fprintf(gp, "set ylabel 'queries/s'\nset xlabel ''\nplot ");
	for (int k = 0; k < njobs; k++)
		fprintf(gp, "%s'%s/%d.dat' using 1:2 with lines lw 2 title 'job %u'", k ? ", " : "",
			tmpdir, k, jobs[k]);
	fprintf(gp, "\nset ylabel 'workers'\nset xlabel 'time (s)'\nplot ");
	for (int k = 0; k < njobs; k++)
		fprintf(gp, "%s'%s/%d.dat' using 1:3 with lines lw 2 title 'job %u'", k ? ", " : "",
			tmpdir, k, jobs[k]);
	fprintf(gp, "\nunset multiplot\n");
	if (pclose(gp) != 0) {
		gp = NULL;
		fprintf(stderr, "dlrt-infer: gnuplot failed (is gnuplot-nox installed?)\n");
		goto out;
	}
	gp = NULL;
	printf("%s\n", out);
	rc = 0;
out:
	for (int k = 0; k < njobs; k++) {
		if (data[k])
			fclose(data[k]);
		snprintf(path, sizeof(path), "%s/%d.dat", tmpdir, k);
		unlink(path);
	}
	rmdir(tmpdir);
	if (in)
		fclose(in);
	return rc;
}
