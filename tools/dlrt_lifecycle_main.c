/* dlrt-lifecycle - the per-node watcher of a dlrt step: its time limit and
 * preemption (--dl-signal, --dl-requeue) and its progress (--dl-hang-timeout);
 * docs/checkpoint.md.
 *
 * Started by the plugin in slurmstepd (spank/lifecycle.c), as the job user,
 * like a node service: on every node of a dlrt step, and in the batch step of
 * a job with --dl-requeue. One process does both of its jobs (tools/lcwatch.h
 * says why): the warning and the requeue (tools/lcwarn.h), and the hang watch
 * (tools/lchang.h). The job's times come from one process per step
 * (tools/lcshare.h): the step's first node asks slurmctld, the others learn
 * them through srun's rendezvous. It exits when --lifetime-fd reaches end of
 * file.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/parse.h"
#include "lchang.h"
#include "lcshare.h"
#include "lcwarn.h"
#include "jobpolicy/warnsig.h"

/* The first look (slurmctld, srun's rendezvous) waits until every task of the
 * node has started, and at least FIRST_LOOK_MS: a task starts after the
 * step's address exchange, so this watcher's connections to srun's
 * rendezvous and slurmctld's RPC never compete with the step's wire-up
 * (bench/lifecycle-cost.sh: at 32 nodes a first look at 1 s still overlapped
 * it). A task that never starts holds the first look back TASKS_START_MAX_MS
 * at most; no task can be warned before it started anyway. */
#define FIRST_LOOK_MS 1000
#define TASKS_START_MAX_MS 30000
#define TASKS_LOOK_MS 100

struct opts {
	struct dlrt_lcw w;
	struct dlrt_lcwarn warn;
	struct dlrt_lchang hang;
	struct dlrt_lcshare times;
	int ready, pids, secret;
	const char *times_at; /* --times IP:PORT */
	bool publish;         /* --times-publish */
	char hostname[256];
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: " DLRT_LCW_PROG " --lifetime-fd FD --ready-fd FD --job J --step S [--attempt A]\n"
"                      --signal SIG@SECS [options]\n"
"Warns a job's tasks on this node before its time limit or when it is preempted.\n"
"\n"
"  --attempt A          the job's restart count of this run (default: slurmctld's\n"
"                       answer, read once)\n"
"  --pids-fd FD         the node's task page (the tasks to signal)\n"
"  --children           signal each task's children (an agent's workers), not the task\n"
"  --requeue N          batch step: requeue a job still running just before its limit,\n"
"                       while its restart count is below N\n"
"  --node NAME          this node, for the record\n"
"  --record-base DIR    the job's record is DIR/<job>/dlrt-retries.log\n"
"  --record-job J       the record's <job> when it is not --job's (a heterogeneous\n"
"                       step's component records in its het job's record)\n"
"  --verbose            one line on each task's stderr when the warning is sent\n"
"  --hang-timeout SECS  end the step when no task of it made progress for SECS\n"
"                       (output, files, DLRT_HEARTBEAT), with each task's stacks\n"
"  --progress-dir DIR   the job's checkpoint folder: heartbeats and each node's progress\n"
"  --step-tasks N       the step's tasks on all nodes (the hang report compares where\n"
"                       they are)\n"
"  --times IP:PORT      srun's rendezvous for the step: learn the job's times there\n"
"                       instead of asking slurmctld (the step secret on --secret-fd)\n"
"  --times-publish      with --times: ask slurmctld, and share the times there\n"
"  --secret-fd FD       the step secret (32 bytes)\n"
"Started by dlrt's plugin; see dlrt(7), --dl-signal and --dl-requeue.\n");
}

static int parse_fd(const char *v, int *fd)
{
	uint32_t n;

	if (dlrt_parse_u32(v, 0, 1u << 20, &n) < 0)
		return -1;
	*fd = (int)n;
	return 0;
}

