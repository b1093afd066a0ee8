/* coord_run.c - dlrt_coord_run(), the way into the coordinator: a
 * coordinator's life from the claim of its epoch (claim.h) to its shutdown.
 * It loads the state (the standby's copy or the journal), rebuilds the jobs,
 * opens the journal and the timeline files, starts the listener and the
 * timers, writes the access record, and at the end lets the standby go and
 * releases everything.
 *
 * This is the top of the coordinator's files (coord_int.h): it calls the
 * concerns by name to start and stop them, and gives the core (coord.c) the
 * list of parts through which the core reaches them while the loop runs.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coord_int.h"
#include "inference/pool/auth.h"
#include "inference/pool/claim.h"
#include "common/clock.h"
#include "services/evloop.h"
#include "coord.h"
#include "inference/state/journal.h"
#include "common/netaddr.h"
#include "common/parse.h"
#include "inference/pool/pool.h"
#include "inference/state/standby.h"
#include "services/tcpserver.h"
#include "inference/state/tsvlog.h"

/* The concerns as the core reaches them, in the order it calls their hooks:
 * a closing connection leaves the group commit and the standby first, then
 * the waits of its client, then its worker (whose tasks are requeued); the
 * fence is checked before idle workers get tasks. */
static const struct dlrt_coord_part *const parts[] = {
	&dlrt_coord_replication_part,
	&dlrt_coord_requests_part,
	&dlrt_coord_liveness_part,
	&dlrt_coord_dispatch_part,
	&dlrt_coord_results_part,
};

/* The state to start from: the standby's copy (a takeover), else the
 * journal's (a restart), cutting a torn tail. */
static int load_state(struct coord *c, struct dlrt_err *err)
{
	struct dlrt_journal_scan scan;

	if (c->o->takeover) {
		if (dlrt_buf_append(&c->log, c->o->log, c->o->loglen) < 0)
			return dlrt_err_set(err, "out of memory taking over the state");
		return dlrt_journal_apply_log(c->o->log, c->o->loglen, &c->st, err);
	}
	if (dlrt_journal_load(c->pool, &c->st, &c->log, &scan, err) < 0)
		return -1;
	if (scan.torn)
		dlrt_coord_log(c,
			       "journal: cut a torn or corrupt tail at byte %zu after %llu good records "
			       "(%s); it was never applied", scan.good,
			       (unsigned long long)scan.records, scan.why);
	else if (scan.records)
		dlrt_coord_log(c, "journal: %llu records replayed",
			       (unsigned long long)scan.records);
	return 0;
}

/* Answers go to the journal's page cache at once; this bounds how long they
 * wait for the disk (journal.h). */
static int64_t journal_tick(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;
	struct dlrt_err err;

	(void)loop;
	if (dlrt_journal_sync(&c->jn, &err) < 0) {
		/* Records since the last sync may be gone: stop acknowledging. */
		dlrt_coord_break(c, err.msg);
		return -1;
	}
	return DLRT_JOURNAL_SYNC_MS;
}

/* The timeline files: a new pool starts them at t = 0; a continued one
 * appends and keeps the pool's time (tsvlog.h). Without them the pool still
 * serves (diagnostics only). */
static void open_timeline(struct coord *c, bool continuing)
{
	struct dlrt_tsv_scan sc = { 0 };
	struct dlrt_err e2;
	char ev[64];

	c->timeline = dlrt_tsv_open(c->pool, "timeline.tsv",
				    "t\tjob\trate\tworkers\tshare\tdone\n", !continuing, &sc,
				    &e2);
	if (!c->timeline)
		dlrt_coord_log(c, "no timeline: %s", e2.msg);
	c->events = dlrt_tsv_open(c->pool, "events.tsv", "t\tjob\tevent\n", !continuing, &sc,
				  &e2);
	if (!c->events)
		dlrt_coord_log(c, "no events: %s", e2.msg);
	if (continuing) {
		double t = dlrt_tsv_resume_t(&sc, dlrt_coord_wall_now());

		c->t0_us = dlrt_now_us() - (int64_t)(t * 1e6) - 1;
		dlrt_coord_log(c, "the timeline continues at pool time %.3f s",
			       dlrt_coord_tsec(c, dlrt_now_us()));
	}
	/* Lets tools relate t to other clocks (failure benchmarks). */
	snprintf(ev, sizeof(ev), "clock:%.6f",
		 dlrt_coord_wall_now() - dlrt_coord_tsec(c, dlrt_now_us()));
	dlrt_coord_event(c, 0, ev);
	if (continuing) {
		/* Marks the change of coordinator (dlrt-infer plot draws it). */
		snprintf(ev, sizeof(ev), "%s:%llu",
			 c->o->takeover || c->o->yield ? "takeover" : "restart",
			 (unsigned long long)c->epoch);
		dlrt_coord_event(c, 0, ev);
	}
}

