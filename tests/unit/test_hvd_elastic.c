/* test_hvd_elastic.c - elastic Horovod's rounds in dlrt-hvd-driver.
 *
 * The expected rank_and_size answers are what Horovod's own elastic driver
 * gives for the same host sets: ElasticDriver._update_host_assignments
 * (horovod/runner/elastic/driver.py) calls get_host_assignments(hosts,
 * min_np, max_np) (horovod/runner/common/util/hosts.py) on the hosts in
 * their previous order without the blacklisted ones (discovery.py,
 * host_assignment_order), and get_slot_info(host, slot) answers
 * SlotInfo.to_response_string() "rank,size,local_rank,local_size,
 * cross_rank,cross_size" or INVALID_SLOT_INFO "-1,-1,-1,-1,-1,-1" for a slot
 * the new plan does not have. Ranks fill hosts in order, local_rank is the
 * slot index, cross_rank the index of the host among the hosts with a slot
 * at that local_rank, cross_size their count. A failed slot blacklists its
 * whole host (registration.py, _on_workers_recorded).
 *
 * Then the same losses end to end on loopback: the real driver (--elastic,
 * a silent slot fails at the barrier's timeout) and one gloo_hvd_elastic per
 * slot (tests/unit/hvd_elastic_local.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "launchers/horovod/hvd_elastic.h"
#include "launchers/horovod/hvd_watch.h"
#include "launchers/horovod/rendezvous.h"
#include "buildpath.h"
#include "tap.h"

struct want {
	const char *slot, *answer;
};

static const char *ask(struct dlrt_hvd_store *st, const char *slot, struct dlrt_hvd_reply *r)
{
	static char text[64];

	dlrt_hvd_store_rank_and_size(st, slot, strlen(slot), r);
	snprintf(text, sizeof(text), "%.*s", (int)r->len, r->body ? (const char *)r->body : "");
	return text;
}

/* Every slot of `before` but those of host `lost` asks (held at the barrier),
 * Slurm reports `lost` gone, the round completes and the held workers get
 * their slots in the next plan. */
static void lose_host(const char *before, const char *lost, const struct want *w, size_t nw,
		      const char *what)
{
	struct dlrt_hvd_plan plan, next;
	struct dlrt_hvd_store *st = NULL;
	struct dlrt_hvd_round round = { 0 };
	struct dlrt_hvd_reply r;
	struct dlrt_err err;
	char path[128];
	int held = 0, bad = 0;

	if (dlrt_hvd_plan_parse(&plan, before, &err) < 0 ||
	    dlrt_hvd_store_create(&st, &plan, 0, &err) < 0 ||
	    dlrt_hvd_round_start(&round, 1, plan.nslots, &err) < 0) {
		TAP_OK(0, "%s: set up (%s)", what, err.msg);
		return;
	}
	dlrt_hvd_store_set_barrier(st, 1);
	for (size_t i = 0; i < plan.nslots; i++) {
		const struct dlrt_hvd_slot *s = &plan.slot[i];

		if (!strcmp(s->hostname, lost))
			continue;
		snprintf(path, sizeof(path), "/rank_and_size/%s:%d", s->hostname, s->local_rank);
		dlrt_hvd_store_handle(st, DLRT_HTTP_GET, path, strlen(path), NULL, 0, &r);
		bad += !r.park || r.park_rank != s->rank;
		held += r.park;
		dlrt_hvd_round_ready(&round, r.park_rank);
		bad += dlrt_hvd_round_complete(&round);
	}
	TAP_OK(!bad && held > 0, "%s: the %d survivors' GET /rank_and_size are held at the barrier",
	       what, held);
	dlrt_hvd_round_host_lost(&round, &plan, (size_t)dlrt_hvd_plan_host(&plan, lost, strlen(lost)));
	TAP_OK(dlrt_hvd_round_complete(&round), "%s: once Slurm reports %s gone, the round is complete",
	       what, lost);
	if (dlrt_hvd_round_next_plan(&round, &plan, 1, 0, &next, &err) < 0 ||
	    dlrt_hvd_store_reinit(st, &next, &err) < 0) {
		TAP_OK(0, "%s: the next plan (%s)", what, err.msg);
	} else {
		for (size_t i = 0; i < nw; i++)
			TAP_IS_STR(ask(st, w[i].slot, &r), w[i].answer, "%s: rank_and_size/%s", what,
				   w[i].slot);
		dlrt_hvd_plan_free(&next);
	}
	dlrt_hvd_round_free(&round);
	dlrt_hvd_store_destroy(st);
	dlrt_hvd_plan_free(&plan);
}

