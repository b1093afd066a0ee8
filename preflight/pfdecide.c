#include "pfdecide.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median of the measured values (bandwidth or round trip) of the answering
 * nodes other than `skip` and `skip2` (0 when none). */
static uint64_t median_of(const struct dlrt_pf_result *res, const bool *have, size_t n,
			  size_t skip, size_t skip2, bool rtt)
{
	uint64_t *v = calloc(n ? n : 1, sizeof(*v)), m = 0;
	size_t k = 0;

	if (!v)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t x = rtt ? res[i].rtt_us : res[i].bw_kBps;

		if (i != skip && i != skip2 && have[i] && x > 0)
			v[k++] = x;
	}
	if (k) {
		qsort(v, k, sizeof(*v), cmp_u64);
		m = v[k / 2];
	}
	free(v);
	return m;
}

static void fail(struct dlrt_pf_verdict *v, size_t *nv, bool *named, uint32_t idx,
		 const char *check, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void fail(struct dlrt_pf_verdict *v, size_t *nv, bool *named, uint32_t idx,
		 const char *check, const char *fmt, ...)
{
	va_list ap;

	if (named[idx])
		return;
	named[idx] = true;
	v[*nv].idx = idx;
	snprintf(v[*nv].check, sizeof(v[*nv].check), "%s", check);
	va_start(ap, fmt);
	vsnprintf(v[*nv].figure, sizeof(v[*nv].figure), fmt, ap);
	va_end(ap);
	(*nv)++;
}

/* Network reach: who failed to reach i, of the answering peers. */
static void reach(const struct dlrt_pf_result *res, const bool *have, const char *const *names,
		  size_t n, size_t i, struct dlrt_pf_verdict *out, size_t *nv, bool *named)
{
	size_t peers = 0, missed = 0, reached_none = 1;
	char who[128] = "";

	for (size_t j = 0; j < n; j++) {
		if (j == i || !have[j])
			continue;
		peers++;
		if (dlrt_pf_unreached(&res[j], (uint32_t)i)) {
			size_t l = strlen(who);

			if (missed++ < 3)
				snprintf(who + l, sizeof(who) - l, "%s%s", l ? "," : "", names[j]);
		}
	}
	if (peers && missed * 2 >= peers && (missed > 0))
		fail(out, nv, named, (uint32_t)i, "net", "not reachable from %zu of %zu peers (%s%s)",
		     missed, peers, who, missed > 3 ? ",..." : "");
	/* It reached none of the peers that others reach. */
	for (size_t j = 0; j < n && have[i]; j++)
		if (j != i && !dlrt_pf_unreached(&res[i], (uint32_t)j))
			reached_none = 0;
	if (have[i] && n > 2 && reached_none)
		fail(out, nv, named, (uint32_t)i, "net", "reaches none of its %zu peers", n - 1);
}

size_t dlrt_pf_decide(const struct dlrt_pf_spec *s, const struct dlrt_pf_result *res,
		      const bool *have, const char *const *names, size_t n,
		      struct dlrt_pf_verdict *out)
{
	bool *named = calloc(n ? n : 1, sizeof(*named));
	size_t nv = 0, answered = 0, unshared = 0;

	if (!named)
		return 0;
	for (size_t i = 0; i < n; i++) {
		answered += have[i];
		unshared += have[i] && res[i].ckpt == DLRT_PF_CKPT_UNSHARED;
	}
	for (size_t i = 0; i < n; i++)
		if (!have[i])
			fail(out, &nv, named, (uint32_t)i, "answer", "no result within %u s",
			     s->timeout_s);
		else if (res[i].check[0])
			fail(out, &nv, named, (uint32_t)i, res[i].check, "%s", res[i].figure);
	/* The first node's file: when most of the others miss it, the first node's
	 * folder is the one not shared. */
	if (n > 2 && have[0] && unshared * 2 > answered - 1)
		fail(out, &nv, named, 0, "ckpt", "the checkpoint folder is not the one %zu of %zu "
		     "other nodes see", unshared, answered - 1);
	else
		for (size_t i = 1; i < n; i++)
			if (have[i] && res[i].ckpt == DLRT_PF_CKPT_UNSHARED)
				fail(out, &nv, named, (uint32_t)i, "ckpt", "does not see %s's file in "
				     "the checkpoint folder: not the same filesystem", names[0]);
	for (size_t i = 0; i < n; i++)
		reach(res, have, names, n, i, out, &nv, named);
	for (size_t i = 1; i < n; i++) {
		int64_t c = have[i] ? res[i].clock_us : 0;
		uint64_t a = (uint64_t)(c < 0 ? -c : c);

		if (have[0] && a > (uint64_t)s->clock_ms * 1000)
			fail(out, &nv, named, (uint32_t)i, "clock", "%.3f s %s %s's clock (limit "
			     "%u ms)", (double)a / 1e6, c < 0 ? "behind" : "ahead of", names[0],
			     s->clock_ms);
	}
	/* A node slow to send also slows what its predecessor sends it (its ACKs
	 * wait behind its own data): of two slow neighbours, the later is named. */
	for (size_t i = 0; i < n && n >= 3; i++) {
		/* Its peers, but not its predecessor, whose sample goes to it and
		 * so suffers from what it suffers from. */
		size_t next = (i + 1) % n, prev = (i + n - 1) % n, nnext = (i + 2) % n;
		uint64_t mbw = median_of(res, have, n, i, prev, false);
		uint64_t mrtt = median_of(res, have, n, i, i, true);
		uint64_t mnext = median_of(res, have, n, next, i, false);
		bool slow_next = have[next] && mnext && res[next].bw_kBps &&
				 res[next].bw_kBps * 10 < mnext && nnext != i;

		/* a sample to a node that failed says nothing about this one */
		if (!have[i] || named[next] || !have[next] || slow_next || !res[i].bw_kBps)
			continue;
		if (mbw && res[i].bw_kBps * 10 < mbw)
			fail(out, &nv, named, (uint32_t)i, "net", "sends %.2f MB/s to %s, its peers' "
			     "median is %.1f MB/s", (double)res[i].bw_kBps / 1000, names[next],
			     (double)mbw / 1000);
		else if (mrtt && res[i].rtt_us > 10 * mrtt && res[i].rtt_us > 50000)
			fail(out, &nv, named, (uint32_t)i, "net", "round trip %.1f ms, its peers' "
			     "median is %.2f ms", res[i].rtt_us / 1000.0, (double)mrtt / 1000);
	}
	free(named);
	return nv;
}