/* Lets the standby go (it must not take over a pool that stops), removes
 * this coordinator's access record and releases everything. */
static void coord_close(struct coord *c)
{
	/* The last batch is written, and what waited for it released. */
	if (c->loop && dlrt_coord_write_batch(c) == 0)
		dlrt_coord_release_held(c);
	if (c->sb && !c->fenced) {
		/* The standby must not take over a pool that stops. */
		struct dlrt_err e3;
		uint64_t none = 0;

		/* What was answered reaches the standby, and the replies held for it
		 * their peers, before the connections close. */
		dlrt_coord_sb_drain(c);
		dlrt_coord_flush_dirty(c);

		dlrt_ip_put_empty(&c->sb->out, DLRT_IP_STOP);
		dlrt_standby_push(c->sb, 0, 200, &none, &e3);
	}
	/* Remove our access record (not a newer coordinator's): workers then exit. */
	{
		struct dlrt_pool_access now;
		struct dlrt_err e2;
		char path[4200];

		/* Not when fenced: an older coordinator's late record is replaced by
		 * the newer one's, and removing it would make its workers leave. */
		if (!c->fenced && dlrt_pool_read_access(c->pool, &now, &e2) == 0 &&
		    now.epoch == c->epoch) {
			snprintf(path, sizeof(path), "%s/access", c->pool);
			unlink(path);
		}
	}
	if (c->srv)
		dlrt_tcpserver_stop(c->srv); /* before the files: on_close may still log events */
	/* Running jobs' rows were flushed with their answers: nothing is left
	 * to write, but a failing close is still worth a line. */
	for (uint32_t i = 0; i < c->st.njobs; i++)
		if (c->jr[i].csv && fclose(c->jr[i].csv) != 0)
			dlrt_coord_log(c, "job %u: closing %s: %s", c->st.jobs[i].id, c->jr[i].out,
				       strerror(errno));
	if (c->timeline) {
		if (c->fenced)
			__fpurge(c->timeline);
		if (fclose(c->timeline) != 0)
			dlrt_coord_log(c, "closing timeline.tsv: %s: its last rows are lost",
				       strerror(errno));
	}
	if (c->events) {
		if (c->fenced)
			__fpurge(c->events);
		if (fclose(c->events) != 0)
			dlrt_coord_log(c, "closing events.tsv: %s: its last rows are lost",
				       strerror(errno));
	}
	if (c->sfd >= 0)
		close(c->sfd);
	if (c->loop)
		dlrt_evloop_destroy(c->loop);
	dlrt_journal_close(&c->jn);
	dlrt_buf_free(&c->log);
	for (uint32_t i = 0; i < c->nworkers; i++) {
		free(c->workers[i]->known);
		free(c->workers[i]);
	}
	free(c->workers);
	for (uint32_t i = 0; i < c->st.njobs; i++) {
		free(c->jr[i].requeue);
		free(c->jr[i].waiters);
		dlrt_attempts_free(&c->jr[i].att);
	}
	free(c->jr);
	free(c->sj);
	free(c->dirty);
	free(c->held);
	for (uint32_t i = 0; i < c->npend; i++)
		dlrt_ip_result_free(&c->pend[i].ch.res);
	free(c->pend);
	dlrt_buf_free(&c->rows);
	dlrt_buf_free(&c->sbq);
	dlrt_infer_state_free(&c->st);
}

/* The listener's bounds: requests are cut to MAX_REQUEST (lower until a
 * connection authenticates), a reply may carry a whole job's results, and the
 * idle check is the heartbeat's, not the server's. */
static const struct dlrt_tcpserver_cfg coord_server_cfg = {
	.max_request = MAX_REQUEST, /* the core lowers it until authentication */
	.max_reply = (size_t)256 << 20,
	.idle_timeout_ms = 0,
	.max_conns = 4096,
};

int dlrt_infer_prefetch_check(uint32_t prefetch, struct dlrt_err *err)
{
	if (prefetch < 1 || prefetch > DLRT_INFER_PREFETCH_MAX)
		return dlrt_err_set(err, "--prefetch must be 1..%d", DLRT_INFER_PREFETCH_MAX);
	return 0;
}

int dlrt_infer_prefetch_parse(const char *what, const char *text, uint32_t *out,
			      struct dlrt_err *err)
{
	if (dlrt_parse_u32(text, 1, DLRT_INFER_PREFETCH_MAX, out) < 0)
		return dlrt_err_set(err, "%s=%s: expected a whole number from 1 to %d", what,
				    text, DLRT_INFER_PREFETCH_MAX);
	return 0;
}