static const struct want ex1[] = { /* hA:3,hB:1,hC:2 without hB = hA:3,hC:2 */
	{ "hA:0", "0,5,0,3,0,2" }, { "hA:1", "1,5,1,3,0,2" }, { "hA:2", "2,5,2,3,0,1" },
	{ "hB:0", "-1,-1,-1,-1,-1,-1" }, { "hC:0", "3,5,0,2,1,2" }, { "hC:1", "4,5,1,2,1,2" },
};
static const struct want ex2[] = { /* hA:1,hB:2,hC:3,hD:1 without hC = hA:1,hB:2,hD:1 */
	{ "hA:0", "0,4,0,1,0,3" }, { "hB:0", "1,4,0,2,1,3" }, { "hB:1", "2,4,1,2,0,1" },
	{ "hC:0", "-1,-1,-1,-1,-1,-1" }, { "hC:1", "-1,-1,-1,-1,-1,-1" },
	{ "hC:2", "-1,-1,-1,-1,-1,-1" }, { "hD:0", "3,4,0,1,2,3" },
};
static const struct want ex3[] = { /* hA:2,hB:2 then hA:1,hB:2 */
	{ "hA:0", "0,3,0,1,0,2" }, { "hA:1", "-1,-1,-1,-1,-1,-1" },
	{ "hB:0", "1,3,0,2,1,2" }, { "hB:1", "2,3,1,2,0,1" },
};

/* RendezvousServer.init(plan): the old round's keys and finished lists go,
 * the new plan's scope sizes count. */
static void reinit_plan(void)
{
	struct dlrt_hvd_plan a, b;
	struct dlrt_hvd_store *st = NULL;
	struct dlrt_hvd_reply r;
	struct dlrt_err err;

	if (dlrt_hvd_plan_parse(&a, "hA:2,hB:2", &err) < 0 || dlrt_hvd_plan_parse(&b, "hA:1,hB:2", &err) < 0 ||
	    dlrt_hvd_store_create(&st, &a, 0, &err) < 0) {
		TAP_OK(0, "reinit: set up (%s)", err.msg);
		return;
	}
	dlrt_hvd_store_handle(st, DLRT_HTTP_PUT, "/global/0", 9, (const uint8_t *)"x", 1, &r);
	dlrt_hvd_store_handle(st, DLRT_HTTP_DELETE, "/cross_1/0", 10, NULL, 0, &r);
	dlrt_hvd_store_handle(st, DLRT_HTTP_PUT, "/adhoc/k", 8, (const uint8_t *)"y", 1, &r);
	TAP_OK(dlrt_hvd_store_reinit(st, &b, &err) == 0, "reinit with hA:1,hB:2");
	TAP_IS_INT((long)dlrt_hvd_store_nkeys(st, "global") + (long)dlrt_hvd_store_nkeys(st, "adhoc"), 0,
		   "every key of the old round is gone (cache.clear())");
	TAP_IS_INT((long)dlrt_hvd_store_finished(st, "cross_1"), 0, "finished lists are empty");
	TAP_IS_INT(dlrt_hvd_store_scope_size(st, "global"), 3, "global has the new size 3");
	TAP_IS_INT(dlrt_hvd_store_scope_size(st, "local_hA"), 1, "local_hA has 1 slot now");
	TAP_IS_INT(dlrt_hvd_store_scope_size(st, "cross_0"), 2, "cross_0 has 2 hosts");
	TAP_IS_INT(dlrt_hvd_store_scope_size(st, "cross_1"), 1, "cross_1 has only hB");
	TAP_IS_INT((long)dlrt_hvd_store_bytes(st), 0, "the memory count is back to 0");
	for (size_t i = 0; i < sizeof(ex3) / sizeof(ex3[0]); i++)
		TAP_IS_STR(ask(st, ex3[i].slot, &r), ex3[i].answer, "hA:2,hB:2 then hA:1,hB:2: rank_and_size/%s",
			   ex3[i].slot);
	dlrt_hvd_store_destroy(st);
	dlrt_hvd_plan_free(&a);
	dlrt_hvd_plan_free(&b);
}