/* One option into o; -1 if its value is bad. */
static int take_opt(struct opts *o, int c, const char *v)
{
	struct dlrt_err err;

	switch (c) {
	case 'l': return parse_fd(v, &o->w.life_fd);
	case 'r': return parse_fd(v, &o->ready);
	case 'p': return parse_fd(v, &o->pids);
	case 'S': return parse_fd(v, &o->secret);
	case 'j': return dlrt_parse_u32(v, 1, UINT32_MAX - 1, &o->w.job);
	case 'R': return dlrt_parse_u32(v, 1, UINT32_MAX - 1, &o->w.record_job);
	case 's': return dlrt_parse_u32(v, 0, UINT32_MAX, &o->w.step);
	case 'a':
		o->warn.attempt_known = true;
		return dlrt_parse_u32(v, 0, 1u << 30, &o->w.attempt);
	case 'q': return dlrt_parse_u32(v, 0, 100, &o->warn.pol.requeue);
	case 'g':
		if (dlrt_warnsig_parse(v, &o->warn.sig, &o->warn.pol.before, &err) == 0)
			return 0;
		fprintf(stderr, DLRT_LCW_PROG ": %s\n", err.msg);
		return -1;
	case 'c': o->warn.children = true; return 0;
	case 'v': o->w.verbose = true; return 0;
	case 'B': o->warn.batch = true; return 0;
	case 'n': o->w.node = v; return 0;
	case 'b': o->w.record_base = v; return 0;
	case 'H': return dlrt_parse_u32(v, 1, 1u << 30, &o->hang.timeout);
	case 'P': o->hang.progress_dir = v; return 0;
	case 'T': return dlrt_parse_u32(v, 1, 1u << 24, &o->hang.step_tasks);
	case 't': o->times_at = v; return 0;
	case 'U': o->publish = true; return 0;
	case 'h': usage(stdout); exit(0);
	default: return -1;
	}
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "lifetime-fd", 1, NULL, 'l' }, { "ready-fd", 1, NULL, 'r' },
		{ "job", 1, NULL, 'j' },         { "step", 1, NULL, 's' },
		{ "attempt", 1, NULL, 'a' },     { "signal", 1, NULL, 'g' },
		{ "pids-fd", 1, NULL, 'p' },     { "children", 0, NULL, 'c' },
		{ "requeue", 1, NULL, 'q' },     { "node", 1, NULL, 'n' },
		{ "record-base", 1, NULL, 'b' }, { "verbose", 0, NULL, 'v' },
		{ "batch", 0, NULL, 'B' },       { "help", 0, NULL, 'h' },
		{ "hang-timeout", 1, NULL, 'H' }, { "progress-dir", 1, NULL, 'P' },
		{ "step-tasks", 1, NULL, 'T' },  { "times", 1, NULL, 't' },
		{ "times-publish", 0, NULL, 'U' }, { "secret-fd", 1, NULL, 'S' },
		{ "record-job", 1, NULL, 'R' },
		{ NULL, 0, NULL, 0 }
	};
	int c, bad = 0;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1)
		bad |= take_opt(o, c, optarg);
	return bad || optind != argc || o->w.life_fd < 0 || !o->w.job ? -1 : 0;
}

/* Sleeps `s` seconds, or until the job's times change (share_fd, -1: none)
 * or the lifetime pipe closes; false then. */
static bool wait_life(int fd, int share_fd, int s, struct dlrt_lcshare *times)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = share_fd, .events = POLLIN } };
	int rc;

	do
		rc = poll(p, share_fd >= 0 ? 2 : 1, s * 1000);
	while (rc < 0 && errno == EINTR);
	if (rc > 0 && p[0].revents) {
		char c;

		if (read(fd, &c, 1) <= 0)
			return false;
	}
	if (rc > 0 && share_fd >= 0 && p[1].revents)
		dlrt_lcshare_take(times);
	return true;
}