/* The options and the clocks: the rate buckets, the heartbeat bound and how
 * connections authenticate. Nothing is touched on disk yet. */
static int coord_configure(struct coord *c, double window, struct dlrt_err *err)
{
	char why[256];

	dlrt_coord_set_parts(c, parts, sizeof(parts) / sizeof(parts[0]));
	c->start_us = dlrt_now_us();
	c->t0_us = c->start_us;
	c->last_accrue_us = c->start_us;
	c->bucket_ms = (int64_t)(window * 1000 / NB);
	if (c->bucket_ms < 5)
		c->bucket_ms = 5;
	if (dlrt_infer_prefetch_check(c->o->prefetch, err) < 0)
		return -1;
	if (dlrt_hb_config(c->o->heartbeat, &c->hb, err) < 0)
		return -1;
	if (dlrt_auth_pick(c->o->auth, &c->auth_mode, why, sizeof(why), err) < 0)
		return -1;
	if (c->auth_mode == DLRT_AUTH_MUNGE)
		dlrt_coord_log(c, "connections authenticate with MUNGE (pool owner uid %d only)",
			       (int)geteuid());
	else
		dlrt_coord_log(c,
			       "connections authenticate with the pool secret's challenge-response "
			       "(MUNGE not used: %s)", why);
	return 0;
}

/* Whether another coordinator of the pool still answers: a requeued element 0
 * while the standby it left behind now serves. 0 (none), DLRT_COORD_YIELDED or
 * -1 with err. */
static int coord_check_alive(struct coord *c, const struct dlrt_pool_access *old,
			     struct dlrt_err *err)
{
	struct dlrt_ipc probe;
	struct dlrt_err e2;

	if (c->o->takeover || !old->epoch)
		return 0;
	if (dlrt_ipc_open(&probe, c->pool, DLRT_IP_ROLE_CLIENT, "coordinator-probe", 1000,
			  &e2) < 0)
		return 0;
	dlrt_ipc_close(&probe);
	if (c->o->yield)
		return DLRT_COORD_YIELDED;
	return dlrt_err_set(err, "the coordinator of %s (epoch %llu on %s) still runs: "
			    "not starting another (dlrt-infer pool stop stops it)",
			    c->pool, (unsigned long long)old->epoch, old->host);
}

/* Claims this coordinator's epoch (claim.h) before anything is read or
 * written, and makes the pool secret of the access record. 0,
 * DLRT_COORD_YIELDED (another won) or -1 with err. */
static int coord_claim_epoch(struct coord *c, struct dlrt_err *err)
{
	const struct dlrt_coord_opts *o = c->o;
	struct dlrt_pool_access old;
	int rc;

	snprintf(c->pool, sizeof(c->pool), "%s", o->pool);
	if (dlrt_pool_prepare(c->pool, err) < 0)
		return -1;
	if (dlrt_pool_read_access(c->pool, &old, err) < 0)
		return -1;
	rc = coord_check_alive(c, &old, err);
	if (rc)
		return rc;
	/* A standby or a worker taking over competes for the epoch after the
	 * one it saw die; element 0 and pool restart go past every claim. */
	c->epoch = old.epoch + 1;
	if (!o->takeover && !o->yield) {
		uint64_t high;

		if (dlrt_claim_highest(c->pool, &high, err) < 0)
			return -1;
		if (high >= c->epoch)
			c->epoch = high + 1;
	}
	if (o->min_epoch > c->epoch)
		c->epoch = o->min_epoch;
	/* Before anything is read or written: the journal's torn tail is cut
	 * by whoever loads it, so only the epoch's one winner may. */
	switch (dlrt_claim_take(c->pool, c->epoch, err)) {
	case 0:
		break;
	case 1:
		if (o->yield || o->takeover) {
			dlrt_coord_log(c, "epoch %llu was claimed by another coordinator: not serving",
				       (unsigned long long)c->epoch);
			return DLRT_COORD_YIELDED;
		}
		return dlrt_err_set(err, "epoch %llu of %s was claimed by another coordinator "
				    "meanwhile: it serves the pool (dlrt-infer status shows it)",
				    (unsigned long long)c->epoch, c->pool);
	default:
		return -1;
	}
	dlrt_claim_changed(c->pool, &c->claims_seen);
	c->fence_ms = dlrt_now_ms();
	return dlrt_pool_new_secret(c->secret, err);
}

/* What coord_close() releases, in the state it can release from any later
 * failure. */
