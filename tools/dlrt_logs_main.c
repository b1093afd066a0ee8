/* dlrt-logs - list or merge the exported logs of a job (--dl-log-dir).
 *
 *   dlrt-logs [--dir DIR] [--step N] JOBID          one line per task log
 *   dlrt-logs [--dir DIR] [--step N] --merge JOBID  every line, in time order,
 *                                                   prefixed with step and role
 *
 * Each log file is already in time order (one writer per file), so the merge
 * reads all files at once and always prints the line with the smallest stamp:
 * memory stays one line per file.
 *
 * The job's logs are in DIR/JOBID, or, when another user took that name first
 * in a shared DIR, in DIR/JOBID.<uid>.<random> (common/privdir.h): every folder
 * of the caller's that may hold them is read, each opened without following a
 * link and checked on its descriptor (the caller's own, writable by no one
 * else), so a folder or file someone else planted is never shown as the job's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/privdir.h"
#include "logs/logline.h"
#include "logs/logrelay.h"

#define MAX_JOBDIRS 16 /* DIR/JOBID and its fallbacks read at most */
#define MAX_STEPDIRS 4096

#define CUT_LEN (sizeof(DLRT_LOGRELAY_CUT) - 1)

struct logfile {
	char path[4096];
	int dirfd;      /* its step folder, checked (the file is opened in it) */
	char leaf[256];
	char name[96];  /* "3 worker-2": step and role-index, the merge prefix */
	uint32_t step, index;
	char role[32];
	FILE *f;
	char *line;     /* current line (merge), without its newline */
	size_t cap;
	ssize_t len;
	char stamp[DLRT_LOGSTAMP_LEN + 1]; /* of the current line, or the last good one */
	unsigned long lines;
	char first[DLRT_LOGSTAMP_LEN + 1], end[128];
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: dlrt-logs [--dir DIR] [--step N] [--merge] JOBID\n"
		"Lists the task logs a job wrote with --dl-log-dir=DIR (one line per task:\n"
		"step, role-index, lines, first and last time, how the task ended), or with\n"
		"--merge prints every line of every task in time order, prefixed with its\n"
		"step and role.\n"
		"  --dir DIR    the job's --dl-log-dir (default: $DLRT_LOG_DIR)\n"
		"  --step N     only step N\n"
		"  --merge, -m  merge the lines instead of listing the files\n"
		"Example: dlrt-logs --dir $HOME/dl-logs --merge 1234 | grep ' err '\n");
}