static void barrier_rules(void)
{
	struct dlrt_hvd_plan p, next;
	struct dlrt_hvd_store *st = NULL;
	struct dlrt_hvd_round round = { 0 };
	struct dlrt_hvd_reply r;
	struct dlrt_err err;
	unsigned char drop[3] = { 0, 0, 0 };

	if (dlrt_hvd_plan_parse(&p, "hA:2,hB:2", &err) < 0 || dlrt_hvd_store_create(&st, &p, 0, &err) < 0 ||
	    dlrt_hvd_round_start(&round, 1, p.nslots, &err) < 0) {
		TAP_OK(0, "barrier: set up (%s)", err.msg);
		return;
	}
	dlrt_hvd_store_set_barrier(st, 1);
	dlrt_hvd_store_handle(st, DLRT_HTTP_GET, "/rank_and_size/hZ:0", 19, NULL, 0, &r);
	TAP_OK(!r.park && r.status == 200 && r.len == 17, "a host not in the plan is answered -1 at once");
	TAP_OK(!dlrt_hvd_round_open(&round), "nobody asked: the barrier is not open");
	dlrt_hvd_round_ready(&round, 0);
	dlrt_hvd_round_ready(&round, 0);
	TAP_IS_INT((long)round.nready, 1, "a second ask of the same slot counts once");
	dlrt_hvd_round_ready(&round, 1);
	dlrt_hvd_round_ready(&round, 2);
	TAP_OK(!dlrt_hvd_round_complete(&round), "3 of 4 asked: not complete");
	TAP_IS_INT((long)dlrt_hvd_round_expire(&round), 1, "the timeout fails the silent slot");
	TAP_OK(dlrt_hvd_round_complete(&round), "then the round is complete");
	/* One failed slot of hB: Horovod blacklists the whole host. */
	TAP_OK(dlrt_hvd_round_next_plan(&round, &p, 1, 0, &next, &err) == 0 && next.nhosts == 1 &&
	       next.nslots == 2 && !strcmp(next.hosts[0], "hA"),
	       "a failed slot drops its whole host: hA:2 is left");
	dlrt_hvd_plan_free(&next);
	TAP_OK(dlrt_hvd_round_next_plan(&round, &p, 3, 0, &next, &err) < 0 &&
	       strstr(err.msg, "below the minimum of 3 (--dl-hvd-min-np)"),
	       "below --min-np: the job ends with one line (%s)", err.msg);
	dlrt_hvd_round_host_lost(&round, &p, 0);
	TAP_OK(round.nready == 1 && round.nfailed == 3,
	       "READY slots whose host is lost count as failed (Horovod: READY -> FAILURE)");
	drop[0] = drop[1] = 1;
	TAP_OK(dlrt_hvd_plan_without(&next, &p, drop, 1, 0, &err) < 0 && strstr(err.msg, "none is left"),
	       "no host left: one line (%s)", err.msg);
	drop[0] = drop[1] = 0;
	TAP_OK(dlrt_hvd_plan_without(&next, &p, drop, 1, 3, &err) == 0 && next.nslots == 3 &&
	       next.slots[1] == 1, "--max-np 3 caps the plan at hA:2,hB:1 (get_host_assignments)");
	dlrt_hvd_plan_free(&next);
	dlrt_hvd_round_free(&round);
	dlrt_hvd_store_destroy(st);
	dlrt_hvd_plan_free(&p);
}

/* The answer on the step's pids, as hvd_steppids.c writes it. */
static void pids_answer(void)
{
	struct dlrt_hvd_plan p;
	struct dlrt_err err;
	unsigned char alive[3] = { 0 };
	const char *ok_text = "52.0|n1|101,102\n52.0|n2|\n52.0|n9|7\n";

	if (dlrt_hvd_plan_parse(&p, "n1:2,n2:2,n3:2", &err) < 0) {
		TAP_OK(0, "pids: set up (%s)", err.msg);
		return;
	}
	TAP_OK(dlrt_hvd_pids_parse(ok_text, strlen(ok_text), &p, alive, &err) == 0 && alive[0] &&
	       !alive[1] && !alive[2], "n1 has pids; n2 has none; n3 is not listed; n9 is not ours");
	memset(alive, 0, sizeof(alive));
	TAP_OK(dlrt_hvd_pids_parse("", 0, &p, alive, &err) == 0 && !alive[0],
	       "an empty answer marks nobody alive (the driver ignores it)");
	TAP_OK(dlrt_hvd_pids_parse("garbage\n", 8, &p, alive, &err) < 0 && !alive[0],
	       "text that is not the answer is refused: %s", err.msg);
	dlrt_hvd_plan_free(&p);
}

static int loopback(const char *src, const char *build, const char *hosts, const char *lose)
{
	char cmd[4096], line[512];
	int status, ok_lines = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "HVD_TIMEOUT=120 timeout 200 %s/tests/unit/hvd_elastic_local.sh '%s' '%s' '%s' 2>&1",
		 src, build, hosts, lose);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		ok_lines += strstr(line, "elastic ok") != NULL;
		if (!strstr(line, "dlrt-hvd-driver: 127."))
			printf("# %s", line);
	}
	status = pclose(p);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok_lines > 0 ? 0 : -1;
}

int main(void)
{
	const char *src = getenv("DLRT_SRCDIR") ? getenv("DLRT_SRCDIR") : ".";
	char build[2048];

	lose_host("hA:3,hB:1,hC:2", "hB", ex1, sizeof(ex1) / sizeof(ex1[0]), "hA:3,hB:1,hC:2 without hB");
	lose_host("hA:1,hB:2,hC:3,hD:1", "hC", ex2, sizeof(ex2) / sizeof(ex2[0]),
		  "hA:1,hB:2,hC:3,hD:1 without hC");
	reinit_plan();
	barrier_rules();
	pids_answer();

	if (test_build_dir("libexec/dlrt-hvd-driver", build, sizeof(build)) < 0)
		snprintf(build, sizeof(build), "build"); /* the script names what is missing */
	TAP_OK(loopback(src, build, "hA:3,hB:1,hC:2", "hB") == 0,
	       "loopback: real driver and gloo workers, hA:3,hB:1,hC:2 loses hB, 5 go on in round 2");
	TAP_OK(loopback(src, build, "hA:1,hB:2,hC:3,hD:1", "hC") == 0,
	       "loopback: hA:1,hB:2,hC:3,hD:1 loses hC, 4 go on in round 2");
	return tap_done();
}