static void coord_init_resources(struct coord *c)
{
	dlrt_infer_state_init(&c->st);
	dlrt_buf_init(&c->log, (size_t)-1);
	c->jn.fd = -1;
	dlrt_buf_init(&c->rows, (size_t)-1);
	dlrt_buf_init(&c->sbq, (size_t)-1);
}

/* Whether this coordinator continues a pool (pool restart, a requeued element
 * 0, a takeover) rather than starts one: pool start moves the journal aside.
 * An older coordinator of this history may still run: it looks at the claims
 * at least every DLRT_COORD_FENCE_MS while it serves, and stops before it
 * releases one more reply, so every change it told anyone of is in the
 * journal once that time has passed. (A standby's copy needs no wait: nothing
 * was acknowledged that the standby did not acknowledge first.) */
static bool coord_continues_pool(struct coord *c)
{
	char jp[4200];
	struct stat jsb;
	bool continuing;

	snprintf(jp, sizeof(jp), "%s/journal", c->pool);
	continuing = c->o->takeover || lstat(jp, &jsb) == 0;
	if (!c->o->takeover && continuing)
		usleep(DLRT_COORD_FENCE_WAIT_MS * 1000);
	return continuing;
}

/* Opens the durable state: loads it (the standby's copy or the journal),
 * claims past a journal's epoch if it is ahead, rebuilds the jobs and opens
 * the journal for this epoch's changes. */
static int coord_open_state(struct coord *c, struct dlrt_err *err)
{
	const char *journal = getenv("DLRT_INFER_JOURNAL");

	if (load_state(c, err) < 0)
		return -1;
	if (c->st.epoch >= c->epoch) {
		/* A journal from epochs nobody claimed (an older dlrt): claim past it. */
		int crc;

		c->epoch = c->st.epoch + 1;
		crc = dlrt_claim_take(c->pool, c->epoch, err);
		if (crc != 0) {
			if (crc > 0)
				dlrt_err_set(err, "epoch %llu of %s was claimed by another coordinator "
					     "meanwhile: it serves the pool",
					     (unsigned long long)c->epoch, c->pool);
			return -1;
		}
	}
	c->next_attempt = dlrt_attempt_first(c->epoch);
	if (dlrt_coord_resume_jobs(c) < 0)
		return dlrt_err_set(err, "out of memory resuming the jobs");
	if (journal && !strcmp(journal, "0"))
		dlrt_coord_log(c, "DLRT_INFER_JOURNAL=0: no journal (benchmarks only)");
	else if (dlrt_journal_open(&c->jn, c->pool, dlrt_buf_head(&c->log), c->log.len, err) < 0)
		return -1;
	c->log_written = c->log.len; /* the journal holds it all */
	c->written_seq = c->st.seq;
	return 0;
}

/* The event loop, the listener, the signals and the timers of every concern. */
static int coord_start_loop(struct coord *c, bool continuing, struct dlrt_err *err)
{
	const char *standby = getenv("DLRT_INFER_STANDBY");
	sigset_t ss;

	c->loop = dlrt_evloop_create();
	if (!c->loop)
		return dlrt_err_set(err, "cannot create the event loop");
	/* Its workers keep it busy: asking again before it sleeps would only
	 * add system calls (two per empty ask) on cores the workers need. */
	dlrt_evloop_set_spin(c->loop, false);
	if (dlrt_tcpserver_start(&c->srv, c->loop, &coord_server_cfg, &dlrt_coord_proto, c,
				 err) < 0)
		return -1;
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* A file size limit (ulimit -f) must fail a write (EFBIG), which is
	 * handled like a full disk, not kill the coordinator. */
	signal(SIGXFSZ, SIG_IGN);
	c->sfd = signalfd(-1, &ss, SFD_CLOEXEC | SFD_NONBLOCK);
	if (c->sfd >= 0)
		dlrt_evloop_add_fd(c->loop, c->sfd, DLRT_EV_READ, dlrt_coord_on_signal, c);
	open_timeline(c, continuing);
	dlrt_evloop_add_timer(c->loop, c->bucket_ms, dlrt_coord_tick, c);
	c->hb_last_check_ms = dlrt_now_ms();
	dlrt_evloop_add_timer(c->loop, c->hb.check_ms, dlrt_coord_heartbeat_check, c);
	dlrt_evloop_add_timer(c->loop, DLRT_JOURNAL_SYNC_MS, journal_tick, c);
	dlrt_evloop_add_timer(c->loop, 1000, dlrt_coord_gate_tick, c);
	c->sb_tmo = dlrt_standby_timeout_ms();
	gethostname(c->host, sizeof(c->host) - 1);
	/* Element 1 usually joins within a second or two; then anyone will do. */
	if (!standby || strcmp(standby, "0"))
		c->promote_ms = dlrt_now_ms() + (c->o->takeover ? 500 : 1500);
	dlrt_evloop_add_timer(c->loop, DLRT_STANDBY_BEAT_MS, dlrt_coord_ha_tick, c);
	return 0;
}