static int by_step_role(const void *a, const void *b)
{
	const struct logfile *x = a, *y = b;
	int c;

	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	if ((c = strcmp(x->role, y->role)))
		return c;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* The folders read, open and checked: job folders, then step folders. */
static int jobfds[MAX_JOBDIRS], stepfds[MAX_STEPDIRS];
static char jobpaths[MAX_JOBDIRS][4400];
static int njob, nstep;

/* Opens a log file of the list in its checked step folder; NULL (with one
 * line on stderr) if it is not the caller's own regular file. */
static FILE *open_log(const struct logfile *l)
{
	struct dlrt_err err = { "" };
	int fd = dlrt_privdir_read(l->dirfd, l->leaf, l->path, "dlrt-logs", &err);
	FILE *f;

	if (fd < 0) {
		fprintf(stderr, "dlrt-logs: skipped: %s\n", err.msg);
		return NULL;
	}
	if (!(f = fdopen(fd, "r")))
		close(fd);
	return f;
}

/* Adds the <role>-<index>.log files of one checked step folder. */
static int collect_step(int sfd, const char *sdir, uint32_t step, struct logfile **out,
			size_t *n, size_t *cap)
{
	int fd = openat(sfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *sd = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *fe;

	if (!sd) {
		if (fd >= 0)
			close(fd);
		fprintf(stderr, "dlrt-logs: cannot read %s: %s\n", sdir, strerror(errno));
		return 0;
	}
	while ((fe = readdir(sd))) {
		struct logfile *l;

		if (*n == *cap) {
			struct logfile *bigger = realloc(*out, (*cap = *cap ? 2 * *cap : 16) *
							 sizeof(**out));
			if (!bigger) {
				fprintf(stderr, "dlrt-logs: out of memory\n");
				closedir(sd);
				return -1;
			}
			*out = bigger;
		}
		l = &(*out)[*n];
		memset(l, 0, sizeof(*l));
		if (dlrt_logname_parse(fe->d_name, l->role, sizeof(l->role), &l->index) < 0 ||
		    strlen(fe->d_name) >= sizeof(l->leaf))
			continue;
		l->step = step;
		l->dirfd = sfd;
		snprintf(l->leaf, sizeof(l->leaf), "%s", fe->d_name);
		if ((size_t)snprintf(l->path, sizeof(l->path), "%s/%s", sdir, fe->d_name) >=
		    sizeof(l->path))
			continue;
		snprintf(l->name, sizeof(l->name), "%u %s-%u", step, l->role, l->index);
		(*n)++;
	}
	closedir(sd);
	return 0;
}

/* Collects DIR/JOBID/<step>/<role>-<index>.log, and the same in the caller's
 * fallback folders DIR/JOBID.<uid>.<random>. */
static int collect(const char *dir, uint32_t job, int only_step, uint32_t step_want,
		   struct logfile **out, size_t *n)
{
	char names[MAX_JOBDIRS][DLRT_PRIVDIR_NAME], jname[16], shown[4400], why[1024];
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), k;
	size_t cap = 0;

	snprintf(jname, sizeof(jname), "%u", job);
	snprintf(shown, sizeof(shown), "%s/%s", dir, jname);
	if (dfd < 0) {
		fprintf(stderr, "dlrt-logs: cannot open %s: %s (is --dir the job's --dl-log-dir?)\n",
			shown, strerror(errno));
		return -1;
	}
	k = dlrt_privdir_jobdirs(dfd, jname, shown, names, MAX_JOBDIRS, why, sizeof(why));
	if (k == 0) {
		if (why[0])
			fprintf(stderr, "dlrt-logs: %s, and no folder of yours holds job %u's logs "
				"(is --dir the job's --dl-log-dir?)\n", why, job);
		else
			fprintf(stderr, "dlrt-logs: cannot open %s: %s (is --dir the job's "
				"--dl-log-dir?)\n", shown, strerror(ENOENT));
		close(dfd);
		return -1;
	}
	for (int i = 0; i < k; i++) {
		struct dlrt_err err = { "" };
		struct dirent *se;
		DIR *jd;
		int jfd, fd;

		snprintf(jobpaths[njob], sizeof(jobpaths[njob]), "%s/%s", dir, names[i]);
		jfd = dlrt_privdir_open(dfd, names[i], jobpaths[njob], "dlrt-logs", &err);
		if (jfd < 0) {
			fprintf(stderr, "dlrt-logs: skipped: %s\n", err.msg);
			continue;
		}
		if (why[0])
			fprintf(stderr, "dlrt-logs: %s; job %u's logs are in %s\n", why, job,
				jobpaths[njob]);
		jobfds[njob++] = jfd;
		fd = openat(jfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || !(jd = fdopendir(fd))) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		while ((se = readdir(jd))) {
			char sdir[4096];
			uint32_t step;
			int sfd;

			if (parse_u32(se->d_name, &step) < 0 || (only_step && step != step_want) ||
			    nstep == MAX_STEPDIRS)
				continue;
			if ((size_t)snprintf(sdir, sizeof(sdir), "%s/%s", jobpaths[njob - 1],
					     se->d_name) >= sizeof(sdir))
				continue;
			sfd = dlrt_privdir_open(jfd, se->d_name, sdir, "dlrt-logs", &err);
			if (sfd < 0) {
				fprintf(stderr, "dlrt-logs: skipped: %s\n", err.msg);
				continue;
			}
			stepfds[nstep++] = sfd;
			if (collect_step(sfd, sdir, step, out, n, &cap) < 0) {
				closedir(jd);
				close(dfd);
				return -1;
			}
		}
		closedir(jd);
	}
	close(dfd);
	qsort(*out, *n, sizeof(**out), by_step_role);
	return 0;
}

/* Reads the next line of l; keeps the last good stamp for lines without one. */
static int next_line(struct logfile *l)
{
	struct dlrt_logline ll;

	l->len = getline(&l->line, &l->cap, l->f);
	if (l->len < 0)
		return -1;
	if (l->len && l->line[l->len - 1] == '\n')
		l->line[--l->len] = '\0';
	if (dlrt_logline_parse(l->line, (size_t)l->len, &ll) == 0)
		memcpy(l->stamp, ll.stamp, sizeof(l->stamp));
	return 0;
}

static void print_merged(const struct logfile *l)
{
	struct dlrt_logline ll;

	if (dlrt_logline_parse(l->line, (size_t)l->len, &ll) == 0)
		printf("%s %s %s %.*s\n", ll.stamp, l->name, ll.stream, (int)ll.text_len, ll.text);
	else
		printf("%s %s ? %s\n", l->stamp[0] ? l->stamp : "-", l->name, l->line);
}

static int merge(struct logfile *files, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		files[i].f = open_log(&files[i]);
		if (!files[i].f || next_line(&files[i]) < 0) {
			if (files[i].f)
				fclose(files[i].f);
			files[i].f = NULL;
		}
	}
	for (;;) {
		struct logfile *min = NULL;

		for (size_t i = 0; i < n; i++)
			if (files[i].f && (!min || strcmp(files[i].stamp, min->stamp) < 0))
				min = &files[i];
		if (!min)
			break;
		print_merged(min);
		if (next_line(min) < 0) {
			fclose(min->f);
			min->f = NULL;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(files[i].line);
	return 0;
}

/* Whether one of the job's folders holds a retry record. */
static bool has_record(void)
{
	for (int i = 0; i < njob; i++)
		if (faccessat(jobfds[i], "dlrt-retries.log", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			return true;
	return false;
}

static int list(struct logfile *files, size_t n)
{
	char retries[4500], *line = NULL;
	size_t cap = 0;
	FILE *f;

	printf("%-5s %-14s %7s  %-27s  %-27s  %s\n", "STEP", "TASK", "LINES", "FIRST", "LAST",
	       "END");
	for (size_t i = 0; i < n; i++) {
		struct logfile *l = &files[i];
		struct dlrt_logline ll;
		ssize_t len;

		if (!(f = open_log(l)))
			continue;
		while ((len = getline(&line, &cap, f)) >= 0) {
			if (len && line[len - 1] == '\n')
				line[--len] = '\0';
			l->lines++;
			if (dlrt_logline_parse(line, (size_t)len, &ll) < 0)
				continue;
			if (!l->first[0])
				memcpy(l->first, ll.stamp, sizeof(l->first));
			memcpy(l->stamp, ll.stamp, sizeof(l->stamp));
			/* The relay's marker of a log cut by a failed write (logrelay.h). */
			if (!strcmp(ll.stream, "dlrt") && ll.text_len > CUT_LEN &&
			    !memcmp(ll.text, DLRT_LOGRELAY_CUT, CUT_LEN)) {
				size_t k = strcspn(ll.text + CUT_LEN, ";");

				if (k > ll.text_len - CUT_LEN)
					k = ll.text_len - CUT_LEN;
				snprintf(l->end, sizeof(l->end), "log cut: %.*s", (int)k,
					 ll.text + CUT_LEN);
			}
			if (!strcmp(ll.stream, "dlrt") && ll.text_len > 4 && !memcmp(ll.text, "end ", 4)) {
				const char *c = memchr(ll.text, ':', ll.text_len);

				if (c)
					snprintf(l->end, sizeof(l->end), "%.*s",
						 (int)(ll.text_len - (size_t)(c + 2 - ll.text)), c + 2);
			}
		}
		fclose(f);
		printf("%-5u %-14s %7lu  %-27s  %-27s  %s\n", l->step, strchr(l->name, ' ') + 1,
		       l->lines, l->first[0] ? l->first : "-", l->stamp[0] ? l->stamp : "-",
		       l->end[0] ? l->end : "running or cut off");
	}
	free(line);
	for (int i = 0; i < njob; i++) {
		struct dlrt_err err = { "" };
		int fd;

		if ((size_t)snprintf(retries, sizeof(retries), "%s/dlrt-retries.log", jobpaths[i]) >=
		    sizeof(retries))
			continue;
		fd = dlrt_privdir_read(jobfds[i], "dlrt-retries.log", retries, "dlrt-logs", &err);
		if (fd < 0) {
			if (errno != ENOENT)
				fprintf(stderr, "dlrt-logs: skipped: %s\n", err.msg);
			continue;
		}
		if ((f = fdopen(fd, "r"))) {
			char buf[1024];

			printf("retries (%s):\n", retries);
			while (fgets(buf, sizeof(buf), f))
				printf("  %s", buf);
			fclose(f);
		} else {
			close(fd);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' }, { "step", required_argument, NULL, 's' },
		{ "merge", no_argument, NULL, 'm' },     { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = getenv("DLRT_LOG_DIR");
	struct logfile *files = NULL;
	struct rlimit rl;
	uint32_t job, step = 0;
	int c, do_merge = 0, only_step = 0, rc;
	size_t n = 0;

	while ((c = getopt_long(argc, argv, "d:s:mh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 's':
			if (parse_u32(optarg, &step) < 0) {
				fprintf(stderr, "dlrt-logs: --step=%s: not a step number\n", optarg);
				return 1;
			}
			only_step = 1;
			break;
		case 'm':
			do_merge = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind != argc - 1 || parse_u32(argv[optind], &job) < 0) {
		fprintf(stderr, "dlrt-logs: give one job id (e.g. dlrt-logs --dir DIR 1234); see --help\n");
		return 1;
	}
	if (!dir || !*dir) {
		fprintf(stderr, "dlrt-logs: give --dir DIR (the job's --dl-log-dir) or set DLRT_LOG_DIR\n");
		return 1;
	}
	/* One descriptor per step folder and, to merge, per file: as many as allowed. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (collect(dir, job, only_step, step, &files, &n) < 0) {
		free(files);
		return 1;
	}
	/* A job without --dl-log-dir may still have a record (--dl-retries,
	 * --dl-requeue, --dl-signal: ~/.dlrt/jobs/<job>), which the listing shows. */
	if (n == 0 && !(njob > 0 && !do_merge && has_record())) {
		fprintf(stderr, "dlrt-logs: no task logs under %s/%u%s\n", dir, job,
			only_step ? " for that step" : "");
		free(files);
		return 1;
	}
	rc = do_merge ? merge(files, n) : list(files, n);
	free(files);
	return rc ? 1 : 0;
}