/* Every task on the node's page has written its pid (none in the batch step). */
static bool tasks_started(const struct dlrt_lcw *w)
{
	uint32_t n = dlrt_lcw_ntasks(w);

	for (uint32_t i = 0; i < n; i++)
		if (w->page->pid[i] == 0)
			return false;
	return true;
}

/* Until the first look (FIRST_LOOK_MS); false if the step ended meanwhile. */
static bool wait_first_look(const struct dlrt_lcw *w)
{
	int64_t start = dlrt_now_ms(), now;
	struct pollfd p = { .fd = w->life_fd, .events = POLLIN };

	while ((now = dlrt_now_ms()) - start < TASKS_START_MAX_MS &&
	       (now - start < FIRST_LOOK_MS || !tasks_started(w))) {
		int64_t left = FIRST_LOOK_MS - (now - start);
		int rc = poll(&p, 1, left > TASKS_LOOK_MS ? (int)left : TASKS_LOOK_MS);
		char c;

		if (rc > 0 && read(w->life_fd, &c, 1) <= 0)
			return false;
		if (rc < 0 && errno != EINTR)
			return false;
	}
	return true;
}

static void watch_loop(struct opts *o)
{
	if (!wait_first_look(&o->w))
		return;
	for (;;) {
		int sleep_s = 10, h;

		h = dlrt_lchang_tick(&o->hang, &o->w);
		if (dlrt_lcwarn_wanted(&o->warn))
			sleep_s = dlrt_lcwarn_tick(&o->warn, &o->w);
		if (h > 0 && h < sleep_s)
			sleep_s = h;
		if (!wait_life(o->w.life_fd, dlrt_lcshare_fd(&o->times), sleep_s, &o->times))
			return;
	}
}

/* The task page (--pids-fd) mapped into o->w.page; -1 if it is not one. */
static int map_page(struct opts *o)
{
	if (o->pids < 0)
		return 0;
	o->w.page = mmap(NULL, sizeof(*o->w.page), PROT_READ, MAP_SHARED, o->pids, 0);
	if (o->w.page == MAP_FAILED || o->w.page->magic != DLRT_LC_MAGIC) {
		fprintf(stderr, DLRT_LCW_PROG ": --pids-fd %d is not the node's task page\n", o->pids);
		return -1;
	}
	close(o->pids);
	return 0;
}

int main(int argc, char **argv)
{
	static struct opts o = {
		.w = { .life_fd = -1, .node = "?" }, .ready = -1, .pids = -1, .secret = -1,
	};

	if (parse_args(argc, argv, &o) < 0) {
		usage(stderr);
		return 2;
	}
	o.warn.pol.attempt = o.w.attempt;
	/* Slurm signals every process of the step when it ends or preempts it;
	 * this one lives exactly as long as the step (lifetime pipe, PDEATHSIG). */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(o.w.node, "?") && gethostname(o.hostname, sizeof(o.hostname) - 1) == 0)
		o.w.node = o.hostname;
	if (map_page(&o) < 0)
		return 2;
	dlrt_lcshare_init(&o.times, o.w.job);
	o.warn.times = &o.times;
	if (o.times_at)
		dlrt_lcshare_rendezvous(&o.times, o.publish ? DLRT_LCSHARE_PUBLISH :
					DLRT_LCSHARE_FOLLOW, o.times_at, o.secret);
	else if (o.secret >= 0)
		close(o.secret);
	/* Who started it may wait for this line (the plugin does not: nothing of
	 * the step waits for this watcher's start). */
	if (o.ready >= 0) {
		if (write(o.ready, "1\n", 2) != 2)
			return 4;
		close(o.ready);
	}
	if (!dlrt_lcwarn_wanted(&o.warn) && !o.hang.timeout)
		return 0;
	watch_loop(&o);
	dlrt_lcshare_end(&o.times);
	return 0;
}