/* Ends what the loaded state left half done, then tells the pool where this
 * coordinator serves (the access record, a.address already set). 0,
 * DLRT_COORD_YIELDED or -1 with err. */
static int coord_publish(struct coord *c, struct dlrt_pool_access *a, struct dlrt_err *err)
{
	/* A job whose last answer was recorded but not its end (a crash in
	 * between, or a torn JOB_END) ends now. */
	dlrt_coord_fail_unstorable(c);
	for (uint32_t ji = 0; ji < c->st.njobs; ji++)
		if (c->st.jobs[ji].state == DLRT_IP_JOB_RUNNING &&
		    c->st.jobs[ji].tasks_done == c->st.jobs[ji].ntasks)
			dlrt_coord_job_complete(c, ji);
	if (dlrt_coord_write_batch(c) < 0 && c->broken)
		return dlrt_err_set(err, "%s", c->broken_msg);
	a->epoch = c->epoch;
	a->port = dlrt_tcpserver_port(c->srv);
	snprintf(a->secret, sizeof(a->secret), "%s", c->secret);
	gethostname(a->host, sizeof(a->host) - 1);
	a->pid = (uint32_t)getpid();
	if (dlrt_pool_write_access(c->pool, a, err) < 0)
		return -1;
	c->acc = *a;
	/* A claim above ours made while we replayed: never serve below it. */
	if (dlrt_coord_fence_check(c)) {
		if (c->o->yield || c->o->takeover)
			return DLRT_COORD_YIELDED;
		return dlrt_err_set(err, "fenced out by a newer coordinator while starting");
	}
	return 0;
}

/* Serves until pool stop, a signal, a newer coordinator's fence or a broken
 * journal. */
static int coord_serve(struct coord *c, double window, struct dlrt_err *err)
{
	const struct dlrt_coord_opts *o = c->o;

	dlrt_coord_log(c, "serving pool %s at %s:%u, epoch %llu, prefetch %u, window %.2f s, "
		       "heartbeat bound %.2f s", c->pool, c->acc.address, c->acc.port,
		       (unsigned long long)c->epoch, o->prefetch, window,
		       (double)c->hb.bound_ms / 1000);
	if (o->takeover || o->yield)
		dlrt_coord_log(c, "took over%s: epoch %llu serves since wall %.6f",
			       o->yield ? " from the journal (coordinator and standby both lost)" : "",
			       (unsigned long long)c->epoch, dlrt_coord_wall_now());
	if (dlrt_evloop_run(c->loop) < 0)
		return dlrt_err_errno(err, errno, "the event loop failed");
	dlrt_coord_log(c, "%llu late or void answers dropped", (unsigned long long)c->late_dropped);
	if (c->fenced)
		return dlrt_err_set(err, "fenced out by a newer coordinator (see the log above)");
	if (c->broken)
		return dlrt_err_set(err, "%s", c->broken_msg);
	return 0;
}

/* The phases of a coordinator's life; the first two return at once, since
 * nothing is held yet, every later one ends in coord_close(). */
int dlrt_coord_run(const struct dlrt_coord_opts *o, struct dlrt_err *err)
{
	struct coord c = { .o = o, .sfd = -1 };
	struct dlrt_pool_access a;
	double window = o->window > 0 ? o->window : 0.5;
	bool continuing;
	int rc;

	if (coord_configure(&c, window, err) < 0)
		return -1;
	rc = coord_claim_epoch(&c, err);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	if (o->address && *o->address)
		snprintf(a.address, sizeof(a.address), "%s", o->address);
	else if (dlrt_net_node_ipv4(NULL, getenv("SLURM_LAUNCH_NODE_IPADDR"), a.address, err) < 0)
		return -1;
	coord_init_resources(&c);
	rc = -1;
	c.held = calloc(coord_server_cfg.max_conns, sizeof(*c.held));
	if (!c.held) {
		dlrt_err_set(err, "out of memory");
		goto out;
	}
	continuing = coord_continues_pool(&c);
	if (coord_open_state(&c, err) < 0 || coord_start_loop(&c, continuing, err) < 0)
		goto out;
	rc = coord_publish(&c, &a, err);
	if (rc)
		goto out;
	rc = coord_serve(&c, window, err);
out:
	coord_close(&c);
	return rc;
}
